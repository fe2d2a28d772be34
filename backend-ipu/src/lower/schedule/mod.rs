//! Time-multiplexed exchange: one superstep in which every receiver takes
//! words from many senders in turn, switching its incoming mux at
//! compiler-chosen cycles, and every sender multicasts pieces of its
//! memory at compiler-chosen cycles.
//!
//! The IPU's exchange carries no destination: a word a tile sends at cycle
//! t reaches receiver r at t + latency(s, r), and r keeps it only if its
//! incoming mux names s then (ipu-machine.md §4; `muxCycle = sendCycle +
//! TimeToMux(src, dst)` in hand-scheduled IPU code). [`schedule`] places
//! each [`Transfer`] in time, greedily one after another (in the order
//! given, and always the one that can start earliest next: the shorter
//! schedule wins, [`Order`]), so that
//!
//! - a sender's pieces leave one word per cycle, never overlapping its
//!   other sends;
//! - at each receiver, a transfer's first word arrives after the previous
//!   transfer's last one, and the mux switch (a `put $INCOMING_MUX`, 13
//!   cycles until it takes effect) lands between the two: after the last
//!   old word, by the first new one;
//! - a transfer continues the receiver's write pointer when its
//!   destination follows the previous one's (the pointer advances by
//!   itself), and re-points it (`put $INCOMING_BASE`) otherwise; a
//!   [`Segment`]ed transfer is re-pointed between its segments too, each
//!   put timed to take effect as its segment's first word arrives, so one
//!   transfer (one mux switch) can fill a strided destination such as a
//!   GEMM's input panels (the re-points of a run of segments a fixed
//!   stride and period apart are emitted as one loop, [`Schedule::emit`],
//!   so a tile's exchange code does not grow with the segments);
//! - each tile's supervisor does one thing at a time: its sends and its
//!   switches (and the setup of their registers) occupy disjoint cycle
//!   intervals, with delay loops in between. A tile that takes many short
//!   transfers (a switch every hundred cycles or so) and also sends would
//!   hold its receiving up for a send of a few hundred words, or the send
//!   for its receiving; the *split* orders ([`Order::split`]) lay such a
//!   send in pieces between the tile's switches (each piece a `send`
//!   run with its own address loads, a chunk cut where a piece must end),
//!   the outgoing words pausing while the tile switches its mux, where
//!   that gets the transfer's last word out sooner than waiting for a
//!   stretch long enough for the whole send.
//!
//! A sender's pieces that land one after another on the same receivers
//! are joined into one transfer first ([`coalesce`]): one mux switch for
//! the run; on request ([`schedule_joined`]) so are short pieces of the
//! same size that land a fixed stride apart ([`join_strided`]), as a
//! segmented transfer. The code stays small where the same cycles allow:
//! a wait that an inline delay loop would end in `nop`s calls the tile's
//! [`DelayRoutine`]
//! instead (two instructions; delays are most of a tile's exchange code),
//! a switch with time before it loads its registers and calls the tile's
//! [`SwitchRoutine`], which waits and puts them (four instructions where
//! the wait and the switch took six), and chunks that run on end to end
//! (`streams`) are sent from `$OUTGOING_BASE` with no `setzi` between
//! them.
//!
//! The cycles come from the machine model's issue rules, which the
//! simulator applies: in an exchange superstep no worker runs, so the
//! supervisor issues every cycle; a `setzi` result is readable
//! [`MachineModel::supervisor_result_latency`] cycles after it issues; a
//! `put` to an exchange register holds the supervisor
//! [`MachineModel::exchange_csr_put_cycles`] and takes effect then; a
//! `send` of n words issued at t moves word k at t + 1 + k and holds the
//! supervisor until t + 1 + n; a taken `brnzdec` refills for
//! [`MachineModel::branch_refill_cycles`]. The superstep starts when the
//! sync before it releases every tile in the same cycle. Every tile first
//! points its mux at no tile (the previous superstep's last sender may send
//! again) and every receiver arms `$INCOMING_DCOUNT` with all the words it
//! takes in the superstep; the simulator faults on any word that arrives
//! unarmed, unselected, in surplus or late, so a wrong cycle cannot pass
//! silently.
//!
//! Compared with poplibs: Poplar's exchange compiler chooses send and mux
//! cycles the same way but also packs several receivers' switches into
//! `$INCOMING_MUX` sequences and uses the receive side's `delta` strides;
//! here a strided destination is a segmented transfer, re-pointed by the
//! receiver's supervisor.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use ipuc_ipu_arch::MachineModel;

mod emit;
pub use emit::{delay, DelayRoutine, DelayRules, SwitchPuts, SwitchRoutine, DELAY_ROUTINE};

/// A contiguous piece of a sender's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Address, 4-byte aligned.
    pub address: u32,
    /// Words (at most [`super::exchange::MAX_SEND_WORDS`]).
    pub words: u32,
}

/// Words a sender sends (its chunks, in order) to receivers, each of which
/// writes them from its own address: contiguously, or in [`Segment`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The sending tile.
    pub sender: u32,
    /// The sender's pieces, sent in order.
    pub chunks: Vec<Chunk>,
    /// (tile, address) of every receiver (a tile may receive its own words).
    pub receivers: Vec<(u32, u32)>,
    /// How the receivers lay the words out (`None`: contiguously).
    pub segment: Option<Segment>,
}

/// A strided destination: every `words` words the receivers' write pointer
/// jumps to the previous segment's start plus `stride` bytes (a `put
/// $INCOMING_BASE` timed to take effect as the segment's first word
/// arrives). Segments start on chunk boundaries ([`Transfer::check`]), so
/// the sender's `send` between them leaves the receiver a cycle of slack;
/// the sender spaces segments at least `Rules::segment_cycles` apart,
/// pausing after a short one, so that the receiver can load and put the
/// next base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Words per segment (the last may be shorter).
    pub words: u32,
    /// Bytes from one segment's start to the next's.
    pub stride: u32,
}

impl Transfer {
    /// Words sent.
    pub fn words(&self) -> u32 {
        self.chunks.iter().map(|c| c.words).sum()
    }

    /// The receiver's address of word `w`, for a receiver writing from
    /// `addr`.
    pub fn word_address(&self, addr: u32, w: u32) -> u32 {
        match self.segment {
            None => addr + 4 * w,
            Some(s) => addr + (w / s.words) * s.stride + 4 * (w % s.words),
        }
    }

    /// Index of the chunk where each segment after the first starts.
    fn segment_starts(&self) -> Vec<usize> {
        let Some(seg) = self.segment else {
            return Vec::new();
        };
        let mut starts = Vec::new();
        let mut w = 0;
        for (i, c) in self.chunks.iter().enumerate() {
            if w > 0 && w % seg.words == 0 {
                starts.push(i);
            }
            w += c.words;
        }
        starts
    }

    /// Checks that every segment starts on a chunk boundary and that the
    /// sender is not among the receivers (its supervisor, busy sending,
    /// could not re-point).
    pub fn check(&self) -> Result<(), String> {
        let Some(seg) = self.segment else {
            return Ok(());
        };
        if self.receivers.iter().any(|&(r, _)| r == self.sender) {
            return Err(format!(
                "tile {} receives its own segmented transfer",
                self.sender
            ));
        }
        let mut w = 0;
        for c in self.chunks.iter().filter(|c| c.words > 0) {
            if w / seg.words != (w + c.words - 1) / seg.words {
                return Err(format!(
                    "a chunk of {} words at word {w} crosses a segment boundary (segments of {} words)",
                    c.words, seg.words
                ));
            }
            w += c.words;
        }
        Ok(())
    }
}

/// `transfers` with the pieces one sender sends to the same receivers
/// joined where they land one after another on every receiver: a piece
/// whose destinations are where the one before it ends (on each receiver,
/// in the same order) joins it as further chunks (sent in order, from
/// wherever they lie), so each receiver switches its mux once for the run
/// instead of once a piece (a switch is six instructions of exchange code
/// and its cycles; a chunk is a sender's `setzi` and `send`). Pieces are
/// taken in destination order within each (sender, receivers); a joined
/// transfer stands where its earliest piece stood. Segmented transfers
/// are left alone.
pub fn coalesce(transfers: Vec<Transfer>) -> Vec<Transfer> {
    join_runs(
        transfers,
        |_| true,
        |_, prev, next| {
            let bytes = prev.words() * 4;
            prev.receivers
                .iter()
                .zip(&next.receivers)
                .all(|(&(_, a), &(_, b))| a.checked_add(bytes) == Some(b))
        },
        concat,
    )
}

