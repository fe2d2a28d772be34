//! `profile.json`, schema `ipuc-profile` version [`VERSION`]: the data
//! behind `trace.json`, `report.html` and `ipu-prof`. The README's
//! "Profiles" section documents every field; a reader refuses another
//! schema or version with a message that names both.
//!
//! Cycles are simulated cycles of the machine's clock (`clock_hz`),
//! counted from the device program's start. Per-tile bulk data (compute
//! sets, sends, memory) are arrays of numbers, not objects, to keep a
//! 1,472-tile profile small; their fields are named in the docs below and
//! in the README.

use serde::{Deserialize, Serialize};

/// The schema's name.
pub const SCHEMA: &str = "ipuc-profile";
/// The schema's version: bump it on any change a reader could notice.
pub const VERSION: u32 = 2;

/// A whole profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileData {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Always [`VERSION`] when written by this build.
    pub version: u32,
    /// The model file.
    pub model: String,
    /// The function that ran.
    pub function: String,
    /// Machine model name (`c600`).
    pub machine: String,
    /// Its clock.
    pub clock_hz: f64,
    /// Device cycles of the run.
    pub total_cycles: u64,
    /// Tile memory: first address and one past the last.
    pub memory_base: u32,
    /// One past the last address.
    pub memory_end: u32,
    /// The lowering's steps with their `nn` ops and estimates.
    pub steps: Vec<Step>,
    /// The codelet instances that ran, indexed by the compute sets.
    pub codelets: Vec<Codelet>,
    /// Chip-wide supersteps.
    pub supersteps: Vec<Superstep>,
    /// Every tile that ran, by tile number.
    pub tiles: Vec<Tile>,
    /// Where the recording stopped, when it reached its limit (`ipu-run
    /// --profile-limit`); absent when it recorded the whole run, and in
    /// profiles written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// A truncated recording: from superstep `superstep` on, no tile has
/// compute sets, sends or received words, and those supersteps have no
/// codelets, no exchange bytes and belong to the last step,
/// [`crate::prof::collect::NOT_RECORDED`]; their spans and cycles (the
/// simulator's counters) are whole, as is everything before them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncated {
    /// The first superstep not recorded.
    pub superstep: usize,
    /// Its start cycle.
    pub cycle: u64,
    /// The recording's limit, bytes.
    pub limit_bytes: u64,
    /// What the recording held when it stopped, bytes.
    pub held_bytes: u64,
}

impl Truncated {
    /// One line saying where and why the profile stops.
    pub fn note(&self) -> String {
        format!(
            "profile truncated: the recording reached its limit of {} (it held {}), so it has nothing from superstep {} (cycle {}) on: no compute sets, sends or received words; those supersteps keep their cycles and are in the step `{}`. Raise `ipu-run --profile-limit` (MiB) to record the whole run",
            size(self.limit_bytes),
            size(self.held_bytes),
            self.superstep,
            self.cycle,
            crate::prof::collect::NOT_RECORDED
        )
    }
}

/// `bytes` in KiB or MiB.
fn size(bytes: u64) -> String {
    let kib = bytes as f64 / 1024.0;
    if kib < 1024.0 {
        format!("{kib:.1} KiB")
    } else {
        format!("{:.1} MiB", kib / 1024.0)
    }
}

/// A step of the lowering (the granularity of its estimate): the `nn` ops
/// it computes, its estimate and the simulated cycles of its supersteps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Name (`layer_norm`, `exchange_a`, `fc1`, ..., `sync`).
    pub name: String,
    /// Its `nn` ops, as `nn.NAME @ location`.
    pub ops: Vec<String>,
    /// The lowering's estimate, if it gave one.
    pub estimate_cycles: Option<u64>,
    /// Simulated: over its supersteps, the busiest tile's cycles from the
    /// superstep's start to its sync (for `sync`: the syncs' releases
    /// after the last arrival).
    pub simulated_cycles: u64,
    /// The multiply-accumulates of its products (real dimensions, no
    /// padding) and the chip's AMP peak at their precision, for steps that
    /// run products; absent in profiles written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<Work>,
}

/// A step's products' work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    /// Multiply-accumulates.
    pub macs: u64,
    /// The AMP's multiply-accumulates per cycle on every tile of the chip
    /// at the products' input precision (FP16: 64 per tile, FP8: 128).
    pub peak_macs_per_cycle: u64,
}

/// One codelet instance: the worker code a launch entered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Codelet {
    /// The codelet (`layernorm_f16_f8`, `tile_gemm_ovw`, ...).
    pub codelet: String,
    /// The instance (`ln`, `fc1`, `fc1_red0_1`, `out0_2`, ...).
    pub instance: String,
    /// Index into [`ProfileData::steps`].
    pub step: usize,
    /// The `nn` op it computes (`nn.NAME @ location`).
    pub op: String,
}

