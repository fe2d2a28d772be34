//! Every fault kind, provoked by a program, with its report checked.

use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use ipuc_runtime::sim::{FaultKind, SimConfig};

fn sup(body: &str) -> String {
    format!("main:\n{body}\n    exitz $mzero\n")
}

#[test]
fn misaligned_access() {
    let f = run_fault(
        &[(
            3,
            &sup("    setzi $m0, 0x70002\n    ld32 $m1, $m0, $mzero, 0"),
        )],
        SimConfig::default(),
    );
    assert_eq!(
        f.kind,
        FaultKind::MisalignedAccess {
            address: 0x70002,
            size: 4
        }
    );
    // The load reads $m0 six cycles after `setzi` wrote it (supervisor pipeline).
    assert_eq!(
        (f.tile, f.context.as_str(), f.pc, f.cycle),
        (3, "supervisor", 0x4c004, 6)
    );
    assert_eq!(f.instruction, "ld32 $m1, $m0, $mzero, 0");
    assert!(f.to_string().contains("tile 3 supervisor pc 0x4c004 `ld32 $m1, $m0, $mzero, 0` cycle 6: misaligned 4-byte access at 0x70002"));
}

#[test]
fn out_of_range_address() {
    let f = run_fault(
        &[(
            0,
            &sup("    setzi $m0, 0x1000\n    st32 $m0, $m0, $mzero, 0"),
        )],
        SimConfig::default(),
    );
    assert_eq!(
        f.kind,
        FaultKind::OutOfRange {
            address: 0x1000,
            size: 4
        }
    );
    assert!(f.instruction.starts_with("st32"));
}

const WORKER_WRAP: &str = "main:\n    setzi $m0, worker\n    run $m0, $mzero, 0\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\nworker:\n";

#[test]
fn ld128_outside_interleaved_memory() {
    let text = format!(
        "{WORKER_WRAP}    setzi $m1, 0x70000\n    ld128 $a0:3, $m1, $mzero, 0\n    exitz $mzero\n"
    );
    let f = run_fault(&[(0, &text)], SimConfig::default());
    assert_eq!(f.kind, FaultKind::NotInterleaved { address: 0x70000 });
    assert_eq!(f.context, "worker 0");
}

#[test]
fn bank_conflict_in_one_instruction() {
    // Both packed addresses in the same 16 KiB element of region 0.
    let text = format!("{WORKER_WRAP}    setzi $m1, 0x70000\n    setzi $m2, 0x70100\n    tapack $m4:5, $m1, $m2, $mzero\n    ld2x64pace $a0:3, $m4:5+=, $mzero, 0\n    exitz $mzero\n");
    let f = run_fault(&[(0, &text)], SimConfig::default());
    assert_eq!(
        f.kind,
        FaultKind::BankConflict {
            first: 0x70000,
            second: 0x70100
        }
    );
    // Same rule in interleaved memory: same 64-bit parity of one element pair conflicts, the other parity does not.
    let ok = format!("{WORKER_WRAP}    setzi $m1, 0x80000\n    setzi $m2, 0x80108\n    tapack $m4:5, $m1, $m2, $mzero\n    ld2x64pace $a0:3, $m4:5+=, $mzero, 0\n    exitz $mzero\n");
    run_ok(&[(0, &ok)], vec![]);
    let bad = ok.replace("0x80108", "0x80110");
    assert!(matches!(
        run_fault(&[(0, &bad)], SimConfig::default()).kind,
        FaultKind::BankConflict { .. }
    ));
}

#[test]
fn illegal_instruction_when_branching_out_of_code() {
    let f = run_fault(
        &[(0, &sup("    setzi $m0, 0x90000\n    br $m0"))],
        SimConfig::default(),
    );
    assert!(
        matches!(&f.kind, FaultKind::IllegalInstruction(s) if s.contains("not in code")),
        "{f}"
    );
    assert_eq!(f.pc, 0x90000);
}

#[test]
fn illegal_operand_for_an_unmodelled_sync_zone() {
    let f = run_fault(&[(0, &sup("    sync 9"))], SimConfig::default());
    assert!(
        matches!(&f.kind, FaultKind::IllegalOperand(s) if s.contains("sync zone 9")),
        "{f}"
    );
    assert_eq!(f.instruction, "sync 9");
}

