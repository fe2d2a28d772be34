//! `ipu-bench attention`: the transformer attention block
//! `x + attention(qkv(ln(x))) W_o + b_o` in f16 planned over the tiles,
//! lowered to one executable and run on the simulator: the plan and its
//! per-step estimate beside the simulated cycles per superstep, the share
//! of the FP16 AMP peak, the compile time and the exchange code size.
//! Sampled rows are checked against the block in float64.

use std::time::Instant;

use ipuc_backend_ipu::codelets::amp::AmpVariant;
use ipuc_backend_ipu::lower::attention_block::{
    emit_attention, plan_attention_forced, reference_rows, AttentionEstimate, AttentionShape,
};
use ipuc_backend_ipu::lower::block::FP8_MAX_REL_L2;
use ipuc_backend_ipu::lower::block_values::AttentionValues;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{FloatKind, Location, Type};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::{BenchError, EstimateReport};

/// What `ipu-bench attention` measured.
#[derive(Clone, Debug, Serialize)]
pub struct AttentionReport {
    /// `tokens x hidden, heads`.
    pub shape: String,
    /// `fp16` or `fp8`.
    pub precision: String,
    /// The plan, as `--plan-report` shows it.
    #[serde(skip)]
    pub plan_text: String,
    /// Tiles used.
    pub tiles: usize,
    /// The estimate, per step.
    pub estimate: EstimateReport<AttentionEstimate>,
    /// The estimate as text.
    #[serde(skip)]
    pub estimate_text: String,
    /// Simulated device cycles (the host streams apart).
    pub cycles: u64,
    /// Per superstep, the largest compute, exchange and sync-wait cycles
    /// over the tiles.
    pub supersteps: Vec<(u64, u64, u64)>,
    /// The host streams' link time, seconds.
    pub host_io_s: f64,
    /// Share of the FP16 AMP peak on every tile, in percent (the block's
    /// multiply-accumulates with the heads unpadded).
    pub percent_of_peak: f64,
    /// The block's products at that peak, cycles.
    pub peak_cycles: u64,
    /// Plan, lowering and encoding, seconds.
    pub compile_s: f64,
    /// Simulation, host seconds.
    pub simulate_s: f64,
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

/// Plans, lowers and simulates the block of `(images, m, c, heads)`, its
/// form forced where given (`(key blocks, chunks)`, as
/// [`plan_attention_forced`] takes it).
pub fn run_attention(
    machine: &MachineModel,
    (images, m, c, heads): (u32, u32, u32, u32),
    fp8: bool,
    forced: Option<(u32, u32)>,
) -> Result<AttentionReport, BenchError> {
    if heads == 0 || c % heads != 0 {
        return Err(BenchError::Usage(format!(
            "--hidden {c} must be a positive multiple of --heads {heads}"
        )));
    }
    let mut shape = AttentionShape {
        images,
        m,
        c,
        heads,
        head_dim: c / heads,
        eps: 1e-6,
        // LayerNorm's scale and shift folded into the QKV product, as the
        // pipeline's fold-layernorm-affine leaves a model's blocks.
        ln_affine: false,
        scale: 1.0 / ((c / heads) as f32).sqrt(),
        fp8: None,
    };
    let (mu, cu) = (m as usize, c as usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let half = AmpVariant::F16.input_elem();
    let mut values = AttentionValues::random(shape, || rng.random_range(-1.0..1.0));
    values.fold_ln();
    if fp8 {
        shape.fp8 = Some(values.quantize_fp8());
    }
    let (x, k) = (&values.x[..], &values.constants);
    let started = Instant::now();
    let plan = plan_attention_forced(shape, machine, (0, machine.tiles), forced)
        .map_err(BenchError::Usage)?;
    let (mut ctx, body) = super::empty_module("attention.mlir")?;
    let ty = Type::tensor(
        &[i64::from(shape.rows()), i64::from(c)],
        Type::float(FloatKind::F16),
    );
    let lowered = emit_attention(
        &mut ctx,
        body,
        &plan,
        k,
        (ty.clone(), ty),
        machine,
        Location::unknown(),
    )
    .map_err(|d| BenchError::Other(d.message))?;
    let exe = super::encode(&ctx, lowered.executable)?;
    let compile_s = started.elapsed().as_secs_f64();
    tracing::info!(
        ops = ctx.num_ops(),
        compile_s,
        "compiled the block; simulating it"
    );
    let run = super::simulate(machine, &exe, &half.encode(x))?;
    let y = half.decode(&run.output);
    let max_rel_l2 = if fp8 { FP8_MAX_REL_L2 } else { 1e-2 };
    // Rows of every image, each checked against its own image's block.
    let (cosine, rel_l2, rows_checked) =
        super::check_sampled_rows(&y, (mu * images as usize, cu), max_rel_l2, |rows| {
            rows.iter()
                .flat_map(|&r| {
                    let image = &x[r / mu * mu * cu..(r / mu + 1) * mu * cu];
                    reference_rows(shape, image, k, &[r % mu])
                })
                .collect()
        })?;
    // QKV, the output projection, Q K^T and P V, every image's.
    let (nf, mf, cf) = (f64::from(images), f64::from(m), f64::from(c));
    let flops = nf * 2.0 * (4.0 * mf * cf * cf + 2.0 * mf * mf * cf);
    let (percent_of_peak, peak_cycles) = super::peak_share(
        flops,
        run.cycles,
        AmpVariant::F16.peak_flops(machine),
        machine,
    );
    Ok(AttentionReport {
        shape: match images {
            1 => format!("{m}x{c}, {heads} heads"),
            n => format!("{n} images of {m}x{c}, {heads} heads"),
        },
        precision: if fp8 { "fp8" } else { "fp16" }.to_string(),
        plan_text: plan.report(machine),
        tiles: plan.tiles().len(),
        estimate: EstimateReport {
            parts: lowered.estimate,
            total: lowered.estimate.total(),
        },
        estimate_text: lowered.estimate.to_string(),
        cycles: run.cycles,
        supersteps: run.supersteps,
        host_io_s: run.host_io_s,
        percent_of_peak,
        peak_cycles,
        compile_s,
        simulate_s: run.simulate_s,
        exchange_code_bytes_max: lowered.exchange_code_bytes_max,
        max_image_bytes: super::max_image_bytes(&exe),
        cosine,
        rel_l2,
        rows_checked,
    })
}

/// The report as text.
pub fn format_attention(r: &AttentionReport) -> String {
    let mut s = format!(
        "{}estimate {}\nsimulated {} cycles on {} tiles ({}): {:.1} % of the FP16 peak ({} cycles at peak)\n",
        r.plan_text, r.estimate_text, r.cycles, r.tiles, r.precision, r.percent_of_peak, r.peak_cycles,
    );
    s += &super::format_supersteps(&r.supersteps, r.host_io_s);
    s += &format!(
        "compile {:.2} s, simulate {:.2} s, exchange code at most {} bytes on a tile, busiest image {} bytes\n{} rows checked against float64: cosine {:.6}, relative L2 {:.2e}\n",
        r.compile_s,
        r.simulate_s,
        r.exchange_code_bytes_max,
        r.max_image_bytes,
        r.rows_checked,
        r.cosine,
        r.rel_l2
    );
    s
}
