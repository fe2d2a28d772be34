use super::*;
use crate::printer::print_image;
use proptest::prelude::*;

const SAMPLE: &str = r#"
    .section .text.main, "ax"
    .globl main
    .type main, @function
    .supervisor
main:
    setzi $m0, worker        // entry
    setzi $m1, 0x90000
    runall $m0, $m1, 4
    sync TEXCH_SYNCZONE_LOCAL
    exitz $mzero
    .size main, . - main

    .section .text.worker, "ax"
    .worker
    .align 8
worker:
    ld32 $m2, $mvertex_base, $mzero, 0
    ld64 $a0:1, $m2, $mzero, 1
    { rpt $m2, (.Lend - .Lstart)/8 - 1 ; fnop }
.Lstart:
    { ld2xst64pace $a0:3, $a4:5, $m4:5+=, $m1, 0b001001
      f16v4hihov4amp $a4:5, $a0:1, $a2:3, TAMP_F16V4_E4_P2 }
    { nop ; fnop }
.Lend:
    brnzdec $m2, worker
    exitz $mzero
    .section .data
table:
    .word 1, 2, table
"#;

fn asm(text: &str) -> Result<TileImage, AsmErrors> {
    assemble(text, &AsmOptions::default())
}

#[test]
fn sample_assembles_and_printing_is_a_fixed_point() {
    let img = asm(SAMPLE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(img.entry, 0x4c000);
    assert!(img.code_bytes() > 0);
    let main = img.symbol("main").unwrap();
    assert!(main.global && main.is_function);
    assert_eq!(main.size, Some(20));
    let text1 = print_image(&img);
    let img2 = asm(&text1).unwrap_or_else(|e| panic!("{e}\n{text1}"));
    assert_eq!(img2, img, "{text1}");
    let text2 = print_image(&img2);
    assert_eq!(text1, text2);
    assert!(text1.contains("{ ld2xst64pace $a0:3, $a4:5, $m4:5+=, $m1, 9 ; f16v4hihov4amp $a4:5, $a0:1, $a2:3, 2 }"), "{text1}");
}

#[test]
fn errors_carry_position_and_caret() {
    let e = asm("main:\n  ld32 $m0, $m1, $m2, 5000\n  exitz $mzero\n").unwrap_err();
    assert_eq!(e.0.len(), 1);
    let s = e.to_string();
    assert!(
        s.starts_with("<input>:2:23: error: 5000 does not fit an unsigned 12-bit immediate"),
        "{s}"
    );
    assert!(s.ends_with("                      ^~~~"), "{s:?}");
}

#[test]
fn representative_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "main:\n frobnicate $m0\n",
            "unknown instruction `frobnicate`",
        ),
        (
            "main:\n add $m0, $a1, $m2\n",
            "operands do not match any form of `add`",
        ),
        (
            "main:\n f32v2add $a0:1, $a2:3, $a4:5\n",
            "worker instruction",
        ),
        ("main:\n bri nowhere\n", "undefined symbol `nowhere`"),
        ("main:\nmain:\n nop\n", "already defined"),
        (
            ".worker\nmain:\n nop\n { nop ; fnop }\n",
            "not 8-byte aligned",
        ),
        (
            ".worker\nmain:\n { f32v2add $a0:1, $a0:1, $a0:1 ; nop }\n",
            "cannot be the first",
        ),
        (
            ".worker\nmain:\n rpt 3, 0\n { nop ; fnop }\n",
            "body must start 8-byte aligned",
        ),
        (
            ".worker\nmain:\n nop\n rpt 3, 0\n add $m0, $m0, 1\n nop\n",
            "solo instruction",
        ),
        ("main:\n ld64 $a1:2, $m0, $m0, 0\n", "worker instruction"),
        (
            ".worker\nmain:\n ld64 $a1:2, $m0, $m0, 0\n",
            "operand is not an even $a register pair",
        ),
        (
            "main:\n put $NOPE, $m0\n",
            "unknown control register `$NOPE`",
        ),
        ("main:\n .bogus 1\n", "unknown directive"),
        ("main:\n { nop\n", "unterminated bundle"),
        ("nop\n", "no supervisor entry"),
        ("main:\n setzi $m0, 1 +\n", "expected an expression"),
    ];
    for (text, want) in cases {
        let e = asm(text).expect_err(text);
        let s = e.to_string();
        assert!(s.contains(want), "{text:?}: {s}");
    }
}

#[test]
fn fp8_instructions_need_an_fp8_machine() {
    let text = ".worker\nmain:\n f16v4tof8 $a0, $a2:3, 0\n";
    assert!(asm(text).is_ok());
    let bow = AsmOptions {
        machine: MachineModel::bow(),
        ..AsmOptions::default()
    };
    assert!(assemble(text, &bow)
        .unwrap_err()
        .to_string()
        .contains("needs FP8"));
}

