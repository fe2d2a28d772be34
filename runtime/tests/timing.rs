//! The timing rules of the machine model (`shared/ipu-machine.md`, "timing
//! rules"), each checked against a count derived by hand from the rule's
//! published statement, not against the simulator's own formulas:
//! - supervisor results are readable 6 cycles after their instruction
//!   issues (poplibs: `nop // keep nop for 6 instructions pipeline`);
//! - a taken branch costs 6 cycles (poplibs: `bri .LStore // 6 cycles`,
//!   and "brnzdec loops mean 6-cycle stall for all but last iteration",
//!   which its estimates count as `(n - 1) * 6 + 1`);
//! - a started worker first issues 6 cycles after `run`/`runall`
//!   (assumption: the run leaves the supervisor pipeline like a result);
//! - `sans` announces arrival at the sync, which releases 600 cycles after
//!   the last arrival.

use ipuc_ipu_arch::encoding::Instr;
use ipuc_ipu_arch::isa::Opcode;
use ipuc_ipu_arch::pipeline::{self, launch_cycles, supervisor_schedule};
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use ipuc_runtime::sim::{SimConfig, Simulator};
use proptest::prelude::*;

fn total_cycles(text: &str) -> u64 {
    run_ok(&[(0, text)], vec![]).profile().unwrap().total_cycles
}

/// Runs the worker code `worker` on all six workers of tile 0: the
/// supervisor sets `$m0` to the entry (cycle 0) and `$m1` to the vertex
/// states at 0x70000, one word each (cycle 1), then `runall`, `sync`, `exitz`.
fn run_six_workers(worker: &str) -> Simulator {
    let text = format!(
        "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    runall $m0, $m1, 1\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\nworker:\n{worker}"
    );
    run_ok(&[(0, &text)], vec![])
}

/// The vertex-state word of each of the six workers of [`run_six_workers`].
fn worker_words(s: &Simulator) -> Vec<u32> {
    (0..6).map(|w| word(s, 0, 0x70000 + 4 * w)).collect()
}

#[test]
fn a_brnzdec_loop_costs_six_cycles_per_taken_branch_and_one_for_the_last() {
    // poplibs (ConvPartialnx1 supervisor estimate): a loop of G passes whose
    // body is only its `brnzdec` costs (G - 1) * 6 + 1 cycles. Six `nop`s
    // keep the counter's `setzi` out of the way, `exitz` follows.
    for g in [1u64, 2, 5, 17] {
        let text = format!(
            "main:\n    setzi $m0, {}\n{}loop:\n    brnzdec $m0, loop\n    exitz $mzero\n",
            g - 1,
            "    nop\n".repeat(5)
        );
        // setzi + 5 nops issue at cycles 0..=5; the loop from 6; exitz, end.
        assert_eq!(total_cycles(&text), 6 + ((g - 1) * 6 + 1) + 1, "G = {g}");
    }
}

#[test]
fn a_reader_of_the_previous_result_waits_until_six_cycles_after_it() {
    // EncodeOneHot.S marks `and $mscratch, $outPtr_cpy, 0x2 // 6 cycles`
    // after the load that post-increments $outPtr_cpy, and `sub ..., $mscratch
    // // 6 cycles` after that `and`: each reader issues 6 cycles after its
    // writer. Independent instructions in between fill the wait.
    let chained =
        "main:\n    setzi $m0, 1\n    add $m1, $m0, 1\n    add $m2, $m1, 1\n    exitz $mzero\n";
    // setzi 0, add 6, add 12, exitz 13.
    assert_eq!(total_cycles(chained), 14);
    let filled = "main:\n    setzi $m0, 1\n    setzi $m3, 1\n    setzi $m4, 1\n    setzi $m5, 1\n    setzi $m6, 1\n    setzi $m7, 1\n    add $m1, $m0, 1\n    exitz $mzero\n";
    assert_eq!(total_cycles(filled), 8);
}

#[test]
fn bri_and_call_return_cost_six_cycles_each() {
    // `bri .LStore // 6 cycles`, `br $lr // 6 cycles` (EncodeOneHot.S).
    let text = "main:\n    call $m6, f\n    exitz $mzero\nf:\n    bri g\ng:\n    br $m6\n";
    // call 0 (writes $m6), bri 6, br 12 (reads $m6: ready at 6), exitz 18.
    assert_eq!(total_cycles(text), 19);
}

