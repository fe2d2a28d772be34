//! `ipu-run`: load a model (ONNX or ipuc IR), run it on a device, and compare
//! its outputs with the reference outputs of ONNX test data sets.
//!
//! Exit status: 0 when everything compared is within tolerance (or nothing
//! was compared), 1 when an output exceeds the tolerances, 2 on any other
//! error (bad flags, unreadable model or data, a failed run).

mod cli;
mod compare;
mod compiled;
mod data;
mod device;
mod executable;
pub(crate) mod model;
mod progress;
mod report;

use std::time::Instant;

use clap::Parser;

pub use crate::import::parse_input_shape;
pub use cli::{OracleArg, RunArgs, WeightsArg, DEFAULT_DEVICE, DEFAULT_SIM_PRECISION};
pub use compare::{compare, Metrics, Statistical, Tolerance};
pub use data::{synthesize, DataSet, Named};
pub use device::DeviceKind;
pub use executable::summary as profile_summary;
pub use report::{CompiledSummary, OutputReport, ProfileSummary, Report, SuperstepSummary};

use ipuc_runtime::reference::interpreter;

/// `--atol` when not given.
pub const DEFAULT_ATOL: f64 = 1e-4;
/// `--rtol` when not given.
pub const DEFAULT_RTOL: f64 = 1e-3;
/// `--min-cosine` when not given (and the criteria of a compiled run).
pub const DEFAULT_MIN_COSINE: f64 = 0.999;
/// `--max-rel-l2` when not given (and the criteria of a compiled run).
pub const DEFAULT_MAX_REL_L2: f64 = 1e-2;
/// `--min-cosine` when not given at `--precision fp8`: the bar the FP8
/// lowering is held to (a value that lands on the other side of an FP8
/// rounding boundary than the reference's moves by a whole FP8 step, 6 to
/// 12 %, and each product's input is rounded).
pub const FP8_MIN_COSINE: f64 = 0.99;
/// `--max-rel-l2` when not given at `--precision fp8`: the relative L2
/// error a cosine of [`FP8_MIN_COSINE`] allows between vectors of equal
/// norms (`sqrt(2 (1 - 0.99))`, about 0.14), rounded up.
pub const FP8_MAX_REL_L2: f64 = 0.15;

/// The criteria outputs are judged by where `--min-cosine` and
/// `--max-rel-l2` are not given, at `precision` (`--precision`).
pub fn default_statistical(precision: Option<&str>) -> Statistical {
    match precision {
        Some("fp8") => Statistical {
            min_cosine: FP8_MIN_COSINE,
            max_rel_l2: FP8_MAX_REL_L2,
        },
        _ => Statistical {
            min_cosine: DEFAULT_MIN_COSINE,
            max_rel_l2: DEFAULT_MAX_REL_L2,
        },
    }
}

/// Exit status when an output exceeds the tolerances.
pub const EXIT_MISMATCH: i32 = 1;
/// Exit status of every other failure.
pub const EXIT_ERROR: i32 = 2;

/// Runs `ipu-run` with `args` (including the program name); returns the exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let args = match RunArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_ERROR } else { 0 };
        }
    };
    match run(&args) {
        Ok(report) => {
            if args.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.to_human());
            }
            if report.passed == Some(false) {
                EXIT_MISMATCH
            } else {
                0
            }
        }
        Err(msg) => {
            eprintln!("error: {}", msg.trim_end());
            EXIT_ERROR
        }
    }
}

/// Loads, runs and compares as `args` say.
pub fn run(args: &RunArgs) -> Result<Report, String> {
    let tolerance = Tolerance {
        atol: args.atol.unwrap_or(DEFAULT_ATOL),
        rtol: args.rtol.unwrap_or(DEFAULT_RTOL),
        statistical: match (args.min_cosine, args.max_rel_l2) {
            (None, None) => None,
            (c, l) => {
                let d = default_statistical(args.precision.as_deref());
                Some(Statistical {
                    min_cosine: c.unwrap_or(d.min_cosine),
                    max_rel_l2: l.unwrap_or(d.max_rel_l2),
                })
            }
        },
    };
    if !(tolerance.atol >= 0.0 && tolerance.rtol >= 0.0) {
        return Err("--atol and --rtol must be non-negative".into());
    }
    let is_exe = executable::is_executable(&args.model);
    let device = match args.device.as_deref() {
        Some(name) => DeviceKind::parse(name)?,
        None => DEFAULT_DEVICE,
    };
    let args = &args.with_defaults(device, !is_exe && model::is_onnx(&args.model));
    if args.batch.is_some() && (is_exe || !model::is_onnx(&args.model)) {
        return Err(
            "--batch applies to ONNX models, whose inputs' batch dimensions are symbolic: IR and executables carry their shapes (give an IR function the batch in its types)".into(),
        );
    }
    if args.batch == Some(crate::import::Batch::Auto) && device != DeviceKind::Sim {
        return Err(
            "--batch auto finds the largest batch that fits the chip: it needs --device sim".into(),
        );
    }
    if args.profile.is_some() && (is_exe || device != DeviceKind::Sim) {
        return Err(
            "--profile needs a model or IR compiled for the simulator (--device sim): an executable carries no attribution to ops, and the reference device no cycles".into(),
        );
    }
    match (is_exe, device) {
        (true, DeviceKind::Sim) => return executable::run(args, tolerance),
        (true, d) => {
            return Err(format!(
                "{} is an executable: it runs on device 'sim', not '{}'",
                args.model.display(),
                d.name()
            ))
        }
        (false, DeviceKind::Sim) => return compiled::run(args, tolerance),
        (false, DeviceKind::Reference) => {}
    }
    // Data sets are read first: an ONNX model is bound to them on import.
    let read: Option<Vec<DataSet>> = args.input.as_deref().map(data::discover).transpose()?;
    let read = data::for_batch(read, args.batch)?;
    let started = Instant::now();
    let mut loaded = model::load(args, read.as_ref().and_then(|s| s.first()))?;
    let import_s = started.elapsed().as_secs_f64();
    let entry = |loaded: &model::LoadedModel| loaded.function(args.function.as_deref());
    let func = entry(&loaded)?;
    let sets: Vec<DataSet> = match read {
        Some(sets) => sets,
        None => vec![data::synthesize(&loaded.ctx, func, args.seed)?],
    };
    let mut report = Report::new(
        args.model.display().to_string(),
        device.name().to_string(),
        interpreter::function_name(&loaded.ctx, func),
        import_s,
        tolerance,
    );
    for set in &sets {
        loaded = model::rebind(args, loaded, set)?;
        let (ctx, func) = (&loaded.ctx, entry(&loaded)?);
        let inputs = data::bind(ctx, func, set, &loaded.fed_inputs(set))?;
        let started = Instant::now();
        let (outputs, stats) = device
            .run(ctx, func, &inputs)
            .map_err(|e| format!("data set {}: {e}", set.name))?;
        report.run_s += started.elapsed().as_secs_f64();
        report.ops = stats.ops;
        report.peak_live_bytes = report.peak_live_bytes.max(stats.peak_live_bytes);
        check_expected_count(set, outputs.len(), "the function returns")?;
        let named: Vec<Named> = outputs
            .into_iter()
            .enumerate()
            .map(|(k, tensor)| Named {
                name: set
                    .expected
                    .get(k)
                    .map(|e| e.name.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| format!("output_{k}")),
                tensor,
            })
            .collect();
        record_outputs(&mut report, args, set, sets.len(), &named, tolerance)?;
    }
    Ok(finish(report))
}

