//! An opt tool written outside the compiler, on the `ipu-opt` driver: what
//! a pass author needs to start a project of their own.
//!
//! - [`dialect`]: a small dialect with one op, `example.powi` (a tensor
//!   raised to a positive integer power), with a verifier and a custom form;
//! - [`expand_powi`]: the `example-expand-powi` pass, which rewrites it into
//!   `nn.mul`s by repeated squaring (a declared pass: name, options and
//!   statistics stated once with `declare_pass!`);
//! - `src/main.rs`: `example-opt`, which is `ipu-opt` (every flag, dialect and
//!   pass) plus the above, in one call to `ipuc_tools::opt::opt_main`;
//! - `lit-tests/`, run by `cargo test -p ipuc-example-opt` through the lit
//!   harness (`tests/lit.rs`).

pub mod dialect;
pub mod expand_powi;

use ipuc_ir::pass::{PassRegistry, RegistrationError};

/// Registers every pass of this crate.
pub fn register_passes(r: &mut PassRegistry) -> Result<(), RegistrationError> {
    r.register::<expand_powi::ExpandPowi>()
}
