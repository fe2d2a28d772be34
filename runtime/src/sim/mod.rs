//! The IPU simulator: tiles run independently to a chip-wide `sync`; syncs
//! release all participants at max(arrival) + the sync latency; exchange is
//! time-deterministic (a word sent at cycle t by tile s lands at tile r at
//! t + latency(s, r) only if r's incoming mux selects s then).
//!
//! Exchange data lands in receiver memory when the superstep's exchange is
//! resolved: at the next sync, or at a *fence*. A tile that sent words or
//! wrote an exchange register since its exchange was last resolved, and
//! then launches workers (`run`/`runall`) or reads memory from its
//! supervisor with no sync between, stops there; once every tile has
//! stopped (at a fence, the sync or its exit) the exchange so far is
//! resolved, each fenced receiver's words due by its fence's cycle (a
//! later one is [`FaultKind::ExchangeDataAfterFence`]: what reads the
//! memory it lands in may already have), and the fenced tiles run on.
//! That is how an exchange feeds the compute after it with one sync, not
//! two: each receiver's exchange code waits for its last word, then
//! launches (the chip's exchange is time-deterministic, so the compiler
//! knows when that is). Code reads received data after the sync or fence
//! that resolves it, as Poplar programs do. A fence costs no cycle. Only
//! tiles with code are simulated.

mod amp;
pub mod bench;
mod decode;
mod exchange;
mod f16;
mod fault;
mod host;
mod parallel;
mod profile;
mod recorder;
pub mod testing;
mod tile;

use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use ipuc_ipu_arch::{Executable, MachineModel, TensorBinding};

pub use fault::{Fault, FaultKind};
use parallel::TileThreads;
pub use profile::{HostStep, Profile, SuperstepCycles, TileProfile, TraceEntry};
pub use recorder::{ComputeSet, Receipt, SendSpan, TileTimeline, Truncation};
use tile::{CtxState, Tile, TileStop};

use crate::device::{Device, DeviceError};

/// Simulation limits and instrumentation switches.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Per-tile cycle budget.
    pub max_cycles: u64,
    /// Chip-wide instruction budget. Tiles run a superstep each on what
    /// the chip had left when the superstep began, so a runaway superstep
    /// may overrun it by up to one budget per tile before the fault.
    pub max_instructions: u64,
    /// Tile whose instructions are traced.
    pub trace_tile: Option<u32>,
    /// Most trace entries kept.
    pub trace_limit: usize,
    /// Record every tile's timeline ([`Profile::timelines`]): worker
    /// launches (merged into compute sets), exchange sends and receipts.
    /// Off by default; it never changes a cycle count.
    pub record: bool,
    /// Bytes the recording may hold: at the first sync past them it stops
    /// and [`Profile::truncation`] says where (see `recorder.rs`, "The
    /// limit"); [`DEFAULT_RECORD_LIMIT`] by default.
    pub record_limit: u64,
    /// Host threads that simulate the tiles between syncs (`None`:
    /// rayon's global pool, `RAYON_NUM_THREADS` or the machine's available
    /// parallelism). Every count gives the same results, cycles, faults
    /// and profile. The default is [`SIM_THREADS_ENV`] when set.
    pub threads: Option<NonZeroUsize>,
}

/// [`SimConfig::record_limit`]'s default: 1 GiB, 5 to 9 times what
/// so400m's whole model is estimated to need (110 to 220 MB: 4.2 MB of
/// records per layer, measured on its blocks, and up to as much again of
/// vectors' spare capacity); siglip-small's whole model needs 10 MB.
pub const DEFAULT_RECORD_LIMIT: u64 = 1 << 30;

/// The environment variable that sets [`SimConfig::threads`]'s default
/// (`ipu-run` and `ipu-bench` take `--sim-threads` as well).
pub const SIM_THREADS_ENV: &str = "IPUC_SIM_THREADS";

