//! End-to-end tests of `ipu-run` on IR models with generated ONNX test data
//! sets: passing and failing comparisons, exit codes, JSON fields, written
//! outputs and error messages.

use std::path::Path;

use ipuc_frontends::onnx::{read_tensor_pb, write_tensor_pb, Tensor};
use serde_json::Value;

mod common;

/// `y = relu(x · w + b)` and `s = sum(y, axis 1)` for x: 2x3, w: 3x2.
const MODEL: &str = r#"
func.func @main(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>) {
  %b = nn.constant dense<[0.5, -4.0]> : tensor<2xf32>
  %0 = nn.matmul %x, %w : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
  %1 = nn.add %0, %b : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %2 = nn.relu %1 : tensor<2x2xf32> -> tensor<2x2xf32>
  %3 = nn.reduce_sum %2 {axes = array<i64: 1>, keepdims = 0 : i64} : tensor<2x2xf32> -> tensor<2xf32>
  return %2, %3 : tensor<2x2xf32>, tensor<2xf32>
}
"#;

const X: [f32; 6] = [1.0, -2.0, 0.5, 3.0, 0.25, -1.0];
const W: [f32; 6] = [0.5, 1.0, -1.5, 2.0, 4.0, -0.5];

/// The model's outputs, computed here in float64.
fn expected() -> (Vec<f32>, Vec<f32>) {
    let b = [0.5, -4.0];
    let mut y = Vec::new();
    for i in 0..2 {
        for j in 0..2 {
            let dot: f64 = (0..3)
                .map(|l| f64::from(X[i * 3 + l]) * f64::from(W[l * 2 + j]))
                .sum();
            y.push((dot + b[j]).max(0.0) as f32);
        }
    }
    let s = vec![y[0] + y[1], y[2] + y[3]];
    (y, s)
}

fn write_model(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("model.mlir");
    std::fs::write(&path, MODEL).unwrap();
    path
}

/// Writes a test data set; `perturb` is added to the first expected element.
fn write_set(dir: &Path, perturb: f32, with_outputs: bool) {
    std::fs::create_dir_all(dir).unwrap();
    write_f32(&dir.join("input_0.pb"), "x", vec![2, 3], &X);
    write_f32(&dir.join("input_1.pb"), "w", vec![3, 2], &W);
    if with_outputs {
        let (mut y, s) = expected();
        y[0] += perturb;
        write_f32(&dir.join("output_0.pb"), "y", vec![2, 2], &y);
        write_f32(&dir.join("output_1.pb"), "s", vec![2], &s);
    }
}

/// `ipu-run ARGS --device reference`: every test here runs IR on the host
/// reference executor (the simulator, the default device, does not lower
/// this model).
fn ipu_run(args: &[&str]) -> (i32, String, String) {
    common::run_tool(
        env!("CARGO_BIN_EXE_ipu-run"),
        args.iter().chain(&["--device", "reference"]),
    )
}

/// Writes an f32 tensor `name` to the `.pb` file `path`.
fn write_f32(path: &Path, name: &str, dims: Vec<usize>, values: &[f32]) {
    write_tensor_pb(path, name, &Tensor::from_f32(dims, values)).unwrap();
}

/// `ipu-run args` fails with exit code 2 and an error saying `says`.
fn refused(args: &[&str], says: &str) {
    let (code, _, err) = ipu_run(args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(says), "{err}");
}

/// `ipu-run MODEL --input DATA --json`: exit code, stdout and stderr.
fn ipu_run_json(model: &Path, data: &Path) -> (i32, String, String) {
    ipu_run(&[
        model.to_str().unwrap(),
        "--input",
        data.to_str().unwrap(),
        "--json",
    ])
}

