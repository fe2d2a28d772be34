//! Feeds arbitrary text to the parser with the real dialects registered
//! (`func`, `nn`, `ipu`): their custom syntax, dialect attributes, shape
//! rules and verifiers, then the folders and canonicalization patterns on
//! whatever verifies. Any panic is a bug (bad input must be a located
//! error), and so is verified IR whose printout does not read back to the
//! same printout, or that canonicalization leaves unverifiable, and so is
//! a difference between pest's reading and the hand-written reader's
//! (which also reads the `nn` ops' custom forms).
//!
//! Run: `cargo +nightly fuzz run dialects fuzz/corpus/dialects` from the
//! repository root (seed it with `lit-tests/{nn,ipu,passes,eqsat}/*.mlir`).

#![no_main]

use ipuc_ir::rewrite::{apply_patterns_greedily, GreedyConfig, RewritePatternSet};
use ipuc_ir::{parse_source, print_op, verify, Context, PrintOptions};
use libfuzzer_sys::fuzz_target;

#[path = "../../ir/tests/support/readers.rs"]
mod readers;

fn context() -> Context {
    Context::new(ipuc_dialects::registry())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    readers::check_readers_agree_in(context, text);
    let mut ctx = context();
    let Ok(parsed) = parse_source(&mut ctx, "fuzz.mlir", text) else {
        return;
    };
    if verify(&ctx, parsed.module).is_err() {
        // Printing must not depend on the IR being valid.
        let _ = print_op(&ctx, parsed.module, &PrintOptions::default());
        return;
    }
    for generic in [false, true] {
        let options = PrintOptions {
            generic,
            ..PrintOptions::default()
        };
        let printed = print_op(&ctx, parsed.module, &options);
        let mut again = context();
        let reparsed = parse_source(&mut again, "printed.mlir", &printed)
            .unwrap_or_else(|d| panic!("printout does not parse: {d}\n{printed}"));
        assert_eq!(
            printed,
            print_op(&again, reparsed.module, &options),
            "printout is not a fixed point"
        );
    }
    let mut set = RewritePatternSet::new();
    set.add_canonicalization_patterns(ctx.registry());
    let patterns = set.freeze();
    let config = GreedyConfig {
        max_iterations: 4,
        max_rewrites: Some(1_000),
        ..GreedyConfig::default()
    };
    apply_patterns_greedily(&mut ctx, parsed.module, &patterns, &config);
    if let Err(d) = verify(&ctx, parsed.module) {
        panic!(
            "canonicalization broke valid IR: {d}\n{}",
            print_op(&ctx, parsed.module, &PrintOptions::default())
        );
    }
});
