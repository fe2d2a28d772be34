//! `ipu-bench reference`: the host reference executor against onnxruntime on
//! the same model, weights and inputs, in one run.
//!
//! The model is imported once (with `--weights`; synthesised weights are
//! first saved next to a copy of the model, so onnxruntime loads the very
//! same values) and, unless `--unfused`, fused by `eqsat-fuse` and
//! `canonicalize` (untimed, as onnxruntime's session creation and graph
//! fusions are), inputs are synthesised from `--seed`, and for each thread
//! count both run `--runs` times: ipuc in-process on a rayon pool of that
//! size, onnxruntime (CPU execution provider, sequential executor, that many
//! intra-op threads) through a Python script. Medians of wall and process
//! CPU time are reported with their ratio, and the outputs of the two are
//! compared (largest absolute difference), so a benchmark of two different
//! computations cannot pass unnoticed.
//!
//! onnxruntime comes from PyPI (`pip install onnxruntime numpy`); the Python
//! interpreter is `python3`, or `IPUC_PYTHON`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ipuc_frontends::onnx::import::{import_file, ImportOptions};
use ipuc_frontends::onnx::{LoadOptions, Model, WeightsPolicy};
use ipuc_ir::Context;
use ipuc_runtime::reference::interpreter::{entry_function, run_function};
use ipuc_runtime::reference::HostTensor;
use ipuc_runtime::sim::bench::process_cpu_seconds;
use serde::Serialize;

use super::BenchError;
use crate::run::Named;

/// The onnxruntime side: loads the model, reads raw inputs, runs `runs`
/// times, prints one JSON object with the times and writes the outputs raw.
const ORT_SCRIPT: &str = r#"
import json, sys, time
import numpy as np
import onnxruntime as ort
model, threads, runs, spec_path, out_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
spec = json.load(open(spec_path))
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feeds = {i["name"]: np.fromfile(i["path"], dtype=i["dtype"]).reshape(i["shape"]) for i in spec["inputs"]}
wall, cpu = [], []
for _ in range(runs):
    t, c = time.perf_counter(), time.process_time()
    outs = sess.run(None, feeds)
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
for k, o in enumerate(outs):
    np.ascontiguousarray(o, dtype=np.float64).tofile(f"{out_dir}/ort_output_{k}.bin")
print(json.dumps({"wall": wall, "cpu": cpu, "outputs": len(outs), "version": ort.__version__}))
"#;

/// Times of one side at one thread count.
#[derive(Clone, Debug, Serialize)]
pub struct Timing {
    /// Wall-clock seconds of each run.
    pub wall: Vec<f64>,
    /// Process CPU seconds of each run.
    pub cpu: Vec<f64>,
    /// Median wall seconds.
    pub wall_median: f64,
    /// Median CPU seconds.
    pub cpu_median: f64,
}

impl Timing {
    fn new(wall: Vec<f64>, cpu: Vec<f64>) -> Timing {
        Timing {
            wall_median: median(&wall),
            cpu_median: median(&cpu),
            wall,
            cpu,
        }
    }
}

/// One thread count's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadResult {
    /// Threads given to both.
    pub threads: usize,
    /// ipuc's reference executor.
    pub ipuc: Timing,
    /// onnxruntime.
    pub onnxruntime: Timing,
    /// ipuc median wall / onnxruntime median wall.
    pub wall_ratio: f64,
    /// ipuc median CPU / onnxruntime median CPU.
    pub cpu_ratio: f64,
    /// The largest absolute difference between the two's outputs.
    pub max_abs_diff: f64,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct ReferenceReport {
    /// The model run.
    pub model: String,
    /// Whether ipuc ran the graph fused by `eqsat-fuse` (else as imported).
    pub fused: bool,
    /// onnxruntime's version.
    pub onnxruntime_version: String,
    /// Per thread count.
    pub results: Vec<ThreadResult>,
}

