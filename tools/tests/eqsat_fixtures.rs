//! `eqsat-fuse` on the shared SigLIP fixtures: the fused graph has the
//! expected structure (one attention per layer plus the pooling head, one
//! GELU per MLP, one LayerNorm per norm, one fused QKV linear per layer, no
//! decomposition left) and still matches onnxruntime's outputs on the
//! reference device.

use std::path::PathBuf;
use std::process::Command;

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/models")
}

/// Op name -> count, from `print-op-stats=json=true`.
fn fuse(model: &std::path::Path, out: &std::path::Path) -> serde_json::Value {
    let run = Command::new(env!("CARGO_BIN_EXE_ipu-opt"))
        .arg(model)
        .arg("--pass-pipeline=builtin.module(func.func(eqsat-fuse,canonicalize),print-op-stats{json=true})")
        .arg("-o")
        .arg(out)
        .output()
        .expect("run ipu-opt");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let json = &stderr[stderr.find('{').expect("JSON op statistics")..];
    let end = json.rfind('}').expect("end of JSON") + 1;
    serde_json::from_str(&json[..end]).expect("JSON op statistics")
}

fn check(name: &str, layers: u64) {
    let dir = models_dir().join(name);
    if !dir.exists() {
        ipuc_test_support::missing(name, &format!("{} not found", dir.display()));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fused = tmp.path().join("fused.mlir");
    let stats = fuse(&dir.join("model.onnx"), &fused);
    let count = |op: &str| stats[op].as_u64().unwrap_or(0);
    assert_eq!(count("nn.attention"), layers + 1, "{name}: {stats}");
    assert_eq!(count("nn.gelu"), layers + 1, "{name}: {stats}");
    // Two per layer, the head's and the post-layernorm.
    assert_eq!(
        count("nn.layer_normalization"),
        2 * layers + 2,
        "{name}: {stats}"
    );
    assert_eq!(count("nn.split"), layers, "{name}: fused QKV: {stats}");
    for op in [
        "nn.erf",
        "nn.pow",
        "nn.tanh",
        "nn.reduce_mean",
        "nn.reduce_max",
        "nn.reduce_sum",
        "nn.exp",
        "nn.softmax",
        "nn.matmul",
        "nn.sqrt",
        "nn.div",
    ] {
        assert_eq!(count(op), 0, "{name}: {op} left: {stats}");
    }
    let run = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(&fused)
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .args(["--device", "reference", "--json"])
        .output()
        .expect("run ipu-run");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{name}: {stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    for o in report["outputs"].as_array().expect("outputs") {
        let rel_l2 = o["rel_l2_err"].as_f64().unwrap();
        assert!(rel_l2 < 1e-5, "{name} {}: rel L2 {rel_l2}", o["name"]);
    }
}

#[test]
fn siglip_tiny_fuses_and_matches_onnxruntime() {
    check("siglip-tiny", 2);
}

#[test]
fn siglip_tiny_dynamo_fuses_and_matches_onnxruntime() {
    check("siglip-tiny-dynamo", 2);
}

#[test]
fn siglip_tiny_opset14_fuses_and_matches_onnxruntime() {
    check("siglip-tiny-opset14", 2);
}

#[test]
fn siglip_small_fuses_and_matches_onnxruntime() {
    check("siglip-small", 4);
}