#[test]
fn code_must_fit_region_zero() {
    let mut text = String::from("main:\n");
    for _ in 0..(0x34000 / 4 + 1) {
        text.push_str(" nop\n");
    }
    let e = asm(&text).unwrap_err().to_string();
    assert!(e.contains("code must lie in region 0"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
        let _ = asm(&s);
    }

    #[test]
    fn mutated_programs_never_panic(pos in 0usize..2000, del in 0usize..8, ins in "[ -~\\n]{0,6}") {
        let mut chars: Vec<char> = SAMPLE.chars().collect();
        let p = pos.min(chars.len());
        let d = del.min(chars.len() - p);
        chars.splice(p..p + d, ins.chars());
        let text: String = chars.into_iter().collect();
        if let Ok(img) = asm(&text) {
            let printed = print_image(&img);
            let again = asm(&printed);
            prop_assert!(again.is_ok(), "{}", printed);
            prop_assert_eq!(print_image(&again.unwrap()), printed);
        }
    }

    #[test]
    fn token_soup_never_panics(toks in proptest::collection::vec(prop_oneof![
        Just("$m0"), Just("$a0:1"), Just("$m2:3+="), Just(","), Just("{"), Just("}"), Just(";"), Just("\n"),
        Just("ld2xst64pace"), Just("rpt"), Just("("), Just(")"), Just("-"), Just("<<"), Just("99999999999"),
        Just("main:"), Just(".align"), Just(".word"), Just(".section"), Just("."), Just("f16v4hihov4amp"), Just("0b101"),
    ], 0..40)) {
        let _ = asm(&toks.join(" "));
    }
}

/// The `ipu` dialect accepts exactly [`DIRECTIVES`] in `ipu.directive`; each
/// must be one the assembler knows, or the dialect would accept programs the
/// assembler refuses.
#[test]
fn every_listed_directive_is_known_to_the_assembler() {
    for d in DIRECTIVES {
        let text = format!("main:\n    exitz $mzero\n    .{d}\n");
        let message = match asm(&text) {
            Ok(_) => continue,
            Err(e) => e.to_string(),
        };
        assert!(
            !message.contains("unknown directive"),
            "`.{d}` is listed but unknown to the assembler: {message}"
        );
    }
    let e = asm("main:\n    exitz $mzero\n    .bogus\n").unwrap_err();
    assert!(e.to_string().contains("unknown directive `.bogus`"), "{e}");
}

/// Statements built without text (here: parsed, then handed over) must give
/// exactly the image of the text, and their errors the same messages.
#[test]
fn statements_assemble_to_the_same_image_as_text() {
    let opts = AsmOptions::default();
    let (stmts, errors) = parse(SAMPLE, "sample.S");
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!stmts.is_empty());
    let from_text = assemble(SAMPLE, &opts).unwrap();
    let from_stmts = assemble_statements(stmts, &opts).unwrap().image;
    assert_eq!(from_text, from_stmts);

    let bad = "main:\n    setzi $m0, nowhere\n    exitz $mzero\n";
    let (stmts, _) = parse(bad, "bad.S");
    let text_errors = assemble(bad, &opts).unwrap_err();
    let stmt_errors = assemble_statements(stmts, &opts).unwrap_err();
    let messages = |e: &AsmErrors| {
        e.0.iter()
            .map(|e| (e.pos, e.message.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(messages(&text_errors), messages(&stmt_errors));
    assert_eq!(stmt_errors.0[0].source_line, "", "no text, no source line");
}

#[test]
fn expressions_print_and_read_back_to_the_same_value() {
    for text in [
        "(.Lend - .Lstart)/8 - 1",
        "-(3 << 2) | ~5 ^ 7 & 12",
        "1 - (2 - 3)",
        "-4 * -(1 + 2)",
    ] {
        let e = parse_expr(text).unwrap_or_else(|| panic!("{text} parses"));
        let printed = e.to_string();
        let back = parse_expr(&printed).unwrap_or_else(|| panic!("{printed} parses"));
        // The value as the assembler computes it, labels included.
        let value = |e: &Expr| {
            let image = assemble_statements(
                vec![
                    Stmt::Label("main".into(), Pos::default()),
                    Stmt::Label(".Lstart".into(), Pos::default()),
                    Stmt::Directive(".data".into(), vec![], Pos::default()),
                    Stmt::Directive(
                        ".word".into(),
                        vec![DirArg::Expr(e.clone(), Pos::default())],
                        Pos::default(),
                    ),
                    Stmt::Label(".Lend".into(), Pos::default()),
                ],
                &AsmOptions::default(),
            );
            image.map(|a| {
                a.image
                    .sections
                    .iter()
                    .find(|s| !s.is_code)
                    .unwrap()
                    .bytes
                    .clone()
            })
        };
        assert_eq!(value(&e), value(&back), "{text} printed as {printed}");
    }
    assert!(parse_expr("1 +").is_none());
    assert!(parse_expr("1 2").is_none());
}

#[test]
fn supervisor_reads_before_the_pipeline_has_the_value_are_warned() {
    // `runall` reads $m1, written by the instruction before it: it waits
    // 5 cycles (the result is readable 6 cycles after `setzi` issues).
    // Worker code is never warned: a worker issues once per barrel round.
    let a = assemble_with_warnings(SAMPLE, &AsmOptions::default()).unwrap();
    assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
    let w = &a.warnings[0];
    assert_eq!(
        (w.severity, w.pos.line, w.pos.col),
        (Severity::Warning, 9, 5)
    );
    assert!(
        w.message
            .contains("stall of 5 cycle(s): $m1 is written 1 instruction(s) earlier (line 8)"),
        "{}",
        w.message
    );
    assert!(
        w.to_string()
            .starts_with("<input>:9:5: warning: supervisor stall"),
        "{w}"
    );
    // Independent work in between removes the stall; so does a jump.
    let spaced = "main:\n    setzi $m0, 1\n    setzi $m1, 2\n    setzi $m2, 3\n    setzi $m3, 4\n    setzi $m4, 5\n    setzi $m5, 6\n    add $m6, $m0, $m0\n    bri next\nnext:\n    add $m7, $m6, $m6\n    exitz $mzero\n";
    let a = assemble_with_warnings(spaced, &AsmOptions::default()).unwrap();
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);
}
