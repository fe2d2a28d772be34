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
