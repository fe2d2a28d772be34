//! The dialects and passes every ipuc tool knows.

use std::sync::Arc;

use ipuc_ir::pass::{PassRegistry, RegistrationError};
use ipuc_ir::DialectRegistry;

/// Every dialect ipuc defines, plus the `test` dialect (test-only ops
/// that lit tests exercise; it accepts unknown `test.*` ops, so ad hoc ops
/// in tests stay unregistered), as upstream's `mlir-opt` registers its own.
pub fn dialects() -> Arc<DialectRegistry> {
    Arc::new(dialect_registry())
}

/// [`dialects`] as a registry that a tool can extend with its own.
pub fn dialect_registry() -> DialectRegistry {
    let mut r = DialectRegistry::new();
    ipuc_dialects::register_all(&mut r);
    r.register(ipuc_ir::test_dialect::dialect());
    r
}

/// Registers every pass ipuc defines (each crate's `register_passes`,
/// including the `test-*` passes that go with the `test` dialect) and
/// installs the IPU's implementations of the target hooks: `eqsat-fuse`
/// extracts under the IPU cost model.
pub fn register_passes(r: &mut PassRegistry) -> Result<(), RegistrationError> {
    ipuc_ir::register_passes(r)?;
    ipuc_passes::register_passes(r)?;
    ipuc_frontends::tosa::register_passes(r)?;
    ipuc_backend_ipu::register_passes(r)?;
    r.install_hook(
        &ipuc_passes::eqsat::COST_MODEL,
        "ipu (C600 machine model)",
        Arc::new(ipuc_backend_ipu::cost_model::IpuCostModel::c600()),
    )
}
