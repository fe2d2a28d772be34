//! The IPU simulator: tiles run independently to a chip-wide `sync`; syncs
//! release all participants at max(arrival) + the sync latency; exchange is
//! time-deterministic (a word sent at cycle t by tile s lands at tile r at
//! t + latency(s, r) only if r's incoming mux selects s then).
//!
//! Exchange data lands in receiver memory when the superstep's exchange is
//! resolved, at the next sync: code reads received data after a sync, as
//! Poplar programs do. Only tiles with code are simulated.

mod amp;
pub mod bench;
mod decode;
mod fault;
mod host;
mod profile;
mod recorder;
pub mod testing;
mod tile;

use std::collections::BTreeMap;

use ipuc_ipu_arch::csr;
use ipuc_ipu_arch::{Executable, MachineModel, TensorBinding};

pub use fault::{Fault, FaultKind};
pub use profile::{HostStep, Profile, SuperstepCycles, TileProfile, TraceEntry};
pub use recorder::{Launch, SendSpan, StepSpan, TileTimeline};
use tile::{CtxState, Tile, TileStop, MUX_NONE};

use crate::device::{Device, DeviceError};

/// Simulation limits and instrumentation switches.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Per-tile cycle budget.
    pub max_cycles: u64,
    /// Chip-wide instruction budget.
    pub max_instructions: u64,
    /// Tile whose instructions are traced.
    pub trace_tile: Option<u32>,
    /// Most trace entries kept.
    pub trace_limit: usize,
    /// Record every tile's timeline ([`Profile::timelines`]): supersteps,
    /// worker launches, exchange sends. Off by default; it never changes
    /// a cycle count.
    pub record: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            max_cycles: 1 << 40,
            max_instructions: 1 << 40,
            trace_tile: None,
            trace_limit: 100_000,
            record: false,
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
        let mut budget = self.config.max_instructions;
        for t in &mut self.tiles {
            t.reset();
            t.trace = (Some(t.id) == self.config.trace_tile).then(Vec::new);
            t.trace_limit = self.config.trace_limit;
            t.recorder = self
                .config
                .record
                .then(|| recorder::TileRecorder::new(t.id));
            start_superstep(t);
        }
        let latency = u64::from(self.machine.sync_latency);
        loop {
            let mut arrivals: Vec<(usize, u64)> = Vec::new();
            for (i, t) in self.tiles.iter_mut().enumerate() {
                if t.done {
                    continue;
                }
                match t.run(self.config.max_cycles, &mut budget)? {
                    TileStop::Sync(a) => arrivals.push((i, a)),
                    TileStop::Done => {
                        let cyc = t.cycle;
                        end_superstep(t, cyc, 0);
                    }
                }
            }
            // The closing sync releases `sync_latency` after the last arrival.
            let release = arrivals.iter().map(|a| a.1).max().map(|a| a + latency);
            self.resolve_exchange(release)?;
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
        }
    }

    /// Delivers this superstep's exchange words, reporting lost, late,
    /// surplus, unexpected and missing data. `release` is the closing sync's
    /// release (`None` when every tile finished instead): a word must arrive
    /// by then, or by its receiver's exit.
    fn resolve_exchange(&mut self, release: Option<u64>) -> Result<(), Fault> {
        // Which receivers ever select each sender.
        let mut listeners: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (r, t) in self.tiles.iter().enumerate() {
            let mut muxes = vec![t.xch.mux_at_start];
            muxes.extend(
                t.xch
                    .events
                    .iter()
                    .filter(|e| e.1 == csr::INCOMING_MUX)
                    .map(|e| e.2),
            );
            muxes.sort_unstable();
            muxes.dedup();
            for m in muxes.into_iter().filter(|&m| m != MUX_NONE) {
                listeners.entry(m).or_default().push(r);
            }
        }
        // Each tile's mux over the superstep, searched by cycle per word
        // (a scan of its events per word made the exchange half of a large
        // program's simulation time).
        let timelines: Vec<MuxTimeline> = self.tiles.iter().map(MuxTimeline::of).collect();
        // (receiver) -> [(arrival, word)]
        let mut deliveries: Vec<Vec<(u64, u32)>> = vec![Vec::new(); self.tiles.len()];
        for t in &self.tiles {
            for sw in &t.xch.sent {
                let mut taken = false;
                for &r in listeners.get(&t.id).map(|v| v.as_slice()).unwrap_or(&[]) {
                    let rt = &self.tiles[r];
                    let arrival = sw.cycle + self.machine.exchange_latency(t.id, rt.id);
                    if timelines[r].at(arrival) == t.id {
                        deliveries[r].push((arrival, sw.word));
                        taken = true;
                    }
                }
                if !taken {
                    let words = t.xch.sent.iter().filter(|w| w.cycle >= sw.cycle).count() as u32;
                    let mut f = t.fault(
                        0,
                        FaultKind::LostExchangeData {
                            sent_at: sw.cycle,
                            words,
                        },
                    );
                    f.pc = sw.pc;
                    f.instruction = t.instr_text_at(sw.pc);
                    f.cycle = sw.cycle;
                    return Err(f);
                }
            }
        }
        for (r, mut words) in deliveries.into_iter().enumerate() {
            words.sort_by_key(|w| w.0);
            let t = &mut self.tiles[r];
            let events_of = |n: u8| -> Vec<(u64, u32)> {
                t.xch
                    .events
                    .iter()
                    .filter(|e| e.1 == n)
                    .map(|e| (e.0, e.2))
                    .collect()
            };
            let (bases, deltas) = (
                events_of(csr::INCOMING_BASE),
                events_of(csr::INCOMING_DELTA),
            );
            let counts = events_of(csr::INCOMING_DCOUNT);
            let closing = if t.done {
                t.cycle
            } else {
                release.unwrap_or(t.cycle)
            };
            let (mut ptr, mut delta) = (t.xch.base_at_start, t.xch.delta_at_start);
            let (mut bi, mut di, mut ci) = (0, 0, 0);
            let mut received = 0u32;
            // `$INCOMING_DCOUNT` arms the receive window for this superstep
            // and counts its words down.
            let mut remaining: Option<u32> = None;
            for (arrival, word) in words {
                while bi < bases.len() && bases[bi].0 <= arrival {
                    ptr = bases[bi].1;
                    bi += 1;
                }
                while di < deltas.len() && deltas[di].0 <= arrival {
                    delta = deltas[di].1;
                    di += 1;
                }
                while ci < counts.len() && counts[ci].0 <= arrival {
                    remaining = Some(counts[ci].1);
                    ci += 1;
                }
                let kind = if arrival > closing {
                    Some(FaultKind::LateExchangeData {
                        arrived_at: arrival,
                        closing,
                    })
                } else {
                    match remaining {
                        None => Some(FaultKind::UnarmedExchangeWindow {
                            arrived_at: arrival,
                        }),
                        Some(0) => Some(FaultKind::SurplusExchangeData {
                            expected: received,
                            arrived_at: arrival,
                        }),
                        Some(n) => {
                            remaining = Some(n - 1);
                            None
                        }
                    }
                };
                if let Some(kind) = kind {
                    let mut f = t.fault(0, kind);
                    f.cycle = arrival;
                    return Err(f);
                }
                let addr = ptr;
                let result = if addr % 4 != 0 {
                    Err(FaultKind::MisalignedAccess {
                        address: addr,
                        size: 4,
                    })
                } else {
                    t.write_bytes(addr, &word.to_le_bytes())
                        .map_err(|_| FaultKind::OutOfRange {
                            address: addr,
                            size: 4,
                        })
                };
                if let Err(e) = result {
                    let mut f = t.fault(0, e);
                    f.cycle = arrival;
                    return Err(f);
                }
                received += 1;
                if t.worker_ran_at(arrival) {
                    t.incoming_during_compute += 1;
                }
                ptr = addr.wrapping_add(4 * delta.max(1));
            }
            if let Some(last) = bases.get(bi..).and_then(|rest| rest.last()) {
                ptr = last.1;
            }
            t.xch.incoming_base = ptr;
            if let Some(last) = counts.get(ci..).and_then(|rest| rest.last()) {
                remaining = Some(last.1);
            }
            if let Some(missing @ 1..) = remaining {
                let mut f = t.fault(
                    0,
                    FaultKind::MissingExchangeData {
                        expected: received + missing,
                        received,
                    },
                );
                f.cycle = t.cycle;
                return Err(f);
            }
            t.xch.incoming_dcount = 0;
            if let Some(rec) = t.recorder.as_deref_mut() {
                rec.received(t.supersteps.len() - usize::from(t.done), received);
            }
        }
        for t in &mut self.tiles {
            if let Some(r) = t.recorder.as_deref_mut() {
                // A tile that finished has closed its last superstep already.
                let k = t.supersteps.len() - usize::from(t.done);
                r.sent(k, &t.xch.sent);
            }
            t.xch.sent.clear();
            t.xch.events.clear();
            t.xch.mux_at_start = t.xch.incoming_mux;
            t.xch.base_at_start = t.xch.incoming_base;
            t.xch.delta_at_start = t.xch.incoming_delta;
            t.busy.clear();
        }
        Ok(())
    }

    fn build_profile(&self, host_steps: Vec<HostStep>) -> Profile {
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
            timelines: self
                .tiles
                .iter()
                .filter_map(|t| t.recorder.as_ref().map(|r| r.finish()))
                .collect(),
        }
    }
}

