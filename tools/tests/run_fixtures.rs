//! `ipu-run` on the shared SigLIP fixtures: import, run on the reference
//! device, and compare with the onnxruntime outputs stored with them
//! (issue bar: relative L2 error < 1e-5 and cosine > 0.99999 per output).

use std::path::PathBuf;
use std::process::Command;

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/models")
}

fn check_fixture(name: &str) {
    let dir = models_dir().join(name);
    if !dir.exists() {
        ipuc_test_support::missing(name, &format!("{} not found", dir.display()));
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(dir.join("model.onnx"))
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .arg("--json")
        .output()
        .expect("run ipu-run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    let outputs = report["outputs"].as_array().expect("outputs array");
    assert_eq!(
        outputs.len(),
        2,
        "{name}: last_hidden_state and pooler_output"
    );
    for o in outputs {
        let rel_l2 = o["rel_l2_err"].as_f64().unwrap();
        let cosine = o["cosine"].as_f64().unwrap();
        assert!(rel_l2 < 1e-5, "{name} {}: rel L2 {rel_l2}", o["name"]);
        assert!(cosine > 0.99999, "{name} {}: cosine {cosine}", o["name"]);
    }
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