/// One chip-wide superstep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Superstep {
    /// Index.
    pub index: usize,
    /// Index into [`ProfileData::steps`] it is attributed to.
    pub step: usize,
    /// The exchange step whose exchange opens it, where its launches
    /// follow that exchange at a fence (no sync between): its cycles to
    /// the end of the last tile's exchange instructions go to that step,
    /// the rest to `step`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_step: Option<usize>,
    /// Earliest start over the tiles.
    pub start: u64,
    /// Release of its closing sync (the last tile's exit for the last).
    pub end: u64,
    /// Largest compute cycles on a tile.
    pub compute_max: u64,
    /// Largest exchange cycles on a tile.
    pub exchange_max: u64,
    /// Largest sync wait on a tile.
    pub sync_wait_max: u64,
    /// The tile that reached the sync last.
    pub busiest_tile: u32,
    /// Bytes sent over the exchange, all tiles.
    pub exchange_bytes: u64,
    /// Tiles that ran a worker.
    pub tiles_computing: u32,
    /// Per codelet instance that ran: `[codelet, cycles]`, the cycles its
    /// compute sets took on the tile where they took longest.
    pub codelets: Vec<[u64; 2]>,
}

/// One tile's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tile {
    /// Tile number.
    pub tile: u32,
    /// Per superstep: `[start, sync, release, compute, exchange,
    /// exchange_until]` (the last: cycles from its start to the end of its
    /// last exchange instruction, 0 without one).
    pub supersteps: Vec<[u64; 6]>,
    /// Compute sets: one per codelet instance per superstep, merging its
    /// launches: `[superstep, codelet, start, end, launches, worker_cycles]`
    /// (`worker_cycles`: the sum of its launches' run times, so
    /// `worker_cycles / (end - start)` is the mean active workers).
    pub compute_sets: Vec<[u64; 6]>,
    /// Exchange sends, one per superstep that sent:
    /// `[superstep, first word's cycle, after the last word, words]`.
    pub sends: Vec<[u64; 4]>,
    /// Words received per superstep.
    pub received_words: Vec<u64>,
    /// What occupies tile memory and when.
    pub memory: Vec<Allocation>,
}

/// A range of tile memory and the supersteps it is live in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    /// Section, tensor or buffer name.
    pub name: String,
    /// `code`, `data` (vertex states), `constant`, `stack`, `input`,
    /// `output` or `buffer`.
    pub kind: String,
    /// First address.
    pub address: u32,
    /// Bytes.
    pub size: u32,
    /// First superstep it is live in.
    pub from: usize,
    /// Last superstep it is live in.
    pub to: usize,
}

impl ProfileData {
    /// Reads `profile.json`'s text, refusing another schema or version.
    pub fn from_json(text: &str) -> Result<ProfileData, String> {
        #[derive(Deserialize)]
        struct Header {
            schema: String,
            version: u32,
        }
        let h: Header = serde_json::from_str(text)
            .map_err(|e| format!("not an ipuc profile (line {}: {e})", e.line()))?;
        if h.schema != SCHEMA || h.version != VERSION {
            return Err(format!(
                "profile schema `{}` version {} is not the `{SCHEMA}` version {VERSION} this ipu-prof reads: write it again with this build's `ipu-run --profile`",
                h.schema, h.version
            ));
        }
        serde_json::from_str(text).map_err(|e| format!("line {}: {e}", e.line()))
    }

    /// The memory in use on `tile` at `superstep`, in address order.
    pub fn live_memory(&self, tile: &Tile, superstep: usize) -> Vec<Allocation> {
        let mut live: Vec<Allocation> = tile
            .memory
            .iter()
            .filter(|a| a.from <= superstep && superstep <= a.to)
            .cloned()
            .collect();
        live.sort_by_key(|a| (a.address, a.size));
        live
    }

    /// Free bytes, the largest free range and fragmentation (1 - largest /
    /// free) of `live` (sorted by address) in this profile's tile memory.
    pub fn free_space(&self, live: &[Allocation]) -> FreeSpace {
        self.free_space_of(live.iter())
    }

    /// [`Self::free_space`] of `live` in address order, borrowed.
    pub fn free_space_of<'a>(&self, live: impl Iterator<Item = &'a Allocation>) -> FreeSpace {
        let mut free = 0u64;
        let mut largest = 0u64;
        let mut cursor = u64::from(self.memory_base);
        for a in live {
            let start = u64::from(a.address);
            if start > cursor {
                free += start - cursor;
                largest = largest.max(start - cursor);
            }
            cursor = cursor.max(start + u64::from(a.size));
        }
        let end = u64::from(self.memory_end);
        if end > cursor {
            free += end - cursor;
            largest = largest.max(end - cursor);
        }
        FreeSpace {
            free,
            largest,
            fragmentation: if free == 0 {
                0.0
            } else {
                1.0 - largest as f64 / free as f64
            },
        }
    }
}

/// Free tile memory at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FreeSpace {
    /// Bytes not in any live allocation.
    pub free: u64,
    /// The largest free range.
    pub largest: u64,
    /// `1 - largest / free` (0: one free range).
    pub fragmentation: f64,
}