/// The thread count [`SIM_THREADS_ENV`] asks for, if it holds one.
fn threads_from_env() -> Option<NonZeroUsize> {
    let v = std::env::var(SIM_THREADS_ENV).ok()?;
    let n = v.trim().parse().ok();
    if n.is_none() {
        tracing::warn!("{SIM_THREADS_ENV}={v:?} is not a positive thread count: ignored");
    }
    n
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            max_cycles: 1 << 40,
            max_instructions: 1 << 40,
            trace_tile: None,
            trace_limit: 100_000,
            record: false,
            record_limit: DEFAULT_RECORD_LIMIT,
            threads: threads_from_env(),
        }
    }
}

/// The simulated chip.
pub struct Simulator {
    machine: MachineModel,
    config: SimConfig,
    tiles: Vec<Tile>,
    exe: Option<Executable>,
    profile: Option<Profile>,
    /// Host bytes staged for host-to-device streams, by stream name.
    staged: BTreeMap<String, Vec<u8>>,
    /// What the last run's device-to-host streams delivered.
    delivered: BTreeMap<String, Vec<u8>>,
    /// The host threads that run the tiles, started by the first load.
    threads: Option<TileThreads>,
    /// Where the last run's recording stopped.
    truncation: Option<Truncation>,
}

impl Simulator {
    /// A simulator of `machine`.
    pub fn new(machine: MachineModel, config: SimConfig) -> Self {
        Simulator {
            machine,
            config,
            tiles: Vec::new(),
            exe: None,
            profile: None,
            staged: BTreeMap::new(),
            delivered: BTreeMap::new(),
            threads: None,
            truncation: None,
        }
    }

    /// The machine.
    pub fn machine(&self) -> &MachineModel {
        &self.machine
    }

    /// The loaded executable's pieces of tensor `name`, and the whole
    /// tensor's size in bytes.
    fn tensor_pieces(&self, name: &str) -> Result<(Vec<TensorBinding>, u64), DeviceError> {
        let exe = self.exe.as_ref().ok_or(DeviceError::NotLoaded)?;
        let pieces: Vec<_> = exe
            .tensors
            .iter()
            .filter(|b| b.name == name)
            .cloned()
            .collect();
        let first = pieces
            .first()
            .ok_or_else(|| DeviceError::UnknownTensor(name.into()))?;
        let bytes = first.shape.iter().product::<u64>() * u64::from(first.dtype.size());
        Ok((pieces, bytes))
    }

    fn tile_index(&self, id: u32) -> Option<usize> {
        self.tiles.binary_search_by_key(&id, |t| t.id).ok()
    }

    /// [`Self::tile_index`] of a tile that memory is read or written on: one
    /// without a program is a load error.
    fn programmed_tile(&self, tile: u32) -> Result<usize, DeviceError> {
        self.tile_index(tile)
            .ok_or_else(|| DeviceError::Load(format!("tile {tile} has no program")))
    }

    /// Writes raw bytes at a tile address.
    pub fn write_memory(&mut self, tile: u32, addr: u32, bytes: &[u8]) -> Result<(), DeviceError> {
        let i = self.programmed_tile(tile)?;
        self.tiles[i]
            .write_bytes(addr, bytes)
            .map_err(DeviceError::Load)
    }

    /// Reads raw bytes at a tile address.
    pub fn read_memory(&self, tile: u32, addr: u32, len: u32) -> Result<Vec<u8>, DeviceError> {
        let i = self.programmed_tile(tile)?;
        self.tiles[i]
            .read_bytes(addr, len)
            .map_err(DeviceError::Load)
    }

    /// Total instructions executed in the last run.
    pub fn instructions(&self) -> u64 {
        self.tiles.iter().map(|t| t.instructions).sum()
    }

