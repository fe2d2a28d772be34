//! Resolving a superstep's exchange at its closing sync: which words each
//! receiver's incoming mux selected on their arrival, writing them into its
//! memory, and the faults of words lost, late, surplus, unexpected or
//! missing.
//!
//! The work is done per receiver and per interval of its mux: while the
//! mux names one sender, the words it receives are the sender's words
//! whose arrival falls in the interval, a contiguous run of the sender's
//! words (they are sent in time order), found by binary search. The cost
//! is that of the words delivered, not of every word times every tile that
//! ever listens to its sender. Receivers only write their own memory, so
//! they are resolved on the simulator's threads; faults are then reported
//! in the order a tile-by-tile resolution meets them: a lost word first
//! (lowest sender, earliest word), else the lowest receiver's.

use ipuc_ipu_arch::{csr, MachineModel};

use super::fault::{Fault, FaultKind};
use super::parallel::TileThreads;
use super::tile::{SentWord, Tile, MUX_NONE};

/// A run of a sender's words one receiver took: sender index and the
/// words `lo..hi` of what it sent.
struct Taken {
    sender: usize,
    lo: usize,
    hi: usize,
}

/// When a resolution happens, which says by when each word must arrive.
#[derive(Clone, Copy, Debug)]
pub(super) enum Closing {
    /// At the superstep's closing sync, released then (`None` when every
    /// tile finished instead): a word must arrive by the release, or by
    /// its receiver's exit.
    Sync(Option<u64>),
    /// At fences, with no sync between a tile's exchange and its next
    /// launch: a word must arrive by its receiver's fence (the launch's
    /// cycle), or by its exit; one for a receiver waiting at the sync
    /// must arrive by the release, checked when the release is known.
    Fences,
}

/// Delivers this superstep's exchange words of `tiles` (sorted by tile
/// id) sent so far, by `closing`.
pub(super) fn resolve(
    tiles: &mut [Tile],
    machine: &MachineModel,
    threads: &TileThreads,
    closing: Closing,
) -> Result<(), Fault> {
    // The sent words move out of their tiles so that receivers can be
    // written while every sender's words are read.
    let sent: Vec<Vec<SentWord>> = tiles
        .iter_mut()
        .map(|t| std::mem::take(&mut t.xch.sent))
        .collect();
    let ids: Vec<u32> = tiles.iter().map(|t| t.id).collect();
    let received = threads.map(tiles, |t| receive(t, &ids, &sent, machine, closing));
    // Which sent words some receiver took: +1 at a run's start, -1 past
    // its end, summed along the words.
    let mut cover: Vec<Vec<i32>> = sent.iter().map(|w| vec![0; w.len() + 1]).collect();
    for (runs, _) in &received {
        for r in runs {
            cover[r.sender][r.lo] += 1;
            cover[r.sender][r.hi] -= 1;
        }
    }
    for (s, words) in sent.iter().enumerate() {
        let mut takers = 0;
        for (k, sw) in words.iter().enumerate() {
            takers += cover[s][k];
            if takers == 0 {
                let t = &tiles[s];
                let lost = words.iter().filter(|w| w.cycle >= sw.cycle).count() as u32;
                let mut f = t.fault(
                    0,
                    FaultKind::LostExchangeData {
                        sent_at: sw.cycle,
                        words: lost,
                    },
                );
                f.pc = sw.pc;
                f.instruction = t.instr_text_at(sw.pc);
                f.cycle = sw.cycle;
                return Err(f);
            }
        }
    }
    for (_, delivered) in received {
        delivered?;
    }
    // Give the senders their (emptied) buffers back to fill next superstep.
    for (t, mut words) in tiles.iter_mut().zip(sent) {
        let k = closed_superstep(t);
        if let Some(r) = t.recorder.as_deref_mut() {
            r.sent(k, &words);
        }
        words.clear();
        t.xch.sent = words;
    }
    Ok(())
}

