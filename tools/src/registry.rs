//! The dialects and passes every ipuc tool knows.

use std::sync::Arc;

use ipuc_ir::pass::PassRegistry;
use ipuc_ir::DialectRegistry;

/// Every dialect ipuc defines.
pub fn dialects() -> Arc<DialectRegistry> {
    ipuc_dialects::registry()
}

/// Every pass ipuc defines, with the IPU's implementations of the
/// target hooks (`eqsat-fuse` extracts under the IPU cost model).
pub fn passes() -> PassRegistry {
    let mut r = PassRegistry::new();
    ipuc_passes::register_passes(&mut r);
    r.register(ipuc_backend_ipu::cost_model::eqsat_pass_info());
    // Target passes: they need the backend's ISA, so they live in backend-ipu.
    r.register(ipuc_backend_ipu::emit::verify_isa::info());
    r
}
