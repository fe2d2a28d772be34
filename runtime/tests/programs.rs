//! Programs in assembly text run on the simulator.

use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;

#[test]
fn integer_loop_sums_and_pays_the_supervisor_pipeline() {
    let s = run_ok(
        &[(
            0,
            r#"
main:
    setzi $m0, 10          // counter
    setzi $m1, 0           // sum
loop:
    add $m1, $m1, $m0
    sub $m0, $m0, 1
    brnz $m0, loop
    setzi $m2, 0x70000
    st32 $m1, $m2, $mzero, 0
    mul $m3, $m1, -2
    st32 $m3, $m2, $mzero, 1
    cmpslt $m4, $m3, 0
    st32 $m4, $m2, $mzero, 2
    exitz $mzero
"#,
        )],
        vec![],
    );
    assert_eq!(word(&s, 0, 0x70000), 55);
    assert_eq!(word(&s, 0, 0x70004) as i32, -110);
    assert_eq!(word(&s, 0, 0x70008), 1);
    let p = s.profile().unwrap();
    assert_eq!(p.tiles[0].instructions, 39);
    assert_eq!(p.tiles[0].supervisor_issues, 39);
    // 2 + 3*10 + 7 supervisor instructions, one a cycle, except that a
    // reader of a result issues 6 cycles after its writer and a taken
    // branch 6 cycles before the next issue (ipu-machine.md, timing rules):
    // setzi 0, 1; pass 1: add 7 ($m1), sub 8, brnz 14 ($m0 from sub);
    // pass k: add 7 + 13(k-1), sub +1, brnz +7, next add 6 after brnz.
    // Pass 10's brnz falls through at 124 + 7 = 131; then setzi $m2 132,
    // st32 138 ($m2), mul 139, st32 145 ($m3), cmpslt 146, st32 152 ($m4),
    // exitz 153: 154 cycles (39 before the pipeline rules).
    assert_eq!(p.total_cycles, 154);
}

#[test]
fn rpt_loop_runs_its_body_count_times_and_zero_skips_it() {
    let exe = program(
        &[(
            0,
            r#"
main:
    setzi $m0, worker
    setzi $m1, 0x70000
    run $m0, $m1, 0
    sync TEXCH_SYNCZONE_LOCAL
    exitz $mzero
    .worker
    .align 8
worker:
    setzi $m2, 0
    setzi $m3, 0
    setzi $m5, 7
    nop
    { rpt $m5, 1 ; fnop }
    { ld32step $m4, $mvertex_base, $m3+=, 1 ; fnop }
    { add $m2, $m2, $m4 ; fnop }
    st32 $m2, $mvertex_base, $mzero, 16
    nop
    { rpt 0, 0 ; fnop }
    { add $m2, $m2, 100 ; fnop }
    st32 $m2, $mvertex_base, $mzero, 17
    exitz $mzero
"#,
        )],
        vec![],
    );
    let mut s = sim(&exe, Default::default());
    let data: Vec<u8> = (1u32..=7).flat_map(|v| v.to_le_bytes()).collect();
    s.write_memory(0, 0x70000, &data).unwrap();
    s.run().unwrap();
    assert_eq!(word(&s, 0, 0x70040), 28);
    assert_eq!(
        word(&s, 0, 0x70044),
        28,
        "rpt with count 0 must skip its body"
    );
    // Worker issues: 4 + rpt + 7*2 + st + nop + rpt + st + exit = 24, each 6 cycles apart.
    let p = s.profile().unwrap();
    assert_eq!(p.tiles[0].worker_issues, 24);
}

#[test]
fn runall_starts_six_workers_with_strided_vertex_bases() {
    let s = run_ok(
        &[(
            0,
            r#"
main:
    setzi $m0, worker
    setzi $m1, 0x70000
    runall $m0, $m1, 2      // vertex base stride 2 words
    sync TEXCH_SYNCZONE_LOCAL
    setzi $m2, 1
    st32 $m2, $m1, $mzero, 20
    exitz $mzero
    .worker
worker:
    add $m3, $m12, 100
    st32 $m3, $mvertex_base, $mzero, 0
    st32 $mvertex_base, $mvertex_base, $mzero, 1
    exitz $mzero
"#,
        )],
        vec![],
    );
    for w in 0..6u32 {
        let base = 0x70000 + w * 8;
        assert_eq!(word(&s, 0, base), 100 + w);
        assert_eq!(word(&s, 0, base + 4), base);
    }
    assert_eq!(word(&s, 0, 0x70050), 1);
    let p = s.profile().unwrap();
    assert_eq!(p.tiles[0].worker_issues, 24);
    // runall at 7 (it reads $m1 from cycle 1); workers from 13, worker w in
    // cycles w mod 6: w1 at 13, 19, 25, 31 .. w0 at 18, 24, 30, 36. The
    // `sync` issues in w1's slot at 37 and completes at 38; setzi 39, st32
    // 45 ($m2), exitz 46.
    assert_eq!(p.total_cycles, 47);
}

const SENDER: &str = r#"
main:
    sync TEXCH_SYNCZONE_INTERNAL
    setzi $m0, 0x70000
    send $m0, 4
    sync TEXCH_SYNCZONE_INTERNAL
    exitz $mzero
"#;

