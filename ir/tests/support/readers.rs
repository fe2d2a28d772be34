//! The parser's ways of reading agree: shared by the parser's property
//! tests (`tests/parser_fuzz.rs`), the dialects' (`dialects/tests/readers.rs`)
//! and the `parse` and `dialects` fuzz targets (which include this file by
//! path), with the parse-print-reparse check they share.

#![allow(dead_code)] // each includer uses part of it

use std::sync::Arc;

use ipuc_ir::{
    parse_source, parse_source_with, print_op, verify, Context, DialectRegistry, ParseOptions,
    PrintOptions,
};

/// A context with the test dialect, accepting unregistered ops or not.
pub fn context(allow_unregistered: bool) -> Context {
    let mut reg = DialectRegistry::new();
    reg.register(ipuc_ir::test_dialect::dialect());
    let mut ctx = Context::new(Arc::new(reg));
    ctx.allow_unregistered = allow_unregistered;
    ctx
}

/// Every way of reading must give what the grammar of record gives (pest
/// alone, each operation whole): the default (function bodies op by op,
/// common generic ops by the hand-written reader), every region body op by
/// op with and without that reader. The same IR, or an error.
pub fn check_readers_agree(allow: bool, input: &str) {
    check_readers_agree_in(|| context(allow), input)
}

/// [`check_readers_agree`] in the contexts `new_context` makes (e.g. with
/// real dialects, whose custom forms the hand-written reader also reads).
pub fn check_readers_agree_in(new_context: impl Fn() -> Context, input: &str) {
    let read = |options: &ParseOptions| {
        let mut ctx = new_context();
        parse_source_with(&mut ctx, "fuzz.mlir", input, options).map(|p| {
            let opts = PrintOptions {
                generic: true,
                debug_info: true,
                ..PrintOptions::default()
            };
            print_op(&ctx, p.module, &opts)
        })
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
            (Ok(a), Ok(b)) => assert_eq!(*a, b, "{options:?} differs; input {input:?}"),
            // With several errors the two may report different ones first
            // (a streamed parse reads an op's header and trailer before its
            // body, the hand-written reader builds an op before pest reads
            // the next); single errors are located the same
            // (tests/large_regions.rs, tests/parse_errors.rs).
            (Err(_), Err(_)) => {}
            (a, b) => panic!(
                "{options:?} disagrees: pest {:?}, {options:?} {:?}; input {input:?}",
                a.as_ref().map_err(|d| d.to_string()),
                b.map_err(|d| d.to_string())
            ),
        }
    }
}

/// Parses `input` (unregistered ops allowed or not); what parses is verified
/// and printed, generic with locations too, and valid IR must print to
/// text that parses back to the same printout. Panics name the input.
pub fn check_parse_and_print(allow: bool, input: &str) {
    let mut ctx = context(allow);
    let Ok(parsed) = parse_source(&mut ctx, "fuzz.mlir", input) else {
        return;
    };
    let verified = verify(&ctx, parsed.module).is_ok();
    let text = print_op(&ctx, parsed.module, &PrintOptions::default());
    if verified {
        let mut ctx2 = context(allow);
        match parse_source(&mut ctx2, "printed.mlir", &text) {
            Ok(p) => {
                let again = print_op(&ctx2, p.module, &PrintOptions::default());
                assert_eq!(
                    text, again,
                    "printout is not a fixed point; input {input:?}"
                );
            }
            Err(d) => panic!("printout does not parse: {d}\ninput {input:?}\nprinted:\n{text}"),
        }
    }
    print_op(
        &ctx,
        parsed.module,
        &PrintOptions {
            generic: true,
            debug_info: true,
            ..PrintOptions::default()
        },
    );
}
