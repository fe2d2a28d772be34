//! The timeline recorder (`SimConfig::record`): what it records on a small
//! two-tile program, and that recording changes no cycle count.

use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::{program, sim};
use ipuc_runtime::sim::{SimConfig, StepSpan};

/// Tile 0 runs six workers, then sends four words to tile 1 and syncs.
const SENDER: &str = "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    runall $m0, $m1, 1\n    sync TEXCH_SYNCZONE_LOCAL\n    setzi $m0, 0x70000\n    send $m0, 4\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nworker:\n    nop\n    exitz $mzero\n";
const RECEIVER: &str = "main:\n    setzi $m1, 4\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x71000\n    put $INCOMING_BASE, $m0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";

fn run(record: bool) -> ipuc_runtime::sim::Profile {
    let exe = program(&[(0, SENDER), (1, RECEIVER)], vec![]);
    let mut s = sim(
        &exe,
        SimConfig {
            record,
            ..SimConfig::default()
        },
    );
    s.run().unwrap_or_else(|e| panic!("{e}"));
    s.profile().unwrap().clone()
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
            ..on
        },
        off
    );
}

/// The recorded spans agree with the profile's per-superstep cycles, the
/// launches name the worker's entry, and the sends and receipts count the
/// four words.
#[test]
fn the_timeline_holds_supersteps_launches_and_exchange() {
    let p = run(true);
    let exe = program(&[(0, SENDER)], vec![]);
    let entry = exe.tiles[0].image.symbol("worker").unwrap().address;
    let (t0, t1) = (&p.timelines[0], &p.timelines[1]);
    assert_eq!((t0.tile, t1.tile), (0, 1));
    // Two supersteps each: the exchange, then the exit.
    assert_eq!(t0.supersteps.len(), 2);
    for (t, prof) in [(t0, &p.tiles[0]), (t1, &p.tiles[1])] {
        for (span, cycles) in t.supersteps.iter().zip(&prof.supersteps) {
            assert_eq!(span.sync - span.start, cycles.compute + cycles.exchange);
            assert_eq!(span.release - span.sync, cycles.sync_wait);
        }
        let StepSpan { release, .. } = t.supersteps[0];
        assert_eq!(t.supersteps[1].start, release);
    }
    assert_eq!(t0.launches.len(), 6);
    let mut workers: Vec<u8> = t0.launches.iter().map(|l| l.worker).collect();
    workers.sort_unstable();
    assert_eq!(workers, [0, 1, 2, 3, 4, 5]);
    for l in &t0.launches {
        // runall's vertex bases: 0x70000 + worker * 1 * 4.
        let vertex = 0x70000 + 4 * u32::from(l.worker);
        assert_eq!((l.superstep, l.entry, l.vertex), (0, entry, vertex));
        assert!(l.start < l.end && l.end <= t0.supersteps[0].sync);
    }
    assert!(t1.launches.is_empty());
    assert_eq!(t0.sends.len(), 1);
    assert_eq!((t0.sends[0].superstep, t0.sends[0].words), (0, 4));
    assert_eq!(
        t0.sends[0].end - t0.sends[0].start,
        p.tiles[0].supersteps[0].exchange
    );
    assert_eq!(t1.received_words, [4, 0]);
    assert_eq!(t0.received_words, [0, 0]);
}
