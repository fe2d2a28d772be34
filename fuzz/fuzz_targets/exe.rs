//! Feeds arbitrary bytes to the executable reader, and whatever reads to the
//! simulator's loader and a short run. Any panic or abort is a bug: a file
//! that is not a valid executable must be an `ExeError`, a program that
//! misbehaves a `Fault`.
//!
//! The hash check would stop almost every mutation at the header, so the
//! target also reads the bytes as a payload with a freshly computed hash.
//!
//! Run: `cargo +nightly fuzz run exe` from the repository root (or with
//! `RUSTC_BOOTSTRAP=1` on a stable toolchain).

#![no_main]

use ipuc_ipu_arch::exe::{FORMAT_VERSION, MAGIC};
use ipuc_ipu_arch::{Executable, MachineModel};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};

fn run(bytes: &[u8]) {
    let Ok(exe) = Executable::from_bytes(bytes) else {
        return;
    };
    let Some(machine) = MachineModel::by_name(&exe.machine) else {
        return;
    };
    let config = SimConfig {
        max_cycles: 20_000,
        max_instructions: 20_000,
        ..SimConfig::default()
    };
    let mut sim = Simulator::new(machine, config);
    if sim.load(&exe).is_ok() {
        let _ = sim.run();
    }
}

fuzz_target!(|data: &[u8]| {
    run(data);
    let mut framed = MAGIC.to_vec();
    framed.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    framed.extend_from_slice(&Sha256::digest(data));
    framed.extend_from_slice(data);
    run(&framed);
});