/// A data set that names expected outputs names one per output (`source`
/// says who gives `count`: "the function returns").
fn check_expected_count(set: &DataSet, count: usize, source: &str) -> Result<(), String> {
    if !set.expected.is_empty() && set.expected.len() != count {
        return Err(format!(
            "data set {} holds {} expected output(s), but {source} {count}",
            set.name,
            set.expected.len()
        ));
    }
    Ok(())
}

/// Compares one data set's outputs with its expected ones (into `report`)
/// and writes them (and synthesized inputs) under `-o`, one directory per
/// data set when there are several.
fn record_outputs(
    report: &mut Report,
    args: &RunArgs,
    set: &DataSet,
    num_sets: usize,
    named: &[Named],
    tolerance: Tolerance,
) -> Result<(), String> {
    if args.print_outputs {
        for out in named {
            let values: Vec<String> = out
                .tensor
                .to_f64_vec()
                .iter()
                .map(|v| format!("{v:.4}"))
                .collect();
            println!("{} = [{}]", out.name, values.join(", "));
        }
    }
    for (k, out) in named.iter().enumerate() {
        report
            .outputs
            .push(output_report(set, out, set.expected.get(k), tolerance));
    }
    if let Some(dir) = &args.output {
        let dir = if num_sets > 1 {
            dir.join(&set.name)
        } else {
            dir.clone()
        };
        if set.synthesized {
            data::write_tensors(&dir, "input", &set.inputs)?;
        }
        data::write_tensors(&dir, "output", named)?;
    }
    Ok(())
}

/// The report with its verdict: passed if every compared output passed
/// (none if nothing was compared).
fn finish(mut report: Report) -> Report {
    let compared: Vec<bool> = report.outputs.iter().filter_map(|o| o.passed).collect();
    if !compared.is_empty() {
        report.passed = Some(compared.iter().all(|&p| p));
    }
    report
}

fn find_function(
    ctx: &ipuc_ir::Context,
    root: ipuc_ir::OpId,
    name: &str,
) -> Result<ipuc_ir::OpId, String> {
    let funcs: Vec<ipuc_ir::OpId> = ctx
        .collect_ops(root, ipuc_ir::WalkOrder::PreOrder)
        .into_iter()
        .filter(|&op| ctx.name_str(op) == ipuc_dialects::func::FUNC)
        .collect();
    funcs
        .iter()
        .copied()
        .find(|&f| interpreter::function_name(ctx, f) == name)
        .ok_or_else(|| {
            format!(
                "no function @{name} (the model has: {})",
                funcs
                    .iter()
                    .map(|&f| format!("@{}", interpreter::function_name(ctx, f)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

fn output_report(
    set: &DataSet,
    out: &Named,
    expected: Option<&Named>,
    tolerance: Tolerance,
) -> OutputReport {
    let mut r = OutputReport {
        data_set: set.name.clone(),
        name: out.name.clone(),
        shape: out.tensor.shape.clone(),
        dtype: out.tensor.kind.to_string(),
        max_abs_err: None,
        max_rel_err: None,
        rel_l2_err: None,
        cosine: None,
        mismatches: None,
        passed: None,
        problem: None,
    };
    let Some(expected) = expected else {
        return r;
    };
    if expected.tensor.shape != out.tensor.shape {
        r.passed = Some(false);
        r.problem = Some(format!(
            "shape {:?} differs from the expected {:?}",
            out.tensor.shape, expected.tensor.shape
        ));
        return r;
    }
    let m = compare(
        &out.tensor.to_f64_vec(),
        &expected.tensor.to_f64_vec(),
        tolerance,
    );
    r.max_abs_err = Some(m.max_abs_err);
    r.max_rel_err = Some(m.max_rel_err);
    r.rel_l2_err = Some(m.rel_l2_err);
    r.cosine = Some(m.cosine);
    r.mismatches = Some(m.mismatches);
    r.passed = Some(tolerance.passes(&m));
    r
}