fn json(stdout: &str) -> Value {
    assert_eq!(stdout.lines().count(), 1, "exactly one JSON line: {stdout}");
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn matching_outputs_pass_with_exit_zero_and_full_json() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path());
    let set = tmp.path().join("test_data_set_0");
    write_set(&set, 0.0, true);
    let (code, out, err) = ipu_run_json(&model, &set);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["model"], model.to_str().unwrap());
    assert_eq!(j["device"], "reference");
    assert!(j["import_s"].as_f64().unwrap() >= 0.0);
    assert!(j["run_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(j["passed"], true);
    let outputs = j["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0]["name"], "y");
    assert_eq!(outputs[0]["shape"], serde_json::json!([2, 2]));
    assert_eq!(outputs[1]["name"], "s");
    assert_eq!(outputs[1]["shape"], serde_json::json!([2]));
    for o in outputs {
        for field in ["max_abs_err", "max_rel_err", "rel_l2_err"] {
            let v = o[field].as_f64().unwrap();
            assert!(v <= 1e-6, "{field} = {v}");
        }
        assert!((o["cosine"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    }
}

#[test]
fn outputs_beyond_tolerance_fail_with_exit_one() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path());
    let set = tmp.path().join("set");
    write_set(&set, 0.01, true);
    let (code, out, _) = ipu_run_json(&model, &set);
    assert_eq!(code, 1);
    let j = json(&out);
    assert_eq!(j["passed"], false);
    let y = &j["outputs"][0];
    assert_eq!(y["passed"], false);
    assert_eq!(y["mismatches"], 1);
    let abs = y["max_abs_err"].as_f64().unwrap();
    assert!((abs - 0.01).abs() < 1e-6, "{abs}");
    assert_eq!(j["outputs"][1]["passed"], true);
    // A looser tolerance accepts the same data.
    let args = [model.to_str().unwrap(), "--input", set.to_str().unwrap()];
    let (code, out, _) = ipu_run(&[&args[..], &["--atol", "0.02"]].concat());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("PASS: every output is within"), "{out}");
    // The human summary names the failing output.
    let (code, out, _) = ipu_run(&args);
    assert_eq!(code, 1);
    assert!(out.contains("FAIL (1 mismatched elements)"), "{out}");
    assert!(out.contains("FAIL: 1 of 2 output(s) exceed"), "{out}");
}

#[test]
fn a_directory_of_data_sets_runs_each() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path());
    write_set(&tmp.path().join("sets/test_data_set_0"), 0.0, true);
    write_set(&tmp.path().join("sets/test_data_set_1"), 1.0, true);
    let sets = tmp.path().join("sets");
    let (code, out, err) = ipu_run_json(&model, &sets);
    assert_eq!(code, 1, "{err}");
    let j = json(&out);
    let outputs = j["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 4);
    assert_eq!(outputs[0]["data_set"], "test_data_set_0");
    assert_eq!(outputs[0]["passed"], true);
    assert_eq!(outputs[2]["data_set"], "test_data_set_1");
    assert_eq!(outputs[2]["passed"], false);
}

#[test]
fn outputs_are_written_without_expected_values() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path());
    let set = tmp.path().join("inputs_only");
    write_set(&set, 0.0, false);
    let out_dir = tmp.path().join("out");
    let (code, out, err) = ipu_run(&[
        model.to_str().unwrap(),
        "--input",
        set.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no expected outputs"), "{out}");
    let (y, s) = expected();
    let got_y = read_tensor_pb(&out_dir.join("output_0.pb")).unwrap();
    assert_eq!(got_y.tensor, Tensor::from_f32(vec![2, 2], &y));
    let got_s = read_tensor_pb(&out_dir.join("output_1.pb")).unwrap();
    assert_eq!(got_s.tensor, Tensor::from_f32(vec![2], &s));
    // Inputs were read, not synthesised: they are not rewritten.
    assert!(!out_dir.join("input_0.pb").exists());
}

#[test]
fn synthesised_inputs_make_a_reusable_data_set() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path());
    let set = tmp.path().join("generated");
    let (code, _, err) = ipu_run(&[
        model.to_str().unwrap(),
        "--seed",
        "5",
        "-o",
        set.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for f in ["input_0.pb", "input_1.pb", "output_0.pb", "output_1.pb"] {
        assert!(set.join(f).exists(), "{f}");
    }
    let x = read_tensor_pb(&set.join("input_0.pb")).unwrap().tensor;
    assert!(x.to_f64_vec().iter().all(|v| (-1.0..1.0).contains(v)));
    let (code, out, err) = ipu_run_json(&model, &set);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["outputs"][0]["max_abs_err"], 0.0);
    // The same seed gives the same inputs.
    let again = tmp.path().join("again");
    ipu_run(&[
        model.to_str().unwrap(),
        "--seed",
        "5",
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(set.join("input_0.pb")).unwrap(),
        std::fs::read(again.join("input_0.pb")).unwrap()
    );
}

#[test]
fn errors_are_clear_and_exit_two() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path());
    let m = model.to_str().unwrap();
    let (code, _, err) = common::run_tool(env!("CARGO_BIN_EXE_ipu-run"), [m, "--device", "ipu"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown device 'ipu' (known devices: reference, sim)"),
        "{err}"
    );

    let onnx = tmp.path().join("model.onnx");
    std::fs::write(&onnx, b"").unwrap();
    refused(&[onnx.to_str().unwrap()], "error: ");

    refused(
        &[m, "--input", tmp.path().to_str().unwrap()],
        "neither input_K.pb/output_K.pb files nor test_data_set_*",
    );

    // One input too few.
    let set = tmp.path().join("short");
    write_set(&set, 0.0, true);
    std::fs::remove_file(set.join("input_1.pb")).unwrap();
    refused(
        &[m, "--input", set.to_str().unwrap()],
        "holds 1 input(s), but the function takes 2",
    );

    // An input of the wrong shape names the parameter and both types.
    let bad = tmp.path().join("bad");
    write_set(&bad, 0.0, true);
    write_f32(&bad.join("input_1.pb"), "w", vec![2, 3], &W);
    refused(
        &[m, "--input", bad.to_str().unwrap()],
        "data set bad: input #1 ('w') is tensor<2x3xf32>, but the function's parameter #1 \
             is tensor<3x2xf32>",
    );

    // An expected output of the wrong shape is refused before anything runs.
    let wrong = tmp.path().join("wrong-output");
    write_set(&wrong, 0.0, true);
    write_f32(&wrong.join("output_1.pb"), "s", vec![3], &[0.0; 3]);
    refused(
        &[m, "--input", wrong.to_str().unwrap()],
        "data set wrong-output: expected output #1 ('s') is tensor<3xf32>, but the \
             function's result #1 is tensor<2xf32>",
    );
    std::fs::remove_file(wrong.join("output_1.pb")).unwrap();
    refused(
        &[m, "--input", wrong.to_str().unwrap()],
        "holds 1 expected output(s), but the function returns 2",
    );

    let broken = tmp.path().join("broken.mlir");
    std::fs::write(&broken, "func.func @main() {\n  %0 = nn.bogus\n}\n").unwrap();
    refused(&[broken.to_str().unwrap()], "broken.mlir:2:");

    refused(&[m, "--atol", "lots"], "--atol");
}