/// A run's pieces as one transfer: the first's, with every later piece's
/// chunks after its own.
fn concat(run: Vec<Transfer>) -> Transfer {
    let mut pieces = run.into_iter();
    let mut joined = pieces.next().expect("a run has a piece");
    for piece in pieces {
        joined.chunks.extend(piece.chunks);
    }
    joined
}

/// `transfers` with the pieces one sender sends to the same receivers
/// joined into one [`Segment`]ed transfer where they are the same size
/// and each lands a fixed stride after the one before on every receiver
/// (a sender's rows of one head's channel groups, each group a panel of
/// the receivers' input): each receiver then switches its mux once for
/// the run and re-points its write pointer between the pieces (a `setzi`
/// and a put, looped where the run is long) instead of switching once a
/// piece (two `setzi`s, two puts, and the sender's words held back until
/// the switch settles). Run after [`coalesce`], which joins the pieces
/// that follow one another; the same order and placement rules apply. A
/// sender among its receivers is left alone (its supervisor, sending,
/// could not re-point), and so are segmented transfers.
pub fn join_strided(transfers: Vec<Transfer>) -> Vec<Transfer> {
    // The stride of a run (from its first two pieces' first receiver).
    let stride = |a: &Transfer, b: &Transfer| b.receivers[0].1.checked_sub(a.receivers[0].1);
    join_runs(
        transfers,
        |t| {
            (1..=MAX_JOINED_PIECE).contains(&t.words())
                && t.receivers.iter().all(|&(r, _)| r != t.sender)
        },
        |(first, second), prev, next| {
            let words = first.words();
            let Some(step) = stride(first, second.unwrap_or(next)) else {
                return false;
            };
            next.words() == words
                && step >= 4 * words
                && prev
                    .receivers
                    .iter()
                    .zip(&next.receivers)
                    .all(|(&(_, a), &(_, b))| a.checked_add(step) == Some(b))
        },
        |run| {
            let step = stride(&run[0], &run[1]).expect("a run's pieces ascend");
            let words = run[0].words();
            let mut joined = concat(run);
            joined.segment = Some(Segment {
                words,
                stride: step,
            });
            joined
        },
    )
}

/// The most words of a piece [`join_strided`] joins. Longer pieces pay
/// their switch back many times over, and a run of them holds its
/// receivers (and the sender's supervisor, its re-points fixed in time)
/// for longer than the scheduler can place around: in so400m's layer,
/// joining pieces of every size took the attention's exchange B 17,527 ->
/// 16,471 cycles but the MLP's exchange B 24,233 -> 26,873 (its pieces of
/// 277 words on average); up to 128 words, 15,534 and 24,233 (up to 32 or
/// 64: 16,765 or 16,914 and the same 24,233). Exchange C's pieces (98
/// words on average) gain nothing: 13,462 -> 13,560.
const MAX_JOINED_PIECE: u32 = 128;

/// The skeleton of [`coalesce`] and [`join_strided`]: the unsegmented
/// transfers that are `eligible`, grouped by sender and receiver tiles and
/// taken in destination order (the first receiver's address), each run
/// grown while `extends((first, second), last, next)` (its first two
/// pieces, the second `None` while it has one, and its last); a run of
/// two pieces or more becomes `join(run)` (its pieces in destination
/// order), standing where its earliest piece stood. The rest keep their
/// places.
fn join_runs(
    transfers: Vec<Transfer>,
    eligible: impl Fn(&Transfer) -> bool,
    extends: impl Fn((&Transfer, Option<&Transfer>), &Transfer, &Transfer) -> bool,
    join: impl Fn(Vec<Transfer>) -> Transfer,
) -> Vec<Transfer> {
    let mut groups: BTreeMap<(u32, Vec<u32>), Vec<usize>> = BTreeMap::new();
    for (n, t) in transfers.iter().enumerate() {
        if t.segment.is_none() && !t.receivers.is_empty() && eligible(t) {
            let tiles = t.receivers.iter().map(|&(r, _)| r).collect();
            groups.entry((t.sender, tiles)).or_default().push(n);
        }
    }
    // Each run of pieces, keyed by its earliest piece (where it stands).
    let mut runs: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for mut pieces in groups.into_values() {
        pieces.sort_by_key(|&n| (transfers[n].receivers[0].1, n));
        let mut run: Vec<usize> = Vec::new();
        let mut flush = |run: &mut Vec<usize>| {
            if run.len() > 1 {
                let first = *run.iter().min().expect("a run has a piece");
                runs.insert(first, std::mem::take(run));
            }
            run.clear();
        };
        for n in pieces {
            if let (Some(&first), Some(&last)) = (run.first(), run.last()) {
                let second = run.get(1).map(|&m| &transfers[m]);
                if !extends((&transfers[first], second), &transfers[last], &transfers[n]) {
                    flush(&mut run);
                }
            }
            run.push(n);
        }
        flush(&mut run);
    }
    let mut slots: Vec<Option<Transfer>> = transfers.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    // A run's later pieces come after its earliest: taken with it, their
    // slots are empty when the loop reaches them.
    for n in 0..slots.len() {
        match runs.get(&n) {
            Some(run) => {
                let pieces = run
                    .iter()
                    .map(|&m| slots[m].take().expect("each piece is taken once"))
                    .collect();
                out.push(join(pieces));
            }
            None => out.extend(slots[n].take()),
        }
    }
    out
}

/// Whether `chunks` are sent from `$OUTGOING_BASE`: at least
/// [`MIN_STREAM`] of them, each starting where the one before ends (a
/// panel's rows of an LN tile, panel after panel), so that one put of the
/// base and a `send` each (which moves the base on) replace a `setzi` and
/// a `send` each.
fn streams(chunks: &[Chunk]) -> bool {
    chunks.len() >= MIN_STREAM
        && chunks
            .windows(2)
            .all(|w| w[0].address + 4 * w[0].words == w[1].address)
}

/// The fewest chunks [`streams`] sends from `$OUTGOING_BASE`: the put and
/// its `setzi` must save more than they cost.
const MIN_STREAM: usize = 3;

/// The fewest re-points of a run that [`Schedule::emit`] loops over.
const MIN_REPOINT_LOOP: usize = 3;

/// What a tile's supervisor does at a scheduled cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    /// Points the mux at no tile; with `count`, arms `$INCOMING_DCOUNT`.
    Start { count: Option<u32> },
    /// Points the mux at `sender` (no tile for `None`) with a put issued
    /// at `put`, then re-points the write pointer to `base` if given (its
    /// put right after). Occupies [`Rules::switch_before`] cycles before
    /// `put` and [`Rules::switch_after`] after, whatever it holds, so that
    /// a closing switch can become the next transfer's in place.
    Switch {
        sender: Option<u32>,
        base: Option<u32>,
        put: u64,
    },
    /// Sends `chunks`, the first `send` issued at `first`; the chunks at
    /// `starts` begin segments ([`Rules::send_times`]).
    Send {
        chunks: Vec<Chunk>,
        starts: Vec<usize>,
        first: u64,
    },
    /// Re-points the write pointer to `base` with a put issued at `put`
    /// (a segmented transfer's next segment). Occupies
    /// [`Rules::repoint_before`] cycles before `put` and the put after.
    Repoint { base: u32, put: u64 },
}

/// The issue rules an exchange superstep's supervisor code follows.
#[derive(Clone, Copy, Debug)]
struct Rules {
    /// Result latency of a `setzi`.
    latency: u64,
    /// A `put` to an exchange register: supervisor hold and effect delay.
    put: u64,
    /// Refill after a taken branch.
    refill: u64,
    /// Cycles a word holds the port.
    word: u64,
}

impl Rules {
    fn of(m: &MachineModel) -> Self {
        Rules {
            latency: u64::from(m.supervisor_result_latency.max(1)),
            put: u64::from(m.exchange_csr_put_cycles.max(1)),
            refill: u64::from(m.branch_refill_cycles.max(1)),
            word: (4 / u64::from(m.exchange_bytes_per_cycle.clamp(1, 4))).max(1),
        }
    }

