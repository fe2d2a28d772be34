//! Helpers shared by the integration tests of `ipuc-ir`.

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, verify, Context, DialectRegistry, OpId, PrintOptions};

/// Parses and verifies `src` (file name `in.mlir`) with the `test` dialect
/// registered and unregistered ops allowed; returns the context and module.
pub fn parse(src: &str) -> (Context, OpId) {
    let mut reg = DialectRegistry::new();
    reg.register(ipuc_ir::test_dialect::dialect());
    let mut ctx = Context::new(Arc::new(reg));
    ctx.allow_unregistered = true;
    let m = parse_source(&mut ctx, "in.mlir", src)
        .unwrap_or_else(|d| panic!("{d}"))
        .module;
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
    (ctx, m)
}

/// The module in the default (custom) form.
pub fn print(ctx: &Context, m: OpId) -> String {
    print_op(ctx, m, &PrintOptions::default())
}