#[test]
fn workers_start_six_cycles_after_runall_in_their_own_slots() {
    let s = run_six_workers(
        "    get $m2, $COUNT_L\n    st32 $m2, $mvertex_base, $mzero, 0\n    exitz $mzero\n",
    );
    // runall reads $m1 (written at 1): issues at 7. Workers may issue from
    // 13, worker w in the cycles w mod 6: w1..w5 at 13..17, w0 at 18.
    assert_eq!(worker_words(&s), vec![18, 13, 14, 15, 16, 17]);
    // Each worker issues 3 times, once a round: w0 exits at 30, w1 at 25,
    // whose slot comes back at 31: `sync` issues there, completes at 32;
    // `exitz` at 33.
    assert_eq!(s.profile().unwrap().total_cycles, 34);
}

#[test]
fn a_worker_reads_its_context_number_from_wsr() {
    // poplibs' workers find their partition entry from `get $WSR` masked
    // with CTXTID_M1 (conv_partial_1x1_half_float_8_and_half_half_h16.S):
    // worker w reads w, one issue each for the `get` and the `and`.
    let s = run_six_workers(
        "    get $m2, $WSR\n    and $m2, $m2, 7\n    st32 $m2, $mvertex_base, $mzero, 0\n    exitz $mzero\n",
    );
    assert_eq!(worker_words(&s), vec![0, 1, 2, 3, 4, 5]);
    // The supervisor has no worker status: reading it is a fault.
    let f = run_fault(
        &[(0, "main:\n    get $m2, $WSR\n    exitz $mzero\n")],
        SimConfig::default(),
    );
    assert!(f.to_string().contains("WSR"), "{f}");
}

#[test]
fn a_transcendental_holds_its_worker_for_its_issue_slots() {
    // One worker reads $COUNT_L, issues the instruction under test in a
    // bundle, and reads $COUNT_L again: the gap is 6 cycles per issue slot
    // the bundle holds (poplibs' averages in `MachineModel::transcendental_issues`).
    let m = MachineModel::c600();
    for (mn, op) in [
        ("f32v2add $a2:3, $a0:1, $a0:1", Opcode::F32v2Add),
        ("f16v2exp $a2, $a0", Opcode::F16v2Exp),
        ("f16v2sigm $a2, $a0", Opcode::F16v2Sigm),
        ("f32exp $a2, $a0", Opcode::F32Exp),
        ("f32oorx $a2, $a0", Opcode::F32Oorx),
        ("f32sqrt $a2, $a0", Opcode::F32Sqrt),
        ("f32ln $a2, $a0", Opcode::F32Ln),
    ] {
        let text = format!(
            "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    run $m0, $m1, 0\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\n    .align 8\nworker:\n    get $m2, $COUNT_L\n    nop\n    {{ nop ; {mn} }}\n    get $m3, $COUNT_L\n    st32 $m2, $mvertex_base, $mzero, 0\n    st32 $m3, $mvertex_base, $mzero, 1\n    exitz $mzero\n"
        );
        let s = run_ok(&[(0, &text)], vec![]);
        let gap = word(&s, 0, 0x70004) - word(&s, 0, 0x70000);
        let slots = pipeline::issue_slots(op, &m);
        assert_eq!(gap, 6 * (2 + slots), "{mn}");
    }
}

#[test]
fn the_launch_formula_of_ipu_arch_matches_the_simulator() {
    // pipeline::launch_cycles is what codelet estimates use; the simulator
    // must agree with it for uneven worker loads too.
    let m = MachineModel::c600();
    for loads in [
        [1u32, 1, 1, 1, 1, 1],
        [3, 0, 0, 0, 0, 0],
        [0, 4, 2, 9, 1, 7],
    ] {
        let words: Vec<String> = loads.iter().map(|n| n.to_string()).collect();
        let text = format!(
            "main:\n    setzi $m0, worker\n    setzi $m1, counts\n    runall $m0, $m1, 1\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\nworker:\n    ld32 $m2, $mvertex_base, $mzero, 0\n    brz $m2, done\nspin:\n    brnzdec $m2, spin\ndone:\n    exitz $mzero\n    .data\ncounts:\n    .word {}\n",
            words.join(", ")
        );
        // ld32, brz, spin (n + 1 issues when n > 0: brnzdec from n down to 0), exitz.
        let issues: Vec<u64> = loads
            .iter()
            .map(|&n| 3 + if n > 0 { u64::from(n) + 1 } else { 0 })
            .collect();
        let prologue = [
            Instr::new(Opcode::SetziM, &[0, 0]),
            Instr::new(Opcode::SetziM, &[1, 0]),
            Instr::new(Opcode::Runall, &[0, 1, 1]),
        ];
        let want = launch_cycles(&prologue, &issues, &[Instr::new(Opcode::Exitz, &[15])], &m);
        assert_eq!(total_cycles(&text), want, "{loads:?}");
    }
}

