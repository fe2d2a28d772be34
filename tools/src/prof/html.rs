//! `report.html`: one self-contained file (its script and styles inline,
//! no network access; `report.html` beside this file is the page) showing
//! the superstep timeline with per-op attribution, a tiles × time
//! occupancy heat map, each step's estimate against the simulated cycles,
//! the exchange volume per superstep, and any tile's memory over time
//! with its free space and fragmentation; above them, where a truncated
//! recording stops.
//!
//! The page reads a reduced copy of the profile embedded as JSON: the
//! heat map's cells and each tile's free space are computed here, so the
//! page only draws.

use serde::Serialize;

use super::schema::{Allocation, Codelet, ProfileData, Step, Superstep, Tile};

const PAGE: &str = include_str!("report.html");
const PLACEHOLDER: &str = "/*PROFILE_DATA*/";

/// Time bins of the heat map.
pub const HEATMAP_BINS: usize = 200;

#[derive(Serialize)]
struct ReportData<'a> {
    model: &'a str,
    function: &'a str,
    machine: &'a str,
    clock_hz: f64,
    total_cycles: u64,
    tiles: usize,
    memory_base: u32,
    memory_end: u32,
    steps: &'a [Step],
    codelets: &'a [Codelet],
    supersteps: &'a [Superstep],
    heatmap: Heatmap,
    memory: Vec<TileMemory<'a>>,
    /// [`super::schema::Truncated::note`], shown above every view.
    truncated: Option<String>,
}

/// Worker occupancy (active workers / 6) per row of tiles and time bin,
/// in percent.
#[derive(Serialize)]
struct Heatmap {
    tiles_per_row: u32,
    rows: Vec<String>,
    bins: usize,
    bin_cycles: f64,
    cells: Vec<u8>,
}

#[derive(Serialize)]
struct TileMemory<'a> {
    tile: u32,
    /// `[name, kind, address, size, from, to]`.
    allocations: Vec<(&'a str, &'a str, u32, u32, usize, usize)>,
    /// Per superstep: `[free, largest, fragmentation]`.
    free: Vec<(u64, u64, f64)>,
}

fn heatmap(p: &ProfileData) -> Heatmap {
    // One row per tile up to 128 tiles, else one per 16 (an exchange row).
    let per_row: u32 = if p.tiles.len() <= 128 { 1 } else { 16 };
    let bin_cycles = (p.total_cycles.max(1) as f64) / HEATMAP_BINS as f64;
    let mut rows: Vec<(u32, Vec<f64>, u32)> = Vec::new();
    for t in &p.tiles {
        let key = t.tile / per_row;
        if rows.last().is_none_or(|r| r.0 != key) {
            rows.push((key, vec![0.0; HEATMAP_BINS], 0));
        }
        let row = rows.last_mut().expect("pushed above");
        row.2 += 1;
        for set in &t.compute_sets {
            let [_, _, start, end, _, worker_cycles] = *set;
            if end <= start {
                continue;
            }
            // The set's worker cycles, spread evenly over its span.
            let rate = worker_cycles as f64 / (end - start) as f64;
            let (a, b) = (start as f64 / bin_cycles, end as f64 / bin_cycles);
            let mut bin = a.floor() as usize;
            while (bin as f64) < b && bin < HEATMAP_BINS {
                let lo = a.max(bin as f64);
                let hi = b.min(bin as f64 + 1.0);
                row.1[bin] += rate * (hi - lo) * bin_cycles;
                bin += 1;
            }
        }
    }
    let mut cells = Vec::with_capacity(rows.len() * HEATMAP_BINS);
    for (_, bins, tiles) in &rows {
        let capacity = 6.0 * f64::from(*tiles) * bin_cycles;
        cells.extend(
            bins.iter()
                .map(|w| (100.0 * w / capacity).round().clamp(0.0, 100.0) as u8),
        );
    }
    Heatmap {
        tiles_per_row: per_row,
        rows: rows
            .iter()
            .map(|(k, ..)| {
                if per_row == 1 {
                    format!("tile {k}")
                } else {
                    format!("tiles {}-{}", k * per_row, k * per_row + per_row - 1)
                }
            })
            .collect(),
        bins: HEATMAP_BINS,
        bin_cycles,
        cells,
    }
}

/// Tile `t`'s free space per superstep: `[free, largest, fragmentation]`.
/// Its allocations are put in address order once, each superstep takes
/// the live ones (a whole model has a thousand supersteps on 1,472 tiles).
fn free_per_superstep(p: &ProfileData, t: &Tile) -> Vec<(u64, u64, f64)> {
    let mut by_address: Vec<&Allocation> = t.memory.iter().collect();
    by_address.sort_by_key(|a| (a.address, a.size));
    (0..p.supersteps.len())
        .map(|k| {
            let live = by_address
                .iter()
                .copied()
                .filter(|a| a.from <= k && k <= a.to);
            let f = p.free_space_of(live);
            (f.free, f.largest, (f.fragmentation * 1e4).round() / 1e4)
        })
        .collect()
}

/// The report page of `p`.
pub fn report(p: &ProfileData) -> String {
    let memory = p
        .tiles
        .iter()
        .map(|t| TileMemory {
            tile: t.tile,
            allocations: t
                .memory
                .iter()
                .map(|a| {
                    (
                        a.name.as_str(),
                        a.kind.as_str(),
                        a.address,
                        a.size,
                        a.from,
                        a.to,
                    )
                })
                .collect(),
            free: free_per_superstep(p, t),
        })
        .collect();
    let data = ReportData {
        model: &p.model,
        function: &p.function,
        machine: &p.machine,
        clock_hz: p.clock_hz,
        total_cycles: p.total_cycles,
        tiles: p.tiles.len(),
        memory_base: p.memory_base,
        memory_end: p.memory_end,
        steps: &p.steps,
        codelets: &p.codelets,
        supersteps: &p.supersteps,
        heatmap: heatmap(p),
        memory,
        truncated: p.truncated.map(|t| t.note()),
    };
    // Inside <script>, "</" could end the element: JSON allows "\/".
    let json = serde_json::to_string(&data)
        .expect("report data serializes")
        .replace("</", "<\\/");
    PAGE.replacen(PLACEHOLDER, &json, 1)
}