/// Options of `ipu-bench reference`.
#[derive(Clone, Debug)]
pub struct ReferenceBench {
    /// The `.onnx` model.
    pub model: PathBuf,
    /// Weights policy for missing external weights.
    pub weights: WeightsPolicy,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Runs per side and thread count.
    pub runs: usize,
    /// Seed of the synthesised inputs.
    pub seed: u64,
    /// Static input shapes (`--input-shape`).
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// Where to put the model copy, weights, inputs and outputs (a fresh
    /// temporary directory when `None`; on a RAM disk for large models).
    pub work_dir: Option<PathBuf>,
    /// Run the graph fused by `eqsat-fuse` rather than the imported one.
    pub fuse: bool,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn other(e: impl std::fmt::Display) -> BenchError {
    BenchError::Other(e.to_string())
}

/// The model copy with its weights in `dir`, and the names of its runtime
/// inputs (in the imported function's parameter order).
fn prepare_model(opts: &ReferenceBench, dir: &Path) -> Result<(PathBuf, Vec<String>), BenchError> {
    let copy = dir.join(opts.model.file_name().unwrap_or("model.onnx".as_ref()));
    if !copy.exists() {
        std::fs::copy(&opts.model, &copy).map_err(other)?;
    }
    let model = Model::load(
        &opts.model,
        &LoadOptions {
            weights: opts.weights,
        },
    )
    .map_err(other)?;
    model.save_weights(dir).map_err(other)?;
    let names = model
        .graph
        .runtime_inputs()
        .map(|v| v.name.clone())
        .collect();
    Ok((copy, names))
}

/// Runs the comparison (see the module documentation).
pub fn run_reference(opts: &ReferenceBench) -> Result<ReferenceReport, BenchError> {
    if opts.runs == 0 || opts.threads.is_empty() || opts.threads.contains(&0) {
        return Err(BenchError::Usage(
            "--runs and every --threads value must be positive".into(),
        ));
    }
    let temp;
    let dir = match &opts.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(other)?;
            d.clone()
        }
        None => {
            temp = tempfile::tempdir().map_err(other)?;
            temp.path().to_path_buf()
        }
    };
    let (model_path, names) = prepare_model(opts, &dir)?;
    let mut ctx = Context::new(crate::registry::dialects());
    let import = ImportOptions {
        input_shapes: opts.input_shapes.clone(),
        batch: None,
        file_name: model_path.display().to_string(),
    };
    let load = LoadOptions {
        weights: WeightsPolicy::Require,
    };
    let module = import_file(&mut ctx, &model_path, &load, &import).map_err(other)?;
    if opts.fuse {
        crate::run::model::run_pipeline(&mut ctx, module, crate::run::model::FUSE_PIPELINE)
            .map_err(other)?;
    }
    let func = entry_function(&ctx, module).map_err(other)?;
    let mut set = crate::run::synthesize(&ctx, func, opts.seed).map_err(BenchError::Other)?;
    for (input, name) in set.inputs.iter_mut().zip(names) {
        input.name = name;
    }
    let spec = write_inputs(&dir, &set.inputs)?;
    let python = std::env::var("IPUC_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = dir.join("ort_bench.py");
    std::fs::write(&script, ORT_SCRIPT).map_err(other)?;
    let inputs: Vec<HostTensor> = set.inputs.iter().map(|t| t.tensor.clone()).collect();
    let mut results = Vec::new();
    let mut version = String::new();
    for &threads in &opts.threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(other)?;
        let (mut wall, mut cpu, mut outputs) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..opts.runs {
            let (t, c) = (Instant::now(), process_cpu_seconds());
            outputs = pool
                .install(|| run_function(&ctx, func, &inputs))
                .map_err(other)?;
            wall.push(t.elapsed().as_secs_f64());
            cpu.push(process_cpu_seconds() - c);
            tracing::info!(
                threads,
                seconds = wall[wall.len() - 1],
                "ipuc reference run"
            );
        }
        let out = Command::new(&python)
            .arg(&script)
            .arg(&model_path)
            .arg(threads.to_string())
            .arg(opts.runs.to_string())
            .arg(&spec)
            .arg(&dir)
            .output()
            .map_err(|e| BenchError::Other(format!("cannot run {python}: {e}")))?;
        if !out.status.success() {
            return Err(BenchError::Other(format!(
                "onnxruntime failed (pip install onnxruntime numpy):\n{}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let ort: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| other(format!("onnxruntime: {e}")))?;
        version = ort["version"].as_str().unwrap_or("").to_string();
        let floats = |key: &str| -> Vec<f64> {
            ort[key]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
                .unwrap_or_default()
        };
        let onnxruntime = Timing::new(floats("wall"), floats("cpu"));
        let max_abs_diff = compare_outputs(&dir, &outputs)?;
        let ipuc = Timing::new(wall, cpu);
        results.push(ThreadResult {
            threads,
            wall_ratio: ipuc.wall_median / onnxruntime.wall_median,
            cpu_ratio: ipuc.cpu_median / onnxruntime.cpu_median,
            ipuc,
            onnxruntime,
            max_abs_diff,
        });
    }
    Ok(ReferenceReport {
        model: opts.model.display().to_string(),
        fused: opts.fuse,
        onnxruntime_version: version,
        results,
    })
}

/// Writes each input as a raw little-endian file and a JSON description.
fn write_inputs(dir: &Path, inputs: &[Named]) -> Result<PathBuf, BenchError> {
    let mut spec = Vec::new();
    for (k, t) in inputs.iter().enumerate() {
        let dtype = match t.tensor.kind {
            ipuc_ir::numeric::ElementKind::F32 => "<f4",
            ipuc_ir::numeric::ElementKind::F64 => "<f8",
            ipuc_ir::numeric::ElementKind::I64 => "<i8",
            ipuc_ir::numeric::ElementKind::I32 => "<i4",
            ipuc_ir::numeric::ElementKind::Bool => "|b1",
            other => {
                return Err(BenchError::Usage(format!(
                    "input `{}` is {other}; the benchmark feeds f32, f64, i64, i32 and bool inputs",
                    t.name
                )))
            }
        };
        let path = dir.join(format!("input_{k}.bin"));
        std::fs::write(&path, &t.tensor.data[..]).map_err(other)?;
        spec.push(serde_json::json!({
            "name": t.name, "path": path, "dtype": dtype, "shape": t.tensor.shape,
        }));
    }
    let path = dir.join("inputs.json");
    std::fs::write(&path, serde_json::json!({ "inputs": spec }).to_string()).map_err(other)?;
    Ok(path)
}

/// The largest absolute difference between ipuc's outputs and onnxruntime's.
fn compare_outputs(dir: &Path, outputs: &[HostTensor]) -> Result<f64, BenchError> {
    let mut worst = 0f64;
    for (k, o) in outputs.iter().enumerate() {
        let bytes = std::fs::read(dir.join(format!("ort_output_{k}.bin"))).map_err(other)?;
        let theirs: Vec<f64> = bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let ours = o.to_f64_vec();
        if theirs.len() != ours.len() {
            return Err(BenchError::WrongResults(format!(
                "output {k}: ipuc has {} elements, onnxruntime {}",
                ours.len(),
                theirs.len()
            )));
        }
        for (a, b) in ours.iter().zip(&theirs) {
            worst = worst.max((a - b).abs());
        }
    }
    Ok(worst)
}

/// The human summary.
pub fn format_reference_report(r: &ReferenceReport) -> String {
    let mut s = format!(
        "{} ({}) on the reference executor vs onnxruntime {} (medians of each run)\n\
         threads | ipuc wall s | ort wall s | wall ratio | ipuc cpu s | ort cpu s | cpu ratio | max |diff|\n",
        r.model,
        if r.fused { "fused by eqsat-fuse" } else { "as imported" },
        r.onnxruntime_version
    );
    for t in &r.results {
        s += &format!(
            "{:>7} | {:>11.2} | {:>10.2} | {:>10.2} | {:>10.2} | {:>9.2} | {:>9.2} | {:.2e}\n",
            t.threads,
            t.ipuc.wall_median,
            t.onnxruntime.wall_median,
            t.wall_ratio,
            t.ipuc.cpu_median,
            t.onnxruntime.cpu_median,
            t.cpu_ratio,
            t.max_abs_diff
        );
    }
    s
}
