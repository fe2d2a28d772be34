//! `ipu-bench mlp`: the transformer MLP block `x + fc2(gelu(fc1(ln(x))))`
//! in f16 planned over the tiles, lowered to one executable and run on the
//! simulator: the plan and its per-step estimate beside the simulated
//! cycles per superstep (compute, exchange, sync), the share of the FP16
//! AMP peak, the compile time and the exchange code size. Sampled rows are
//! checked against the block in float64.

use std::time::Instant;

use ipuc_backend_ipu::codelets::amp::AmpVariant;
use ipuc_backend_ipu::codelets::gelu::GeluForm;
use ipuc_backend_ipu::lower::block::{
    emit_mlp, plan_mlp, reference_rows, BlockEstimate, MlpShape, FP8_MAX_REL_L2,
};
use ipuc_backend_ipu::lower::block_values::MlpValues;
use ipuc_backend_ipu::lower::codegen::{check_fits, TileLayout};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{FloatKind, Location, Type};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::{BenchError, EstimateReport};

/// What `ipu-bench mlp` measured.
#[derive(Clone, Debug, Serialize)]
pub struct MlpReport {
    /// `tokens x hidden x mlp`.
    pub shape: String,
    /// `fp16` or `fp8`.
    pub precision: String,
    /// fc1's grid.
    pub fc1_grid: String,
    /// fc2's grid.
    pub fc2_grid: String,
    /// LayerNorm tiles.
    pub ln_tiles: usize,
    /// Tiles used.
    pub tiles: usize,
    /// The estimate, per step.
    pub estimate: EstimateReport<BlockEstimate>,
    /// The estimate as text.
    #[serde(skip)]
    pub estimate_text: String,
    /// Simulated device cycles (the host streams apart).
    pub cycles: u64,
    /// Per superstep, the largest compute, exchange and sync-wait cycles
    /// over the tiles.
    pub supersteps: Vec<(u64, u64, u64)>,
    /// Sums over the supersteps of those maxima.
    pub compute_cycles: u64,
    /// See `compute_cycles`.
    pub exchange_cycles: u64,
    /// See `compute_cycles`.
    pub sync_cycles: u64,
    /// The host streams' link time, seconds.
    pub host_io_s: f64,
    /// Share of the precision's AMP peak (FP16 or FP8) on every tile, in
    /// percent.
    pub percent_of_peak: f64,
    /// The block's two products at that peak, cycles.
    pub peak_cycles: u64,
    /// Plan, lowering and encoding, seconds.
    pub compile_s: f64,
    /// Of which the plan (the products' searches, the layout).
    pub plan_s: f64,
    /// Of which the lowering to `ipu` IR (exchange schedules included).
    pub lower_s: f64,
    /// Simulation, host seconds.
    pub simulate_s: f64,
    /// CPU seconds of the simulation, all threads.
    pub simulate_cpu_s: f64,
    /// Of `simulate_s`, loading the executable.
    pub load_s: f64,
    /// The most bytes of (scheduled) exchange code on a tile.
    pub exchange_code_bytes_max: u64,
    /// Bytes of the busiest tile's image.
    pub max_image_bytes: u32,
    /// Cosine similarity of the checked rows with float64.
    pub cosine: f64,
    /// Relative L2 error of the checked rows.
    pub rel_l2: f64,
    /// Rows checked.
    pub rows_checked: usize,
}