    fn run_chip(&mut self) -> Result<(), Fault> {
        let threads = started(&mut self.threads, &self.config);
        self.truncation = None;
        for t in &mut self.tiles {
            t.reset();
            t.trace = (Some(t.id) == self.config.trace_tile).then(Vec::new);
            t.trace_limit = self.config.trace_limit;
            t.recorder = self
                .config
                .record
                .then(|| recorder::TileRecorder::new(t.id, t.sections.clone()));
            start_superstep(t);
        }
        let latency = u64::from(self.machine.sync_latency);
        let max_cycles = self.config.max_cycles;
        loop {
            // Every tile runs its superstep, whichever faults, so that what
            // the run leaves behind does not depend on the thread count;
            // the fault reported is the lowest-numbered tile's. A tile
            // that stops at a fence runs on once the exchange so far is
            // resolved; the others wait (parked) at the sync meanwhile.
            let mut arrivals: Vec<(usize, u64)>;
            loop {
                let executed: u64 = self.tiles.iter().map(|t| t.instructions).sum();
                let budget = self.config.max_instructions.saturating_sub(executed);
                let stops = threads.map(&mut self.tiles, |t| run_superstep(t, max_cycles, budget));
                arrivals = Vec::new();
                let mut fenced = false;
                for (i, stop) in stops.into_iter().enumerate() {
                    match stop? {
                        Some(TileStop::Sync(arrival)) => arrivals.push((i, arrival)),
                        Some(TileStop::Fence(_)) => fenced = true,
                        Some(TileStop::Done) | None => {}
                    }
                }
                if !fenced {
                    break;
                }
                exchange::resolve(
                    &mut self.tiles,
                    &self.machine,
                    threads,
                    exchange::Closing::Fences,
                )?;
            }
            // The closing sync releases `sync_latency` after the last arrival.
            let release = arrivals.iter().map(|a| a.1).max().map(|a| a + latency);
            exchange::resolve(
                &mut self.tiles,
                &self.machine,
                threads,
                exchange::Closing::Sync(release),
            )?;
            if arrivals.is_empty() {
                return Ok(());
            }
            if let Some(done) = self.tiles.iter().find(|t| t.done) {
                let (i, _) = arrivals[0];
                let t = &self.tiles[i];
                return Err(t.fault(
                    0,
                    FaultKind::Deadlock(format!(
                        "tile {} waits at an internal sync that tile {} (finished) will never join",
                        t.id, done.id
                    )),
                ));
            }
            let release = release.unwrap_or(0);
            for (i, _) in arrivals {
                let t = &mut self.tiles[i];
                t.parked = None;
                t.fenced_at = None;
                // A tile that announced its arrival with `sans` may reach
                // its `sync` after the release and then does not wait.
                let at_sync = t.cycle - 1;
                let resume = release.max(t.cycle);
                end_superstep(t, at_sync, resume - at_sync);
                t.cycle = resume;
                t.ctx[0].state = CtxState::Running;
                t.ctx[0].ready_at = resume;
                start_superstep(t);
            }
            limit_recording(&mut self.tiles, &self.config, &mut self.truncation, release);
        }
    }

    /// The last run's profile, leaving none (so the recorded timelines
    /// move rather than copy).
    pub fn take_profile(&mut self) -> Option<Profile> {
        self.profile.take()
    }

    fn build_profile(&mut self, host_steps: Vec<HostStep>) -> Profile {
        let held = recorded_bytes(&self.tiles);
        let timelines: Vec<TileTimeline> = self
            .tiles
            .iter_mut()
            .filter_map(|t| t.recorder.take().map(|mut r| r.take()))
            .collect();
        if self.config.record {
            let count = |f: fn(&TileTimeline) -> usize| timelines.iter().map(f).sum::<usize>();
            tracing::debug!(
                "recorded {} tiles in {held} bytes: {} compute sets ({} launches), {} sends, {} receipts{}",
                timelines.len(),
                count(|t| t.compute_sets.len()),
                timelines
                    .iter()
                    .flat_map(|t| &t.compute_sets)
                    .map(|s| u64::from(s.launches))
                    .sum::<u64>(),
                count(|t| t.sends.len()),
                count(|t| t.received.len()),
                self.truncation.map_or(String::new(), |c| format!(
                    "; truncated from superstep {} (cycle {}), {} bytes held over a limit of {}",
                    c.superstep, c.cycle, c.held_bytes, c.limit_bytes
                )),
            );
        }
        let trace = self
            .tiles
            .iter()
            .find_map(|t| t.trace.clone())
            .unwrap_or_default();
        let total_cycles = self.tiles.iter().map(|t| t.cycle).max().unwrap_or(0);
        let host_cycles = host_steps.iter().map(|s| s.cycles).sum();
        Profile {
            tiles: self
                .tiles
                .iter()
                .map(|t| TileProfile {
                    tile: t.id,
                    supersteps: t.supersteps.clone(),
                    instructions: t.instructions,
                    supervisor_issues: t.supervisor_issues,
                    worker_issues: t.worker_issues,
                    incoming_words_during_compute: t.incoming_during_compute,
                    end_cycle: t.cycle,
                })
                .collect(),
            total_cycles,
            host_cycles,
            run_cycles: total_cycles + host_cycles,
            host_steps,
            trace,
            timelines,
            truncation: self.truncation,
        }
    }
}

