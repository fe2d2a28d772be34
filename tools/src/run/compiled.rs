//! `ipu-run MODEL --device sim` for IR and models: the function is lowered
//! to an executable (`ipu-plan` and `ipu-lower`, in process), run on the
//! simulator, and compared with a data set's stored outputs (an
//! independent runtime's: the fixtures hold onnxruntime's), or, for inputs
//! without stored outputs (seeded random ones, `--extract`ed blocks), with
//! the reference executor's outputs for the same inputs: that comparison
//! isolates the lowering, both sides running the same IR. The report's
//! `against` line (JSON `oracle`) says which.
//!
//! What the lowering cannot handle yet is refused with its one error that
//! lists every op it cannot lower, and a line saying how to run the model
//! anyway (on the reference device): the simulator is the default device,
//! and nothing falls back to another one silently.

use std::time::Instant;

use ipuc_backend_ipu::emit::build_executable;
use ipuc_backend_ipu::lower::batch::{function_batch, largest_batch};
use ipuc_backend_ipu::lower::chain::PlannedBlock;
use ipuc_backend_ipu::lower::passes::{lower_function_reporting, planned_products};
use ipuc_backend_ipu::lower::plan::GemmPlan;
use ipuc_ipu_arch::Executable;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::SourceMgr;
use ipuc_runtime::reference::interpreter;

use super::data::{self, DataSet, Named};
use super::executable::run_executable;
use super::progress::Phases;
use super::{default_statistical, model, OracleArg, RunArgs, Tolerance};
use crate::import::Batch;
use crate::run::{CompiledSummary, ProfileSummary, Report};

/// The line an error of the way to the simulator ends with.
pub const REFERENCE_HINT: &str = "help: to run it anyway, on the host reference executor (no lowering), add `--device reference`";

/// `error` (a model or IR that does not lower to the IPU) with
/// [`REFERENCE_HINT`] after it.
pub fn with_reference_hint(error: String) -> String {
    format!("{}\n{REFERENCE_HINT}", error.trim_end())
}

