//! Helpers shared by the fixture tests.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `command`, which must succeed; `what` and its stderr are the
/// failure message.
pub fn output_ok(command: &mut Command, what: &str) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the tool `exe` with `args`: its exit code (-1 when a signal ended
/// it), stdout and stderr.
pub fn run_tool<S: AsRef<OsStr>>(
    exe: &str,
    args: impl IntoIterator<Item = S>,
) -> (i32, String, String) {
    let out = Command::new(exe)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `../shared/models` (the SigLIP fixtures with onnxruntime outputs).
pub fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/models")
}

/// The fixture's directory, or `None` when it is absent (a failure where
/// fixtures are required, see `ipuc_test_support::missing`).
pub fn fixture_dir(name: &str) -> Option<PathBuf> {
    let dir = models_dir().join(name);
    if dir.exists() {
        Some(dir)
    } else {
        ipuc_test_support::missing(name, &format!("{} not found", dir.display()));
        None
    }
}

/// `../shared/onnx-node-tests/NAME` (an ONNX node test: one operator, a
/// test data set with onnxruntime's outputs), or `None` when it is absent
/// (a failure where fixtures are required).
pub fn node_test_dir(name: &str) -> Option<PathBuf> {
    let dir = models_dir().join("../onnx-node-tests").join(name);
    if dir.exists() {
        Some(dir)
    } else {
        ipuc_test_support::missing(name, &format!("{} not found", dir.display()));
        None
    }
}

/// The JSON report of an `ipu-run --json` run that must have passed (exit
/// 0; `name`, its stdout and stderr are the failure message), and its
/// stdout.
pub fn passed_report(name: &str, out: &Output) -> (serde_json::Value, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_str(&stdout).expect("one JSON object");
    (report, stdout)
}

/// Checks an `ipu-run --json` run against the fixture's onnxruntime outputs
/// (issue bar: relative L2 error < 1e-5 and cosine > 0.99999 per output);
/// returns each output's name and relative L2 error.
pub fn assert_matches_onnxruntime(name: &str, out: &Output) -> Vec<(String, f64)> {
    let (report, _) = passed_report(name, out);
    let outputs = report["outputs"].as_array().expect("outputs array");
    assert_eq!(
        outputs.len(),
        2,
        "{name}: last_hidden_state and pooler_output"
    );
    outputs
        .iter()
        .map(|o| {
            let rel_l2 = o["rel_l2_err"].as_f64().unwrap();
            let cosine = o["cosine"].as_f64().unwrap();
            assert!(rel_l2 < 1e-5, "{name} {}: rel L2 {rel_l2}", o["name"]);
            assert!(cosine > 0.99999, "{name} {}: cosine {cosine}", o["name"]);
            (o["name"].as_str().unwrap_or("").to_string(), rel_l2)
        })
        .collect()
}

/// The FP8 MLP block the profile tests profile.
pub const PROFILED_BLOCK: &str = "../lit-tests/lower/mlp-fp8.mlir";

/// Runs `ipu-run` on [`PROFILED_BLOCK`] on the simulator with `--profile
/// dir` and `--json`, which must pass; its JSON report.
pub fn profile_block(ipu_run: &str, dir: &std::path::Path) -> serde_json::Value {
    profile_block_with(ipu_run, dir, &[])
}

/// [`profile_block`] with `extra` arguments after the others.
pub fn profile_block_with(
    ipu_run: &str,
    dir: &std::path::Path,
    extra: &[&str],
) -> serde_json::Value {
    let args = [
        PROFILED_BLOCK,
        "--device",
        "sim",
        "--precision",
        "fp8",
        "--json",
        "--profile",
        dir.to_str().unwrap(),
    ];
    let (code, stdout, stderr) = run_tool(ipu_run, args.iter().chain(extra));
    assert_eq!(code, 0, "ipu-run --profile: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// The fixture model in `dir` imported (its weights loaded) for `batch`
/// images (`None`: the importer's default, 1): the context and its
/// `builtin.module`.
pub fn import_fixture(
    dir: &std::path::Path,
    batch: Option<i64>,
) -> (ipuc_ir::Context, ipuc_ir::OpId) {
    let mut ctx = ipuc_ir::Context::new(ipuc_tools::registry::dialects());
    let opts = ipuc_frontends::onnx::import::ImportOptions {
        input_shapes: vec![],
        batch,
        file_name: "model.onnx".into(),
    };
    let module = ipuc_frontends::onnx::import::import_file(
        &mut ctx,
        &dir.join("model.onnx"),
        &ipuc_frontends::onnx::LoadOptions::default(),
        &opts,
    )
    .unwrap_or_else(|e| panic!("import {}: {e}", dir.display()));
    (ctx, module)
}

/// The fixture `name` imported for `batch` images and compiled as
/// `ipu-run --precision precision` compiles it up to the lowering (fused,
/// converted): the context and its function; `None` where the fixture is
/// absent and may be.
pub fn compiled_fixture(
    name: &str,
    batch: Option<i64>,
    precision: &str,
) -> Option<(ipuc_ir::Context, ipuc_ir::OpId)> {
    use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions, PassRegistry};
    let dir = fixture_dir(name)?;
    let (mut ctx, module) = import_fixture(&dir, batch);
    let mut registry = PassRegistry::new();
    ipuc_tools::registry::register_passes(&mut registry).unwrap();
    let mut pm = PassManager::new(PassManagerOptions::default());
    let pipeline = format!(
        "builtin.module(func.func(eqsat-fuse,canonicalize,convert-precision{{precision={precision}}}))"
    );
    pm.add_pipeline(&registry, &parse_pipeline(&pipeline).unwrap())
        .unwrap();
    pm.run(&mut ctx, module).expect("compile");
    let f = ctx
        .collect_ops(module, ipuc_ir::WalkOrder::PreOrder)
        .into_iter()
        .find(|&op| ctx.name_str(op) == ipuc_dialects::func::FUNC)
        .expect("a function");
    Some((ctx, f))
}
