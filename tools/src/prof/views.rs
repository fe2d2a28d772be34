//! The questions `ipu-prof` answers from a profile, each as rows (its
//! `--json`) and as a text table.

use std::collections::BTreeMap;

use serde::Serialize;

use super::schema::{Allocation, FreeSpace, ProfileData, Superstep};

/// An `nn` op's simulated cycles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpCycles {
    /// `nn.NAME @ location`.
    pub op: String,
    /// Over the supersteps, on the tile where it took longest, the cycles
    /// covered by its compute sets (each from its first launch to its last
    /// exit).
    pub cycles: u64,
    /// Share of the run's device cycles.
    pub share: f64,
    /// Its codelets (`codelet (instance)`) and their cycles, most first,
    /// each counted the same way (codelets that interleave on a tile, as
    /// a product's overwriting and accumulating launches do, overlap).
    pub codelets: Vec<(String, u64)>,
}

/// The ops by simulated cycles, most first.
pub fn top_ops(p: &ProfileData) -> Vec<OpCycles> {
    let mut per_codelet: BTreeMap<usize, u64> = BTreeMap::new();
    for s in &p.supersteps {
        for &[c, cycles] in &s.codelets {
            *per_codelet.entry(c as usize).or_default() += cycles;
        }
    }
    // Per superstep and op, on the tile where it took longest, the union
    // of its compute sets' spans (a product's interleaved overwriting and
    // accumulating launches overlap; two adds with another op's between
    // them do not).
    let mut op_spans: BTreeMap<(u64, &str), u64> = BTreeMap::new();
    for t in &p.tiles {
        let mut on_tile: BTreeMap<(u64, &str), Vec<(u64, u64)>> = BTreeMap::new();
        for &[k, c, start, end, ..] in &t.compute_sets {
            on_tile
                .entry((k, p.codelets[c as usize].op.as_str()))
                .or_default()
                .push((start, end));
        }
        for (key, spans) in on_tile {
            let e = op_spans.entry(key).or_default();
            *e = (*e).max(union_length(spans));
        }
    }
    let mut ops: BTreeMap<&str, OpCycles> = BTreeMap::new();
    for ((_, op), cycles) in op_spans {
        let name = if op.is_empty() { "(unattributed)" } else { op };
        ops.entry(name)
            .or_insert_with(|| OpCycles {
                op: name.to_string(),
                cycles: 0,
                share: 0.0,
                codelets: Vec::new(),
            })
            .cycles += cycles;
    }
    for (c, cycles) in per_codelet {
        let k = &p.codelets[c];
        let name = if k.op.is_empty() {
            "(unattributed)"
        } else {
            &k.op
        };
        if let Some(e) = ops.get_mut(name) {
            e.codelets
                .push((format!("{} ({})", k.codelet, k.instance), cycles));
        }
    }
    let mut out: Vec<OpCycles> = ops.into_values().collect();
    for o in &mut out {
        o.share = o.cycles as f64 / p.total_cycles.max(1) as f64;
        o.codelets.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    }
    out.sort_by(|a, b| b.cycles.cmp(&a.cycles).then(a.op.cmp(&b.op)));
    out
}

/// The cycles covered by some of `spans` (`[start, end)` each).
fn union_length(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let mut total = 0;
    let mut covered_to = 0;
    for (start, end) in spans {
        let from = start.max(covered_to);
        if end > from {
            total += end - from;
        }
        covered_to = covered_to.max(end);
    }
    total
}

/// Codelet instances listed under an op in the text of [`top_ops`].
pub const TOP_CODELETS: usize = 5;

/// Text of [`top_ops`].
pub fn top_ops_text(p: &ProfileData, limit: usize) -> String {
    let mut s = format!(
        "top ops by simulated cycles ({} device cycles; per superstep, on the tile where it took longest: a codelet's first launch to its last exit, an op's cycles covered by its codelets)\n",
        p.total_cycles
    );
    for o in top_ops(p).into_iter().take(limit) {
        s += &format!("{:>10}  {:>5.1}%  {}\n", o.cycles, 100.0 * o.share, o.op);
        for (c, cycles) in o.codelets.iter().take(TOP_CODELETS) {
            s += &format!("{:>10}          {c}\n", cycles);
        }
        if o.codelets.len() > TOP_CODELETS {
            s += &format!(
                "                    (+{} more codelet instances; --json lists them all)\n",
                o.codelets.len() - TOP_CODELETS
            );
        }
    }
    s
}

