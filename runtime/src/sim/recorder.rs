//! The timeline recorder behind `ipu-run --profile`: when
//! [`super::SimConfig::record`] is on, each tile keeps, in cycles of its own
//! clock, its worker launches merged into compute sets, its exchange sends
//! and the words it received, per superstep. Each superstep's start, sync
//! arrival and release are the simulator's own per-superstep counters
//! ([`super::TileProfile::supersteps`], kept with or without a recording):
//! a superstep starts where the one before it was released (the first at
//! cycle 0), reaches its sync after its compute and exchange cycles and is
//! released after its sync wait.
//!
//! The recorder only observes: the simulator calls it where it already
//! knows these facts (a worker started or exited, a superstep closed, an
//! exchange was resolved), never reads its state back, and with recording
//! off each hook is one test of an `Option` that is `None`. Cycle counts
//! are therefore the same with and without it (tested in `tests/sim_recorder.rs`).
//!
//! # What it keeps, and how much
//!
//! A profile names a launch by the image section its entry lies in (the
//! codelet's worker code) and the section its vertex base lies in (the
//! instance's vertex state), and shows per superstep one span per codelet
//! instance and one per tile's sends. The recorder keeps that much, not
//! one record per launch or per run of sent words:
//!
//! - a [`ComputeSet`] (40 bytes) per superstep, entry section and vertex
//!   section: its launches merged (first start, last exit, launches,
//!   worker cycles). A GEMM vertex gives each AMP launch its own vertex
//!   base, so launches are many: siglip-small's whole model (1,423 tiles,
//!   277,704 cycles) makes 2,124,504, which were 68 MB as 32-byte
//!   records per launch (89 MB allocated) and are 122,188 compute sets
//!   (4.9 MB); so400m's MLP and attention blocks at FP8 make 1.02 M and
//!   2.02 M launches in 38,006 and 48,058 compute sets, about 83 M
//!   launches for its 27 layers (2.7 GB per launch, copied twice more on
//!   the way to the profile: the run that aborted under 21 GB) against
//!   2.3 M compute sets (93 MB);
//! - a [`SendSpan`] (32 bytes) per superstep that sent, a [`Receipt`]
//!   (8 bytes) per superstep that received.
//!
//! Cycles stay `u64` (absolute): offsets from the superstep's start in
//! `u32` would save 8 bytes a compute set but need a fallback for a launch
//! that spans a sync or a superstep longer than 2^32 cycles.
//!
//! # The limit
//!
//! The records grow with the run's supersteps (a loop's every turn adds
//! its compute sets again), so [`super::SimConfig::record_limit`] bounds
//! them: at each chip-wide sync the simulator adds up what every tile's
//! recorder holds (allocated bytes, see [`TileRecorder::held_bytes`]) and,
//! once that is over the limit, every tile's recorder records nothing from
//! the next superstep on and gives back its vectors' spare capacity. A
//! recording therefore holds at most the limit and what one superstep
//! added. The profile keeps every superstep's cycles (the simulator's
//! counters); [`Truncation`] in [`super::Profile::truncation`] says where
//! the compute sets, sends and receipts end, and the simulator logs a
//! warning. The cut is between two supersteps on every tile at once, so
//! it does not depend on how many host threads ran the tiles.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::tile::SentWord;

/// The worker launches of one superstep on one tile whose entries lie in
/// one section of the tile's image and whose vertex bases lie in one
/// section (or outside every section), merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputeSet {
    /// Superstep they exited in (0-based).
    pub superstep: u32,
    /// How many launches.
    pub launches: u32,
    /// The first launch's entry address (its worker code's first
    /// instruction); the others' lie in the same section.
    pub entry: u32,
    /// The first launch's vertex base (`$mvertex_base`); the others' lie
    /// in the same section, or all outside every section.
    pub vertex: u32,
    /// Cycle of the first `run`/`runall` that started one.
    pub start: u64,
    /// Cycle of the last `exitz`/`exitnz`.
    pub end: u64,
    /// The launches' run times (exit - start), summed.
    pub worker_cycles: u64,
}

