//! Target-independent transformations over ipuc IR.

pub mod canonicalize;
pub mod cse;
pub mod eqsat;
pub mod print_op_stats;
pub mod symbol_dce;

use ipuc_ir::pass::PassRegistry;

/// Registers every pass of this crate.
pub fn register_passes(r: &mut PassRegistry) {
    r.register(canonicalize::info());
    r.register(cse::info());
    r.register(eqsat::info());
    r.register(symbol_dce::info());
    r.register(print_op_stats::info());
}
