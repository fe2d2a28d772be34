//! `ipu-bench`: performance measurements that run the simulator.
//!
//! - `amp`: the AMP matrix block on every tile at once, launched as a
//!   compute set launches it (supervisor, weight load, six workers), with
//!   the numerics of sample tiles checked against the float64 reference.
//! - `codelets`: every codelet family once on one tile, simulated cycles
//!   beside the codelet's estimate.
//! - `gemm`: a matrix product planned over the tiles, lowered and
//!   simulated, beside the plan's estimate.
//! - `attention`: the transformer attention block (LayerNorm, QKV,
//!   attention, output product, residual), as `mlp` below;
//! - `mlp`: the transformer MLP block (LayerNorm, fc1, GELU, fc2, residual)
//!   lowered whole and simulated, per superstep.
//! - `sim-speed`: simulated instructions per host second.
//! - `reference`: the host reference executor against onnxruntime on the
//!   same model, weights and inputs.

pub mod amp;
pub mod attention;
pub mod cli;
pub mod codelets;
pub mod gemm;
pub mod mlp;
pub mod reference;
pub mod sim_speed;

/// Why a benchmark failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad options.
    #[error("{0}")]
    Usage(String),
    /// A codelet could not be built.
    #[error(transparent)]
    Codelet(#[from] ipuc_backend_ipu::codelets::CodeletError),
    /// The simulator refused or faulted.
    #[error("simulator: {0}")]
    Device(#[from] ipuc_runtime::device::DeviceError),
    /// The simulated results disagree with the reference.
    #[error("wrong results: {0}")]
    WrongResults(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// A plan's estimated cycles, its parts as the backend reports them (each
/// a field of the JSON object) and their sum.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EstimateReport<Parts> {
    /// The parts.
    #[serde(flatten)]
    pub parts: Parts,
    /// All of it.
    pub total: u64,
}

/// The executable of `exe_op`, encoded from its ops; the encoder's
/// diagnostics joined into one error.
pub(crate) fn encode(
    ctx: &ipuc_ir::Context,
    exe_op: ipuc_ir::OpId,
) -> Result<ipuc_ipu_arch::Executable, BenchError> {
    ipuc_backend_ipu::emit::build_executable(ctx, exe_op).map_err(|d| {
        BenchError::Other(
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
        )
    })
}

/// A new context holding an empty module, and the module's body block for
/// a bench to lower into.
pub(crate) fn empty_module(file: &str) -> Result<(ipuc_ir::Context, ipuc_ir::BlockId), BenchError> {
    let mut ctx = ipuc_ir::Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, file, "module {}")
        .map_err(|d| BenchError::Other(format!("{d:?}")))?
        .module;
    let body = ctx
        .entry_block(ctx.regions(module)[0])
        .ok_or_else(|| BenchError::Other("empty module has no block".into()))?;
    Ok((ctx, body))
}

/// A simulated run of a lowered executable, as `ipu-run` makes it: the
/// input through the host stream `input0`, the output read from `output0`
/// (the link time is reported apart from the device cycles).
pub(crate) struct SimulatedRun {
    /// The bytes of `output0`.
    pub output: Vec<u8>,
    /// Host seconds the simulation took.
    pub simulate_s: f64,
    /// CPU seconds the process spent in it, all threads (on a loaded
    /// machine, steadier than the wall time).
    pub simulate_cpu_s: f64,
    /// Of `simulate_s`, the load (tile memories and decoded code): a
    /// program of many blocks pays it once.
    pub load_s: f64,
    /// Device cycles of the whole run.
    pub cycles: u64,
    /// Seconds on the host link.
    pub host_io_s: f64,
    /// Each superstep's largest compute, exchange and sync-wait cycles.
    pub supersteps: Vec<(u64, u64, u64)>,
}

/// Runs `exe` on the simulator of `machine` with `input` on `input0`.
pub(crate) fn simulate(
    machine: &ipuc_ipu_arch::MachineModel,
    exe: &ipuc_ipu_arch::Executable,
    input: &[u8],
) -> Result<SimulatedRun, BenchError> {
    use ipuc_runtime::device::Device;
    let started = std::time::Instant::now();
    let cpu_started = ipuc_runtime::sim::bench::process_cpu_seconds();
    let mut sim =
        ipuc_runtime::sim::Simulator::new(machine.clone(), ipuc_runtime::sim::SimConfig::default());
    sim.load(exe)?;
    let load_s = started.elapsed().as_secs_f64();
    sim.write_stream("input0", input)?;
    sim.run()?;
    let simulate_s = started.elapsed().as_secs_f64();
    let simulate_cpu_s = ipuc_runtime::sim::bench::process_cpu_seconds() - cpu_started;
    let output = sim.read_stream("output0")?;
    let p = sim
        .profile()
        .ok_or_else(|| BenchError::Other("the simulator kept no profile".into()))?;
    let summary = crate::run::profile_summary(p, machine.clock_hz);
    Ok(SimulatedRun {
        output,
        simulate_s,
        simulate_cpu_s,
        load_s,
        cycles: p.total_cycles,
        host_io_s: summary.host_io_s,
        supersteps: summary
            .supersteps
            .iter()
            .map(|s| (s.compute, s.exchange, s.sync))
            .collect(),
    })
}

/// Bytes of the busiest tile's image.
pub(crate) fn max_image_bytes(exe: &ipuc_ipu_arch::Executable) -> u32 {
    exe.tiles
        .iter()
        .map(|t| t.image.total_bytes())
        .max()
        .unwrap_or(0)
}

/// `flops` done in `cycles` of `machine` against `peak` FLOP/s: the percent
/// of the peak reached, and the cycles the work would take at the peak.
pub(crate) fn peak_share(
    flops: f64,
    cycles: u64,
    peak: f64,
    machine: &ipuc_ipu_arch::MachineModel,
) -> (f64, u64) {
    let seconds = cycles as f64 / machine.clock_hz;
    (
        100.0 * flops / seconds / peak,
        (flops / peak * machine.clock_hz).ceil() as u64,
    )
}

/// Checks rows spread over a block's `[m, c]` output `y` (the first, the
/// last and some between) against `reference` (float64 values of the given
/// rows): the cosine above 0.999 and the relative L2 error below
/// `max_rel_l2`. Returns (cosine, relative L2 error, rows checked).
pub(crate) fn check_sampled_rows(
    y: &[f64],
    (m, c): (usize, usize),
    max_rel_l2: f64,
    reference: impl FnOnce(&[usize]) -> Vec<f64>,
) -> Result<(f64, f64, usize), BenchError> {
    let mut rows: Vec<usize> = (0..8).map(|i| i * (m - 1) / 7).collect();
    rows.dedup();
    let want = reference(&rows);
    let got: Vec<f64> = rows
        .iter()
        .flat_map(|&r| y[r * c..(r + 1) * c].iter().copied())
        .collect();
    let dot: f64 = got.iter().zip(&want).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let diff: Vec<f64> = got.iter().zip(&want).map(|(a, b)| a - b).collect();
    let (cosine, rel_l2) = (dot / (norm(&got) * norm(&want)), norm(&diff) / norm(&want));
    if !(cosine > 0.999 && rel_l2 < max_rel_l2) {
        return Err(BenchError::WrongResults(format!(
            "rows {rows:?}: cosine {cosine}, relative L2 {rel_l2} against float64"
        )));
    }
    Ok((cosine, rel_l2, rows.len()))
}

/// Report lines of a simulated run: each superstep's largest compute,
/// exchange and sync-wait cycles over the tiles, then the host link's time.
pub(crate) fn format_supersteps(supersteps: &[(u64, u64, u64)], host_io_s: f64) -> String {
    let mut s = String::new();
    for (i, (c, x, w)) in supersteps.iter().enumerate() {
        s += &format!("  superstep {i}: compute {c}, exchange {x}, sync wait {w}\n");
    }
    s + &format!(
        "host io {:.1} us over the host link (input and output streams, not in the cycles above)\n",
        host_io_s * 1e6
    )
}
