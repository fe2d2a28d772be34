//! `--save-weights`: a graph-only model compiled with synthesised weights
//! can be saved with those weights and run again with `--weights=require`,
//! giving the very same outputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use ipuc_frontends::onnx::proto::ModelProto;
use prost::Message;

/// The tiny fixture with every large initializer moved to a missing external file.
fn graph_only_tiny(dir: &Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/models/siglip-tiny/model.onnx");
    let mut proto = ModelProto::decode(std::fs::read(src).unwrap().as_slice()).unwrap();
    ipuc_frontends::onnx::externalize_initializers(&mut proto, "weights.bin", 256, 1);
    let path = dir.join("model.onnx");
    std::fs::write(&path, proto.encode_to_vec()).unwrap();
    path
}

fn run(bin: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn saved_random_weights_reproduce_the_same_outputs() {
    if !PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/models/siglip-tiny")
        .exists()
    {
        ipuc_test_support::missing(
            "saved_random_weights_reproduce_the_same_outputs",
            "shared fixtures not found",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let model = graph_only_tiny(tmp.path());
    let m = model.to_str().unwrap();
    let (code, err) = run(env!("CARGO_BIN_EXE_ipu-run"), &[m, "--device", "reference"]);
    assert_eq!(code, 2, "missing weights must be an error");
    assert!(
        err.contains("weights.bin") && err.contains("--weights"),
        "{err}"
    );

    let saved = tmp.path().join("saved");
    let out_a = tmp.path().join("out_a");
    let (code, err) = run(
        env!("CARGO_BIN_EXE_ipu-run"),
        &[
            m,
            "--device",
            "reference",
            "--weights",
            "random",
            "--seed",
            "7",
            "--save-weights",
            saved.to_str().unwrap(),
            "-o",
            out_a.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(saved.join("weights.bin").exists());

    // The saved directory plus the model is a complete model now.
    std::fs::copy(&model, saved.join("model.onnx")).unwrap();
    let out_b = tmp.path().join("out_b");
    let (code, err) = run(
        env!("CARGO_BIN_EXE_ipu-run"),
        &[
            saved.join("model.onnx").to_str().unwrap(),
            "--device",
            "reference",
            "--input",
            out_a.to_str().unwrap(),
            "-o",
            out_b.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");

    // ipu-opt saves the same bytes.
    let saved_opt = tmp.path().join("saved_opt");
    let (code, err) = run(
        env!("CARGO_BIN_EXE_ipu-opt"),
        &[
            m,
            "--weights=random",
            "--seed=7",
            "--save-weights",
            saved_opt.to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(saved.join("weights.bin")).unwrap(),
        std::fs::read(saved_opt.join("weights.bin")).unwrap()
    );
}