fn start_superstep(t: &mut Tile) {
    t.step_start = t.cycle;
    t.step_exchange = 0;
}

fn end_superstep(t: &mut Tile, arrival: u64, wait: u64) {
    if let Some(r) = t.recorder.as_deref_mut() {
        r.superstep_ended(recorder::StepSpan {
            start: t.step_start,
            sync: arrival,
            release: arrival + wait,
        });
    }
    let active = arrival.saturating_sub(t.step_start);
    let exchange = t.step_exchange.min(active);
    t.supersteps.push(SuperstepCycles {
        compute: active - exchange,
        exchange,
        sync_wait: wait,
    });
}

/// The receiver's incoming mux at `cycle` (register writes take effect when they complete).
/// A tile's `$INCOMING_MUX` over a superstep: the value it started with
/// and its puts (cycle each takes effect, value) in time order.
struct MuxTimeline {
    start: u32,
    puts: Vec<(u64, u32)>,
}

impl MuxTimeline {
    fn of(t: &Tile) -> Self {
        let mut puts: Vec<(u64, u32)> = t
            .xch
            .events
            .iter()
            .filter(|e| e.1 == csr::INCOMING_MUX)
            .map(|e| (e.0, e.2))
            .collect();
        // Stable: puts taking effect in the same cycle keep their order,
        // and the last one wins.
        puts.sort_by_key(|e| e.0);
        MuxTimeline {
            start: t.xch.mux_at_start,
            puts,
        }
    }

