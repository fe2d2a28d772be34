//! ipuc dialects: `func`, and (as they land) `nn`, `tile`, `bsp`, `ipu`.

pub mod func;

use std::sync::Arc;

use ipuc_ir::DialectRegistry;

/// A registry with every dialect ipuc defines.
pub fn registry() -> Arc<DialectRegistry> {
    let mut r = DialectRegistry::new();
    register_all(&mut r);
    Arc::new(r)
}

/// Registers every dialect ipuc defines into `r`.
pub fn register_all(r: &mut DialectRegistry) {
    r.register(func::dialect());
}
