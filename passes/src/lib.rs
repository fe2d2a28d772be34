//! Target-independent transformations over ipuc IR.

pub mod canonicalize;
pub mod cse;
pub mod eqsat;
pub mod extract;
pub mod fold_layernorm;
pub mod precision;
pub mod print_op_stats;
pub mod symbol_dce;

use ipuc_ir::pass::{PassRegistry, RegistrationError};

/// Registers every pass of this crate.
pub fn register_passes(r: &mut PassRegistry) -> Result<(), RegistrationError> {
    r.register::<canonicalize::Canonicalize>()?;
    r.register::<cse::Cse>()?;
    r.register::<eqsat::EqsatFuse>()?;
    r.register::<extract::ExtractBlock>()?;
    r.register::<fold_layernorm::FoldLayerNormAffine>()?;
    r.register::<precision::ConvertPrecision>()?;
    r.register::<symbol_dce::SymbolDce>()?;
    r.register::<print_op_stats::PrintOpStats>()
}
