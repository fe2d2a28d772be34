//! `ipu-bench sim-speed`: how fast the simulator's interpreter runs.

use ipuc_runtime::sim::bench::{measure_interpreter_speed, SpeedReport};

/// Runs the interpreter benchmark (after a short warm-up run).
pub fn run_sim_speed(iterations: u32) -> SpeedReport {
    let _ = measure_interpreter_speed(iterations / 100 + 1);
    measure_interpreter_speed(iterations)
}

/// The human-readable line.
pub fn format_speed(r: &SpeedReport) -> String {
    format!(
        "simulator: {} instructions in {:.3} s wall = {:.1} M instructions/s; {:.3} s thread CPU = {:.1} M instructions/s\n",
        r.instructions,
        r.seconds,
        r.instructions_per_second / 1e6,
        r.cpu_seconds,
        r.instructions_per_cpu_second / 1e6
    )
}
