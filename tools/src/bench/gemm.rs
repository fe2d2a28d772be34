//! `ipu-bench gemm`: one matrix product `[M, K] · [K, N]` planned over the
//! tiles, lowered to an executable and run on the simulator: the plan and
//! its estimate beside the simulated cycles (split per superstep into
//! compute, exchange and sync), TFLOPS and the share of the AMP's peak,
//! and the compile time. Sampled outputs are checked against float64.

use std::time::Instant;

use ipuc_backend_ipu::codelets::amp::AmpVariant;
use ipuc_backend_ipu::lower::codegen::{check_fits, emit_gemm, layout, Constants};
use ipuc_backend_ipu::lower::plan::{evaluate, plan_gemm, Estimate, GemmPlan, GemmShape, Grid};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{FloatKind, Location, Type};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::{BenchError, EstimateReport};

/// What `ipu-bench gemm` measured.
#[derive(Clone, Debug, Serialize)]
pub struct GemmReport {
    /// `MxKxN`.
    pub shape: String,
    /// The AMP instruction.
    pub instruction: String,
    /// The grid: `RxC`, or `RxCxK` with a K split.
    pub grid: String,
    /// Tiles used.
    pub tiles: u32,
    /// The plan's estimate.
    pub estimate: EstimateReport<Estimate>,
    /// Simulated device cycles (the host streams apart).
    pub cycles: u64,
    /// The host streams' link time (input before, output after the device
    /// program), seconds.
    pub host_io_s: f64,
    /// Per superstep, the largest compute, exchange and sync-wait cycles
    /// over the tiles.
    pub supersteps: Vec<(u64, u64, u64)>,
    /// Achieved TFLOPS at the machine's clock.
    pub tflops: f64,
    /// Share of the instruction's peak on every tile, in percent.
    pub percent_of_peak: f64,
    /// Cycles the product takes at that peak.
    pub peak_cycles: u64,
    /// Plan, lowering and encoding, seconds.
    pub compile_s: f64,
    /// Simulation, host seconds.
    pub simulate_s: f64,
    /// Bytes of the busiest tile's image (code, data, weights).
    pub max_image_bytes: u32,
    /// Output elements checked against float64.
    pub checked: usize,
}

/// Plans, lowers and simulates `[m, k] · [k, n]` in `dtype` (`f16`,
/// `f32`), on `grid` if given.
pub fn run_gemm(
    machine: &MachineModel,
    (m, k, n): (u32, u32, u32),
    dtype: &str,
    grid: Option<Grid>,
) -> Result<GemmReport, BenchError> {
    let variant = match dtype {
        "f16" => AmpVariant::F16,
        "f32" => AmpVariant::F32,
        _ => {
            return Err(BenchError::Usage(format!(
                "--dtype must be f16 or f32, not `{dtype}`"
            )))
        }
    };
    let shape = GemmShape {
        m,
        k,
        n,
        variant,
        epilogue: Default::default(),
    };
    let started = Instant::now();
    let plan: GemmPlan = match grid {
        Some(g) => evaluate(shape, g, machine).map_err(|r| BenchError::Usage(r.reason))?,
        None => {
            plan_gemm(shape, machine)
                .map_err(|e| BenchError::Usage(e.to_string()))?
                .plan
        }
    };
    let elem = variant.input_elem();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (mu, ku, nu) = (m as usize, k as usize, n as usize);
    let mut value = || rng.random_range(-1.0..1.0f64);
    let x = elem.decode(&elem.encode(&(0..mu * ku).map(|_| value()).collect::<Vec<_>>()));
    let w = elem.decode(&elem.encode(&(0..ku * nu).map(|_| value()).collect::<Vec<_>>()));
    let float = Type::float(match variant {
        AmpVariant::F32 => FloatKind::F32,
        _ => FloatKind::F16,
    });
    let (mut ctx, body) = super::empty_module("gemm.mlir")?;
    let tys = (
        Type::tensor(&[i64::from(m), i64::from(k)], float.clone()),
        Type::tensor(&[i64::from(m), i64::from(n)], float),
    );
    let exe_op = emit_gemm(
        &mut ctx,
        body,
        &plan,
        Constants {
            weights: &w,
            bias: None,
        },
        tys,
        machine,
        Location::unknown(),
    )
    .map_err(|d| BenchError::Other(d.message))?
    .executable;
    let exe = super::encode(&ctx, exe_op)?;
    check_fits(&exe, &layout(&plan, machine)).map_err(BenchError::Other)?;
    let compile_s = started.elapsed().as_secs_f64();
    let run = super::simulate(machine, &exe, &elem.encode(&x))?;
    let y = variant.output_elem().decode(&run.output);
    let u = variant.output_elem().unit_roundoff();
    let mut checked = 0;
    let mut pick = rand::rngs::StdRng::seed_from_u64(11);
    for _ in 0..64 {
        let (r, j) = (pick.random_range(0..mu), pick.random_range(0..nu));
        let (mut want, mut mag) = (0.0, 0.0);
        for kk in 0..ku {
            want += x[r * ku + kk] * w[kk * nu + j];
            mag += (x[r * ku + kk] * w[kk * nu + j]).abs();
        }
        let tol = (f64::from(shape.k_groups()) + 1.0) * u * mag + 1e-6;
        if (y[r * nu + j] - want).abs() > tol {
            return Err(BenchError::WrongResults(format!(
                "Y[{r}][{j}] = {}, want {want} (tolerance {tol:e})",
                y[r * nu + j]
            )));
        }
        checked += 1;
    }
    let flops = 2.0 * f64::from(m) * f64::from(k) * f64::from(n);
    let seconds = run.cycles as f64 / machine.clock_hz;
    let (percent_of_peak, peak_cycles) =
        super::peak_share(flops, run.cycles, variant.peak_flops(machine), machine);
    let e = plan.estimate;
    Ok(GemmReport {
        shape: format!("{m}x{k}x{n}"),
        instruction: variant.mnemonic().into(),
        grid: plan.grid().to_string(),
        tiles: plan.tiles(),
        estimate: EstimateReport {
            parts: e,
            total: e.total(),
        },
        cycles: run.cycles,
        host_io_s: run.host_io_s,
        supersteps: run.supersteps,
        tflops: flops / seconds / 1e12,
        percent_of_peak,
        peak_cycles,
        compile_s,
        simulate_s: run.simulate_s,
        max_image_bytes: super::max_image_bytes(&exe),
        checked,
    })
}

/// The report as text.
pub fn format_gemm(r: &GemmReport) -> String {
    let mut s = format!(
        "{} {} on a {} grid ({} tiles)\nestimate {} cycles (exchange {}, compute {}, reduction {}, sync {})\nsimulated {} cycles: {:.1} TFLOPS, {:.1} % of peak ({} cycles at peak)\n",
        r.shape,
        r.instruction,
        r.grid,
        r.tiles,
        r.estimate.total,
        r.estimate.parts.exchange,
        r.estimate.parts.compute,
        r.estimate.parts.reduction,
        r.estimate.parts.sync,
        r.cycles,
        r.tflops,
        r.percent_of_peak,
        r.peak_cycles
    );
    s += &super::format_supersteps(&r.supersteps, r.host_io_s);
    s += &format!(
        "compile {:.2} s, simulate {:.2} s, busiest image {} bytes, {} outputs checked against float64\n",
        r.compile_s, r.simulate_s, r.max_image_bytes, r.checked
    );
    s
}
