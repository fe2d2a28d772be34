//! `ipu-opt --emit=exe` then `ipu-run` on the simulator: a two-tile vector
//! add checked against sums computed here, a mismatch detected, the profile
//! reported, and byte-identical executables from repeated compiles.

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use ipuc_frontends::onnx::{write_tensor_pb, Tensor};
use ipuc_ir::numeric::ElementKind;
use serde_json::Value;

fn program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lit-tests/ipu/Inputs/vector-add.mlir")
}

fn run(bin: &str, args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(bin).args(args).output().expect("tool runs");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `ipu-run exe --input data --json`, compared exactly (`--atol 0 --rtol
/// 0`): exit code, the JSON report and stderr.
fn run_exact(exe: &Path, data: &Path) -> (i32, Vec<u8>, String) {
    let args = [
        exe.to_str().unwrap(),
        "--input",
        data.to_str().unwrap(),
        "--json",
        "--atol",
        "0",
        "--rtol",
        "0",
    ];
    run(env!("CARGO_BIN_EXE_ipu-run"), &args)
}

/// The float64 sums of `a` and `b`, each rounded once to f32.
fn sum_f32(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter()
        .zip(b)
        .map(|(a, b)| (f64::from(*a) + f64::from(*b)) as f32)
        .collect()
}

fn compile(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    compile_to(&program(), &exe);
    exe
}

/// `ipu-opt source --emit=exe -o exe`, which must succeed.
fn compile_to(source: &Path, exe: &Path) {
    let (code, _, err) = run(
        env!("CARGO_BIN_EXE_ipu-opt"),
        &[
            source.to_str().unwrap(),
            "--emit=exe",
            "-o",
            exe.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
}

fn write_f32(dir: &Path, file: &str, name: &str, values: &[f32]) {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = Tensor::new(ElementKind::F32, vec![values.len()], Bytes::from(data)).unwrap();
    write_tensor_pb(&dir.join(file), name, &t).unwrap();
}

const A: [f32; 8] = [1.0, -2.5, 3.25, 0.0, 1e-3, 7.0, -8.5, 100.0];
const B: [f32; 8] = [0.5, 2.5, -1.0, 4.0, 2e-3, -7.5, 0.25, 0.125];

#[test]
fn two_tile_vector_add_matches_sums_computed_here() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(tmp.path(), "add.ipuexe");
    let data = tmp.path().join("test_data_set_0");
    std::fs::create_dir_all(&data).unwrap();
    // Inputs are bound by name: write them in the other order.
    write_f32(&data, "input_0.pb", "b", &B);
    write_f32(&data, "input_1.pb", "a", &A);
    let c = sum_f32(&A, &B);
    write_f32(&data, "output_0.pb", "c", &c);

    let (code, out, err) = run_exact(&exe, &data);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["device"], "sim");
    assert_eq!(j["passed"], true);
    assert_eq!(j["outputs"][0]["name"], "c");
    assert_eq!(j["outputs"][0]["max_abs_err"], 0.0);
    let p = &j["profile"];
    assert_eq!(p["tiles"], 2);
    // Per tile: 5 supervisor instructions, and a worker of 2 + 3 bundles (6) + 2.
    assert_eq!(p["instructions"], 2 * (5 + 2 + 6 + 2));
    assert!(p["total_cycles"].as_u64().unwrap() > 0);
    assert_eq!(p["supersteps"].as_array().unwrap().len(), 1);

    // The human report carries the profile too.
    let (code, out, _) = run(
        env!("CARGO_BIN_EXE_ipu-run"),
        &[exe.to_str().unwrap(), "--input", data.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("device   sim"), "{text}");
    assert!(text.contains("instructions on 2 tile(s)"), "{text}");
    assert!(text.contains("superstep 0"), "{text}");
    assert!(text.contains("PASS"), "{text}");

    // A wrong expected value is a mismatch (exit 1).
    let mut wrong = c.clone();
    wrong[5] += 1.0;
    write_f32(&data, "output_0.pb", "c", &wrong);
    let (code, out, _) = run(
        env!("CARGO_BIN_EXE_ipu-run"),
        &[exe.to_str().unwrap(), "--input", data.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("FAIL (1 mismatched elements)"));
}

#[test]
fn executables_are_byte_identical_across_compiles() {
    let tmp = tempfile::tempdir().unwrap();
    let a = std::fs::read(compile(tmp.path(), "a.ipuexe")).unwrap();
    let b = std::fs::read(compile(tmp.path(), "b.ipuexe")).unwrap();
    assert!(!a.is_empty());
    assert_eq!(a, b);
}

#[test]
fn executables_are_recognised_by_magic_and_refused_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = compile(tmp.path(), "add.ipuexe");
    let renamed = tmp.path().join("program.bin");
    std::fs::copy(&exe, &renamed).unwrap();
    let (code, out, err) = run(
        env!("CARGO_BIN_EXE_ipu-run"),
        &[renamed.to_str().unwrap(), "--json"],
    );
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["device"], "sim");
    assert_eq!(j["outputs"][0]["shape"][0], 8);

    let (code, _, err) = run(
        env!("CARGO_BIN_EXE_ipu-run"),
        &[exe.to_str().unwrap(), "--device", "reference"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("is an executable: it runs on device 'sim', not 'reference'"),
        "{err}"
    );

    let (code, _, err) = run(
        env!("CARGO_BIN_EXE_ipu-opt"),
        &[program().to_str().unwrap(), "--emit=exe"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("give the output file with -o FILE"), "{err}");
}

/// Tile 0 sends a vector to tile 1 in an exchange phase; tile 1 adds it to
/// its own.
fn exchange_program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lit-tests/ipu/Inputs/exchange-add.mlir")
}

#[test]
fn two_tile_exchange_then_add_matches_sums_computed_here() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("xadd.ipuexe");
    compile_to(&exchange_program(), &exe);
    let data = tmp.path().join("test_data_set_0");
    std::fs::create_dir_all(&data).unwrap();
    let x = [1.5f32, -2.25, 1e-3, 640.0];
    let y = [0.25f32, 7.0, -3e-3, -0.5];
    write_f32(&data, "input_0.pb", "x", &x);
    write_f32(&data, "input_1.pb", "y", &y);
    write_f32(&data, "output_0.pb", "z", &sum_f32(&x, &y));
    let (code, out, err) = run_exact(&exe, &data);
    assert_eq!(code, 0, "{err}");
    let j: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["passed"], true, "{j:#}");
    assert_eq!(j["outputs"][0]["name"], "z");
    assert_eq!(j["outputs"][0]["max_abs_err"], 0.0);
    let p = &j["profile"];
    assert_eq!(p["tiles"], 2);
    // Two exchange syncs: compute, exchange (the 4 words), compute.
    let steps = p["supersteps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{p:#}");
    assert!(steps[1]["exchange"].as_u64().unwrap() >= 4, "{p:#}");

    // The sum needs the exchanged words: expecting y alone is a mismatch.
    write_f32(&data, "output_0.pb", "z", &y);
    let (code, out, _) = run_exact(&exe, &data);
    assert_eq!(code, 1);
    let j: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["passed"], false);
}