/// What every tile's recorder holds, in bytes.
fn recorded_bytes(tiles: &[Tile]) -> u64 {
    tiles
        .iter()
        .filter_map(|t| t.recorder.as_ref().map(|r| r.held_bytes()))
        .sum()
}

/// At a sync released at `release`: past [`SimConfig::record_limit`],
/// the recorders record nothing from the next superstep on.
fn limit_recording(
    tiles: &mut [Tile],
    config: &SimConfig,
    truncation: &mut Option<Truncation>,
    release: u64,
) {
    if !config.record || truncation.is_some() {
        return;
    }
    let held = recorded_bytes(tiles);
    if held <= config.record_limit {
        return;
    }
    let superstep = tiles.iter().map(|t| t.supersteps.len()).max().unwrap_or(0) as u32;
    for r in tiles.iter_mut().filter_map(|t| t.recorder.as_deref_mut()) {
        r.stop();
    }
    tracing::warn!(
        "the profile's recording holds {held} bytes, over its limit of {} bytes: it records nothing from superstep {superstep} (cycle {release}) on, where the profile keeps only each superstep's cycles (raise the limit, `ipu-run --profile-limit MIB`, to record the whole run)",
        config.record_limit,
    );
    *truncation = Some(Truncation {
        superstep,
        cycle: release,
        limit_bytes: config.record_limit,
        held_bytes: held,
    });
}

/// The simulator's threads, started on first use as `config` asks.
fn started<'a>(threads: &'a mut Option<TileThreads>, config: &SimConfig) -> &'a TileThreads {
    threads.get_or_insert_with(|| TileThreads::new(config.threads))
}

/// Runs tile `t` to the end of its superstep, or to its next fence, with
/// `budget` instructions: where it stopped (`None` if it had finished).
/// A tile parked at the sync stays there.
fn run_superstep(
    t: &mut Tile,
    max_cycles: u64,
    mut budget: u64,
) -> Result<Option<TileStop>, Fault> {
    if t.done {
        return Ok(None);
    }
    if let Some(arrival) = t.parked {
        return Ok(Some(TileStop::Sync(arrival)));
    }
    let stop = t.run(max_cycles, &mut budget)?;
    match stop {
        TileStop::Sync(arrival) => t.parked = Some(arrival),
        TileStop::Done => {
            let cycle = t.cycle;
            end_superstep(t, cycle, 0);
        }
        TileStop::Fence(_) => {}
    }
    Ok(Some(stop))
}

fn start_superstep(t: &mut Tile) {
    t.step_start = t.cycle;
    t.step_exchange = 0;
    t.step_exchange_end = 0;
}

fn end_superstep(t: &mut Tile, arrival: u64, wait: u64) {
    if let Some(r) = t.recorder.as_deref_mut() {
        r.superstep_ended();
    }
    let active = arrival.saturating_sub(t.step_start);
    let exchange = t.step_exchange.min(active);
    let exchange_until = t.step_exchange_end.saturating_sub(t.step_start).min(active);
    t.supersteps.push(SuperstepCycles {
        compute: active - exchange,
        exchange,
        sync_wait: wait,
        exchange_until,
    });
}

