//! Interpreter speed: `cargo bench -p ipuc-runtime --bench interpreter`.
//! Prints simulated instructions per host second (goal: >= 100 M/s on one core).

fn main() {
    // Warm up once, then measure.
    let _ = ipuc_runtime::sim::bench::measure_interpreter_speed(10_000);
    let r = ipuc_runtime::sim::bench::measure_interpreter_speed(1_000_000);
    println!(
        "interpreter: {} instructions, {} cycles in {:.3} s wall = {:.1} M instructions/s; \
         {:.3} s thread CPU = {:.1} M instructions/s",
        r.instructions,
        r.cycles,
        r.seconds,
        r.instructions_per_second / 1e6,
        r.cpu_seconds,
        r.instructions_per_cpu_second / 1e6
    );
}