    /// Cycles from the first `send`'s issue to each `send`'s issue, and to
    /// the supervisor's next free cycle: one `setzi` after each send loads
    /// the address of the send two places on (three rotating registers);
    /// chunks that run on end to end ([`streams`]) are sent from
    /// `$OUTGOING_BASE`, which each send moves on, with nothing between.
    /// The chunks at `starts` begin segments: each is sent at least
    /// [`Rules::segment_cycles`] after the previous segment's first, so
    /// that the receivers can re-point between them.
    fn send_times(&self, chunks: &[Chunk], starts: &[usize]) -> (Vec<u64>, u64) {
        let mut times = Vec::with_capacity(chunks.len());
        let streamed = streams(chunks);
        // When each chunk's address register is readable (streamed: the
        // base is, from the first send on).
        let mut ready: Vec<u64> = vec![0; chunks.len()];
        if chunks.len() > 1 && !streamed {
            ready[1] = 1;
        }
        let mut t = 0;
        let mut segment = 0;
        for (i, c) in chunks.iter().enumerate() {
            t = t.max(ready[i]);
            if starts.contains(&i) {
                t = t.max(segment + self.segment_cycles());
                segment = t;
            }
            times.push(t);
            t += 1 + u64::from(c.words) * self.word;
            if i + 2 < chunks.len() && !streamed {
                ready[i + 2] = t + self.latency;
                t += 1;
            }
        }
        (times, t)
    }

    /// Cycles before the first `send` of `chunks` in which the first
    /// addresses load: and where they stream, the put of
    /// `$OUTGOING_BASE` (the supervisor held until it takes effect).
    fn send_lead(&self, chunks: &[Chunk]) -> u64 {
        if streams(chunks) {
            self.latency + self.put
        } else {
            self.latency
        }
    }

    /// Cycles a switch occupies before its mux put: two `setzi`s, then
    /// the wait for the result latency.
    fn switch_before(&self) -> u64 {
        self.latency + 1
    }

    /// The least cycles from one segment's first word to the next's: the
    /// receiver's re-point (a `setzi`, then the put) fits between, and so
    /// does a turn of the loop that re-points a run of them
    /// ([`repoint_run`]: a put, an `add` and a taken `brnzdec`), so that
    /// short segments (a few rows of a panel sent in one chunk) keep the
    /// receivers' code a loop.
    fn segment_cycles(&self) -> u64 {
        (self.repoint_before() + self.put).max(self.repoint_loop_period())
    }

    /// The least cycles of a turn of a re-point loop: `put ; add ;
    /// brnzdec` (the put holds the supervisor, the branch refills).
    fn repoint_loop_period(&self) -> u64 {
        self.put + 1 + self.refill
    }

    /// Cycles a re-point occupies before its put: one `setzi`'s latency.
    fn repoint_before(&self) -> u64 {
        self.latency
    }

    /// Cycles a switch occupies from its mux put: the mux put and the base
    /// put.
    fn switch_after(&self) -> u64 {
        self.switch_puts(true)
    }

    /// Cycles a switch holds the supervisor from its mux put: the mux put,
    /// and the base put where it re-points the write pointer.
    fn switch_puts(&self, repoints: bool) -> u64 {
        self.put * if repoints { 2 } else { 1 }
    }

    /// The put cycle of a receiver's re-point for a segment whose first
    /// word leaves the sender at cycle `leaves` and takes `lat` cycles to
    /// arrive: it takes effect as the word arrives.
    fn repoint(&self, leaves: u64, lat: u64) -> u64 {
        leaves + lat - self.put
    }

    /// Cycles of the superstep's opening: the mux cleared, DCOUNT armed.
    fn start_span(&self, arm: bool) -> u64 {
        if arm {
            self.latency + 2 * self.put
        } else {
            self.latency + self.put
        }
    }
}

/// A tile's supervisor intervals, disjoint, keyed by start.
#[derive(Clone, Debug, Default)]
struct Busy(BTreeMap<u64, u64>);

impl Busy {
    /// The earliest x >= `from` with [x - before, x + after) free.
    fn fit(&self, from: u64, before: u64, after: u64) -> u64 {
        let mut x = from.max(before);
        loop {
            let (lo, hi) = (x - before, x + after);
            // The last interval starting before `hi`: if it ends after `lo`,
            // it overlaps; move past it and try again.
            match self.0.range(..hi).next_back() {
                Some((_, &end)) if end > lo => x = end + before,
                _ => return x,
            }
        }
    }

    fn insert(&mut self, start: u64, end: u64) {
        debug_assert!(self.fit(start, 0, end - start) == start);
        self.0.insert(start, end);
    }

    fn remove(&mut self, start: u64) {
        self.0.remove(&start);
    }

    /// The start of the first interval that starts at or after `x`
    /// (`u64::MAX` where none does).
    fn next_start(&self, x: u64) -> u64 {
        self.0.range(x..).next().map_or(u64::MAX, |(&s, _)| s)
    }
}

/// A receiver's state during scheduling.
#[derive(Clone, Debug, Default)]
struct Rx {
    /// Last word's arrival so far (the DCOUNT arming's effect before any).
    last: u64,
    /// The write pointer after the words so far (`None`: never pointed).
    next: Option<u32>,
    /// The switch that closes the last transfer (points the mux at no
    /// tile after its last word): its put cycle and index in the tile's
    /// events. The next transfer's switch takes it over when it can.
    close: Option<(u64, usize)>,
}

/// A sender's state during scheduling.
#[derive(Clone, Copy, Debug, Default)]
struct Tx {
    /// When its last word left (no word yet: `None`).
    last_word: Option<u64>,
    /// Earliest first `send` of its next transfer: after its last one, and
    /// late enough that no word reaches a past receiver before that
    /// receiver's mux moved on.
    free: u64,
}

/// The placed superstep: each tile's events, and its length.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    events: BTreeMap<u32, Vec<(u64, Event)>>,
    /// Cycle after the last word arrives and the last supervisor event
    /// ends, from the superstep's start.
    pub cycles: u64,
    /// Words each receiver takes.
    pub received: BTreeMap<u32, u32>,
    /// Words each sender sends (a multicast word once).
    pub sent: BTreeMap<u32, u32>,
    /// Transfers whose sends were split into pieces ([`Order::split`]).
    pub split: u32,
    /// The cycle each tile's exchange code ends at (the compute after it
    /// starts there, at a fence), from the superstep's start.
    pub ends: BTreeMap<u32, u64>,
    /// The superstep's length with each tile's work after the exchange
    /// ([`schedule_before`]'s tails): the latest tile's end plus its
    /// tail, at least [`Schedule::cycles`].
    pub superstep: u64,
}

/// Where a transfer goes once placed: its sends ([`Laid`]) and each
/// receiver's switch (`base` to re-point to, put cycle, and the closing
/// switch it takes over).
struct Placement {
    laid: Laid,
    switches: Vec<(u32, Option<u32>, u64, Option<usize>)>,
}

/// A contiguous run of a transfer's sends: [`Event::Send`]'s fields, its
/// setup's `lead` before `first` and its `span` from `first`.
#[derive(Clone, Debug)]
struct Piece {
    /// A split piece's chunks and the indices of those that start
    /// segments; `None` for the whole transfer's (its chunks and
    /// [`Sends::starts`]), which a probe then need not copy.
    part: Option<(Vec<Chunk>, Vec<usize>)>,
    first: u64,
    lead: u64,
    span: u64,
}

/// A transfer's sends as placed: one [`Piece`], or several where the
/// sender's supervisor has other work (its own mux switches and
/// re-points as a receiver) between them. Times are absolute.
#[derive(Clone, Debug)]
struct Laid {
    pieces: Vec<Piece>,
    /// When each later segment's first word leaves the sender.
    segment_leaves: Vec<u64>,
    /// When the last word leaves the sender.
    last_word: u64,
}

impl Laid {
    /// The first `send`'s cycle.
    fn first(&self) -> u64 {
        self.pieces[0].first
    }

    /// The cycle after the last piece ends.
    fn end(&self) -> u64 {
        self.pieces
            .iter()
            .map(|p| p.first + p.span)
            .max()
            .expect("a laid transfer has a piece")
    }

    /// The sends in one piece from `first`, as [`Sends`] times them.
    fn whole(sends: &Sends, first: u64) -> Self {
        Laid {
            pieces: vec![Piece {
                part: None,
                first,
                lead: sends.lead,
                span: sends.span,
            }],
            segment_leaves: sends.segment_leaves.iter().map(|&l| first + l).collect(),
            last_word: first + sends.last_word,
        }
    }
}

/// A piece's chunks and the indices (after the first) of those that
/// start segments, from its chunks each with whether it starts one.
fn piece_of(items: &[(Chunk, bool)]) -> (Vec<Chunk>, Vec<usize>) {
    let chunks = items.iter().map(|&(c, _)| c).collect();
    let starts = (1..items.len()).filter(|&i| items[i].1).collect();
    (chunks, starts)
}

/// The fewest words a piece of a split chunk carries: a split costs a
/// `setzi` and a `send`, and the pieces' leads.
const MIN_SPLIT: u32 = 8;

/// The most pieces a transfer's sends are split into: past it the
/// sender's supervisor is too busy for a split to pay (each piece reloads
/// its addresses), and the sends go whole.
const MAX_PIECES: usize = 16;

