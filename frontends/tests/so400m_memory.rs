//! Loading the graph-only so400m model with synthesised weights must not hold much
//! more than the weight bytes themselves (no copies of initializer data). Its own
//! test binary, so the process's peak RSS is this test's alone.

use std::path::Path;

use ipuc_frontends::onnx::{LoadOptions, Model, WeightsPolicy};

/// Peak resident set size of this process (Linux `VmHWM`), in bytes.
fn peak_rss() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[test]
fn so400m_random_weights_peak_memory_is_close_to_weight_bytes() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/models/siglip-so400m/model.onnx");
    let model = Model::load(
        &path,
        &LoadOptions {
            weights: WeightsPolicy::Random { seed: 1 },
        },
    )
    .unwrap();
    let weights = model.weight_bytes();
    assert_eq!(weights, 428_225_600 * 4);
    // Random weights touch every page, so RSS really holds them.
    let Some(peak) = peak_rss() else {
        eprintln!("no /proc/self/status: peak memory not checked");
        return;
    };
    let ratio = peak as f64 / weights as f64;
    eprintln!("peak RSS {peak} bytes = {ratio:.3} x weight bytes {weights}");
    assert!(
        ratio < 1.3,
        "peak RSS {peak} is {ratio:.2}x the weight bytes"
    );
}
