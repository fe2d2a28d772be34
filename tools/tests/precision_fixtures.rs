//! The accuracy that `convert-precision` costs on the siglip-small fixture:
//! the converted model on the reference executor against the onnxruntime
//! f32 outputs stored with the fixture (cosine and relative L2 per output;
//! the README records them). Both the imported model (`ipu-run
//! --precision`) and the fused one (`eqsat-fuse`, then the conversion, as
//! the lowering sees it) are measured.

mod common;

use std::path::Path;
use std::process::Command;

/// `(output name, rel L2, cosine)` of `ipu-run MODEL --input ...
/// --device reference --json ARGS`.
fn accuracy(model: &Path, dir: &Path, args: &[&str]) -> Vec<(String, f64, f64)> {
    let run = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(model)
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .args(["--device", "reference", "--json"])
        .args(args)
        .output()
        .expect("run ipu-run");
    let stdout = String::from_utf8_lossy(&run.stdout);
    // Exit status 1 (outside the f32 tolerances) is expected: the check is
    // on the accuracy numbers.
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    report["outputs"]
        .as_array()
        .expect("outputs")
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap().to_string(),
                o["rel_l2_err"].as_f64().unwrap(),
                o["cosine"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Checks every output against the bounds and prints the numbers.
fn check(what: &str, outputs: &[(String, f64, f64)], max_rel_l2: f64, min_cosine: f64) {
    assert_eq!(outputs.len(), 2, "{what}: both outputs compared");
    for (name, rel_l2, cosine) in outputs {
        eprintln!("{what} {name}: rel L2 {rel_l2:.3e}, cosine {cosine:.7}");
        assert!(
            *rel_l2 < max_rel_l2 && *cosine > min_cosine,
            "{what} {name}: rel L2 {rel_l2}, cosine {cosine}"
        );
    }
}

#[test]
fn fp16_and_fp8_accuracy_on_siglip_small() {
    let Some(dir) = common::fixture_dir("siglip-small") else {
        return;
    };
    let model = dir.join("model.onnx");
    let f32_run = accuracy(&model, &dir, &[]);
    let fp16 = accuracy(&model, &dir, &["--precision", "fp16"]);
    let fp8 = accuracy(&model, &dir, &["--precision", "fp8"]);
    check("f32", &f32_run, 1e-5, 0.999_999);
    // The conversions must cost something (they ran), and stay within what
    // f16 (11-bit significands) and FP8 weights and activations (4-bit)
    // allow: fp8 measures cosine 0.99885 / 0.99697 (0.99934 / 0.99789
    // with f16 activations, before the activation casts).
    check("fp16", &fp16, 5e-3, 0.999_99);
    check("fp8", &fp8, 0.1, 0.995);
    for ((a, b), c) in f32_run.iter().zip(&fp16).zip(&fp8) {
        assert!(a.1 < b.1 && b.1 < c.1, "{a:?} < {b:?} < {c:?}");
    }

    let tmp = tempfile::tempdir().unwrap();
    for precision in ["fp16", "fp8"] {
        let fused = tmp.path().join(format!("fused-{precision}.mlir"));
        common::output_ok(
            Command::new(env!("CARGO_BIN_EXE_ipu-opt"))
                .arg(&model)
                .arg(format!(
                    "--pass-pipeline=builtin.module(func.func(eqsat-fuse,canonicalize,convert-precision{{precision={precision}}}))"
                ))
                .arg("-o")
                .arg(&fused),
            "ipu-opt",
        );
        let outputs = accuracy(&fused, &dir, &[]);
        let (max_rel_l2, min_cosine) = if precision == "fp16" {
            (5e-3, 0.999_99)
        } else {
            (0.1, 0.995)
        };
        check(
            &format!("fused {precision}"),
            &outputs,
            max_rel_l2,
            min_cosine,
        );
    }
}
