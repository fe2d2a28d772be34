//! Instrumentation: per-tile, per-superstep cycles and instruction counts.

/// One tile's share of one superstep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuperstepCycles {
    /// Cycles issuing anything but exchange work.
    pub compute: u64,
    /// Cycles of exchange instructions (`send` port time, exchange register writes).
    pub exchange: u64,
    /// Cycles waiting at the sync for the other tiles and the sync latency.
    pub sync_wait: u64,
    /// Cycles from the superstep's start to the end of the tile's last
    /// exchange instruction (a `send`'s last word out of the port, an
    /// exchange register write's effect); 0 without any. Where the
    /// compute follows the exchange at a fence, with no sync between, it
    /// is the exchange's part of the superstep.
    pub exchange_until: u64,
}

/// One tile's profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TileProfile {
    /// Tile number.
    pub tile: u32,
    /// Supersteps in order (the last one ends at the tile's exit).
    pub supersteps: Vec<SuperstepCycles>,
    /// Instructions executed (a bundle counts as 2).
    pub instructions: u64,
    /// Issue units executed by the supervisor.
    pub supervisor_issues: u64,
    /// Issue slots workers used: one per instruction or bundle, a
    /// transcendental's `MachineModel::transcendental_issues` (the slots it
    /// holds its worker for), as codelet estimates count them.
    pub worker_issues: u64,
    /// Incoming exchange words written while one of the tile's workers
    /// ran. The simulator charges them nothing (`ipu-arch/TIMING.md`, "Not
    /// modelled yet"); ipuc's lowering receives only while workers are
    /// idle, so a nonzero count marks a program whose figures may be
    /// optimistic.
    pub incoming_words_during_compute: u64,
    /// Cycle the tile finished.
    pub end_cycle: u64,
}

/// One traced issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// Tile cycle.
    pub cycle: u64,
    /// 0 = supervisor, 1..=6 workers.
    pub context: u8,
    /// Program counter.
    pub pc: u32,
    /// Instruction text.
    pub text: String,
}

/// One host stream's transfer on the run's timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostStep {
    /// Stream name.
    pub stream: String,
    /// Direction.
    pub direction: ipuc_ipu_arch::StreamDirection,
    /// Bytes moved.
    pub bytes: u64,
    /// Run cycle the transfer starts (inputs from 0; outputs after the
    /// device program).
    pub start: u64,
    /// Cycles it takes on the host link.
    pub cycles: u64,
}

/// A whole run's profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Per loaded tile, by tile number.
    pub tiles: Vec<TileProfile>,
    /// Device cycles of the run (the latest tile end).
    pub total_cycles: u64,
    /// Host link cycles of the stream steps (before and after the device
    /// program), apart from the device cycles.
    pub host_cycles: u64,
    /// The stream steps in run order.
    pub host_steps: Vec<HostStep>,
    /// The whole run: input steps, device program, output steps.
    pub run_cycles: u64,
    /// Instruction trace of the configured tile.
    pub trace: Vec<TraceEntry>,
    /// Every tile's recorded timeline, by tile number (empty unless
    /// `SimConfig::record`).
    pub timelines: Vec<super::TileTimeline>,
    /// Where the recording stopped, if it reached `SimConfig::record_limit`.
    pub truncation: Option<super::Truncation>,
}
