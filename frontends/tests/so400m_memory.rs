//! Loading the graph-only so400m model with synthesised weights must not hold much
//! more than the weight bytes themselves (no copies of initializer data). Its own
//! test binary, so the process's peak RSS is this test's alone.

use std::path::Path;

mod common;

use ipuc_frontends::onnx::{LoadOptions, Model, WeightsPolicy};

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
    common::memory::assert_weights_held_once(weights);
}
