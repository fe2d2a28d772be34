//! Executables are outside data: mutated files must be read, loaded and
//! run into errors and faults, never a panic. The mutations keep the
//! framing valid (magic, version, a fresh hash of the mutated payload) so
//! they reach the decoder, the validator, the loader and the interpreter;
//! `fuzz/fuzz_targets/exe.rs` runs the same pipeline under libFuzzer.

use ipuc_ipu_arch::exe::{DType, FORMAT_VERSION, MAGIC};
use ipuc_ipu_arch::{Executable, MachineModel};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::{binding, program};
use ipuc_runtime::sim::{SimConfig, Simulator};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

const PROGRAM: &str = "
    .section .text, \"ax\"
main:
    setzi $m0, worker
    setzi $m1, 0x70000
    runall $m0, $m1, 0
    sync TEXCH_SYNCZONE_LOCAL
    exitz $mzero
    .worker
    .align 8
worker:
    ld32 $m2, $mvertex_base, $mzero, 0
    add $m2, $m2, 1
    st32 $m2, $mvertex_base, $mzero, 0
    exitz $mzero
    .stack worker, 0x80000, 64
";

fn payload() -> Vec<u8> {
    let exe = program(
        &[(1, PROGRAM)],
        vec![binding("x", 1, 0x70000, DType::I32, 4)],
    );
    exe.to_bytes()[44..].to_vec()
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&Sha256::digest(payload));
    bytes.extend_from_slice(payload);
    bytes
}

/// Reads, loads and runs (bounded); returns whether it got as far as a run.
fn read_load_run(bytes: &[u8]) -> bool {
    let Ok(exe) = Executable::from_bytes(bytes) else {
        return false;
    };
    let mut sim = Simulator::new(
        MachineModel::by_name(&exe.machine).expect("validated machine"),
        SimConfig {
            max_cycles: 50_000,
            max_instructions: 50_000,
            ..SimConfig::default()
        },
    );
    if sim.load(&exe).is_err() {
        return false;
    }
    let _ = sim.run();
    true
}

#[test]
fn the_unmutated_program_runs() {
    assert!(read_load_run(&framed(&payload())));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn mutated_executables_are_errors_or_faults(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut p = payload();
        for (at, byte) in edits {
            let i = at.index(p.len());
            p[i] = byte;
        }
        if truncate {
            p.truncate(cut.index(p.len()));
        }
        read_load_run(&framed(&p));
    }
}