#[test]
fn two_tiles_exchange_data_between_syncs() {
    let receiver = r#"
main:
    sync TEXCH_SYNCZONE_INTERNAL
    setzi $m0, 0x71000
    put $INCOMING_BASE, $m0
    setzi $m1, 4
    put $INCOMING_DCOUNT, $m1
    setzi $m2, 17            // the sender's tile number
    put $INCOMING_MUX, $m2
    sync TEXCH_SYNCZONE_INTERNAL
    ld32 $m3, $m0, $mzero, 3
    st32 $m3, $m0, $mzero, 8
    exitz $mzero
"#;
    let exe = program(&[(17, SENDER), (40, receiver)], vec![]);
    let mut s = sim(&exe, Default::default());
    let data: Vec<u8> = [11u32, 22, 33, 44]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    s.write_memory(17, 0x70000, &data).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    for (i, v) in [11u32, 22, 33, 44].iter().enumerate() {
        assert_eq!(word(&s, 40, 0x71000 + 4 * i as u32), *v);
    }
    assert_eq!(
        word(&s, 40, 0x71020),
        44,
        "received data is visible after the sync"
    );
    let p = s.profile().unwrap();
    // Two syncs: each tile has three supersteps; the first sync releases at 600 + arrival.
    let t17 = &p.tiles[0];
    assert_eq!(t17.supersteps.len(), 3);
    assert!(t17.supersteps[1].exchange >= 4);
    let t40 = &p.tiles[1];
    assert!(t40.supersteps[1].exchange >= 3 * 13, "{:?}", t40.supersteps);
    // The receiver's workers never ran: nothing overlapped the exchange.
    assert_eq!(t40.incoming_words_during_compute, 0);
    assert!(t17.supersteps[0].sync_wait >= 600);
}

/// Runs tile 0 sending its words 1 and 2 from 0x70000 (they land at tile 1
/// at 59 and 60) with tile 1 running `receiver`, which takes them at
/// 0x71000; checks they landed there.
fn two_words_to_tile_1(receiver: &str) -> ipuc_runtime::sim::Simulator {
    let sender = "main:\n    setzi $m0, 0x70000\n    send $m0, 2\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let exe = program(&[(0, sender), (1, receiver)], vec![]);
    let mut s = sim(&exe, Default::default());
    s.write_memory(0, 0x70000, &[1, 0, 0, 0, 2, 0, 0, 0])
        .unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((word(&s, 1, 0x71000), word(&s, 1, 0x71004)), (1, 2));
    s
}

#[test]
fn words_arriving_while_a_worker_runs_are_counted() {
    // Tile 1 starts a worker that spins about 240 cycles, then arms its
    // receive window; tile 0's two words land at 59 and 60, while the
    // worker runs. The simulator charges nothing for the overlap but
    // reports it, and still delivers the words.
    let receiver = "main:\n    setzi $m2, spin\n    setzi $m3, 0x72000\n    run $m2, $m3, 0\n    setzi $m1, 2\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x71000\n    put $INCOMING_BASE, $m0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nspin:\n    setzi $m1, 40\nloop:\n    brnzdec $m1, loop\n    exitz $mzero\n";
    let s = two_words_to_tile_1(receiver);
    let p = s.profile().unwrap();
    assert_eq!(p.tiles[1].incoming_words_during_compute, 2);
    assert_eq!(p.tiles[0].incoming_words_during_compute, 0);
}

#[test]
fn workers_launched_after_the_exchange_without_a_sync_read_what_arrived() {
    // Tile 1 arms its window, spins until tile 0's two words have landed
    // (at 59 and 60), then launches workers that copy the second word:
    // no sync between the exchange and the launch (a fence), so each
    // tile has one sync and two supersteps, and the workers see the word.
    let receiver = "main:\n    setzi $m1, 2\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x71000\n    put $INCOMING_BASE, $m0\n    setzi $m3, 10\nspin:\n    brnzdec $m3, spin\n    setzi $m2, copy\n    runall $m2, $m0, 0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\ncopy:\n    ld32 $m1, $mvertex_base, $mzero, 1\n    st32 $m1, $mvertex_base, $mzero, 4\n    exitz $mzero\n";
    let s = two_words_to_tile_1(receiver);
    assert_eq!(word(&s, 1, 0x71010), 2, "the workers read the second word");
    let p = s.profile().unwrap();
    assert_eq!(p.tiles[0].supersteps.len(), 2);
    assert_eq!(p.tiles[1].supersteps.len(), 2);
    // Nothing arrived while the workers ran.
    assert_eq!(p.tiles[1].incoming_words_during_compute, 0);
}

#[test]
fn narrow_loads_sign_or_zero_extend() {
    // Half-word 0x8001 is negative as an i16, its byte 1 (0x80) as an i8; byte 0 is 1.
    let s = run_ok(
        &[(
            0,
            r#"
main:
    setzi $m2, 0x70000
    setzi $m1, 0x8001
    st32 $m1, $m2, $mzero, 0
    lds16 $m3, $m2, $mzero, 0
    ldz16 $m4, $m2, $mzero, 0
    lds8 $m5, $m2, $mzero, 1
    ldz8 $m6, $m2, $mzero, 1
    lds8 $m7, $m2, $mzero, 0
    st32 $m3, $m2, $mzero, 4
    st32 $m4, $m2, $mzero, 5
    st32 $m5, $m2, $mzero, 6
    st32 $m6, $m2, $mzero, 7
    st32 $m7, $m2, $mzero, 8
    exitz $mzero
"#,
        )],
        vec![],
    );
    let loaded: Vec<u32> = (4..=8).map(|i| word(&s, 0, 0x70000 + 4 * i)).collect();
    assert_eq!(loaded, [0xFFFF_8001, 0x8001, 0xFFFF_FF80, 0x80, 1]);
}

#[test]
fn memory_of_a_tile_without_a_program_is_a_load_error() {
    let mut s = run_ok(&[(0, "main:\n    exitz $mzero\n")], vec![]);
    let write = s.write_memory(3, 0x70000, &[1]).unwrap_err();
    let read = s.read_memory(3, 0x70000, 4).unwrap_err();
    for e in [write, read] {
        assert!(e.to_string().contains("tile 3 has no program"), "{e}");
    }
}
