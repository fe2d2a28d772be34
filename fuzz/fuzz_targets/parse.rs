//! Feeds arbitrary text to the parser, then verifies and prints whatever
//! parses (both with and without unregistered dialects). Any panic is a
//! bug, and so is valid IR whose printout does not parse back to the same
//! printout, and so is a difference between pest's parse of each operation
//! whole (the grammar of record) and the other ways of reading: every
//! region body in pieces, and common generic ops by the hand-written reader.
//!
//! Run: `cargo +nightly fuzz run parse fuzz/corpus/parse` from the repository root.

#![no_main]

use ipuc_ir::{parse_source, print_op, verify, PrintOptions};
use libfuzzer_sys::fuzz_target;

#[path = "../../ir/tests/support/readers.rs"]
mod readers;
use readers::{check_readers_agree, context};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for allow in [false, true] {
        check_readers_agree(allow, text);
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
