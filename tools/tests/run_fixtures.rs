//! `ipu-run` on the shared SigLIP fixtures: import, run on the reference
//! device, and compare with the onnxruntime outputs stored with them
//! (issue bar: relative L2 error < 1e-5 and cosine > 0.99999 per output).

mod common;

use std::process::Command;

fn check_fixture(name: &str) {
    let Some(dir) = common::fixture_dir(name) else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(dir.join("model.onnx"))
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .arg("--json")
        .output()
        .expect("run ipu-run");
    common::assert_matches_onnxruntime(name, &out);
}

#[test]
fn siglip_tiny_matches_onnxruntime() {
    check_fixture("siglip-tiny");
}

#[test]
fn siglip_tiny_dynamo_matches_onnxruntime() {
    check_fixture("siglip-tiny-dynamo");
}

#[test]
fn siglip_tiny_opset14_matches_onnxruntime() {
    check_fixture("siglip-tiny-opset14");
}

#[test]
fn siglip_small_matches_onnxruntime() {
    check_fixture("siglip-small");
}