/// The most chunks of a transfer the split orders try to split (laying
/// the pieces grows each one chunk at a time): longer runs go whole.
const MAX_SPLIT_CHUNKS: usize = 64;

/// A transfer's sends, timed from its first `send` ([`Rules::send_times`]):
/// the same wherever it is placed, so worked out once.
struct Sends {
    /// The chunks that start segments after the first.
    starts: Vec<usize>,
    /// Cycles the sender's supervisor is busy from the first `send`.
    span: u64,
    /// Cycles before the first `send` that the sender's setup takes.
    lead: u64,
    /// When each later segment's first word leaves the sender.
    segment_leaves: Vec<u64>,
    /// When the last word leaves the sender.
    last_word: u64,
}

impl Sends {
    fn of(rules: &Rules, t: &Transfer) -> Self {
        let starts = t.segment_starts();
        let (times, span) = rules.send_times(&t.chunks, &starts);
        Sends {
            segment_leaves: starts.iter().map(|&i| times[i] + 1).collect(),
            last_word: times.last().copied().unwrap_or(0)
                + u64::from(t.chunks.last().map_or(0, |c| c.words)) * rules.word,
            lead: rules.send_lead(&t.chunks),
            starts,
            span,
        }
    }
}

/// The superstep being placed: every tile's supervisor intervals and
/// events, and each receiver's and sender's progress.
struct Placer<'a> {
    machine: &'a MachineModel,
    rules: Rules,
    /// By tile number (as are `rx` and `tx`).
    busy: Vec<Busy>,
    events: BTreeMap<u32, Vec<(u64, Event)>>,
    rx: Vec<Rx>,
    tx: Vec<Tx>,
    end: u64,
    /// Each tile's last cycle of exchange code so far (its code ends
    /// there: a sender's last piece, a receiver's closing switch and last
    /// word), by tile number.
    ends: Vec<u64>,
    /// Transfers laid in more than one piece.
    split_count: u32,
    /// Whether a transfer's sends may be split around the sender's other
    /// work ([`Order::split`]).
    split: bool,
}

impl Placer<'_> {
    /// The superstep's length so far with `tails` after each tile's end
    /// ([`schedule_before`]).
    fn superstep(&self, tails: &BTreeMap<u32, u64>) -> u64 {
        tails.iter().fold(self.end, |end, (&t, &tail)| {
            let at = self.ends.get(t as usize).copied().unwrap_or(0);
            end.max(at + tail)
        })
    }

    /// The earliest placement of `t` after everything placed so far
    /// (leaves the state as it found it).
    fn probe(&mut self, t: &Transfer, sends: &Sends) -> Placement {
        let rules = self.rules;
        let before = rules.switch_before();
        let s = t.sender;
        let sender = self.tx[s as usize];
        let mut at = sender.free;
        loop {
            let laid = self.lay(t, sends, at);
            let first = laid.first();
            for p in &laid.pieces {
                self.busy[s as usize].insert(p.first - p.lead, p.first + p.span);
            }
            // Each receiver's switch: the last transfer's closing switch
            // taken over, or a new one, earliest first.
            let mut switches = Vec::with_capacity(t.receivers.len());
            let mut need = first;
            for &(r, addr) in &t.receivers {
                let lat = self.machine.exchange_latency(s, r);
                let arrival = first + 1 + lat;
                let state = &self.rx[r as usize];
                let base = (state.next != Some(addr)).then_some(addr);
                // The mux moves after the receiver's last word and after
                // the sender's earlier words passed this receiver.
                let lo = (state.last + 1).max(sender.last_word.map_or(0, |w| w + lat + 1));
                // A new switch reserves just its puts (the mux, and the
                // base where it re-points): a segment's re-point may start
                // as soon as its last put ends.
                let puts = rules.switch_puts(base.is_some());
                let (put, reuse) = match state.close {
                    Some((p, idx)) if p + rules.put >= lo => (p, Some(idx)),
                    _ => (
                        self.busy[r as usize].fit(lo.saturating_sub(rules.put), before, puts),
                        None,
                    ),
                };
                let settled = put + puts;
                if settled > arrival {
                    need = need.max(settled - 1 - lat);
                }
                switches.push((r, base, put, reuse));
            }
            // Each re-point is at a fixed cycle once the sends are laid:
            // where a receiver's supervisor is busy then, start later.
            if need == first {
                'receivers: for &(r, _) in &t.receivers {
                    let lat = self.machine.exchange_latency(s, r);
                    for &leaves in &laid.segment_leaves {
                        let put = rules.repoint(leaves, lat);
                        let free =
                            self.busy[r as usize].fit(put, rules.repoint_before(), rules.put);
                        if free != put {
                            need = first + (free - put);
                            break 'receivers;
                        }
                    }
                }
            }
            for p in &laid.pieces {
                self.busy[s as usize].remove(p.first - p.lead);
            }
            if need == first {
                return Placement { laid, switches };
            }
            at = need;
        }
    }

    /// `t`'s sends laid from `at` on: in one piece at the sender's first
    /// free stretch long enough for all of them, or, where that comes
    /// later than the last word of sends that start at once and step
    /// around the sender's other work (a receiver's switches and
    /// re-points on the same tile), in pieces between them.
    fn lay(&self, t: &Transfer, sends: &Sends, at: u64) -> Laid {
        let busy = &self.busy[t.sender as usize];
        let whole = Laid::whole(sends, busy.fit(at, sends.lead, sends.span));
        if !self.split
            || t.chunks.len() > MAX_SPLIT_CHUNKS
            || whole.first() == busy.fit(at, sends.lead, 1)
        {
            return whole;
        }
        match self.lay_pieces(t, at) {
            Some(p) if p.last_word < whole.last_word => p,
            _ => whole,
        }
    }

    /// `t`'s sends in pieces from `at`: each piece as many chunks (the
    /// last one split, at least [`MIN_SPLIT`] words a part) as fit
    /// before the sender's next busy interval; a segment's first chunk
    /// at least [`Rules::segment_cycles`] after the previous segment's.
    /// `None` where it would take more than [`MAX_PIECES`].
    fn lay_pieces(&self, t: &Transfer, at: u64) -> Option<Laid> {
        let rules = self.rules;
        let busy = &self.busy[t.sender as usize];
        let seg_starts = t.segment_starts();
        let mut queue: std::collections::VecDeque<(Chunk, bool)> = t
            .chunks
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, seg_starts.contains(&i)))
            .collect();
        let mut pieces: Vec<Piece> = Vec::new();
        let mut segment_leaves = Vec::new();
        let mut last_segment: Option<u64> = None;
        let mut from = at;
        let mut last_word = 0;
        while let Some(&(front, seg)) = queue.front() {
            if pieces.len() >= MAX_PIECES {
                return None;
            }
            // After the previous piece and its successor's address loads.
            let prev_end = from;
            let lo = match (seg, last_segment) {
                (true, Some(l)) => from.max(l + rules.segment_cycles()),
                _ => from,
            };
            let lo = if pieces.is_empty() {
                lo
            } else {
                lo.max(prev_end + rules.latency)
            };
            let least = 1 + u64::from(front.words.min(MIN_SPLIT)) * rules.word;
            let x = busy.fit(lo, rules.latency, least);
            let limit = busy.next_start(x);
            // Grow the piece while its sends fit before `limit`: its
            // chunks, each with whether it starts a segment.
            let fits = |items: &[(Chunk, bool)]| {
                let (chunks, starts) = piece_of(items);
                let (_, span) = rules.send_times(&chunks, &starts);
                let lead = rules.send_lead(&chunks);
                x >= lead
                    && (pieces.is_empty() || x - lead >= prev_end)
                    && x + span <= limit
                    && busy.fit(x, lead, span) == x
            };
            let mut items: Vec<(Chunk, bool)> = Vec::new();
            while let Some(&(c, seg)) = queue.front() {
                items.push((c, seg));
                if fits(&items) {
                    queue.pop_front();
                    continue;
                }
                // Split: the most words that still fit, if enough.
                items.pop();
                let part = |words| {
                    (
                        Chunk {
                            address: c.address,
                            words,
                        },
                        seg,
                    )
                };
                let (mut lo_w, mut hi_w) = (0, c.words);
                while lo_w + 1 < hi_w {
                    let mid = (lo_w + hi_w) / 2;
                    items.push(part(mid));
                    if fits(&items) {
                        lo_w = mid;
                    } else {
                        hi_w = mid;
                    }
                    items.pop();
                }
                if lo_w >= MIN_SPLIT && c.words - lo_w >= MIN_SPLIT {
                    items.push(part(lo_w));
                    queue[0] = (
                        Chunk {
                            address: c.address + 4 * lo_w,
                            words: c.words - lo_w,
                        },
                        false,
                    );
                }
                break;
            }
            if items.is_empty() {
                // Not even a part fits this stretch (or a streamed
                // piece's longer lead does not): a cycle on.
                from = x + 1;
                continue;
            }
            let (chunks, starts) = piece_of(&items);
            let (times, span) = rules.send_times(&chunks, &starts);
            let lead = rules.send_lead(&chunks);
            if pieces.is_empty() {
                // The first segment's first send.
                last_segment = Some(x + times[0]);
            }
            for (&(_, seg), &time) in items.iter().zip(&times) {
                if seg {
                    segment_leaves.push(x + time + 1);
                    last_segment = Some(x + time);
                }
            }
            let c = chunks.last().expect("a piece has a chunk");
            last_word = x + times[times.len() - 1] + u64::from(c.words) * rules.word;
            from = x + span;
            pieces.push(Piece {
                part: Some((chunks, starts)),
                first: x,
                lead,
                span,
            });
        }
        Some(Laid {
            pieces,
            segment_leaves,
            last_word,
        })
    }

    /// A lower bound of `t`'s first `send` cycle from the sender's and
    /// receivers' progress alone: no earlier than the sender is free, and
    /// no earlier than a word could arrive after each receiver's last
    /// (its mux switch settles no earlier, a put later where it also
    /// re-points the write pointer). The tighter it is, the fewer probes
    /// find a start later than their key: with the re-point counted,
    /// so400m's link from the patch embedding took 1.8M probes an order
    /// instead of 2.6M (its LN tiles take 216 transfers each, most of
    /// them re-pointed), the links' scheduling 2.0-2.3 s of wall time
    /// instead of 2.9-3.0. Only the split orders' schedules change (their
    /// placements are not monotone in the others'): none of so400m's
    /// exchanges got longer.
    fn bound(&self, t: &Transfer) -> u64 {
        let s = t.sender;
        let free = self.tx[s as usize].free;
        t.receivers.iter().fold(free, |b, &(r, addr)| {
            let lat = self.machine.exchange_latency(s, r);
            let state = &self.rx[r as usize];
            // A switch that re-points the write pointer settles a put
            // later (`Rules::switch_puts`).
            let repoint = if state.next == Some(addr) {
                0
            } else {
                self.rules.put
            };
            b.max((state.last + repoint).saturating_sub(lat))
        })
    }

    /// Places `t` where [`Placer::probe`] found it.
    fn commit(&mut self, t: &Transfer, sends: &Sends, p: Placement) {
        let rules = self.rules;
        let (before, after) = (rules.switch_before(), rules.switch_after());
        let s = t.sender;
        let mut laid = p.laid;
        let list = self.events.get_mut(&s).expect("every sender has events");
        self.split_count += u32::from(laid.pieces.len() > 1);
        for piece in &mut laid.pieces {
            self.busy[s as usize].insert(piece.first - piece.lead, piece.first + piece.span);
            let (chunks, starts) = piece
                .part
                .take()
                .unwrap_or_else(|| (t.chunks.clone(), sends.starts.clone()));
            list.push((
                piece.first - piece.lead,
                Event::Send {
                    chunks,
                    starts,
                    first: piece.first,
                },
            ));
        }
        let mut free = laid.end();
        self.end = self.end.max(free);
        let sender_end = &mut self.ends[s as usize];
        *sender_end = (*sender_end).max(free);
        for (&(_, addr), (r, base, put, reuse)) in t.receivers.iter().zip(p.switches) {
            let switch = Event::Switch {
                sender: Some(s),
                base,
                put,
            };
            let busy = &mut self.busy[r as usize];
            let list = self.events.get_mut(&r).expect("every receiver has events");
            match reuse {
                Some(idx) => list[idx].1 = switch,
                None => {
                    let puts = rules.switch_puts(base.is_some());
                    busy.insert(put - before, put + puts);
                    list.push((put - before, switch));
                }
            }
            self.end = self.end.max(put + rules.switch_puts(base.is_some()));
            let lat = self.machine.exchange_latency(s, r);
            for (n, &leaves) in laid.segment_leaves.iter().enumerate() {
                let put = rules.repoint(leaves, lat);
                busy.insert(put - rules.repoint_before(), put + rules.put);
                let seg = t.segment.expect("segment starts come from a segment");
                list.push((
                    put - rules.repoint_before(),
                    Event::Repoint {
                        base: addr + (n as u32 + 1) * seg.stride,
                        put,
                    },
                ));
            }
            let state = &mut self.rx[r as usize];
            state.last = laid.last_word + lat;
            state.next = Some(t.word_address(addr, t.words() - 1) + 4);
            // Close: the mux leaves the sender after the last word.
            let close = busy.fit((state.last + 1).saturating_sub(rules.put), before, after);
            busy.insert(close - before, close + after);
            list.push((
                close - before,
                Event::Switch {
                    sender: None,
                    base: None,
                    put: close,
                },
            ));
            state.close = Some((close, list.len() - 1));
            free = free.max((close + rules.put).saturating_sub(1 + lat));
            let closed = (close + rules.put).max(state.last + 1);
            self.end = self.end.max(closed);
            let receiver_end = &mut self.ends[r as usize];
            *receiver_end = (*receiver_end).max(closed);
        }
        self.tx[s as usize] = Tx {
            last_word: Some(laid.last_word),
            free,
        };
    }
}