#[test]
fn worker_started_while_busy() {
    // Worker n spins 10n times, so worker 0 frees its slot first while the others still run.
    let text = "main:\n    setzi $m0, worker\n    runall $m0, $mzero, 0\n    runall $m0, $mzero, 0\n    exitz $mzero\n    .worker\nworker:\n    mul $m1, $m12, 10\nspin:\n    brnzdec $m1, spin\n    exitz $mzero\n";
    let f = run_fault(&[(0, text)], SimConfig::default());
    assert!(
        matches!(&f.kind, FaultKind::WorkerBusy(s) if s.contains("runall")),
        "{f}"
    );
    assert_eq!(f.pc, 0x4c008);
}

#[test]
fn lost_exchange_data_when_no_mux_selects_the_sender() {
    let sender = "main:\n    setzi $m0, 0x70000\n    send $m0, 2\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let receiver = "main:\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let f = run_fault(&[(0, sender), (1, receiver)], SimConfig::default());
    // `send` waits for $m0 until cycle 6; its first word leaves at 7.
    assert_eq!(
        f.kind,
        FaultKind::LostExchangeData {
            sent_at: 7,
            words: 2
        }
    );
    assert_eq!((f.tile, f.pc), (0, 0x4c004));
    assert_eq!(f.instruction, "send $m0, 2");
}

#[test]
fn missing_exchange_data_when_fewer_words_arrive() {
    let f = run_fault(&[(0, SEND_2), (1, &receiver(5))], SimConfig::default());
    assert_eq!(
        f.kind,
        FaultKind::MissingExchangeData {
            expected: 5,
            received: 2
        }
    );
    assert_eq!(f.tile, 1);
}

/// Sends two words from 0x70000: `send` issues at 6 (it waits for $m0), the
/// words leave at 7 and 8 and reach a tile of the same row 52 cycles later.
const SEND_2: &str = "main:\n    setzi $m0, 0x70000\n    send $m0, 2\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";

/// Receives from tile 0 into 0x70000 with `$INCOMING_DCOUNT` = `count`:
/// the count takes effect at 6 + 13 = 19, the mux at 32, the base at 51,
/// all before the first word arrives at 59.
fn receiver(count: u32) -> String {
    format!("main:\n    setzi $m1, {count}\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x70000\n    put $INCOMING_BASE, $m0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n")
}

#[test]
fn surplus_exchange_data_beyond_incoming_dcount() {
    let f = run_fault(&[(0, SEND_2), (1, &receiver(1))], SimConfig::default());
    assert_eq!(
        f.kind,
        FaultKind::SurplusExchangeData {
            expected: 1,
            arrived_at: 60
        }
    );
    assert_eq!((f.tile, f.cycle), (1, 60));
}

#[test]
fn exchange_data_into_a_window_never_armed() {
    // The mux takes effect at 13, the base at 32; no `$INCOMING_DCOUNT`.
    let receiver = "main:\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x70000\n    put $INCOMING_BASE, $m0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let f = run_fault(&[(0, SEND_2), (1, receiver)], SimConfig::default());
    assert_eq!(f.kind, FaultKind::UnarmedExchangeWindow { arrived_at: 59 });
    assert!(
        f.to_string().contains("before $INCOMING_DCOUNT armed"),
        "{f}"
    );
}

/// Announces its arrival with `sans` at 0, then sends one word at 729
/// (it lands at tile 1 at 782).
const LATE_SENDER: &str = "main:\n    sans 3\n    setzi $m0, 0x70000\n    setzi $m1, 120\nspin:\n    brnzdec $m1, spin\n    send $m0, 1\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";

#[test]
fn exchange_data_arriving_after_the_closing_sync() {
    // The sender announces its arrival with `sans` at 0 and keeps going:
    // `setzi $m1` at 2, the loop's brnzdec at 8, 14, .., 728 (121 issues),
    // `send` at 729, its word leaves at 730 and lands at 782. The receiver
    // arrives at 51, so the sync releases at 651: the word is late. So it
    // is with tile 2 passing a fence (a register write, then a launch):
    // the word is delivered at the fence, before the release is known,
    // and still found late against it.
    let fenced = "main:\n    put $INCOMING_DCOUNT, $mzero\n    setzi $m2, idle\n    runall $m2, $mzero, 0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nidle:\n    exitz $mzero\n";
    let receiver = receiver(1);
    for tiles in [
        &[(0, LATE_SENDER), (1, receiver.as_str())][..],
        &[(0, LATE_SENDER), (1, receiver.as_str()), (2, fenced)],
    ] {
        let f = run_fault(tiles, SimConfig::default());
        assert_eq!(
            f.kind,
            FaultKind::LateExchangeData {
                arrived_at: 782,
                closing: 651
            }
        );
        assert_eq!(f.tile, 1);
    }
}

