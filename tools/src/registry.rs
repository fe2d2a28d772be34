//! The dialects and passes every ipuc tool knows.

use std::sync::Arc;

use ipuc_ir::pass::PassRegistry;
use ipuc_ir::DialectRegistry;

/// Every dialect ipuc defines, plus the `test` dialect (test-only ops
/// that lit tests exercise; it accepts unknown `test.*` ops, so ad hoc ops
/// in tests stay unregistered), as upstream's `mlir-opt` registers its own.
pub fn dialects() -> Arc<DialectRegistry> {
    let mut r = DialectRegistry::new();
    ipuc_dialects::register_all(&mut r);
    r.register(ipuc_ir::test_dialect::dialect());
    Arc::new(r)
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