/// Schedules `transfers` on `machine` (see the module doc), after joining
/// the pieces a sender sends that land one after another ([`coalesce`]);
/// `tiles` are every tile that runs the superstep (each clears its mux).
///
/// Transfers are placed one at a time, each where it can start earliest
/// after those placed before it, in the [`Order::TRIED`] orders, each on
/// a thread of its own: as listed (the caller's order: pieces that land
/// one after another at a receiver continue its write pointer); the
/// transfer whose start, less the words its busiest port has yet to
/// carry, is earliest (the most loaded ports first; where many senders
/// feed overlapping receiver sets, this keeps receivers busy that a
/// fixed order leaves waiting); and both that and always the transfer
/// that can start earliest next with sends split around the senders'
/// switches ([`Order::split`]). The shortest schedule wins (ties: the earlier
/// order). In `ipu-bench attention --precision fp8` (so400m's shapes),
/// listed, critical first, earliest first split and critical first split:
/// exchange A 30,479, 14,540, 14,716 and 14,540 cycles (its busiest port
/// 7,896 words: the LN tiles send as much as the product tiles take);
/// exchange B 26,779, 20,402, 20,658 and 19,600 (12,360 words); exchange
/// C 19,138, 12,864, 14,096 and 13,644 (8,480 words); exchange D (a
/// rotated all-to-all) 4,553, 4,558, 3,921 and 4,030 (2,268 words); in
/// `ipu-bench mlp --precision fp8` exchange B 21,869, 19,383, 17,383 and
/// 17,290 (14,280 words). Earliest first with whole sends (14,716,
/// 20,159, 13,612, 5,174; the MLP's exchange A 13,852, as the split one)
/// was never the shortest, so it is not tried. Were a tile's switches
/// free while it sends (which the supervisor cannot do), exchanges B, C,
/// D and the MLP's B would take about 13,800, 8,700, 2,900 and 14,400:
/// what the switches a receiver makes between short transfers cost.
/// A transfer's earliest start only moves later as others are placed
/// (a split placement can start sooner than a whole one placed before
/// it: its key is then pushed back and taken at once), so a lazy queue
/// of those starts finds the earliest with few re-probes.
///
/// A receiver's mux names a sender only from its switch to the closing
/// switch after the transfer's last word; the sender's earlier words reach
/// it before the switch and its later words after the close, so no tile
/// ever takes a word meant for others.
pub fn schedule(machine: &MachineModel, tiles: &[u32], transfers: &[Transfer]) -> Schedule {
    schedule_joined(machine, tiles, transfers, Joining::Contiguous)
}

/// Which pieces [`schedule_joined`] joins before it places them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joining {
    /// Those that land one after another ([`coalesce`]): what
    /// [`schedule`] does.
    Contiguous,
    /// Those, then the short ones a fixed stride apart
    /// ([`join_strided`]).
    Strided,
}

