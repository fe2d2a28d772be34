//! Throughput of the reference executor's matrix product on the so400m MLP shape
//! (729×1152 · 1152×4304, f32): `cargo run --release -p ipuc-runtime --example
//! reference_matmul_throughput`. Prints GFLOP/s; a measurement, not a test.

use std::time::Instant;

use ipuc_runtime::reference::{matmul, HostTensor};

fn main() {
    let (m, k, n) = (729, 1152, 4304);
    let a = HostTensor::from_f32(vec![m, k], &vec![0.5; m * k]);
    let b = HostTensor::from_f32(vec![k, n], &vec![0.25; k * n]);
    let _warm = matmul(&a, &b).expect("shapes agree");
    let runs = 5;
    let start = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(matmul(&a, &b).expect("shapes agree"));
    }
    let seconds = start.elapsed().as_secs_f64() / runs as f64;
    let gflops = 2.0 * (m * k * n) as f64 / seconds / 1e9;
    println!(
        "matmul {m}x{k}x{n} f32: {:.1} ms, {gflops:.1} GFLOP/s on {} rayon threads",
        seconds * 1e3,
        rayon::current_num_threads()
    );
}