#[test]
fn exchange_data_arriving_after_a_supervisor_load_with_no_sync_between() {
    // As in `exchange_data_arriving_after_a_launch_with_no_sync_between`,
    // the supervisor reading memory (where the first word lands) instead
    // of launching workers: also a fence.
    let receiver = "main:\n    setzi $m1, 2\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x70000\n    put $INCOMING_BASE, $m0\n    ld32 $m3, $m0, $mzero, 0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n";
    let f = run_fault(&[(0, SEND_2), (1, receiver)], SimConfig::default());
    assert!(
        matches!(f.kind, FaultKind::ExchangeDataAfterFence { arrived_at: 59, fence } if fence < 59),
        "{f}"
    );
}

#[test]
fn exchange_data_arriving_after_a_launch_with_no_sync_between() {
    // The receiver arms its window as `receiver` does (the base effective
    // at 51), then launches its workers at once: a fence, before tile 0's
    // words land at 59 and 60. The workers may have read where they land.
    let receiver = "main:\n    setzi $m1, 2\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x70000\n    put $INCOMING_BASE, $m0\n    setzi $m2, idle\n    runall $m2, $m0, 0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nidle:\n    exitz $mzero\n";
    let f = run_fault(&[(0, SEND_2), (1, receiver)], SimConfig::default());
    assert!(
        matches!(
            f.kind,
            FaultKind::ExchangeDataAfterFence { arrived_at: 59, fence } if fence < 59
        ),
        "{f}"
    );
    assert_eq!(f.tile, 1);
    assert!(f.to_string().contains("wait for the last word"), "{f}");
}

#[test]
fn a_word_sent_after_its_receivers_fence_faults_in_the_next_resolution() {
    // Tile 0 sends a word (landing at 59), launches its workers (a fence:
    // it sent words), then sends a second word. Tile 1 takes the first
    // (its window armed for one word), spins past its arrival and
    // launches its workers: every tile is at a fence, the exchange so far
    // is resolved, and both run on. The second word was sent after that
    // resolution and lands while tile 1 computes, its mux still naming
    // tile 0: the next resolution (the sync) finds it in no armed window.
    let sender = "main:\n    setzi $m0, 0x70000\n    send $m0, 1\n    setzi $m2, idle\n    runall $m2, $mzero, 0\n    send $m0, 1\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nidle:\n    exitz $mzero\n";
    let receiver = "main:\n    setzi $m1, 1\n    put $INCOMING_DCOUNT, $m1\n    put $INCOMING_MUX, $mzero\n    setzi $m0, 0x71000\n    put $INCOMING_BASE, $m0\n    setzi $m3, 10\nspin:\n    brnzdec $m3, spin\n    setzi $m2, idle\n    runall $m2, $m0, 0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nidle:\n    exitz $mzero\n";
    let f = run_fault(&[(0, sender), (1, receiver)], SimConfig::default());
    assert!(
        matches!(f.kind, FaultKind::UnarmedExchangeWindow { arrived_at } if arrived_at > 60),
        "{f}"
    );
    assert_eq!(f.tile, 1);
}

#[test]
fn deadlock_when_a_participant_never_syncs() {
    let f = run_fault(
        &[
            (
                0,
                "main:\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n",
            ),
            (5, "main:\n    exitz $mzero\n"),
        ],
        SimConfig::default(),
    );
    assert!(
        matches!(&f.kind, FaultKind::Deadlock(s) if s.contains("tile 5")),
        "{f}"
    );
    assert_eq!(f.tile, 0);
}

#[test]
fn stack_overflow_below_the_stack_region() {
    let text = "    .stack supervisor, 0x7c000, 64\nmain:\n    st32 $m0, $sp, $mzero, -0\n    sub $sp, $sp, 64\n    st32 $m0, $sp, $mzero, 0\n    sub $sp, $sp, 8\n    st32 $m0, $sp, $mzero, 0\n    exitz $mzero\n";
    let f = run_fault(&[(0, text)], SimConfig::default());
    assert_eq!(
        f.kind,
        FaultKind::StackOverflow {
            address: 0x7c000 - 72,
            limit: 0x7c000 - 64
        }
    );
    assert_eq!(f.pc, 0x4c010);
}

#[test]
fn cycle_budget_exhaustion() {
    let f = run_fault(
        &[(0, "main:\n    bri main\n")],
        SimConfig {
            max_cycles: 1000,
            ..SimConfig::default()
        },
    );
    assert_eq!(f.kind, FaultKind::CycleBudgetExhausted(1000));
    assert_eq!(f.cycle, 1000);
    assert_eq!(f.instruction, "bri 0x4c000");
}