/// [`schedule`] with the pieces joined as `joining` says. Joining pieces
/// a stride apart pays where the receivers' supervisors are busy (they
/// also send, and switch for pieces of a hundred words or less): so400m's
/// attention exchange B (Q, K and V from the product tiles, which are
/// also the attention tiles) takes 15,534 cycles joined, 17,527 not, which
/// is where the lowering asks for it. Elsewhere it measured no gain: the
/// attention's exchange C 13,462 -> 13,560, the MLP's exchange B the same
/// 24,233; the link from the patch embedding 7,358 -> 5,489 but with an LN
/// tile's exchange code 16,312 -> 18,240 bytes (its 8-word segments'
/// re-points too irregular for a loop), above the 16 KB the issue allows;
/// and where a receiver's switches hide behind its arrivals (sixteen
/// senders' 64-word pieces back to back, `tests/lower_schedule.rs`),
/// 4,538 cycles for 4,096 words against under 4,496 apart.
pub fn schedule_joined(
    machine: &MachineModel,
    tiles: &[u32],
    transfers: &[Transfer],
    joining: Joining,
) -> Schedule {
    schedule_before(machine, tiles, transfers, joining, &BTreeMap::new())
}

/// [`schedule_joined`] for an exchange that some tiles follow with work
/// of their own before the next sync: `tails` holds each such tile's
/// cycles of work after its exchange code ends (a tile absent: none).
/// The superstep then ends at the latest of every tile's end plus its
/// tail ([`Schedule::superstep`]), which is what the orders are compared
/// by, and the critical orders count a receiver's tail as words its port
/// has yet to carry, so that a tile with long work after the exchange
/// takes its words first. A link into a block whose LN tiles run
/// LayerNorm right after it gives them their rows before the weights the
/// product tiles gather in the same exchange.
pub fn schedule_before(
    machine: &MachineModel,
    tiles: &[u32],
    transfers: &[Transfer],
    joining: Joining,
    tails: &BTreeMap<u32, u64>,
) -> Schedule {
    schedule_within(machine, tiles, transfers, joining, tails, None)
}

/// A measure of a schedule's exchange code: the most bytes
/// [`Schedule::emit`] emits on any of the tiles it looks at.
pub type CodeBytes<'a> = &'a (dyn Fn(&Schedule) -> u64 + Sync);

/// How much exchange code [`schedule_within`] allows the tiles it
/// measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeBudget {
    /// No more than the critical order with whole tails gives them.
    Critical,
    /// The least any try gives them (the listed order, as a rule: it
    /// keeps each receiver's transfers in destination order, so its
    /// write pointer runs on): for an exchange the program runs once,
    /// whose cycles count once while its code takes tile memory.
    Least,
}

/// [`schedule_before`], and where `code` is given (a measure and a
/// budget), the shortest superstep among the tries whose code (as the
/// measure has it) is within the budget: tiles whose exchange code
/// the chip's memory binds (a chain's LN tiles take a link's rows in a
/// hundred short transfers each; the orders that put them first reach
/// them out of destination order, so each re-points its write pointer
/// more) get no more code than the budget allows.
pub fn schedule_within(
    machine: &MachineModel,
    tiles: &[u32],
    transfers: &[Transfer],
    joining: Joining,
    tails: &BTreeMap<u32, u64>,
    code: Option<(CodeBytes<'_>, CodeBudget)>,
) -> Schedule {
    let mut prepared = Prepared::of(machine, transfers, joining);
    prepared.tails = tails.clone();
    // Each order with the tails counted whole; with tails, the critical
    // orders again counting 3/4 of them: how much a tile's work after
    // the exchange should put its words ahead of the others' is a trade
    // no one weight wins. so400m's links, the model's cycles with each
    // weight for every link: whole tails 8,499,276, 3/4 8,477,856, 1/2
    // 8,520,918, 3/2 8,574,720; with the best of whole, 3/4 and 1/2 for
    // each link 8,477,856, 1/2 never the best (`IPUC_LOG=ipu-schedule=debug`
    // lists every try's exchange and superstep).
    let mut tries: Vec<(Order, u64)> = Order::TRIED.iter().map(|&o| (o, 4)).collect();
    if !tails.is_empty() {
        tries.extend([(Order::Critical, 3), (Order::CriticalSplit, 3)]);
    }
    // The orders on threads of their own (each is deterministic, and so
    // is the choice).
    let placed: Vec<Placer> = std::thread::scope(|scope| {
        let prepared = &prepared;
        let others: Vec<_> = tries[1..]
            .iter()
            .map(|&(order, quarters)| {
                scope.spawn(move || place(machine, tiles, prepared, (order, quarters)))
            })
            .collect();
        let listed = place(machine, tiles, prepared, tries[0]);
        std::iter::once(listed)
            .chain(
                others
                    .into_iter()
                    .map(|h| h.join().expect("a schedule's thread does not panic")),
            )
            .collect()
    });
    // Which order wins where (`IPUC_LOG=ipu-schedule=debug`): the
    // evidence for the orders [`Order::TRIED`] keeps.
    tracing::debug!(
        target: "ipu-schedule",
        transfers = transfers.len(),
        busiest_in = prepared.received.values().copied().max().unwrap_or(0),
        most_rx_transfers = most_transfers(
            prepared
                .transfers
                .iter()
                .flat_map(|(t, _)| t.receivers.iter().map(|&(r, _)| r))
        ),
        most_tx_transfers = most_transfers(prepared.transfers.iter().map(|(t, _)| t.sender)),
        coalesced = prepared.transfers.len(),
        segmented = prepared.transfers.iter().filter(|(t, _)| t.segment.is_some()).count(),
        busiest_out = prepared.sent.values().copied().max().unwrap_or(0),
        ends = ?tries
            .iter()
            .zip(&placed)
            .map(|(o, p)| (o, p.end, p.superstep(&prepared.tails)))
            .collect::<Vec<_>>(),
        "each order's schedule"
    );
    // The shortest (with the tiles' work after it); ties go to the
    // earlier order.
    let Some((code, budget)) = code else {
        let best = placed
            .into_iter()
            .map(|p| (p.superstep(&prepared.tails), p))
            .reduce(|best, p| if p.0 < best.0 { p } else { best })
            .expect("every order places")
            .1;
        return prepared.finish(best);
    };
    let schedules: Vec<Schedule> = placed.into_iter().map(|p| prepared.finished(p)).collect();
    let bytes: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = schedules
            .iter()
            .map(|s| scope.spawn(move || code(s)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a code measure's thread does not panic"))
            .collect()
    });
    let budget = match budget {
        CodeBudget::Critical => tries
            .iter()
            .zip(&bytes)
            .find(|(t, _)| **t == (Order::Critical, 4))
            .map_or(u64::MAX, |(_, &b)| b),
        CodeBudget::Least => bytes.iter().copied().min().unwrap_or(u64::MAX),
    };
    tracing::debug!(
        target: "ipu-schedule",
        supersteps = ?schedules.iter().map(|s| s.superstep).collect::<Vec<_>>(),
        code = ?bytes,
        "each try's superstep and code"
    );
    schedules
        .into_iter()
        .zip(bytes)
        .filter(|&(_, b)| b <= budget)
        .map(|(s, _)| s)
        .reduce(|best, s| {
            if s.superstep < best.superstep {
                s
            } else {
                best
            }
        })
        .expect("the budget is some try's code")
}

/// The most transfers any one tile takes part in, from each transfer's
/// tile on that side (a receiver, or its sender): what the schedule's
/// debug line reports beside the busiest port, as each transfer costs its
/// tiles a switch or a send's setup.
fn most_transfers(tiles: impl Iterator<Item = u32>) -> u32 {
    let mut n: BTreeMap<u32, u32> = BTreeMap::new();
    for t in tiles {
        *n.entry(t).or_default() += 1;
    }
    n.into_values().max().unwrap_or(0)
}

/// The order in which [`schedule_in`] takes transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// As listed.
    Listed,
    /// The one that can start earliest next.
    Earliest,
    /// The one whose start, less the words its busiest port has yet to
    /// carry, is earliest: the most loaded ports first.
    Critical,
    /// As [`Order::Earliest`], each transfer's sends split around the
    /// sender's other work where that ends them sooner ([`Order::split`]).
    EarliestSplit,
    /// As [`Order::Critical`], sends split likewise.
    CriticalSplit,
}

impl Order {
    /// The orders [`schedule`] tries (ties go to the earlier):
    /// [`Order::Earliest`] with whole sends is left out, as no exchange
    /// of so400m's blocks found it shorter than the others.
    pub const TRIED: [Order; 4] = [
        Order::Listed,
        Order::Critical,
        Order::EarliestSplit,
        Order::CriticalSplit,
    ];

