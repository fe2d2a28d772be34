//! Test-only passes over the [`test` dialect](crate::test_dialect), after
//! MLIR's `-test-*` passes: they exercise IR infrastructure (here, 1:N
//! dialect conversion) from lit tests. Nothing in the compiler uses them;
//! tools register them (through [`crate::register_passes`]) next to the
//! `test` dialect.

pub mod one_to_n;

use crate::pass::{PassRegistry, RegistrationError};

/// Registers every test pass.
pub fn register_passes(r: &mut PassRegistry) -> Result<(), RegistrationError> {
    r.register::<one_to_n::TestOneToNConversion>()
}
