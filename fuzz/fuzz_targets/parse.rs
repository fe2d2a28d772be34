//! Feeds arbitrary text to the parser, then verifies and prints whatever
//! parses (both with and without unregistered dialects). Any panic is a bug.
//!
//! Run: `cargo +nightly fuzz run parse fuzz/corpus/parse` from the repository root.

#![no_main]

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, verify, Context, DialectRegistry, PrintOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for allow in [false, true] {
        let mut reg = DialectRegistry::new();
        reg.register(ipuc_ir::test_dialect::dialect());
        let mut ctx = Context::new(Arc::new(reg));
        ctx.allow_unregistered = allow;
        if let Ok(parsed) = parse_source(&mut ctx, "fuzz.mlir", text) {
            let _ = verify(&ctx, parsed.module);
            let _ = print_op(&ctx, parsed.module, &PrintOptions::default());
            let _ = print_op(
                &ctx,
                parsed.module,
                &PrintOptions {
                    generic: true,
                    debug_info: true,
                    ..PrintOptions::default()
                },
            );
        }
    }
});