/// A superstep's exchange sends on one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendSpan {
    /// Superstep (0-based).
    pub superstep: u32,
    /// Cycle the first word left.
    pub start: u64,
    /// Cycle after the last word left.
    pub end: u64,
    /// Words sent.
    pub words: u64,
}

/// The words a superstep's exchange delivered to one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// Superstep (0-based).
    pub superstep: u32,
    /// Words received.
    pub words: u32,
}

/// What one tile did over a run, as recorded: nothing from
/// [`Truncation::superstep`] on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileTimeline {
    /// Tile number.
    pub tile: u32,
    /// Compute sets by superstep, each superstep's in the order of their
    /// first launch's exit.
    pub compute_sets: Vec<ComputeSet>,
    /// Sends, one per superstep that sent, in superstep order.
    pub sends: Vec<SendSpan>,
    /// Receipts, one per superstep that delivered words, in superstep order.
    pub received: Vec<Receipt>,
}

/// Where a recording over [`super::SimConfig::record_limit`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncation {
    /// The first superstep not recorded.
    pub superstep: u32,
    /// Its start: the release of the sync before it.
    pub cycle: u64,
    /// The limit, in bytes.
    pub limit_bytes: u64,
    /// What the recorders held at that sync, in bytes.
    pub held_bytes: u64,
}

/// No section: the key of an address outside every section.
const NO_SECTION: u32 = u32::MAX;

/// A tile image's sections as address ranges, to name the section an
/// address lies in as `TileImage::section_at` does (the first in image
/// order that holds it).
#[derive(Debug, Default)]
pub(super) struct Sections {
    /// `[start, end)` per section, in image order.
    ranges: Vec<(u32, u32)>,
    /// The non-empty ranges with their index, when they are in address
    /// order without overlap (as an image lays them out), so that a binary
    /// search finds the one holding an address; else `None`.
    sorted: Option<Vec<(u32, u32, u32)>>,
}

impl Sections {
    /// The ranges `[start, end)` of an image's sections, in image order.
    pub(super) fn new(ranges: Vec<(u32, u32)>) -> Arc<Self> {
        let nonempty: Vec<(u32, u32, u32)> = ranges
            .iter()
            .enumerate()
            .filter(|(_, (start, end))| start < end)
            .map(|(i, &(start, end))| (start, end, i as u32))
            .collect();
        let disjoint = nonempty.windows(2).all(|w| w[0].1 <= w[1].0);
        Arc::new(Sections {
            ranges,
            sorted: disjoint.then_some(nonempty),
        })
    }

    /// The index of the section `address` lies in, or [`NO_SECTION`].
    fn of(&self, address: u32) -> u32 {
        match &self.sorted {
            Some(sorted) => {
                let i = sorted.partition_point(|r| r.0 <= address);
                match i.checked_sub(1).map(|j| sorted[j]) {
                    Some((_, end, index)) if address < end => index,
                    _ => NO_SECTION,
                }
            }
            None => self
                .ranges
                .iter()
                .position(|&(start, end)| start <= address && address < end)
                .map_or(NO_SECTION, |i| i as u32),
        }
    }
}

/// A tile's recorder while it runs: its timeline so far, the launches
/// still running by worker, and the keys of the current superstep's
/// compute sets.
#[derive(Debug)]
pub(super) struct TileRecorder {
    timeline: TileTimeline,
    sections: Arc<Sections>,
    /// The current superstep.
    superstep: u32,
    /// Per worker context: entry, vertex base, start cycle.
    running: [Option<(u32, u32, u64)>; 6],
    /// Index in `timeline.compute_sets` of the current superstep's first.
    step_first: usize,
    /// (entry section, vertex section) of the current superstep's sets,
    /// in the same order.
    step_keys: Vec<(u32, u32)>,
    /// Whether it still records (the limit not reached).
    on: bool,
}

impl TileRecorder {
    /// A recorder for tile `tile`, whose image has `sections`.
    pub(super) fn new(tile: u32, sections: Arc<Sections>) -> Box<Self> {
        Box::new(TileRecorder {
            timeline: TileTimeline {
                tile,
                ..Default::default()
            },
            sections,
            superstep: 0,
            running: [None; 6],
            step_first: 0,
            step_keys: Vec::new(),
            on: true,
        })
    }

