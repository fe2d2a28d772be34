//! Property test: no check file, input or option combination makes the
//! checker panic; every run ends in success, a check failure (1) or a usage
//! error (2).

mod common;

use common::DIRECTIVES;
use ipuc_filecheck::{check, DumpInput, Options};
use proptest::prelude::*;

/// Lines that look like directives, with bodies drawn from the characters
/// that are special to FileCheck patterns.
fn check_line() -> impl Strategy<Value = String> {
    // Every directive, then a literal one, misspellings, comments and no directive.
    let directive = prop::sample::select(
        [
            &DIRECTIVES[..],
            &[
                "CHECK{LITERAL}:",
                "CHECK_NEXT:",
                "CHECK-NXT:",
                "COM:",
                "RUN:",
                "// CHECK:",
                "",
            ],
        ]
        .concat(),
    );
    let body = "[a-c {}\\[\\]:#%@$.*|()^+?\\\\,=-]{0,16}";
    (directive, body).prop_map(|(d, b)| format!("{d} {b}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics(
        lines in prop::collection::vec(check_line(), 0..8),
        input in "[a-c \\t\\n\\r{}\\[\\]%0-9:]{0,40}",
        full_lines in any::<bool>(),
        strict in any::<bool>(),
        implicit in prop::option::of("[a-c{}\\[\\]\n']{0,4}"),
        always_dump in any::<bool>(),
    ) {
        let check_text = lines.join("\n");
        let options = Options {
            match_full_lines: full_lines,
            strict_whitespace: strict,
            implicit_check_not: implicit.into_iter().collect(),
            dump_input: if always_dump { DumpInput::Always } else { DumpInput::Fail },
            verbose: always_dump,
            ..Options::default()
        };
        match check(&check_text, "fuzz.txt", &input, &options) {
            Ok(_) => {}
            Err(f) => prop_assert!(f.exit_code() == 1 || f.exit_code() == 2),
        }
    }

    #[test]
    fn arbitrary_text_never_panics(check_text in "\\PC{0,80}", input in "\\PC{0,80}") {
        let _ = check(&check_text, "fuzz.txt", &input, &Options::default());
    }
}
