//! `ipu-bench`: performance measurements that run the simulator.
//!
//! - `amp`: the AMP matrix block on every tile at once, launched as a
//!   compute set launches it (supervisor, weight load, six workers), with
//!   the numerics of sample tiles checked against the float64 reference.
//! - `codelets`: every codelet family once on one tile, simulated cycles
//!   beside the codelet's estimate.
//! - `gemm`: a matrix product planned over the tiles, lowered and
//!   simulated, beside the plan's estimate.
//! - `mlp`: the transformer MLP block (LayerNorm, fc1, GELU, fc2, residual)
//!   lowered whole and simulated, per superstep.
//! - `sim-speed`: simulated instructions per host second.
//! - `reference`: the host reference executor against onnxruntime on the
//!   same model, weights and inputs.

pub mod amp;
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
