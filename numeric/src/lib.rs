//! Scalar element types and exact conversions between float storage formats.
//!
//! Everything numeric that more than one layer needs to agree on bit for bit lives
//! here: the element kinds tensors are stored in ([`ElementKind`]), the four 8-bit
//! float formats ([`Float8Format`], with ONNX `Cast` saturation semantics), and
//! element-wise load/store between storage bytes and `f64`/`f32`/`i128` values
//! ([`storage`]). `f16`/`bf16` come from the `half` crate and are re-exported.
//!
//! Conversions into a narrower float format always round to nearest, ties to even,
//! directly from the exact source value (never through an intermediate format, which
//! could round twice).

mod element_kind;
mod float8;
pub mod rounding;
pub mod storage;

pub use element_kind::{ElementKind, UnknownElementKind};
pub use float8::Float8Format;
pub use half::{bf16, f16};
