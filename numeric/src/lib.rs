//! Scalar element types and exact conversions between float storage formats.
//!
//! Everything numeric that more than one layer needs to agree on bit for bit lives
//! here: the element kinds tensors are stored in ([`ElementKind`]), the four 8-bit
//! float formats ([`Float8Format`], with ONNX `Cast` saturation semantics), the
//! microscaling formats FLOAT4E2M1 ([`float4`]) and FLOAT8E8M0 ([`float8_e8m0`]),
//! ONNX's packing of sub-byte elements ([`packing`]), and element-wise load/store
//! between storage bytes and `f64`/`f32`/`i128` values ([`storage`]). `f16`/`bf16`
//! come from the `half` crate and are re-exported.
//!
//! Conversions into a narrower float format always round to nearest, ties to even,
//! directly from the exact source value (never through an intermediate format, which
//! could round twice).

mod element_kind;
pub mod float4;
mod float8;
pub mod float8_e8m0;
mod float8_table;
pub mod packing;
pub mod rounding;
pub mod storage;

pub use element_kind::{ElementKind, UnknownElementKind};
pub use float8::Float8Format;
pub use float8_e8m0::E8M0Rounding;
pub use float8_table::Float8Table;
pub use half::{bf16, f16};