#[test]
fn instruction_budget_exhaustion() {
    let f = run_fault(
        &[(0, "main:\n    bri main\n")],
        SimConfig {
            max_instructions: 500,
            ..SimConfig::default()
        },
    );
    assert_eq!(f.kind, FaultKind::InstructionBudgetExhausted(500));
}

#[test]
fn rpt_count_beyond_the_16_bit_repeat_counter() {
    // ipu2/ipu21 repeat counts are 16-bit (llvm-project-fork ipuArchInfo:
    // repeat-count mask 0xffff): 65535 repeats run, 65536 fault.
    let body = |count: u32| {
        format!("{WORKER_WRAP}    setzi $m1, {count}\n    nop\n    {{ rpt $m1, 0 ; fnop }}\n    {{ nop ; fnop }}\n    exitz $mzero\n")
    };
    let s = run_ok(&[(0, &body(0xffff))], vec![]);
    assert_eq!(s.profile().unwrap().tiles[0].worker_issues, 4 + 0xffff);
    let f = run_fault(&[(0, &body(0x10000))], SimConfig::default());
    assert!(
        matches!(&f.kind, FaultKind::IllegalOperand(s) if s.contains("rpt count 65536 exceeds the repeat counter's maximum 65535")),
        "{f}"
    );
}

#[test]
fn a_bundle_of_two_main_instructions_faults_when_executed() {
    // The assembler never builds one; a damaged image can hold one. Its
    // second half must not be dropped silently.
    let text = "main:\n    setzi $m0, worker\n    run $m0, $mzero, 0\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\n    .align 8\nworker:\n    { setzi $m1, 1 ; fnop }\n    exitz $mzero\n";
    let mut exe = program(&[(0, text)], vec![]);
    let image = &mut exe.tiles[0].image;
    let at = image.symbol("worker").unwrap().address;
    let sec = image
        .sections
        .iter_mut()
        .find(|s| s.is_code && s.address <= at && at < s.end())
        .unwrap();
    let off = (at - sec.address) as usize + 4;
    let main = ipuc_ipu_arch::encoding::Instr::new(ipuc_ipu_arch::isa::Opcode::SetziM, &[2, 7]);
    sec.bytes[off..off + 4].copy_from_slice(&ipuc_ipu_arch::encode(&main, false).to_le_bytes());
    let mut s = sim(&exe, SimConfig::default());
    match s.run() {
        Err(ipuc_runtime::device::DeviceError::Fault(f)) => {
            assert!(
                matches!(&f.kind, FaultKind::IllegalInstruction(m) if m.contains("bundle { setzi ; setzi } needs a main-pipeline instruction first")),
                "{f}"
            );
            assert_eq!((f.context.as_str(), f.pc), ("worker 0", at));
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// Tiles run their supersteps on several host threads; the fault reported
/// is the lowest-numbered tile's, whichever faults first in cycles or in
/// host time, and what the run leaves behind (profile, memory) is the same
/// for every thread count. Tile 1 faults at cycle 6, tile 0 at cycle 60,
/// tile 2 finishes normally after writing memory.
#[test]
fn the_lowest_tile_faults_whatever_the_thread_count() {
    let spin = |n: u32| format!("    setzi $m1, {n}\nspin:\n    brnzdec $m1, spin\n");
    let late = sup(&format!(
        "{}    setzi $m0, 0x70002\n    ld32 $m1, $m0, $mzero, 0",
        spin(8)
    ));
    let early = sup("    setzi $m0, 0x70006\n    ld32 $m1, $m0, $mzero, 0");
    let fine = sup(&format!(
        "{}    setzi $m0, 0x70000\n    st32 $m0, $m0, $mzero, 0",
        spin(100)
    ));
    let exe = program(&[(0, &late), (1, &early), (2, &fine)], vec![]);
    let mut runs = Vec::new();
    for threads in [1, 2, 3] {
        let config = SimConfig {
            threads: std::num::NonZeroUsize::new(threads),
            ..SimConfig::default()
        };
        let mut s = sim(&exe, config);
        let Err(ipuc_runtime::device::DeviceError::Fault(f)) = s.run() else {
            panic!("expected a fault");
        };
        assert_eq!(
            (f.tile, &f.kind),
            (
                0,
                &FaultKind::MisalignedAccess {
                    address: 0x70002,
                    size: 4
                }
            ),
            "{threads} threads: {f}"
        );
        runs.push((f, s.profile().cloned(), word(&s, 2, 0x70000)));
    }
    assert_eq!(runs[2].2, 0x70000, "tile 2 ran its superstep to the end");
    assert!(runs.windows(2).all(|w| w[0] == w[1]));
}
