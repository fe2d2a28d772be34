//! Interpreter speed measurement (callable from `ipu-bench`).

use std::time::Instant;

use ipuc_ipu_arch::{assemble, AsmOptions, Executable, MachineModel, TileProgram};

use super::{SimConfig, Simulator};
use crate::device::Device;

/// Result of [`measure_interpreter_speed`].
#[derive(Clone, Debug)]
pub struct SpeedReport {
    /// Simulated instructions executed.
    pub instructions: u64,
    /// Simulated cycles.
    pub cycles: u64,
    /// Host wall-clock seconds.
    pub seconds: f64,
    /// Instructions per host wall-clock second.
    pub instructions_per_second: f64,
    /// CPU seconds of the simulating thread (what one core delivers, even
    /// on a loaded machine).
    pub cpu_seconds: f64,
    /// Instructions per CPU second of the simulating thread.
    pub instructions_per_cpu_second: f64,
}

/// CPU time consumed by the calling thread, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time consumed by this process so far (all threads), in seconds.
pub fn process_cpu_seconds() -> f64 {
    cpu_seconds(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The CPU-time clock `clock` in seconds (NaN if it cannot be read).
fn cpu_seconds(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the valid
    // pointer we pass and has no other effect.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs six workers of integer and vector-float loop code on one tile for
/// about `iterations * 6 * 8` instructions and reports the host speed.
/// `iterations` must be below 2^20 (a `setzi` immediate).
pub fn measure_interpreter_speed(iterations: u32) -> SpeedReport {
    let iterations = iterations.min((1 << 20) - 1);
    let text = format!(
        r#"
    .supervisor
main:
    setzi $m0, worker
    runall $m0, $mzero, 0
    sync TEXCH_SYNCZONE_LOCAL
    exitz $mzero
    .worker
    .align 8
worker:
    setzi $m1, {iterations}
    setzi $m2, 0x90000
    shl $m3, $m12, 6
    add $m2, $m2, $m3
loop:
    ld32 $m4, $m2, $mzero, 0
    add $m4, $m4, 3
    st32 $m4, $m2, $mzero, 0
    ld64 $a0:1, $m2, $mzero, 1
    f32v2add $a2:3, $a0:1, $a0:1
    st64 $a2:3, $m2, $mzero, 2
    sub $m1, $m1, 1
    brnz $m1, loop
    exitz $mzero
"#
    );
    let image = assemble(&text, &AsmOptions::default())
        .unwrap_or_else(|e| panic!("benchmark program: {e}"));
    let exe = Executable::new("c600", vec![TileProgram { tile: 0, image }], vec![], vec![])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulator::new(MachineModel::c600(), SimConfig::default());
    sim.load(&exe).unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    sim.run().unwrap_or_else(|e| panic!("{e}"));
    let cpu_seconds = thread_cpu_seconds() - cpu_start;
    let seconds = start.elapsed().as_secs_f64();
    let instructions = sim.instructions();
    let cycles = sim.profile().map(|p| p.total_cycles).unwrap_or(0);
    SpeedReport {
        instructions,
        cycles,
        seconds,
        instructions_per_second: instructions as f64 / seconds,
        cpu_seconds,
        instructions_per_cpu_second: instructions as f64 / cpu_seconds,
    }
}