/// Plans, lowers and simulates the block of `(m, c, h)`.
pub fn run_mlp(
    machine: &MachineModel,
    (m, c, h): (u32, u32, u32),
    fp8: bool,
) -> Result<MlpReport, BenchError> {
    let mut shape = MlpShape {
        m,
        c,
        h,
        eps: 1e-6,
        // LayerNorm's scale and shift folded into fc1, as the pipeline's
        // fold-layernorm-affine leaves a model's blocks.
        ln_affine: false,
        gelu: GeluForm::Tanh,
        fp8: None,
    };
    let (mu, cu) = (m as usize, c as usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let half = AmpVariant::F16.input_elem();
    let mut values = MlpValues::random(shape, || rng.random_range(-1.0..1.0));
    values.fold_ln();
    if fp8 {
        shape.fp8 = Some(values.quantize_fp8());
    }
    let (x, k) = (&values.x[..], &values.constants);
    let started = Instant::now();
    let plan = plan_mlp(shape, machine).map_err(BenchError::Usage)?;
    let plan_s = started.elapsed().as_secs_f64();
    let (mut ctx, body) = super::empty_module("mlp.mlir")?;
    let ty = Type::tensor(&[i64::from(m), i64::from(c)], Type::float(FloatKind::F16));
    let lowered = emit_mlp(
        &mut ctx,
        body,
        &plan,
        k,
        (ty.clone(), ty),
        machine,
        Location::unknown(),
    )
    .map_err(|d| BenchError::Other(d.message))?;
    let lower_s = started.elapsed().as_secs_f64() - plan_s;
    let exe = super::encode(&ctx, lowered.executable)?;
    let fits = TileLayout {
        tensors_start: plan.layout.tensors_start,
        ..plan.layout.fc1
    };
    check_fits(&exe, &fits).map_err(BenchError::Other)?;
    let compile_s = started.elapsed().as_secs_f64();
    tracing::info!(
        ops = ctx.num_ops(),
        compile_s,
        plan_s,
        lower_s,
        encode_s = compile_s - plan_s - lower_s,
        "compiled the block; simulating it"
    );
    let run = super::simulate(machine, &exe, &half.encode(x))?;
    let y = half.decode(&run.output);
    let max_rel_l2 = if fp8 { FP8_MAX_REL_L2 } else { 1e-2 };
    let (cosine, rel_l2, rows_checked) =
        super::check_sampled_rows(&y, (mu, cu), max_rel_l2, |rows| {
            reference_rows(shape, x, k, rows)
        })?;
    let flops = 4.0 * f64::from(m) * f64::from(c) * f64::from(h);
    let (percent_of_peak, peak_cycles) = super::peak_share(
        flops,
        run.cycles,
        shape.variant().peak_flops(machine),
        machine,
    );
    let supersteps = run.supersteps;
    Ok(MlpReport {
        shape: format!("{m}x{c}x{h}"),
        precision: if fp8 { "fp8" } else { "fp16" }.to_string(),
        fc1_grid: plan.fc1.grid().to_string(),
        fc2_grid: plan.fc2.grid().to_string(),
        ln_tiles: plan.ln_tiles.len(),
        tiles: plan.tiles().len(),
        estimate: EstimateReport {
            parts: lowered.estimate,
            total: lowered.estimate.total(),
        },
        estimate_text: lowered.estimate.to_string(),
        cycles: run.cycles,
        compute_cycles: supersteps.iter().map(|s| s.0).sum(),
        exchange_cycles: supersteps.iter().map(|s| s.1).sum(),
        sync_cycles: supersteps.iter().map(|s| s.2).sum(),
        supersteps,
        host_io_s: run.host_io_s,
        percent_of_peak,
        peak_cycles,
        compile_s,
        plan_s,
        lower_s,
        simulate_s: run.simulate_s,
        simulate_cpu_s: run.simulate_cpu_s,
        load_s: run.load_s,
        exchange_code_bytes_max: lowered.exchange_code_bytes_max,
        max_image_bytes: super::max_image_bytes(&exe),
        cosine,
        rel_l2,
        rows_checked,
    })
}

/// The report as text.
pub fn format_mlp(r: &MlpReport) -> String {
    let mut s = format!(
        "MLP block {} ({}): fc1 on {}, fc2 on {}, LayerNorm on {} tiles, {} tiles in all\nestimate {}\nsimulated {} cycles: {:.1} % of the {} peak ({} cycles at peak); compute {}, exchange {}, sync {}\n",
        r.shape,
        r.precision,
        r.fc1_grid,
        r.fc2_grid,
        r.ln_tiles,
        r.tiles,
        r.estimate_text,
        r.cycles,
        r.percent_of_peak,
        r.precision.to_uppercase(),
        r.peak_cycles,
        r.compute_cycles,
        r.exchange_cycles,
        r.sync_cycles
    );
    s += &super::format_supersteps(&r.supersteps, r.host_io_s);
    s += &format!(
        "compile {:.2} s (plan {:.2} s, lowering to IR {:.2} s, the rest encoding), simulate {:.2} s ({:.2} s CPU; load {:.2} s), exchange code at most {} bytes on a tile, busiest image {} bytes\n{} rows checked against float64: cosine {:.6}, relative L2 {:.2e}\n",
        r.compile_s,
        r.plan_s,
        r.lower_s,
        r.simulate_s,
        r.simulate_cpu_s,
        r.load_s,
        r.exchange_code_bytes_max,
        r.max_image_bytes,
        r.rows_checked,
        r.cosine,
        r.rel_l2
    );
    s
}
