//! Interpreter speed measurement (callable from `ipu-bench`).

use std::time::Instant;

use ipuc_backend_ipu::target::{assemble, AsmOptions, Executable, MachineModel, TileProgram};

use super::{SimConfig, Simulator};
use crate::device::Device;

/// Result of [`measure_interpreter_speed`].
#[derive(Clone, Debug)]
pub struct SpeedReport {
    /// Simulated instructions executed.
    pub instructions: u64,
    /// Simulated cycles.
    pub cycles: u64,
    /// Host seconds.
    pub seconds: f64,
    /// Instructions per host second.
    pub instructions_per_second: f64,
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
    sim.run().unwrap_or_else(|e| panic!("{e}"));
    let seconds = start.elapsed().as_secs_f64();
    let instructions = sim.instructions();
    let cycles = sim.profile().map(|p| p.total_cycles).unwrap_or(0);
    SpeedReport {
        instructions,
        cycles,
        seconds,
        instructions_per_second: instructions as f64 / seconds,
    }
}