    /// Worker context `context` (1..=6) started at `entry` with vertex
    /// base `vertex` at `cycle`.
    pub(super) fn worker_started(&mut self, context: usize, entry: u32, vertex: u32, cycle: u64) {
        if let Some(slot) = self.running.get_mut(context.wrapping_sub(1)) {
            *slot = Some((entry, vertex, cycle));
        }
    }

    /// Worker context `context` exited at `cycle`.
    pub(super) fn worker_exited(&mut self, context: usize, cycle: u64) {
        let Some(slot) = self.running.get_mut(context.wrapping_sub(1)) else {
            return;
        };
        let (true, Some((entry, vertex, start))) = (self.on, slot.take()) else {
            return;
        };
        let key = (self.sections.of(entry), self.sections.of(vertex));
        let run = cycle.saturating_sub(start);
        // The latest set is the likeliest: a codelet's launches come in a row.
        match self.step_keys.iter().rposition(|k| *k == key) {
            Some(i) => {
                let set = &mut self.timeline.compute_sets[self.step_first + i];
                set.launches += 1;
                set.start = set.start.min(start);
                set.end = set.end.max(cycle);
                set.worker_cycles += run;
            }
            None => {
                self.step_keys.push(key);
                self.timeline.compute_sets.push(ComputeSet {
                    superstep: self.superstep,
                    launches: 1,
                    entry,
                    vertex,
                    start,
                    end: cycle,
                    worker_cycles: run,
                });
            }
        }
    }

    /// Superstep `k`'s sent words, in time order.
    pub(super) fn sent(&mut self, k: usize, sent: &[SentWord]) {
        let (true, Some(first), Some(last)) = (self.on, sent.first(), sent.last()) else {
            return;
        };
        self.timeline.sends.push(SendSpan {
            superstep: k as u32,
            start: first.cycle,
            end: last.cycle + 1,
            words: sent.len() as u64,
        });
    }

    /// Superstep `k` delivered `words` words to this tile.
    pub(super) fn received(&mut self, k: usize, words: u32) {
        if !self.on || words == 0 {
            return;
        }
        let superstep = k as u32;
        match self.timeline.received.last_mut() {
            Some(r) if r.superstep == superstep => r.words = r.words.saturating_add(words),
            _ => self.timeline.received.push(Receipt { superstep, words }),
        }
    }

    /// The current superstep closed.
    pub(super) fn superstep_ended(&mut self) {
        self.superstep += 1;
        self.step_first = self.timeline.compute_sets.len();
        self.step_keys.clear();
    }

    /// Records nothing more (the limit was reached), and gives back what
    /// its vectors hold spare.
    pub(super) fn stop(&mut self) {
        self.on = false;
        self.running = [None; 6];
        self.step_keys = Vec::new();
        let t = &mut self.timeline;
        t.compute_sets.shrink_to_fit();
        t.sends.shrink_to_fit();
        t.received.shrink_to_fit();
    }

    /// Bytes this recorder holds: itself and the memory its vectors have
    /// allocated (their capacity, not only what they use).
    pub(super) fn held_bytes(&self) -> u64 {
        fn bytes<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        let t = &self.timeline;
        (std::mem::size_of::<Self>()
            + bytes(&t.compute_sets)
            + bytes(&t.sends)
            + bytes(&t.received)
            + bytes(&self.step_keys)) as u64
    }