/// One row of the superstep table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SuperstepRow {
    /// Index.
    pub index: usize,
    /// The step it is attributed to.
    pub step: String,
    /// Start cycle.
    pub start: u64,
    /// Cycles to its sync's release.
    pub cycles: u64,
    /// Busiest tile's compute.
    pub compute: u64,
    /// Busiest tile's exchange.
    pub exchange: u64,
    /// Longest sync wait.
    pub sync_wait: u64,
    /// Bytes sent.
    pub exchange_bytes: u64,
    /// Tiles that ran workers.
    pub tiles_computing: u32,
    /// Its codelets, most cycles first: `codelet (instance)`.
    pub codelets: Vec<(String, u64)>,
}

/// The superstep table.
pub fn supersteps(p: &ProfileData) -> Vec<SuperstepRow> {
    p.supersteps
        .iter()
        .map(|s| {
            let mut codelets: Vec<(String, u64)> = s
                .codelets
                .iter()
                .map(|&[c, cycles]| {
                    let k = &p.codelets[c as usize];
                    (format!("{} ({})", k.codelet, k.instance), cycles)
                })
                .collect();
            codelets.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            SuperstepRow {
                index: s.index,
                step: superstep_steps(p, s),
                start: s.start,
                cycles: s.end - s.start,
                compute: s.compute_max,
                exchange: s.exchange_max,
                sync_wait: s.sync_wait_max,
                exchange_bytes: s.exchange_bytes,
                tiles_computing: s.tiles_computing,
                codelets,
            }
        })
        .collect()
}

/// The step a superstep is attributed to, after the exchange step that
/// opens it where its launches follow that exchange at a fence (`b1
/// exchange_a + qkv`: a chain's block prefix once).
fn superstep_steps(p: &ProfileData, s: &Superstep) -> String {
    let step = &p.steps[s.step].name;
    let Some(x) = s.exchange_step else {
        return step.clone();
    };
    let exchange = &p.steps[x].name;
    match (exchange.split_once(' '), step.split_once(' ')) {
        (Some((bx, _)), Some((bs, rest))) if bx == bs && bs.starts_with('b') => {
            format!("{exchange} + {rest}")
        }
        _ => format!("{exchange} + {step}"),
    }
}

/// Text of [`supersteps`].
pub fn supersteps_text(p: &ProfileData) -> String {
    let rows = supersteps(p);
    let w = rows.iter().map(|r| r.step.len()).max().unwrap_or(0).max(10);
    let mut s = format!(
        "superstep  {:<w$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>11} {:>6}  codelets\n",
        "step", "start", "cycles", "compute", "exchange", "sync wait", "exch bytes", "tiles"
    );
    for r in rows {
        let codelets: Vec<String> = r
            .codelets
            .iter()
            .take(3)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        s += &format!(
            "{:>9}  {:<w$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>11} {:>6}  {}\n",
            r.index,
            r.step,
            r.start,
            r.cycles,
            r.compute,
            r.exchange,
            r.sync_wait,
            r.exchange_bytes,
            r.tiles_computing,
            codelets.join(", ")
        );
    }
    s
}

/// One tile's memory at one superstep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryMap {
    /// Tile.
    pub tile: u32,
    /// Superstep.
    pub superstep: usize,
    /// Live allocations by address.
    pub allocations: Vec<Allocation>,
    /// Bytes that overlap an earlier live allocation (regions the
    /// lowering reuses within one superstep, e.g. a buffer over another's
    /// dead part).
    pub overlapping_bytes: u64,
    /// Free space.
    pub free: FreeSpace,
}