impl Device for Simulator {
    fn load(&mut self, exe: &Executable) -> Result<(), DeviceError> {
        exe.validate()
            .map_err(|e| DeviceError::Load(e.to_string()))?;
        if exe.machine != self.machine.name {
            return Err(DeviceError::Load(format!(
                "executable is for machine `{}`, simulator models `{}`",
                exe.machine, self.machine.name
            )));
        }
        // Tiles decode their images on the simulator's threads; the first
        // error in tile order is reported.
        let threads = started(&mut self.threads, &self.config);
        let machine = &self.machine;
        let mut programs: Vec<&ipuc_ipu_arch::TileProgram> = exe.tiles.iter().collect();
        let tiles = threads
            .map(&mut programs, |tp| {
                if tp.tile >= machine.tiles {
                    return Err(DeviceError::Load(format!(
                        "tile {} does not exist (the chip has {})",
                        tp.tile, machine.tiles
                    )));
                }
                Tile::new(tp.tile, &tp.image, machine)
                    .map_err(|e| DeviceError::Load(format!("tile {}: {e}", tp.tile)))
            })
            .into_iter()
            .collect::<Result<Vec<Tile>, DeviceError>>()?;
        self.tiles = tiles;
        for b in &exe.tensors {
            let i = self.tile_index(b.tile).ok_or_else(|| {
                DeviceError::Load(format!(
                    "tensor `{}` is bound to tile {}, which has no program",
                    b.name, b.tile
                ))
            })?;
            let t = &self.tiles[i];
            if b.address < t.base || u64::from(b.address) + u64::from(b.size) > u64::from(t.end) {
                return Err(DeviceError::Load(format!(
                    "tensor `{}` on tile {} at 0x{:x} (+{}) is outside tile memory",
                    b.name, b.tile, b.address, b.size
                )));
            }
        }
        // The tiles hold their images decoded: keep the rest.
        self.exe = Some(Executable {
            machine: exe.machine.clone(),
            tiles: Vec::new(),
            tensors: exe.tensors.clone(),
            streams: exe.streams.clone(),
        });
        self.profile = None;
        self.staged.clear();
        self.delivered.clear();
        Ok(())
    }

    fn write_tensor(&mut self, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        let (pieces, expected) = self.tensor_pieces(name)?;
        if bytes.len() as u64 != expected {
            return Err(DeviceError::SizeMismatch {
                name: name.into(),
                expected,
                got: bytes.len() as u64,
            });
        }
        for b in pieces {
            let off = (b.element_offset * u64::from(b.dtype.size())) as usize;
            let i = self.tile_index(b.tile).ok_or(DeviceError::NotLoaded)?;
            self.tiles[i]
                .write_bytes(b.address, &bytes[off..off + b.size as usize])
                .map_err(DeviceError::Load)?;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), DeviceError> {
        if self.exe.is_none() {
            return Err(DeviceError::NotLoaded);
        }
        self.delivered.clear();
        let mut steps = self.run_input_streams()?;
        let result = self.run_chip();
        if result.is_ok() {
            let device = self.tiles.iter().map(|t| t.cycle).max().unwrap_or(0);
            let input: u64 = steps.iter().map(|s| s.cycles).sum();
            steps.extend(self.run_output_streams(input + device)?);
        }
        self.profile = Some(self.build_profile(steps));
        result.map_err(|f| DeviceError::Fault(Box::new(f)))
    }

    fn read_tensor(&mut self, name: &str) -> Result<Vec<u8>, DeviceError> {
        let (pieces, total) = self.tensor_pieces(name)?;
        let mut out = vec![0u8; total as usize];
        for b in pieces {
            let off = (b.element_offset * u64::from(b.dtype.size())) as usize;
            let i = self.tile_index(b.tile).ok_or(DeviceError::NotLoaded)?;
            let data = self.tiles[i]
                .read_bytes(b.address, b.size)
                .map_err(DeviceError::Load)?;
            out[off..off + data.len()].copy_from_slice(&data);
        }
        Ok(out)
    }

    fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    fn write_stream(&mut self, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        self.stage_input(name, bytes)
    }

    fn read_stream(&self, name: &str) -> Result<Vec<u8>, DeviceError> {
        self.delivered_output(name)
    }
}
