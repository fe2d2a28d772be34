//! The host reference executor's numeric kernels.
//!
//! Each kernel implements one ONNX operator's semantics (numpy broadcasting, ONNX
//! attribute meanings) over [`HostTensor`]s. Floats compute in f32 (f16, bf16 and
//! the 8-bit floats are stored exactly as their formats require, through
//! [`ipuc_ir::numeric`]), f64 in f64, integers exactly. Large loops run on rayon;
//! matrix products use the `gemm` crate.
//!
//! The kernels are independent of the IR: the `nn` interpreter ([`interpreter`])
//! maps ops onto them,
//! and the ONNX node-test harness (`frontends/tests/onnx_node_tests.rs`) checks them
//! against the ONNX backend test data.

mod attention;
mod conv;
mod cumulative;
mod elementwise;
mod error;
mod fast_f32;
mod fast_math;
mod host_tensor;
mod index;
pub mod interpreter;
mod layout;
mod matmul;
mod normalization;
mod pool;
mod reduce;
pub mod shape;
mod strided;

pub use attention::attention;
pub use conv::{conv2d, resolve_pads, AutoPad, Conv2dParams};
pub use cumulative::cumulative;
pub use elementwise::{
    binary, bitcast, cast, cast_rounding, max, min, modulo, unary, where_, BinaryKind, BinaryOp,
    CompareKind, GeluApproximation, UnaryKind, UnaryOp,
};
pub use error::{KernelError, KernelResult};
pub use host_tensor::{HostTensor, Values};
pub use index::{arg_reduce, gather_elements};
pub use layout::{
    concat, constant_of_shape, expand, flatten, gather, pad, range, reshape, shape_of, slice,
    split, squeeze, tile, transpose, unsqueeze, PadMode,
};
pub use matmul::{gemm, linear, matmul, product_kind, GemmParams};
pub use normalization::{layer_normalization, softmax, LayerNormOutputs};
pub use pool::{pool, PoolKind, PoolParams};
pub use reduce::{reduce, ReduceKind};