/// `tile`'s memory map at `superstep`.
pub fn memory(p: &ProfileData, tile: u32, superstep: usize) -> Result<MemoryMap, String> {
    let t = p.tiles.iter().find(|t| t.tile == tile).ok_or_else(|| {
        format!(
            "tile {tile} did not run (tiles {}..={} ran, {} of them)",
            p.tiles.first().map_or(0, |t| t.tile),
            p.tiles.last().map_or(0, |t| t.tile),
            p.tiles.len()
        )
    })?;
    if superstep >= p.supersteps.len() {
        return Err(format!(
            "superstep {superstep} does not exist (the run has {})",
            p.supersteps.len()
        ));
    }
    let allocations = p.live_memory(t, superstep);
    let mut overlapping = 0u64;
    let mut end = 0u64;
    for a in &allocations {
        let (lo, hi) = (
            u64::from(a.address),
            u64::from(a.address) + u64::from(a.size),
        );
        if lo < end {
            overlapping += end.min(hi) - lo;
        }
        end = end.max(hi);
    }
    let free = p.free_space(&allocations);
    Ok(MemoryMap {
        tile,
        superstep,
        allocations,
        overlapping_bytes: overlapping,
        free,
    })
}

/// Text of [`memory`].
pub fn memory_text(m: &MemoryMap, base: u32, end: u32) -> String {
    let mut s = format!(
        "tile {} at superstep {}: {} bytes free of {}, largest free range {} bytes, fragmentation {:.1}%\n",
        m.tile,
        m.superstep,
        m.free.free,
        end - base,
        m.free.largest,
        100.0 * m.free.fragmentation
    );
    s += "   address       size  kind      supersteps  name\n";
    let mut cursor = base;
    for a in &m.allocations {
        if a.address > cursor {
            s += &format!("  0x{cursor:05x} {:>10}  free\n", a.address - cursor);
        }
        s += &format!(
            "  0x{:05x} {:>10}  {:<8} {:>5}..={:<4} {}\n",
            a.address, a.size, a.kind, a.from, a.to, a.name
        );
        cursor = cursor.max(a.address + a.size);
    }
    if end > cursor {
        s += &format!("  0x{cursor:05x} {:>10}  free\n", end - cursor);
    }
    if m.overlapping_bytes > 0 {
        s += &format!(
            "  ({} bytes are shared by allocations live in the same superstep)\n",
            m.overlapping_bytes
        );
    }
    s
}

/// One row of the cost model's error.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorRow {
    /// Step, or op kind.
    pub name: String,
    /// Its `nn` ops.
    pub ops: Vec<String>,
    /// Estimate.
    pub estimate: Option<u64>,
    /// Simulated.
    pub simulated: u64,
    /// `(estimate - simulated) / simulated`.
    pub error: Option<f64>,
}

fn error_of(estimate: Option<u64>, simulated: u64) -> Option<f64> {
    estimate
        .filter(|_| simulated > 0)
        .map(|e| (e as f64 - simulated as f64) / simulated as f64)
}

/// The estimate against the simulation per step, then per op kind (the
/// steps summed by the kind of their first `nn` op, a step of a whole
/// block by its name; exchange steps, a chain's links among them, as
/// `exchange`; sync by name).
pub fn cost_error(p: &ProfileData) -> (Vec<ErrorRow>, Vec<ErrorRow>) {
    let steps: Vec<ErrorRow> = p
        .steps
        .iter()
        .map(|s| ErrorRow {
            name: s.name.clone(),
            ops: s.ops.clone(),
            estimate: s.estimate_cycles,
            simulated: s.simulated_cycles,
            error: error_of(s.estimate_cycles, s.simulated_cycles),
        })
        .collect();
    let mut kinds: BTreeMap<String, ErrorRow> = BTreeMap::new();
    for s in &steps {
        // A chain names its blocks' steps `b{k} {step}`.
        let name = match s.name.split_once(' ') {
            Some((b, rest)) if b.starts_with('b') && b[1..].parse::<u32>().is_ok() => rest,
            _ => s.name.as_str(),
        };
        let kind = match s.ops.first() {
            // A whole block counted as one step is its own kind.
            Some(_) if s.ops.len() > 2 => name.to_string(),
            Some(op) => op.split(" @ ").next().unwrap_or(op).to_string(),
            None if name.starts_with("exchange") || name.starts_with("link") => {
                "exchange".to_string()
            }
            None => name.to_string(),
        };
        let e = kinds.entry(kind.clone()).or_insert_with(|| ErrorRow {
            name: kind,
            ops: Vec::new(),
            estimate: Some(0),
            simulated: 0,
            error: None,
        });
        e.ops.push(s.name.clone());
        e.estimate = e.estimate.zip(s.estimate).map(|(a, b)| a + b);
        e.simulated += s.simulated;
    }
    let mut kinds: Vec<ErrorRow> = kinds.into_values().collect();
    for k in &mut kinds {
        k.error = error_of(k.estimate, k.simulated);
    }
    (steps, kinds)
}