/// The runs of words receiver `t`'s mux took this superstep, and whether
/// they could be written into its memory in arrival order (a fault of
/// the delivery does not untake them); the exchange registers then start
/// the next superstep.
fn receive(
    t: &mut Tile,
    ids: &[u32],
    sent: &[Vec<SentWord>],
    machine: &MachineModel,
    closing: Closing,
) -> (Vec<Taken>, Result<(), Fault>) {
    let mut taken = Vec::new();
    let mut words: Vec<(u64, u32)> = Vec::new();
    let timeline = MuxTimeline::of(t);
    for (sender, from, to) in timeline.intervals() {
        let Ok(s) = ids.binary_search(&sender) else {
            continue;
        };
        let latency = machine.exchange_latency(sender, t.id);
        let w = &sent[s];
        let lo = w.partition_point(|w| w.cycle + latency < from);
        let hi = w.partition_point(|w| w.cycle + latency < to);
        if lo < hi {
            words.extend(w[lo..hi].iter().map(|w| (w.cycle + latency, w.word)));
            taken.push(Taken { sender: s, lo, hi });
        }
    }
    let delivered = deliver(t, &words, closing).map(|received| {
        let k = closed_superstep(t);
        if let Some(r) = t.recorder.as_deref_mut() {
            r.received(k, received);
        }
    });
    if delivered.is_ok() {
        t.xch.events.clear();
        t.xch.mux_at_start = t.xch.incoming_mux;
        t.xch.base_at_start = t.xch.incoming_base;
        t.xch.delta_at_start = t.xch.incoming_delta;
        t.busy.clear();
    }
    (taken, delivered)
}

/// The superstep whose exchange is resolved, for tile `t`'s recorder: a
/// tile that finished has closed its last superstep already.
fn closed_superstep(t: &Tile) -> usize {
    t.supersteps.len() - usize::from(t.done)
}

/// Writes `words` (arrival cycle, value; in arrival order) where receiver
/// `t`'s incoming pointer points at each arrival, checking each against
/// the receive window `$INCOMING_DCOUNT` armed and the superstep's close;
/// returns how many it wrote.
fn deliver(t: &mut Tile, words: &[(u64, u32)], when: Closing) -> Result<u32, Fault> {
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
    // A word must arrive by `closing`; at a fence, one for a tile waiting
    // at the sync is checked against the release when it is known.
    let fence = match (t.done, when, t.fenced_at) {
        (false, Closing::Fences, Some(fence)) if t.parked.is_none() => Some(fence),
        _ => None,
    };
    let (closing, deferred) = match (t.done, when, fence) {
        (true, ..) => (t.cycle, false),
        (false, Closing::Sync(release), _) => (release.unwrap_or(t.cycle), false),
        (false, Closing::Fences, Some(fence)) => (fence, false),
        (false, Closing::Fences, None) => (u64::MAX, true),
    };
    if let Some(arrival) = t.xch.unchecked_arrival.take() {
        if let (Closing::Sync(Some(release)), false) = (when, t.done) {
            if arrival > release {
                let mut f = t.fault(
                    0,
                    FaultKind::LateExchangeData {
                        arrived_at: arrival,
                        closing: release,
                    },
                );
                f.cycle = arrival;
                return Err(f);
            }
        } else {
            t.xch.unchecked_arrival = Some(arrival);
        }
    }
    let (mut ptr, mut delta) = (t.xch.base_at_start, t.xch.delta_at_start);
    let (mut bi, mut di, mut ci) = (0, 0, 0);
    let mut received = 0u32;
    // `$INCOMING_DCOUNT` arms the receive window for this superstep
    // and counts its words down.
    let mut remaining: Option<u32> = None;
    for &(arrival, word) in words {
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
            Some(match fence {
                Some(fence) => FaultKind::ExchangeDataAfterFence {
                    arrived_at: arrival,
                    fence,
                },
                None => FaultKind::LateExchangeData {
                    arrived_at: arrival,
                    closing,
                },
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
        if deferred {
            t.xch.unchecked_arrival = t.xch.unchecked_arrival.max(Some(arrival));
        }
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
    Ok(received)
}

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

    /// The intervals `(sender, from, to)` over which the mux names a
    /// sender, in time order: a register write counts from the cycle it
    /// takes effect, and of two in one cycle the later one.
    fn intervals(&self) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        let starts = std::iter::once((0, self.start)).chain(self.puts.iter().copied());
        let ends = self
            .puts
            .iter()
            .map(|p| p.0)
            .chain(std::iter::once(u64::MAX));
        starts
            .zip(ends)
            .filter(|&((from, sender), to)| sender != MUX_NONE && from < to)
            .map(|((from, sender), to)| (sender, from, to))
    }
}

#[cfg(test)]
mod tests {
    use super::{MuxTimeline, MUX_NONE};

    /// Before any put the start value; a put counts from the cycle it
    /// takes effect; of two puts in one cycle the later one; a mux naming
    /// no sender has no interval.
    #[test]
    fn the_mux_names_a_sender_from_its_put_to_the_next() {
        let t = MuxTimeline {
            start: 7,
            puts: vec![(10, 1), (20, 2), (20, 3), (35, MUX_NONE), (40, 4)],
        };
        let got: Vec<_> = t.intervals().collect();
        assert_eq!(
            got,
            [(7, 0, 10), (1, 10, 20), (3, 20, 35), (4, 40, u64::MAX)]
        );
    }
}