/// Compiles the model's function for the simulated chip and runs it. The
/// outputs are judged as whole tensors (cosine and relative L2 error, the
/// criteria of a reduced-precision lowering) unless `--atol`/`--rtol` ask
/// for the elementwise test.
pub fn run(args: &RunArgs, tolerance: Tolerance) -> Result<Report, String> {
    let tolerance = match (args.atol, args.rtol, tolerance.statistical) {
        (None, None, None) => Tolerance {
            statistical: Some(default_statistical(args.precision.as_deref())),
            ..tolerance
        },
        _ => tolerance,
    };
    let started = Instant::now();
    let phases = Phases::new(5);
    phases.start("importing");
    // Data sets are read first: an ONNX model is bound to them on import.
    let read: Option<Vec<DataSet>> = args.input.as_deref().map(data::discover).transpose()?;
    // `--batch auto`: the model planned for each batch tried, then loaded
    // for the largest that fits.
    let (chosen, batch_limit) = match args.batch {
        Some(Batch::Auto) => {
            let (n, limit) = auto_batch(args, read.as_ref().and_then(|s| s.first()))?;
            let s = if n == 1 { "" } else { "s" };
            phases.print(&format!("--batch auto: {n} image{s} ({limit})"));
            (
                RunArgs {
                    batch: Some(Batch::Images(n)),
                    ..args.clone()
                },
                Some(limit),
            )
        }
        _ => (args.clone(), None),
    };
    let args = &chosen;
    let read = data::for_batch(read, args.batch)?;
    // `--oracle source`: the reference executor runs on the model before
    // the conversion to `--precision`, which follows it.
    let source = args.oracle == OracleArg::Source && args.precision.is_some();
    let load = if source {
        model::load_source
    } else {
        model::load
    };
    let mut loaded = load(args, read.as_ref().and_then(|s| s.first()))?;
    // The report's `import_s`: reading or importing the model (and with
    // `--batch auto`, the batch search), a part of `compile_s`.
    let import_s = started.elapsed().as_secs_f64();
    let entry = |loaded: &model::LoadedModel| loaded.function(args.function.as_deref());
    let func = entry(&loaded)?;
    let sets: Vec<DataSet> = match read {
        Some(sets) => sets,
        None => vec![data::synthesize(&loaded.ctx, func, args.seed)?],
    };
    // What the device must produce: a data set's stored outputs (an
    // independent runtime's, as the fixtures' onnxruntime outputs), else
    // the reference executor's on the same IR.
    phases.start("reading data sets and reference outputs");
    // The reference executor's run is the oracle's time, not the
    // compiler's: the compile time leaves it out.
    let oracle_started = Instant::now();
    let mut checked = Vec::new();
    let mut oracles = Vec::new();
    for set in sets {
        loaded = model::rebind_with(args, loaded, &set, load)?;
        if !set.expected.is_empty() {
            oracles.push(format!("the outputs stored in {}", set.name));
            checked.push(set);
            continue;
        }
        oracles.push(if source {
            format!(
                "the reference executor on the model before --precision ({})",
                set.name
            )
        } else {
            format!("the reference executor on the same IR ({})", set.name)
        });
        let func = entry(&loaded)?;
        let inputs = data::bind(&loaded.ctx, func, &set, &loaded.fed_inputs(&set))?;
        let (outputs, _) = interpreter::run_function_with_stats(&loaded.ctx, func, &inputs)
            .map_err(|e| format!("reference executor, data set {}: {e}", set.name))?;
        checked.push(DataSet {
            expected: outputs
                .into_iter()
                .enumerate()
                .map(|(k, tensor)| Named {
                    // The executable's stream names.
                    name: format!("output{k}"),
                    tensor,
                })
                .collect(),
            ..set
        });
    }
    let oracle_s = oracle_started.elapsed().as_secs_f64();
    if source {
        model::convert(args, &mut loaded)?;
    }
    let func = entry(&loaded)?;
    let machine = MachineModel::c600();
    let body = loaded
        .ctx
        .regions(loaded.root)
        .first()
        .and_then(|&r| loaded.ctx.entry_block(r))
        .ok_or_else(|| with_reference_hint("the model has no body to compile".into()))?;
    // Every error of planning, lowering and encoding is one of the way to
    // the simulator.
    let render = |d: &ipuc_ir::Diagnostic| with_reference_hint(SourceMgr::new().render(d));
    phases.start("planning and lowering");
    // Entries per run (see `CompiledSummary::batch`).
    let batch = function_batch(&loaded.ctx, func).map_or(1, u64::from);
    // With --plan-report, the report is printed once the plan is made; a
    // chain is planned once for the report, the lowering and the
    // profile's attribution.
    let mut print = |r: String| phases.print(&r);
    let report: Option<&mut dyn FnMut(String)> = if args.plan_report {
        Some(&mut print)
    } else {
        None
    };
    let (lowered, chain_plan) = lower_function_reporting(
        &mut loaded.ctx,
        body,
        func,
        (&machine, args.weights()),
        report,
    )
    .map_err(|d| render(&d))?;
    let attribution = match &args.profile {
        Some(_) => Some(crate::prof::attribution::of_function(
            &loaded.ctx,
            func,
            &machine,
            (&lowered, chain_plan.as_ref()),
        )?),
        None => None,
    };
    phases.start("encoding");
    let exe = build_executable(&loaded.ctx, lowered.executable).map_err(|ds| {
        with_reference_hint(
            ds.iter()
                .map(|d| SourceMgr::new().render(d))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    let compile_s = started.elapsed().as_secs_f64() - oracle_s;
    phases.start("simulating");
    // The tile programs' IR (so400m: ~14 M ops, some 4 GB) is in the
    // executable now: freed, its memory serves the simulation instead of
    // the simulation touching new pages (the profile's attribution was
    // taken from it above; the plans below read the `nn` function).
    loaded.ctx.erase_op(lowered.executable);
    let mut report = run_executable(
        &exe,
        &args.model.display().to_string(),
        import_s,
        &checked,
        args,
        tolerance,
    )?;
    phases.finish();
    report.function = interpreter::function_name(&loaded.ctx, func);
    report.oracle = Some(oracles.join(", "));
    if let (Some(dir), Some(attribution), Some(sim)) =
        (&args.profile, &attribution, report.recorded.take())
    {
        let inputs = crate::prof::collect::Inputs {
            model: &report.model,
            function: &report.function,
            machine: &machine,
            exe: &exe,
            sim: &sim,
            attribution,
        };
        report.profile_files = Some(crate::prof::write(dir, &inputs)?);
    }
    // The products as lowered: a chain's from its plan (planning it again
    // would take as long, and without `--stream-weights`).
    let plans = match &chain_plan {
        Some(plan) => plan
            .blocks
            .iter()
            .flat_map(PlannedBlock::products)
            .collect(),
        None => planned_products(&loaded.ctx, func, &machine).map_err(|d| render(&d))?,
    };
    report.compiled = report
        .profile
        .as_ref()
        .map(|p| summarize(p, &plans, &exe, &machine, compile_s))
        .map(|s| {
            let rate = |seconds: f64| {
                if seconds > 0.0 {
                    batch as f64 / seconds
                } else {
                    0.0
                }
            };
            let device_s = s.cycles as f64 / machine.clock_hz;
            CompiledSummary {
                exchange_code_bytes_max: lowered.exchange_code_bytes_max,
                batch,
                batch_limit: batch_limit.clone(),
                precision: args.precision.clone().unwrap_or_else(|| "as-is".into()),
                images_per_s: rate(device_s + s.host_io_s),
                device_images_per_s: rate(device_s),
                ..s
            }
        });
    Ok(report)
}

/// The most images `--batch auto` tries.
pub const AUTO_BATCH_MOST: u32 = 128;

/// `--batch auto`: the model (bound to `set`, if any) loaded for one
/// image, and the largest batch whose chain of blocks plans on the chip
/// ([`largest_batch`]), with why one more does not.
fn auto_batch(args: &RunArgs, set: Option<&DataSet>) -> Result<(u32, String), String> {
    let one = RunArgs {
        batch: None,
        ..args.clone()
    };
    let loaded = model::load(&one, set)?;
    let func = loaded.function(args.function.as_deref())?;
    let machine = MachineModel::c600();
    let choice = largest_batch(
        &loaded.ctx,
        func,
        (&machine, args.weights()),
        AUTO_BATCH_MOST,
    )
    .map_err(|d| with_reference_hint(SourceMgr::new().render(&d)))?;
    tracing::info!(tried = ?choice.tried, "--batch auto");
    Ok((choice.batch, choice.limit))
}

/// The compiled run's figures from its profile, plans and executable.
fn summarize(
    p: &ProfileSummary,
    plans: &[GemmPlan],
    exe: &Executable,
    machine: &MachineModel,
    compile_s: f64,
) -> CompiledSummary {
    let seconds = p.total_cycles as f64 / machine.clock_hz;
    // FLOPs over the time the device ran, against the peak of the AMP
    // instruction (the products' common one; the first when they differ).
    let flops: f64 = plans
        .iter()
        .map(|g| 2.0 * f64::from(g.shape.m) * f64::from(g.shape.k) * f64::from(g.shape.n))
        .sum();
    let peak = plans
        .first()
        .map_or(f64::INFINITY, |g| g.shape.variant.peak_flops(machine));
    let mut tile_bytes: std::collections::BTreeMap<u32, u64> = exe
        .tiles
        .iter()
        .map(|t| (t.tile, u64::from(t.image.total_bytes())))
        .collect();
    for b in &exe.tensors {
        *tile_bytes.entry(b.tile).or_default() += u64::from(b.size);
    }
    CompiledSummary {
        cycles: p.total_cycles,
        host_io_s: p.host_io_s,
        mfu: if seconds > 0.0 {
            flops / seconds / peak
        } else {
            0.0
        },
        compute_cycles: p.supersteps.iter().map(|s| s.compute).sum(),
        exchange_cycles: p.supersteps.iter().map(|s| s.exchange).sum(),
        sync_cycles: p.supersteps.iter().map(|s| s.sync).sum(),
        tiles_used: p.tiles,
        max_tile_bytes: tile_bytes.values().copied().max().unwrap_or(0),
        max_code_bytes: exe
            .tiles
            .iter()
            .map(|t| u64::from(t.image.code_bytes()))
            .max()
            .unwrap_or(0),
        exchange_code_bytes_max: 0,
        compile_s,
        batch: 1,
        batch_limit: None,
        precision: String::new(),
        images_per_s: 0.0,
        device_images_per_s: 0.0,
    }
}
