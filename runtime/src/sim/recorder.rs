//! The timeline recorder behind `ipu-run --profile`: when
//! [`super::SimConfig::record`] is on, each tile keeps, in cycles of its own
//! clock, every superstep's start, sync arrival and release, every worker
//! launch (the worker, its entry address, when it started and exited),
//! every run of words its exchange port sent, and the words it received.
//!
//! The recorder only observes: the simulator calls it where it already
//! knows these facts (a worker started or exited, a superstep closed, an
//! exchange was resolved), never reads its state back, and with recording
//! off each hook is one test of an `Option` that is `None`. Cycle counts
//! are therefore the same with and without it (tested in `tests/sim_recorder.rs`).

use serde::{Deserialize, Serialize};

use super::tile::SentWord;

/// One superstep of one tile: it ran from `start`, reached its closing
/// sync at `sync` (its exit, for the last one) and went on at `release`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepSpan {
    /// First cycle of the superstep.
    pub start: u64,
    /// Cycle the tile reached the sync (or exited).
    pub sync: u64,
    /// Cycle the sync released it (`sync` for the last superstep).
    pub release: u64,
}

/// One worker's run of a codelet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Superstep it ran in (0-based).
    pub superstep: u32,
    /// Worker context, 0..=5.
    pub worker: u8,
    /// Entry address (the worker code's first instruction).
    pub entry: u32,
    /// Its vertex base (`$mvertex_base`): launches of codelet instances
    /// that share their code differ here.
    pub vertex: u32,
    /// Cycle of the `run`/`runall` that started it.
    pub start: u64,
    /// Cycle of its `exitz`/`exitnz`.
    pub end: u64,
}

/// Consecutive words the exchange port sent without a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendSpan {
    /// Superstep (0-based).
    pub superstep: u32,
    /// Cycle the first word left.
    pub start: u64,
    /// Cycle after the last word left.
    pub end: u64,
    /// Words sent.
    pub words: u32,
}

/// What one tile did over a run, as recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileTimeline {
    /// Tile number.
    pub tile: u32,
    /// Its supersteps in order.
    pub supersteps: Vec<StepSpan>,
    /// Worker launches in the order they exited.
    pub launches: Vec<Launch>,
    /// Runs of sent words in time order.
    pub sends: Vec<SendSpan>,
    /// Words received, per superstep.
    pub received_words: Vec<u64>,
}

/// A tile's recorder while it runs: its timeline so far and the launches
/// still running, by worker.
#[derive(Debug, Default)]
pub(super) struct TileRecorder {
    timeline: TileTimeline,
    running: [Option<(u32, u32, u64)>; 6],
}

impl TileRecorder {
    pub(super) fn new(tile: u32) -> Box<Self> {
        Box::new(TileRecorder {
            timeline: TileTimeline {
                tile,
                ..Default::default()
            },
            running: [None; 6],
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
        let superstep = self.timeline.supersteps.len() as u32;
        let Some(slot) = self.running.get_mut(context.wrapping_sub(1)) else {
            return;
        };
        if let Some((entry, vertex, start)) = slot.take() {
            self.timeline.launches.push(Launch {
                superstep,
                worker: (context - 1) as u8,
                entry,
                vertex,
                start,
                end: cycle,
            });
        }
    }

    /// Superstep `k`'s sent words, in time order.
    pub(super) fn sent(&mut self, k: usize, sent: &[SentWord]) {
        let superstep = k as u32;
        let mut span: Option<SendSpan> = None;
        for w in sent {
            match &mut span {
                // A word that leaves at most a cycle after the last one
                // continues the run (4 bytes take one cycle on the port).
                Some(s) if w.cycle <= s.end => {
                    s.end = w.cycle + 1;
                    s.words += 1;
                }
                _ => {
                    self.timeline.sends.extend(span.take());
                    span = Some(SendSpan {
                        superstep,
                        start: w.cycle,
                        end: w.cycle + 1,
                        words: 1,
                    });
                }
            }
        }
        self.timeline.sends.extend(span);
    }

    /// Superstep `k` delivered `words` words to this tile.
    pub(super) fn received(&mut self, k: usize, words: u32) {
        if self.timeline.received_words.len() <= k {
            self.timeline.received_words.resize(k + 1, 0);
        }
        self.timeline.received_words[k] += u64::from(words);
    }

    /// The current superstep closed.
    pub(super) fn superstep_ended(&mut self, span: StepSpan) {
        self.timeline.supersteps.push(span);
        let k = self.timeline.supersteps.len();
        if self.timeline.received_words.len() < k {
            self.timeline.received_words.resize(k, 0);
        }
    }

    pub(super) fn finish(&self) -> TileTimeline {
        self.timeline.clone()
    }
}