/// A TOSA model of `layers` chained `1x1xK · 1xKxK` products, each weight a
/// `dense_resource` of K·K small f32s: a file that is almost all weights.
#[cfg(feature = "mlir")]
fn write_weighty_tosa(path: &Path, k: usize, layers: usize) -> usize {
    use std::io::Write;
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let (x, w) = (
        format!("tensor<1x1x{k}xf32>"),
        format!("tensor<1x{k}x{k}xf32>"),
    );
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(f, "func.func @main(%x: {x}) -> {x} {{").unwrap();
    writeln!(
        f,
        "  %zp = \"tosa.const\"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>"
    )
    .unwrap();
    let mut last = "%x".to_string();
    for l in 0..layers {
        writeln!(
            f,
            "  %w{l} = \"tosa.const\"() <{{values = dense_resource<w{l}> : {w}}}> : () -> {w}"
        )
        .unwrap();
        writeln!(f, "  %y{l} = tosa.matmul {last}, %w{l}, %zp, %zp : ({x}, {w}, tensor<1xf32>, tensor<1xf32>) -> {x}").unwrap();
        last = format!("%y{l}");
    }
    writeln!(
        f,
        "  return {last} : {x}\n}}\n{{-#\n  dialect_resources: {{\n    builtin: {{"
    )
    .unwrap();
    let mut line = Vec::with_capacity(8 * k * k + 8);
    for l in 0..layers {
        line.clear();
        line.extend_from_slice(b"0x04000000");
        for i in 0..k * k {
            // Small values, so the chain stays finite.
            let v = (((i * 7 + l) % 13) as f32 - 6.0) / (8.0 * k as f32);
            for b in v.to_le_bytes() {
                line.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
            }
        }
        let sep = if l == 0 { "" } else { ",\n" };
        write!(f, "{sep}      w{l}: \"").unwrap();
        f.write_all(&line).unwrap();
        write!(f, "\"").unwrap();
    }
    writeln!(f, "\n    }}\n  }}\n#-}}").unwrap();
    layers * k * k * 4
}