    /// The timeline, leaving this recorder empty.
    pub(super) fn take(&mut self) -> TileTimeline {
        let tile = self.timeline.tile;
        let mut t = std::mem::replace(
            &mut self.timeline,
            TileTimeline {
                tile,
                ..Default::default()
            },
        );
        // What a finished timeline keeps for the rest of the process.
        t.compute_sets.shrink_to_fit();
        t.sends.shrink_to_fit();
        t.received.shrink_to_fit();
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(cycle: u64) -> SentWord {
        SentWord {
            cycle,
            word: 0,
            pc: 0,
        }
    }

    /// The section an address lies in, as a linear search in image order
    /// names it, with and without overlapping or empty sections.
    #[test]
    fn sections_name_the_range_an_address_lies_in() {
        let linear = |ranges: &[(u32, u32)], a: u32| {
            ranges
                .iter()
                .position(|&(s, e)| s <= a && a < e)
                .map_or(NO_SECTION, |i| i as u32)
        };
        for ranges in [
            vec![
                (0x100, 0x200),
                (0x200, 0x240),
                (0x300, 0x300),
                (0x300, 0x380),
            ],
            vec![(0x100, 0x200), (0x180, 0x400), (0x120, 0x130)],
            vec![],
            vec![(0x10, 0x10)],
        ] {
            let s = Sections::new(ranges.clone());
            for a in (0..0x420).step_by(8) {
                assert_eq!(s.of(a), linear(&ranges, a), "{ranges:?} at {a:#x}");
            }
        }
        assert!(Sections::new(vec![(0x100, 0x200), (0x200, 0x240)])
            .sorted
            .is_some());
        assert!(Sections::new(vec![(0x100, 0x200), (0x180, 0x240)])
            .sorted
            .is_none());
    }

    /// Launches of one entry section and vertex section in a superstep
    /// merge; another superstep or section starts a set of its own; past
    /// `stop` nothing is kept.
    #[test]
    fn launches_merge_into_compute_sets() {
        let s = Sections::new(vec![(0x1000, 0x1100), (0x2000, 0x2100), (0x2100, 0x2200)]);
        let mut r = TileRecorder::new(3, s);
        // Two workers of one instance (vertex bases 4 bytes apart), one of
        // another instance sharing the code, one outside every section.
        r.worker_started(1, 0x1000, 0x2000, 10);
        r.worker_started(2, 0x1000, 0x2004, 11);
        r.worker_started(3, 0x1004, 0x2100, 12);
        r.worker_exited(2, 30);
        r.worker_exited(1, 20);
        r.worker_exited(3, 40);
        r.worker_started(1, 0x1000, 0x9000, 41);
        r.worker_exited(1, 45);
        r.superstep_ended();
        r.worker_started(1, 0x1000, 0x2000, 70);
        r.worker_exited(1, 80);
        r.superstep_ended();
        r.stop();
        r.worker_started(1, 0x1000, 0x2000, 110);
        r.worker_exited(1, 120);
        r.sent(2, &[word(125)]);
        r.received(2, 4);
        r.superstep_ended();
        let t = r.take();
        let set = |superstep, launches, entry, vertex, start, end, worker_cycles| ComputeSet {
            superstep,
            launches,
            entry,
            vertex,
            start,
            end,
            worker_cycles,
        };
        assert_eq!(
            t.compute_sets,
            [
                set(0, 2, 0x1000, 0x2004, 10, 30, 29),
                set(0, 1, 0x1004, 0x2100, 12, 40, 28),
                set(0, 1, 0x1000, 0x9000, 41, 45, 4),
                set(1, 1, 0x1000, 0x2000, 70, 80, 10),
            ]
        );
        assert_eq!(t.tile, 3);
        assert!(t.sends.is_empty() && t.received.is_empty());
    }

    /// A superstep's sent words become one span, first word to after the
    /// last, its delivered words one receipt; a superstep that sent or
    /// received nothing has none.
    #[test]
    fn sends_and_receipts_are_one_per_superstep() {
        let mut r = TileRecorder::new(0, Sections::new(Vec::new()));
        r.sent(0, &[word(5), word(6), word(9)]);
        r.sent(1, &[]);
        r.sent(2, &[word(20)]);
        r.received(0, 0);
        r.received(1, 7);
        let t = r.take();
        assert_eq!(
            t.sends,
            [
                SendSpan {
                    superstep: 0,
                    start: 5,
                    end: 10,
                    words: 3
                },
                SendSpan {
                    superstep: 2,
                    start: 20,
                    end: 21,
                    words: 1
                },
            ]
        );
        assert_eq!(
            t.received,
            [Receipt {
                superstep: 1,
                words: 7
            }]
        );
    }
}
