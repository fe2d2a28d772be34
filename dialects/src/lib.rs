//! ipuc dialects: `func`, `nn`, and (as they land) `tile`, `bsp`, `ipu`.

pub mod func;
pub mod ipu;
pub mod nn;

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
    r.register(nn::dialect());
    r.register(ipu::dialect());
}
