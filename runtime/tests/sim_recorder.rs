//! The timeline recorder (`SimConfig::record`): what it records on a small
//! two-tile program, that recording changes no cycle count, and that a
//! recording over its limit stops keeping compute sets and says where.

use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::{program, sim};
use ipuc_runtime::sim::{ComputeSet, Receipt, SimConfig, Truncation};

/// Tile 0 runs six workers, then sends four words to tile 1 and syncs.
const SENDER: &str = "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    runall $m0, $m1, 1\n    sync TEXCH_SYNCZONE_LOCAL\n    setzi $m0, 0x70000\n    send $m0, 4\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nworker:\n    nop\n    exitz $mzero\n";
const RECEIVER: &str = "main:\n    setzi $m1, 4\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x71000\n    put $INCOMING_BASE, $m0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";

/// [`SENDER`], then six workers again in the second superstep.
const SENDER_TWICE: &str = "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    runall $m0, $m1, 1\n    sync TEXCH_SYNCZONE_LOCAL\n    setzi $m0, 0x70000\n    send $m0, 4\n    sync TEXCH_SYNCZONE_INTERNAL\n    setzi $m0, worker\n    runall $m0, $m1, 1\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\nworker:\n    nop\n    exitz $mzero\n";

fn run(record: bool) -> ipuc_runtime::sim::Profile {
    run_program(
        SENDER,
        SimConfig {
            record,
            ..SimConfig::default()
        },
    )
}

fn run_program(sender: &str, config: SimConfig) -> ipuc_runtime::sim::Profile {
    let exe = program(&[(0, sender), (1, RECEIVER)], vec![]);
    let mut s = sim(&exe, config);
    s.run().unwrap_or_else(|e| panic!("{e}"));
    s.take_profile().unwrap()
}

/// Every figure of the profile is the same with the recorder on; only the
/// timelines are added.
#[test]
fn recording_changes_no_cycle_count() {
    let off = run(false);
    let on = run(true);
    assert!(off.timelines.is_empty());
    assert_eq!(on.timelines.len(), 2);
    assert_eq!(
        ipuc_runtime::sim::Profile {
            timelines: Vec::new(),
            truncation: None,
            ..on
        },
        off
    );
}

/// The end of tile `tile`'s first superstep's sync, from the profile's
/// per-superstep counters (it starts at cycle 0): its arrival and release.
fn first_sync(p: &ipuc_runtime::sim::Profile, tile: usize) -> (u64, u64) {
    let c = &p.tiles[tile].supersteps[0];
    let arrival = c.compute + c.exchange;
    (arrival, arrival + c.sync_wait)
}

/// The launches are merged into a compute set that names the worker's
/// entry, within the superstep; the sends and receipts count the four
/// words.
#[test]
fn the_timeline_holds_compute_sets_and_exchange() {
    let p = run(true);
    let exe = program(&[(0, SENDER)], vec![]);
    let entry = exe.tiles[0].image.symbol("worker").unwrap().address;
    let (t0, t1) = (&p.timelines[0], &p.timelines[1]);
    assert_eq!((t0.tile, t1.tile), (0, 1));
    // Two supersteps each: the exchange, then the exit.
    assert_eq!(p.tiles[0].supersteps.len(), 2);
    // The six launches are one compute set: one entry, and vertex bases
    // (runall's 0x70000 + worker * 4) outside every section.
    assert_eq!(t0.compute_sets.len(), 1);
    let set = t0.compute_sets[0];
    assert_eq!((set.superstep, set.launches, set.entry), (0, 6, entry));
    assert_eq!(set.vertex & !0x1f, 0x70000);
    assert!(set.start < set.end && set.end <= first_sync(&p, 0).0);
    // Six workers over a span shorter than six times its length.
    assert!(set.worker_cycles > set.end - set.start);
    assert!(set.worker_cycles <= 6 * (set.end - set.start));
    assert!(t1.compute_sets.is_empty());
    assert_eq!(t0.sends.len(), 1);
    assert_eq!((t0.sends[0].superstep, t0.sends[0].words), (0, 4));
    assert_eq!(
        t0.sends[0].end - t0.sends[0].start,
        p.tiles[0].supersteps[0].exchange
    );
    assert_eq!(
        t1.received,
        [Receipt {
            superstep: 0,
            words: 4
        }]
    );
    assert!(t0.received.is_empty());
}

/// Over its limit the recording keeps nothing from the next superstep on,
/// and says where; what it kept and every cycle count are as without a
/// limit.
#[test]
fn a_recording_over_its_limit_stops_at_a_superstep_and_says_where() {
    let config = |record_limit| SimConfig {
        record: true,
        record_limit,
        ..SimConfig::default()
    };
    let whole = run_program(SENDER_TWICE, config(u64::MAX));
    assert_eq!(whole.truncation, None);
    let sets: Vec<(u32, u32)> = whole.timelines[0]
        .compute_sets
        .iter()
        .map(|s| (s.superstep, s.launches))
        .collect();
    assert_eq!(sets, [(0, 6), (1, 6)]);
    // A byte: the first sync finds the recording over it.
    let cut = run_program(SENDER_TWICE, config(1));
    let release = first_sync(&whole, 0).1;
    let Some(Truncation {
        superstep,
        cycle,
        limit_bytes,
        held_bytes,
    }) = cut.truncation
    else {
        panic!("not truncated");
    };
    assert_eq!((superstep, cycle, limit_bytes), (1, release, 1));
    assert!(held_bytes > 1);
    let kept: Vec<&ComputeSet> = cut.timelines[0].compute_sets.iter().collect();
    assert_eq!(kept, [&whole.timelines[0].compute_sets[0]]);
    // The sends and receipts were all in superstep 0.
    for (a, b) in cut.timelines.iter().zip(&whole.timelines) {
        assert_eq!(a.sends, b.sends);
        assert_eq!(a.received, b.received);
    }
    assert_eq!(cut.tiles, whole.tiles);
    assert_eq!(cut.total_cycles, whole.total_cycles);
}