/// Runs `ipu-run MODEL --upstream --device reference` and returns its peak resident set size
/// in bytes (`wait4`'s `ru_maxrss`, this child's alone).
#[cfg(feature = "mlir")]
#[allow(clippy::zombie_processes)] // `wait4` reaps it
fn upstream_run_peak_rss(model: &Path) -> usize {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(model)
        .args(["--upstream", "--device", "reference"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn ipu-run");
    let mut status = 0;
    // SAFETY: plain syscall on our own child's pid with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "ipu-run --upstream {} failed: {status:#x}",
        model.display()
    );
    usage.ru_maxrss as usize * 1024
}

/// Reading a TOSA model back through upstream MLIR costs about the file's
/// text plus the weights once (upstream's copy while it parses, ipuc's
/// after): the weights cross as bytes and the text goes once upstream has
/// parsed it. The text path it replaces held the file twice, upstream's
/// weights, upstream's generic printout (the weights as hex again) and
/// ipuc's copy at once, 8 or more times the weights (it ran so400m out of
/// memory at 14.2 GB). Measured against the same model with tiny weights,
/// so the tool's own footprint cancels.
#[cfg(feature = "mlir")]
#[test]
fn upstream_read_back_peak_memory_stays_near_the_weights() {
    let tmp = tempfile::tempdir().unwrap();
    let (small, big) = (tmp.path().join("small.mlir"), tmp.path().join("big.mlir"));
    write_weighty_tosa(&small, 16, 16);
    let weights = write_weighty_tosa(&big, 1024, 16); // 64 MiB
    let base = upstream_run_peak_rss(&small);
    let peak = upstream_run_peak_rss(&big);
    let ratio = peak.saturating_sub(base) as f64 / weights as f64;
    eprintln!("ipu-run --upstream: peak RSS {peak} B, {base} B with tiny weights: {ratio:.2}x the {weights} B of weights");
    assert!(
        ratio < 4.5,
        "reading {weights} B of weights back from upstream took {ratio:.2}x their size (text 2x + weights 1x expected)"
    );
}

/// An ONNX model is recognised by its first byte as `ipu-opt` does, not
/// only by a `.onnx` extension; anything else unknown says what it takes.
#[test]
fn an_onnx_model_without_its_extension_runs() {
    let Some(dir) = common::fixture_dir("siglip-tiny") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("tiny-model");
    std::fs::copy(dir.join("model.onnx"), &model).unwrap();
    let set = dir.join("test_data_set_0");
    let (code, out, err) = ipu_run(&[model.to_str().unwrap(), "--input", set.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("PASS"), "{out}");
    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "not a model").unwrap();
    let (code, _, err) = ipu_run(&[text.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown model format"), "{err}");
}
