//! Feeds arbitrary text to the parser, then verifies and prints whatever
//! parses (both with and without unregistered dialects). Any panic is a
//! bug, and so is valid IR whose printout does not parse back to the same
//! printout, and so is a difference between pest's parse of each operation
//! whole (the grammar of record) and the other ways of reading: every
//! region body in pieces, and common generic ops by the hand-written reader.
//!
//! Run: `cargo +nightly fuzz run parse fuzz/corpus/parse` from the repository root.

#![no_main]

use std::sync::Arc;

use ipuc_ir::{
    parse_source, parse_source_with, print_op, verify, Context, DialectRegistry, ParseOptions,
    PrintOptions,
};
use libfuzzer_sys::fuzz_target;

fn context(allow_unregistered: bool) -> Context {
    let mut reg = DialectRegistry::new();
    reg.register(ipuc_ir::test_dialect::dialect());
    let mut ctx = Context::new(Arc::new(reg));
    ctx.allow_unregistered = allow_unregistered;
    ctx
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let debug = PrintOptions {
        generic: true,
        debug_info: true,
        ..PrintOptions::default()
    };
    for allow in [false, true] {
        // The grammar of record: pest alone, every operation whole.
        let read = |options: &ParseOptions| {
            let mut ctx = context(allow);
            parse_source_with(&mut ctx, "fuzz.mlir", text, options)
                .map(|p| print_op(&ctx, p.module, &debug))
        };
        let reference = read(&ParseOptions {
            stream_body_bytes: usize::MAX,
            hand_reader: false,
        });
        for options in [
            ParseOptions::default(),
            ParseOptions {
                stream_body_bytes: 0,
                hand_reader: true,
            },
            ParseOptions {
                stream_body_bytes: 0,
                hand_reader: false,
            },
        ] {
            match (&reference, read(&options)) {
                (Ok(a), Ok(b)) => assert_eq!(*a, b, "{options:?} differs"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!(
                    "{options:?} disagrees: pest {:?} vs {:?}",
                    a.as_ref().map_err(|d| d.to_string()),
                    b.map_err(|d| d.to_string())
                ),
            }
        }
        let mut ctx = context(allow);
        if let Ok(parsed) = parse_source(&mut ctx, "fuzz.mlir", text) {
            let verified = verify(&ctx, parsed.module).is_ok();
            let printed = print_op(&ctx, parsed.module, &PrintOptions::default());
            if verified {
                let mut ctx2 = context(allow);
                let reparsed = parse_source(&mut ctx2, "printed.mlir", &printed)
                    .unwrap_or_else(|d| panic!("printout does not parse: {d}\n{printed}"));
                let again = print_op(&ctx2, reparsed.module, &PrintOptions::default());
                assert_eq!(printed, again, "printout is not a fixed point");
            }
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