    /// Whether a transfer's sends may be split into pieces around the
    /// sender's supervisor's other work (its mux switches and re-points
    /// as a receiver), where they would otherwise wait for a stretch
    /// long enough for all of them: the outgoing words pause while the
    /// tile switches its incoming mux, and a tile that both sends and
    /// takes many short transfers need not hold its receiving up for its
    /// sends (or its sends for its receiving).
    pub fn split(self) -> bool {
        matches!(self, Order::EarliestSplit | Order::CriticalSplit)
    }
}

/// [`schedule`] in one `order` alone.
pub fn schedule_in(
    machine: &MachineModel,
    tiles: &[u32],
    transfers: &[Transfer],
    order: Order,
) -> Schedule {
    let prepared = Prepared::of(machine, transfers, Joining::Contiguous);
    let placer = place(machine, tiles, &prepared, (order, 4));
    prepared.finish(placer)
}

/// The transfers every order places: joined ([`coalesce`]), the empty
/// ones left out, each with its [`Sends`]; and the words each tile takes
/// and sends.
struct Prepared {
    transfers: Vec<(Transfer, Sends)>,
    received: BTreeMap<u32, u32>,
    sent: BTreeMap<u32, u32>,
    /// Each tile's work after the exchange ([`schedule_before`]).
    tails: BTreeMap<u32, u64>,
}

impl Prepared {
    fn of(machine: &MachineModel, transfers: &[Transfer], joining: Joining) -> Self {
        let rules = Rules::of(machine);
        let joined = coalesce(transfers.to_vec());
        let joined = match joining {
            Joining::Contiguous => joined,
            Joining::Strided => join_strided(joined),
        };
        let transfers: Vec<(Transfer, Sends)> = joined
            .into_iter()
            .filter(|t| !t.chunks.is_empty() && t.words() > 0)
            .map(|t| {
                // A malformed segmented transfer would land words at
                // wrong addresses or never fit its re-points: the lowering
                // builds them, so it is a bug in the lowering, not in the
                // input.
                if let Err(e) = t.check() {
                    panic!("tile {}'s segmented transfer: {e}", t.sender);
                }
                let sends = Sends::of(&rules, &t);
                (t, sends)
            })
            .collect();
        let mut received: BTreeMap<u32, u32> = BTreeMap::new();
        let mut sent: BTreeMap<u32, u32> = BTreeMap::new();
        for (t, _) in &transfers {
            *sent.entry(t.sender).or_default() += t.words();
            for &(r, _) in &t.receivers {
                *received.entry(r).or_default() += t.words();
            }
        }
        Prepared {
            transfers,
            received,
            sent,
            tails: BTreeMap::new(),
        }
    }

    /// [`Self::finish`], keeping these transfers for others.
    fn finished(&self, placer: Placer) -> Schedule {
        Prepared {
            transfers: Vec::new(),
            received: self.received.clone(),
            sent: self.sent.clone(),
            tails: self.tails.clone(),
        }
        .finish(placer)
    }

    /// The schedule `placer` made of these transfers.
    fn finish(self, placer: Placer) -> Schedule {
        let superstep = placer.superstep(&self.tails);
        let Placer {
            mut events,
            end,
            ends,
            split_count,
            ..
        } = placer;
        for list in events.values_mut() {
            list.sort_by_key(|e| e.0);
        }
        let ends = events.keys().map(|&t| (t, ends[t as usize])).collect();
        Schedule {
            events,
            cycles: end,
            ends,
            superstep,
            received: self.received,
            sent: self.sent,
            split: split_count,
        }
    }
}

/// Places `prepared`'s transfers in `order`.
fn place<'a>(
    machine: &'a MachineModel,
    tiles: &[u32],
    prepared: &Prepared,
    (order, tail_quarters): (Order, u64),
) -> Placer<'a> {
    let rules = Rules::of(machine);
    let (transfers, received) = (&prepared.transfers, &prepared.received);
    let mut all: Vec<u32> = tiles.to_vec();
    all.extend(transfers.iter().map(|(t, _)| t.sender));
    all.extend(received.keys());
    all.sort_unstable();
    all.dedup();
    let size = all.last().map_or(0, |&t| t as usize + 1);
    let mut placer = Placer {
        machine,
        rules,
        busy: vec![Busy::default(); size],
        events: BTreeMap::new(),
        rx: vec![Rx::default(); size],
        tx: vec![Tx::default(); size],
        end: 0,
        ends: vec![0; size],
        split_count: 0,
        split: order.split(),
    };
    for &t in &all {
        let count = received.get(&t).copied();
        let span = rules.start_span(count.is_some());
        placer.busy[t as usize].insert(0, span);
        placer
            .events
            .entry(t)
            .or_default()
            .push((0, Event::Start { count }));
        if count.is_some() {
            placer.rx[t as usize].last = span - 1;
        }
        placer.end = placer.end.max(span);
        placer.ends[t as usize] = span;
    }
    if order == Order::Listed {
        for (t, sends) in transfers {
            let p = placer.probe(t, sends);
            placer.commit(t, sends, p);
        }
        return placer;
    }
    // Each transfer's key: its earliest start, and with `Critical` the
    // words its busiest port (the sender's out, a receiver's in) has yet
    // to carry counted back from the most any port has: both only grow as
    // transfers are placed, so each queued key is a lower bound of the
    // transfer's key now ([`Placer::bound`]'s start, cheap, or a probe's,
    // exact until another transfer is placed).
    let weight = u64::from(matches!(order, Order::Critical | Order::CriticalSplit));
    let (mut rem_in, mut rem_out) = (vec![0u64; size], vec![0u64; size]);
    for (&t, &w) in received {
        rem_in[t as usize] = u64::from(w);
    }
    // A receiver's work after the exchange counts as words it has yet to
    // take ([`schedule_before`]).
    for (&t, &tail) in &prepared.tails {
        if let Some(rem) = rem_in
            .get_mut(t as usize)
            .filter(|_| received.contains_key(&t))
        {
            *rem += tail * tail_quarters / 4;
        }
    }
    for (&t, &w) in &prepared.sent {
        rem_out[t as usize] = u64::from(w);
    }
    let top = rem_in.iter().chain(&rem_out).copied().max().unwrap_or(0);
    let lag = |t: &Transfer, rem_in: &[u64], rem_out: &[u64]| {
        let busiest = t
            .receivers
            .iter()
            .map(|&(r, _)| rem_in[r as usize])
            .fold(rem_out[t.sender as usize], u64::max);
        weight * (top - busiest)
    };
    let mut queue: BinaryHeap<Reverse<(u64, usize)>> = (0..transfers.len())
        .map(|n| {
            let t = &transfers[n].0;
            Reverse((placer.bound(t) + lag(t, &rem_in, &rem_out), n))
        })
        .collect();
    while let Some(Reverse((key, n))) = queue.pop() {
        let (t, sends) = &transfers[n];
        let lag = lag(t, &rem_in, &rem_out);
        let bound = placer.bound(t) + lag;
        if bound > key {
            queue.push(Reverse((bound, n)));
            continue;
        }
        let p = placer.probe(t, sends);
        // The lazy queue's keys stand for the exact starts only while
        // `bound` never passes one (every test's schedules check it).
        debug_assert!(
            p.laid.first() + lag >= bound,
            "{order:?}: transfer {n} placed at {} below its bound {}",
            p.laid.first(),
            bound - lag
        );
        if p.laid.first() + lag == key {
            placer.commit(t, sends, p);
            rem_out[t.sender as usize] -= u64::from(t.words());
            for &(r, _) in &t.receivers {
                rem_in[r as usize] -= u64::from(t.words());
            }
        } else {
            queue.push(Reverse((p.laid.first() + lag, n)));
        }
    }
    placer
}

/// "N cycles (busiest port W words)": the schedule's length beside the
/// bound it cannot beat, as the plan reports print it.
impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles (busiest port {} words)",
            self.cycles,
            self.busiest_port()
        )
    }
}

