//! ipuc and upstream MLIR, in-process through melior (the Rust bindings of
//! MLIR's C API) against LLVM/MLIR 22.
//!
//! - [`Upstream`]: an upstream context with the `func`, `arith`, `tensor`
//!   and `tosa` dialects; it parses text (custom or generic syntax),
//!   verifies, and prints, turning upstream's diagnostics into ipuc
//!   [`Diagnostic`](ipuc_ir::Diagnostic)s with their file:line:col.
//! - [`read_upstream`]: an upstream file (a TOSA model) parsed and verified by
//!   upstream, then handed to an ipuc context: its weights as bytes
//!   ([`elements`]), its IR through upstream's generic printout; there
//!   `convert-tosa-to-nn` takes it to `nn`.
//! - [`write_tosa`]: an ipuc `nn` module rewritten into TOSA, verified by
//!   upstream and printed in upstream's custom syntax.
//! - [`check_printout`]: ipuc's generic printout parsed by upstream (with
//!   unregistered dialects allowed), the in-process form of the
//!   `mlir-opt-22` differential tests.
//!
//! The crate is outside the default build: the tools' `mlir` feature pulls
//! it in (see the README for the system packages).

mod bridge;
pub mod elements;
mod upstream;

pub use bridge::{check_printout, read_upstream, write_tosa, UpstreamRead};
pub use upstream::{Upstream, UpstreamModule};