/// Text of [`cost_error`].
pub fn cost_error_text(p: &ProfileData) -> String {
    let (steps, kinds) = cost_error(p);
    let row = |r: &ErrorRow| {
        format!(
            "  {:<24} {:>10} {:>10} {:>8}  {}\n",
            r.name,
            r.estimate.map_or("-".into(), |e| e.to_string()),
            r.simulated,
            r.error
                .map_or("-".into(), |e| format!("{:+.1}%", 100.0 * e)),
            r.ops.join(", ")
        )
    };
    let mut s = String::from(
        "cost model against the simulator, per step (error = (estimate - simulated) / simulated)\n",
    );
    s += "  step                       estimate  simulated    error  nn ops\n";
    s += &steps.iter().map(row).collect::<String>();
    s += "per op kind\n  kind                       estimate  simulated    error  steps\n";
    s += &kinds.iter().map(row).collect::<String>();
    s
}

/// A step that runs products: its work against the chip's AMP peak over
/// its simulated cycles.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GemmRow {
    /// The step.
    pub step: String,
    /// Its `nn` ops.
    pub ops: Vec<String>,
    /// Multiply-accumulates (real dimensions).
    pub macs: u64,
    /// Simulated cycles of the step (its products' vertices, K-split
    /// rounds and epilogues).
    pub simulated: u64,
    /// The chip's AMP multiply-accumulates per cycle at the products'
    /// precision.
    pub peak_macs_per_cycle: u64,
    /// `macs / (simulated * peak_macs_per_cycle)`.
    pub utilisation: f64,
}

/// Every step with products' work, in program order.
pub fn gemms(p: &ProfileData) -> Vec<GemmRow> {
    p.steps
        .iter()
        .filter_map(|s| {
            let w = s.work?;
            let capacity = s.simulated_cycles as f64 * w.peak_macs_per_cycle as f64;
            Some(GemmRow {
                step: s.name.clone(),
                ops: s.ops.clone(),
                macs: w.macs,
                simulated: s.simulated_cycles,
                peak_macs_per_cycle: w.peak_macs_per_cycle,
                utilisation: if capacity > 0.0 {
                    w.macs as f64 / capacity
                } else {
                    0.0
                },
            })
        })
        .collect()
}

/// Text of [`gemms`].
pub fn gemms_text(p: &ProfileData) -> String {
    let mut s = String::from(
        "products against the AMP's peak (utilisation = MACs / (simulated cycles x the chip's peak MACs per cycle))
  step                            MACs  simulated  peak/cycle  utilisation  nn ops
",
    );
    for r in gemms(p) {
        s += &format!(
            "  {:<24} {:>12} {:>10} {:>11} {:>11.1}%  {}
",
            r.step,
            r.macs,
            r.simulated,
            r.peak_macs_per_cycle,
            100.0 * r.utilisation,
            r.ops.join(", ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    /// Overlapping spans count once, disjoint ones add, gaps do not count.
    #[test]
    fn the_union_of_spans() {
        assert_eq!(super::union_length(vec![(10, 20), (0, 5), (15, 30)]), 25);
        assert_eq!(super::union_length(vec![(0, 10), (2, 4)]), 10);
        assert_eq!(super::union_length(Vec::new()), 0);
    }
}