impl Schedule {
    /// The most words one tile's port carries in the superstep, in or out:
    /// at a word a cycle, the least cycles any schedule of the same
    /// transfers could take (before the syncs and latencies).
    pub fn busiest_port(&self) -> u32 {
        self.received
            .values()
            .chain(self.sent.values())
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// The tiles that take part.
    pub fn tiles(&self) -> impl Iterator<Item = u32> + '_ {
        self.events.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk of `n` words at address 0.
    fn words(n: u32) -> Chunk {
        Chunk {
            address: 0,
            words: n,
        }
    }

    #[test]
    fn busy_fit_skips_overlaps() {
        let mut b = Busy::default();
        b.insert(10, 20);
        b.insert(25, 30);
        assert_eq!(b.fit(0, 0, 5), 0);
        assert_eq!(b.fit(8, 0, 5), 20);
        assert_eq!(b.fit(8, 0, 6), 30);
        assert_eq!(b.fit(21, 2, 2), 22);
        assert_eq!(b.fit(21, 2, 4), 32);
    }

    #[test]
    fn sends_are_one_word_per_cycle_plus_the_address_loads() {
        let r = Rules::of(&MachineModel::c600());
        let (t, end) = r.send_times(&[words(10)], &[]);
        assert_eq!((t, end), (vec![0], 11));
        let (t, end) = r.send_times(&[words(10), words(10), words(10)], &[]);
        assert_eq!(t, vec![0, 12, 23]);
        assert_eq!(end, 34);
    }

    #[test]
    fn short_segments_are_spaced_for_the_receivers_re_pointing() {
        let r = Rules::of(&MachineModel::c600());
        // Three segments of 4 words: each starts a re-point's length after
        // the one before, not when the port is free.
        let (t, _) = r.send_times(&[words(4), words(4), words(4)], &[1, 2]);
        assert_eq!(t, vec![0, r.segment_cycles(), 2 * r.segment_cycles()]);
        // Long segments need no pause.
        let (t, _) = r.send_times(&[words(40), words(40)], &[1]);
        assert_eq!(t, vec![0, 41]);
    }

    #[test]
    fn segments_must_follow_chunks_and_leave_out_the_sender() {
        let mut t = Transfer {
            sender: 0,
            chunks: vec![words(8), words(8)],
            receivers: vec![(1, 0x90000)],
            segment: Some(Segment {
                words: 8,
                stride: 64,
            }),
        };
        assert_eq!(t.check(), Ok(()));
        assert_eq!(t.segment_starts(), vec![1]);
        assert_eq!(t.word_address(0x90000, 9), 0x90000 + 64 + 4);
        t.chunks = vec![words(6), words(10)];
        assert!(t
            .check()
            .unwrap_err()
            .contains("crosses a segment boundary"));
        t.chunks = vec![words(8), words(8)];
        t.receivers.push((0, 0x90000));
        assert!(t
            .check()
            .unwrap_err()
            .contains("its own segmented transfer"));
    }

    #[test]
    fn receivers_take_transfers_one_after_another() {
        let m = MachineModel::c600();
        let chunk = |a, w| Chunk {
            address: a,
            words: w,
        };
        let ts = vec![
            Transfer {
                sender: 0,
                chunks: vec![chunk(0x80000, 64)],
                receivers: vec![(5, 0x90000), (6, 0x90000)],
                segment: None,
            },
            Transfer {
                sender: 1,
                chunks: vec![chunk(0x80000, 64)],
                receivers: vec![(5, 0x90100)],
                segment: None,
            },
            Transfer {
                sender: 5,
                chunks: vec![chunk(0x80000, 16)],
                receivers: vec![(0, 0x90000)],
                segment: None,
            },
        ];
        let s = schedule(&m, &[0, 1, 5, 6], &ts);
        assert_eq!(s.received[&5], 128);
        assert_eq!(s.received[&0], 16);
        // Transfer 1 follows transfer 0 at tile 5: after 64 words.
        assert!(s.cycles > 128);
        let sends: Vec<u64> = s.events[&5]
            .iter()
            .filter_map(|(_, e)| match e {
                Event::Send { first, .. } => Some(*first),
                _ => None,
            })
            .collect();
        assert_eq!(sends.len(), 1);
    }

    fn piece(sender: u32, from: u32, words: u32, to: &[(u32, u32)]) -> Transfer {
        Transfer {
            sender,
            chunks: vec![Chunk {
                address: from,
                words,
            }],
            receivers: to.to_vec(),
            segment: None,
        }
    }

    #[test]
    fn pieces_that_land_one_after_another_join_in_destination_order() {
        // Tile 1 sends three pieces to tiles 7 and 8 that follow one
        // another on both (listed out of order), and one to tile 7 alone;
        // tile 2 sends one that lands right after them too.
        let list = vec![
            piece(1, 0x100, 8, &[(7, 0x1020), (8, 0x2020)]),
            piece(1, 0x500, 4, &[(7, 0x900)]),
            piece(1, 0x300, 8, &[(7, 0x1000), (8, 0x2000)]),
            piece(2, 0x100, 8, &[(7, 0x1060), (8, 0x2060)]),
            piece(1, 0x700, 8, &[(7, 0x1040), (8, 0x2040)]),
        ];
        let out = coalesce(list);
        assert_eq!(out.len(), 3, "{out:?}");
        // The joined transfer stands where its earliest piece stood, from
        // the first destination, its chunks in destination order.
        assert_eq!(out[0].sender, 1);
        assert_eq!(out[0].receivers, vec![(7, 0x1000), (8, 0x2000)]);
        let from: Vec<u32> = out[0].chunks.iter().map(|c| c.address).collect();
        assert_eq!(from, vec![0x300, 0x100, 0x700]);
        assert_eq!(out[1].receivers, vec![(7, 0x900)]);
        assert_eq!(out[2].sender, 2);
    }

    #[test]
    fn equal_pieces_a_fixed_stride_apart_join_as_segments() {
        // Tile 1 sends three 8-word groups to tiles 7 and 8, each 0x40
        // bytes after the one before on both (listed out of order): one
        // segmented transfer from the first destination, its chunks in
        // destination order. Tile 2's pieces to tile 7 are 0x40 then 0x80
        // apart (a run of two, then one alone), tile 3's differ in size
        // (left alone).
        let list = vec![
            piece(1, 0x200, 8, &[(7, 0x1040), (8, 0x2040)]),
            piece(2, 0x100, 8, &[(7, 0x3000)]),
            piece(1, 0x100, 8, &[(7, 0x1000), (8, 0x2000)]),
            piece(2, 0x200, 8, &[(7, 0x3040)]),
            piece(2, 0x300, 8, &[(7, 0x30c0)]),
            piece(1, 0x300, 8, &[(7, 0x1080), (8, 0x2080)]),
            piece(3, 0x100, 8, &[(7, 0x4000)]),
            piece(3, 0x200, 4, &[(7, 0x4040)]),
        ];
        let out = join_strided(list);
        assert_eq!(out.len(), 5, "{out:?}");
        let joined = &out[0];
        assert_eq!(joined.receivers, vec![(7, 0x1000), (8, 0x2000)]);
        assert_eq!(
            joined.segment,
            Some(Segment {
                words: 8,
                stride: 0x40
            })
        );
        let from: Vec<u32> = joined.chunks.iter().map(|c| c.address).collect();
        assert_eq!(from, vec![0x100, 0x200, 0x300]);
        assert_eq!(joined.check(), Ok(()));
        // Word 9 (the second group's second word) lands a stride on.
        assert_eq!(joined.word_address(0x2000, 9), 0x2044);
        // Tile 2's first two pieces join (0x40 apart); the third, 0x80 on,
        // stands alone.
        assert_eq!(out[1].sender, 2);
        assert_eq!(out[1].chunks.len(), 2);
        assert!(out[2..].iter().all(|t| t.segment.is_none()));
    }

    #[test]
    fn strided_joins_leave_long_pieces_and_a_sender_among_its_receivers() {
        let long = MAX_JOINED_PIECE + 1;
        let list = vec![
            piece(1, 0x100, long, &[(7, 0x1000)]),
            piece(1, 0x1000, long, &[(7, 0x2000)]),
            // Tile 4 takes its own words: it could not re-point.
            piece(4, 0x100, 8, &[(4, 0x1000), (9, 0x1000)]),
            piece(4, 0x200, 8, &[(4, 0x1040), (9, 0x1040)]),
            // Overlapping destinations (a stride shorter than a piece).
            piece(5, 0x100, 8, &[(7, 0x5000)]),
            piece(5, 0x200, 8, &[(7, 0x5010)]),
        ];
        let out = join_strided(list.clone());
        assert_eq!(out, list);
    }

    #[test]
    fn pieces_join_only_where_every_receiver_sees_them_follow() {
        // On tile 8 the second piece leaves a gap: nothing joins. A
        // segmented transfer never joins.
        let mut seg = piece(1, 0x300, 8, &[(7, 0x1040), (8, 0x2040)]);
        seg.segment = Some(Segment {
            words: 4,
            stride: 64,
        });
        let list = vec![
            piece(1, 0x100, 8, &[(7, 0x1000), (8, 0x2000)]),
            piece(1, 0x200, 8, &[(7, 0x1020), (8, 0x2030)]),
            seg,
        ];
        let out = coalesce(list.clone());
        assert_eq!(out.len(), 3);
        for (a, b) in out.iter().zip(&list) {
            assert_eq!(
                (a.receivers.clone(), a.chunks.len()),
                (b.receivers.clone(), 1)
            );
        }
    }
}