#[test]
fn sans_announces_the_arrival_and_the_release_counts_from_it() {
    // Tile 0 announces at once, then works ~300 cycles before its `sync`;
    // tile 1 syncs at once. The release is 600 after the later arrival.
    let busy = "main:\n    sans 3\n    setzi $m0, 60\nspin:\n    brnzdec $m0, spin\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let idle = "main:\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let s = run_ok(&[(0, busy), (1, idle)], vec![]);
    let p = s.profile().unwrap();
    // Arrivals: tile 0 at 0 (its `sans`), tile 1 at 0: release at 600.
    // Tile 0 reaches its sync at 1 + 6 + 60*6 + 1 = 368 < 600, waits, and
    // both issue `exitz` at 600.
    assert_eq!((p.tiles[0].end_cycle, p.tiles[1].end_cycle), (601, 601));
    assert_eq!(p.tiles[0].supersteps[0].sync_wait, 600 - 368);
    // Without the `sans`, the release is 368 + 600.
    let s = run_ok(
        &[(0, &busy.replace("    sans 3\n", "    nop\n")), (1, idle)],
        vec![],
    );
    assert_eq!(s.profile().unwrap().tiles[1].end_cycle, 968 + 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random straight-line supervisor code: the simulator issues it at the
    /// cycles `pipeline::supervisor_schedule` gives (the assembler's
    /// warnings and the codelet estimates use that schedule).
    #[test]
    fn straight_line_supervisor_code_issues_as_the_schedule_says(
        ops in proptest::collection::vec((0u8..4, 0i32..8, 0i32..8, 0i32..8), 1..30)
    ) {
        let mut text = String::from("main:\n");
        let mut code = Vec::new();
        for (kind, d, a, b) in ops {
            let (line, i) = match kind {
                0 => (format!("setzi $m{d}, {a}"), Instr::new(Opcode::SetziM, &[d, a])),
                1 => (format!("add $m{d}, $m{a}, $m{b}"), Instr::new(Opcode::Add, &[d, a, b])),
                2 => (format!("shl $m{d}, $m{a}, 1"), Instr::new(Opcode::ShlImm, &[d, a, 1])),
                _ => ("nop".to_string(), Instr::new(Opcode::Nop, &[])),
            };
            text.push_str(&format!("    {line}\n"));
            code.push(i);
        }
        text.push_str("    exitz $mzero\n");
        code.push(Instr::new(Opcode::Exitz, &[15]));
        let m = MachineModel::c600();
        let last = *supervisor_schedule(&code, &m).issue.last().unwrap();
        let exe = program(&[(0, &text)], vec![]);
        let mut s = sim(&exe, SimConfig::default());
        s.run().unwrap();
        prop_assert_eq!(s.profile().unwrap().total_cycles, last + 1);
    }
}

#[test]
fn the_exchange_port_moves_the_machine_models_bytes_per_cycle() {
    // Four words take 16 bytes of port time: 4 cycles at 4 B/cycle, 2 at 8.
    let sender = "main:\n    setzi $m0, 0x70000\n    send $m0, 4\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let receiver = "main:\n    setzi $m1, 4\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x71000\n    put $INCOMING_BASE, $m0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    for (bytes_per_cycle, port_cycles) in [(4, 4), (8, 2)] {
        let machine = MachineModel {
            exchange_bytes_per_cycle: bytes_per_cycle,
            ..MachineModel::c600()
        };
        let exe = program(&[(0, sender), (1, receiver)], vec![]);
        let mut s = ipuc_runtime::sim::Simulator::new(machine, SimConfig::default());
        s.load(&exe).unwrap();
        s.write_memory(0, 0x70000, &[7; 16]).unwrap();
        s.run().unwrap_or_else(|e| panic!("{e}"));
        let p = s.profile().unwrap();
        assert_eq!(p.tiles[0].supersteps[0].exchange, port_cycles);
        assert_eq!(word(&s, 1, 0x7100c), 0x0707_0707);
    }
}

#[test]
fn a_machine_whose_amp_weight_store_differs_is_refused() {
    let machine = MachineModel {
        cccs_entries: 32,
        ..MachineModel::c600()
    };
    let exe = program(&[(0, "main:\n    exitz $mzero\n")], vec![]);
    let mut s = ipuc_runtime::sim::Simulator::new(machine, SimConfig::default());
    let e = s.load(&exe).unwrap_err().to_string();
    assert!(
        e.contains("64 weight entries") && e.contains("says 32"),
        "{e}"
    );
}