    /// The tile the mux names at `cycle`: the latest put in effect by then.
    fn at(&self, cycle: u64) -> u32 {
        match self.puts.partition_point(|e| e.0 <= cycle) {
            0 => self.start,
            k => self.puts[k - 1].1,
        }
    }
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
        let mut tiles = Vec::with_capacity(exe.tiles.len());
        for tp in &exe.tiles {
            if tp.tile >= self.machine.tiles {
                return Err(DeviceError::Load(format!(
                    "tile {} does not exist (the chip has {})",
                    tp.tile, self.machine.tiles
                )));
            }
            tiles.push(
                Tile::new(tp.tile, tp.image.clone(), &self.machine)
                    .map_err(|e| DeviceError::Load(format!("tile {}: {e}", tp.tile)))?,
            );
        }
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
        self.exe = Some(exe.clone());
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

#[cfg(test)]
mod mux_timeline_tests {
    use super::MuxTimeline;

    /// Before any put the start value; a put counts from the cycle it takes
    /// effect; of two puts in one cycle the later one.
    #[test]
    fn the_mux_at_a_cycle_is_the_latest_put_in_effect() {
        let t = MuxTimeline {
            start: 7,
            puts: vec![(10, 1), (20, 2), (20, 3), (35, 4)],
        };
        let at: Vec<u32> = [0, 9, 10, 19, 20, 34, 35, 1000]
            .iter()
            .map(|&c| t.at(c))
            .collect();
        assert_eq!(at, [7, 7, 1, 1, 3, 3, 4, 4]);
    }
}
