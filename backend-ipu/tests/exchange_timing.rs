//! The compiler's model of its exchange code's cycles
//! (`lower::exchange::timing`, `received_by`) against the simulator: a
//! reduction round's code on two partners, each arming for the other's
//! words and sending its own, ends when the model says, its last word
//! leaves when it says, and workers launched exactly when `received_by`
//! says pass the fence while one cycle earlier faults.

use ipuc_backend_ipu::lower::exchange::{
    arm_insts, first_send_cycle, received_by, send_insts, timing, SupInst,
};
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::{Device, DeviceError};
use ipuc_runtime::sim::testing::{program, sim};
use ipuc_runtime::sim::{FaultKind, SimConfig};

/// Tile `me`'s round with `partner`: arm for `recv_words`, send `chunks`.
fn round(me: u32, partner: u32, recv_words: u32, chunks: &[(u32, u32)]) -> Vec<SupInst> {
    let m = MachineModel::c600();
    let mut code = arm_insts(partner, 0x71000, recv_words);
    code.extend(send_insts(
        first_send_cycle(&m, me, &[partner]),
        code.len() as u64,
        chunks,
    ));
    code
}

fn asm(insts: &[SupInst]) -> String {
    insts
        .iter()
        .map(|i| match *i {
            SupInst::Setzi { reg, imm } => format!("    setzi $m{reg}, {imm}\n"),
            SupInst::Put { csr, reg } => format!("    put ${csr}, $m{reg}\n"),
            SupInst::Nop => "    nop\n".to_string(),
            SupInst::Send { reg, words } => format!("    send $m{reg}, {words}\n"),
        })
        .collect()
}

/// The tile's program: the launch's registers before the first sync,
/// then the round, `wait` cycles of `nop`s, the workers, a sync.
fn tile_program(code: &[SupInst], wait: u64) -> String {
    format!(
        "main:\n    setzi $m4, idle\n    setzi $m5, 0x72000\n    sync TEXCH_SYNCZONE_INTERNAL\n{}{}    runall $m4, $m5, 0\n    sync TEXCH_SYNCZONE_INTERNAL\n    exitz $mzero\n    .worker\nidle:\n    exitz $mzero\n",
        asm(code),
        "    nop\n".repeat(wait as usize)
    )
}

#[test]
fn a_rounds_code_runs_as_the_model_times_it() {
    let m = MachineModel::c600();
    // Tiles 0 and 80 (rows apart, so their latencies differ from a
    // neighbour's); uneven halves, chunks apart (a `setzi` each) and one
    // chunk longer than a `send` moves.
    let (a, b) = (0u32, 80u32);
    let a_chunks = [(0x70000, 40), (0x70400, 40), (0x70800, 40)];
    let b_chunks = [(0x70000, 4200), (0x78000, 16)];
    let a_code = round(a, b, 4216, &a_chunks);
    let b_code = round(b, a, 120, &b_chunks);
    let a_ready = received_by(&m, &a_code, (b, a), &b_code);
    let b_ready = received_by(&m, &b_code, (a, b), &a_code);
    let (ta, tb) = (timing(&m, &a_code), timing(&m, &b_code));
    let run = |wait_a: u64, wait_b: u64| {
        let exe = program(
            &[
                (a, &tile_program(&a_code, wait_a)),
                (b, &tile_program(&b_code, wait_b)),
            ],
            vec![],
        );
        let mut s = sim(&exe, SimConfig::default());
        let result = s.run();
        (result, s)
    };
    let (result, s) = run(a_ready - ta.end, b_ready - tb.end);
    result.unwrap_or_else(|e| panic!("{e}"));
    let p = s.profile().unwrap();
    for (t, code_timing) in [(&p.tiles[0], ta), (&p.tiles[1], tb)] {
        let step = &t.supersteps[1];
        // The code's last instruction ends where the model says: the
        // last send's port time (the `runall` is a fence at its end plus
        // the wait, so the exchange's end is the last word's).
        assert_eq!(
            step.exchange_until,
            code_timing.last_word.unwrap() + 1,
            "tile {}",
            t.tile
        );
    }
    // One cycle less for the tile that waits longest for its partner's
    // words: its launch comes before the last of them lands.
    let (wait_a, wait_b) = (a_ready - ta.end, b_ready - tb.end);
    assert!(wait_a > 0 || wait_b > 0, "a wait to shorten");
    let shorter = if wait_a > 0 {
        (wait_a - 1, wait_b)
    } else {
        (wait_a, wait_b - 1)
    };
    match run(shorter.0, shorter.1).0 {
        Err(DeviceError::Fault(f)) => assert!(
            matches!(f.kind, FaultKind::ExchangeDataAfterFence { .. }),
            "{f}"
        ),
        other => panic!("expected the word after the fence, got {other:?}"),
    }
}
