//! The format compiler's errors (one test per rule, each checking the
//! message and the element it points at), and printer/parser round trips
//! of the `test` dialect's formatted ops.

use std::sync::Arc;

use proptest::prelude::*;

use super::{AssemblyFormat, FormatError};
use crate::attributes::Attribute;
use crate::dialect::{Arity, AttrDecl, Dialect, OpDefinition, Traits, TypeConstraint, ValueDecl};
use crate::{parse_source, print_op, verify, Context, DialectRegistry, PrintOptions};

const fn value(name: &'static str, arity: Arity) -> ValueDecl {
    ValueDecl {
        name,
        constraint: TypeConstraint::ANY,
        arity,
    }
}

const fn attr(name: &'static str, optional: bool) -> AttrDecl {
    AttrDecl {
        name,
        description: "any attribute",
        check: |_: &Attribute| true,
        optional,
    }
}

/// `t.op`: operands `a`, `b`; result `r`; attributes `n` (required), `o` (optional).
fn def() -> OpDefinition {
    OpDefinition::new("t.op")
        .operands(&[value("a", Arity::One), value("b", Arity::One)])
        .results(&[value("r", Arity::One)])
        .attribute(attr("n", false))
        .attribute(attr("o", true))
}

const OK: &str = "$a `,` $b $n attr-dict `:` type($a) `,` type($b) `->` type($r)";

/// Compiles `src` against `def`, expecting an error whose message contains
/// `msg` and which points at `at` in the source.
fn rejects(def: OpDefinition, src: &'static str, msg: &str, at: &str) -> FormatError {
    let e = AssemblyFormat::compile(&def, src).expect_err("the format should be rejected");
    assert!(
        e.message.contains(msg),
        "message {:?} lacks {msg:?}",
        e.message
    );
    assert!(
        src[e.offset..].starts_with(at),
        "error at {:?}, expected at {at:?} ({})",
        &src[e.offset..],
        e.message
    );
    e
}

#[test]
fn a_valid_format_compiles() {
    let f = AssemblyFormat::compile(&def(), OK).unwrap();
    assert_eq!(f.source(), OK);
    assert_eq!(f.format_attrs, vec!["n"]);
}

#[test]
fn unknown_names_and_directives_are_rejected() {
    let e = rejects(
        def(),
        "$a `,` $c attr-dict",
        "'$c' is not a declared operand, result, attribute",
        "$c",
    );
    assert!(e
        .message
        .contains("operands a, b; results r; attributes n, o"));
    rejects(
        def(),
        "$a `,` $b frobnicate",
        "unknown directive 'frobnicate'",
        "frobnicate",
    );
    rejects(
        def(),
        "$a $b attr-dict `:` type($n)",
        "'$n' has no type",
        "$n",
    );
    rejects(
        def(),
        "$a $b attr-dict `:` type(attr-dict)",
        "a type directive takes",
        "attr-dict",
    );
}

#[test]
fn results_only_appear_in_type_directives() {
    rejects(
        def(),
        "$r $a $b attr-dict",
        "result '$r' can only appear in a type directive",
        "$r",
    );
    rejects(
        def(),
        "results attr-dict",
        "'results' can only appear in a type directive",
        "results",
    );
}

#[test]
fn every_operand_must_be_printed_with_a_type() {
    rejects(
        def(),
        "$a $n attr-dict `:` type($a) `->` type($r)",
        "operand '$b' is not printed",
        "",
    );
    rejects(
        def(),
        "$a `,` $b $n attr-dict `:` type($a) `->` type($r)",
        "the type of operand '$b' is neither printed nor inferable",
        "",
    );
    rejects(
        def(),
        "$a `,` $b $n attr-dict `:` type($a) `,` type($b)",
        "the type of result '$r' is neither printed nor inferable",
        "",
    );
    // With SameOperandsAndResultType one printed type gives them all.
    let same = def().traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE);
    AssemblyFormat::compile(&same, "$a `,` $b $n attr-dict `:` type($r)").unwrap();
    // ...but never the count of a variadic result.
    let variadic = OpDefinition::new("t.v")
        .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        .operands(&[value("a", Arity::One)])
        .results(&[value("rs", Arity::Variadic)]);
    rejects(
        variadic,
        "$a attr-dict `:` type($a)",
        "a variadic or optional result always needs its types printed",
        "",
    );
}

#[test]
fn attr_dict_is_required() {
    rejects(
        def(),
        "$a `,` $b $n `:` type($a) `,` type($b) `->` type($r)",
        "the format has no 'attr-dict'",
        "",
    );
}

#[test]
fn elements_are_printed_once() {
    rejects(
        def(),
        "$a $a $b $n attr-dict",
        "'$a' is printed more than once",
        "$a $b",
    );
    let src = "$a $b $n attr-dict attr-dict";
    let e = rejects(
        def(),
        src,
        "'attr-dict' appears more than once",
        "attr-dict",
    );
    assert_eq!(e.offset, src.rfind("attr-dict").unwrap(), "the second one");
}

#[test]
fn duplicate_directives_and_types_are_rejected() {
    let src = "$a $b $n attr-dict `:` type($a) type(operands) `->` type($r)";
    rejects(
        def(),
        src,
        "already printed by another type directive",
        "operands",
    );
    rejects(
        def(),
        "$a operands $n attr-dict",
        "'operands' repeats operands already printed",
        "operands",
    );
    rejects(
        def(),
        "operands $a $n attr-dict",
        "'$a' is already printed by 'operands'",
        "$a",
    );
}

#[test]
fn syntax_errors_point_at_the_offending_character() {
    rejects(def(), "$a `,", "unterminated literal", "`,");
    rejects(def(), "$a `` $b", "empty or whitespace literal", "``");
    rejects(def(), "$a , $b", "unexpected ','", ", $b");
    rejects(def(), "$ a", "expected a name after '$'", "$ a");
    rejects(def(), "$a # $b", "unexpected '#'", "# $b");
    rejects(def(), "type $a", "expected '(' after 'type'", "$a");
    rejects(
        def(),
        "functional-type(operands results)",
        "expected ',' between the inputs and results",
        "results",
    );
    rejects(def(), "", "empty format", "");
}

#[test]
fn unbalanced_groups_are_rejected() {
    rejects(
        def(),
        "$a ($o^ attr-dict",
        "optional group '(' is not closed",
        "($o^",
    );
    rejects(
        def(),
        "$a ($o^) attr-dict",
        "expected '?' after ')'",
        "attr-dict",
    );
    rejects(
        def(),
        "$a ) attr-dict",
        "')' closes no optional group",
        ") attr-dict",
    );
    rejects(
        def(),
        "$a `(` $b attr-dict",
        "literal '(' is not closed",
        "`(`",
    );
    rejects(
        def(),
        "$a $b `]` attr-dict",
        "literal ']' closes no open bracket",
        "`]`",
    );
    // A bracket literal cannot straddle an optional group's edge.
    rejects(
        def(),
        "$a `(` (`,` $o^ `)`)? attr-dict",
        "literal ')' closes no open bracket",
        "`)`)?",
    );
}

#[test]
fn literals_must_be_tokens_the_parser_can_read_back() {
    rejects(
        def(),
        "$a `{` $b attr-dict",
        "literal '{' cannot be parsed back",
        "`{`",
    );
    rejects(
        def(),
        "$a `a b` $b attr-dict",
        "literal 'a b' cannot be parsed back",
        "`a b`",
    );
    rejects(
        def(),
        "$a `%` $b attr-dict",
        "literal '%' cannot be parsed back",
        "`%`",
    );
}

#[test]
fn optional_groups_need_one_valid_anchor() {
    rejects(
        def(),
        "$a $b (`x` $o)? $n attr-dict",
        "optional group has no anchor",
        "(`x`",
    );
    rejects(
        def(),
        "$a $b $n^ attr-dict",
        "'^' (an anchor) is only allowed inside an optional group",
        "$n^",
    );
    rejects(
        def(),
        "$a $b (`x` $n^)? attr-dict",
        "'$n' cannot anchor an optional group",
        "$n^",
    );
    rejects(
        def(),
        "$a $b (`x` $o^ $n)? attr-dict",
        "attribute '$n' is required, so it cannot be in an optional group",
        "$n)?",
    );
    let two = OpDefinition::new("t.two")
        .operands(&[value("a", Arity::One)])
        .attribute(attr("o", true))
        .attribute(attr("p", true));
    rejects(
        two,
        "$a (`x` $o^ $p^)? attr-dict `:` type($a)",
        "only one anchor",
        "$p^",
    );
    rejects(
        def(),
        "$a $b (`x` type($a)^)? $n attr-dict",
        "only '$name' elements can anchor",
        "type($a)^",
    );
    rejects(
        def(),
        "$a $b ((`x` $o^)?)? $n attr-dict",
        "optional groups may not be nested",
        "(`x`",
    );
}

#[test]
fn optional_group_contents_are_checked() {
    let opt = OpDefinition::new("t.opt")
        .operands(&[value("a", Arity::One), value("b", Arity::Optional)])
        .attribute(attr("o", true));
    rejects(
        opt,
        "$a (type($b) $b^)? attr-dict `:` type($a)",
        "the first element of an optional group must be a literal",
        "(type",
    );
    rejects(
        def(),
        "$a (`,` $b^)? $n attr-dict",
        "'$b' cannot anchor an optional group",
        "$b^",
    );
    rejects(
        def(),
        "$a $b (`x` $o^ attr-dict)? $n",
        "'attr-dict' cannot be in an optional group",
        "attr-dict",
    );
    rejects(
        def(),
        "$a $b $n $o attr-dict",
        "optional attribute '$o' must be inside an optional group",
        "$o",
    );
    let with_required =
        OpDefinition::new("t.req").operands(&[value("a", Arity::One), value("b", Arity::Optional)]);
    rejects(
        with_required,
        "(`x` $b^ $a)? attr-dict `:` type($a) type($b)",
        "operand '$a' is required, so it cannot be in an optional group",
        "$a)?",
    );
}

#[test]
fn ambiguous_operand_segments_are_rejected() {
    let two = OpDefinition::new("t.two")
        .operands(&[value("xs", Arity::Variadic), value("ys", Arity::Variadic)]);
    rejects(
        two,
        "$xs `,` $ys attr-dict `:` type($xs) `,` type($ys)",
        "more than one optional/variadic operand",
        "$xs",
    );
    let two = OpDefinition::new("t.two")
        .operands(&[value("xs", Arity::Variadic), value("ys", Arity::Variadic)])
        .results(&[]);
    AssemblyFormat::compile(&two, "operands attr-dict `:` type(operands)").unwrap();
}

#[test]
fn regions_and_successors_must_be_printed() {
    let r = OpDefinition::new("t.r")
        .operands(&[])
        .results(&[])
        .region_names(&["body"]);
    rejects(r, "attr-dict", "region '$body' is not printed", "");
    let r = OpDefinition::new("t.r")
        .operands(&[])
        .results(&[])
        .regions(Some(2));
    rejects(
        r,
        "attr-dict",
        "the op has regions but the format prints none",
        "",
    );
    let r = OpDefinition::new("t.r")
        .operands(&[])
        .results(&[])
        .regions(Some(2));
    AssemblyFormat::compile(&r, "attr-dict regions").unwrap();
    let s = OpDefinition::new("t.s")
        .operands(&[])
        .results(&[])
        .successor_names(&["next"]);
    rejects(s, "attr-dict", "successor '$next' is not printed", "");
    let s = OpDefinition::new("t.s")
        .operands(&[])
        .results(&[])
        .region_names(&["body"]);
    rejects(
        s,
        "attr-dict (`x` $body^)?",
        "'$body' cannot anchor an optional group",
        "$body^",
    );
}

#[test]
fn undeclared_operands_need_the_operands_directive() {
    let any = OpDefinition::new("t.any").results(&[]);
    rejects(
        any,
        "attr-dict",
        "the op does not declare its operands, so the format must print them with 'operands'",
        "",
    );
    let any = OpDefinition::new("t.any").results(&[]);
    AssemblyFormat::compile(&any, "operands attr-dict `:` type(operands)").unwrap();
}

#[test]
fn errors_display_the_op_the_format_and_a_caret() {
    let e = AssemblyFormat::compile(&def(), "$a `,` $c attr-dict").unwrap_err();
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("invalid assembly format for 't.op': '$c' is not"),
        "{text}"
    );
    assert!(lines[0].ends_with("(at column 8)"), "{text}");
    assert_eq!(lines[1], "  $a `,` $c attr-dict");
    assert_eq!(lines[2], "         ^");
}

fn dialect_with(def: OpDefinition) -> Dialect {
    Dialect::new("t", "formats under test").op(def)
}

#[test]
fn registration_reports_a_bad_format() {
    let mut r = DialectRegistry::new();
    let e = r
        .try_register(dialect_with(def().assembly_format("$a attr-dict")))
        .unwrap_err();
    assert!(e.message.contains("operand '$b' is not printed"), "{e}");
    assert!(r.op_def("t.op").is_none(), "nothing is registered");
    let both = def()
        .assembly_format(OK)
        .custom_assembly_format(super::print_op, super::parse_op);
    let e = r.try_register(dialect_with(both)).unwrap_err();
    assert!(e.message.contains("both print/parse hooks"), "{e}");
}

#[test]
#[should_panic(expected = "invalid assembly format for 't.op': '$c' is not a declared operand")]
fn register_panics_on_a_bad_format() {
    DialectRegistry::new().register(dialect_with(def().assembly_format("$c attr-dict")));
}

#[test]
fn the_builder_order_does_not_matter() {
    // The format is set before the names it uses are declared.
    let d = OpDefinition::new("t.op")
        .assembly_format(OK)
        .operands(&[value("a", Arity::One), value("b", Arity::One)])
        .results(&[value("r", Arity::One)])
        .attribute(attr("n", false))
        .attribute(attr("o", true));
    let mut r = DialectRegistry::new();
    r.try_register(dialect_with(d)).unwrap();
    assert!(r.op_def("t.op").unwrap().assembly_format.is_some());
}

// ----- printing and parsing ------------------------------------------------------

fn context() -> Context {
    let mut reg = DialectRegistry::new();
    reg.register(crate::test_dialect::dialect());
    Context::new(Arc::new(reg))
}

/// Parses `body` inside a block with arguments `%a: i32, %b: i32, %c: f32`
/// and returns the printed module.
fn round(src: &str) -> Result<String, crate::Diagnostic> {
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "t.mlir", src)?;
    verify(&ctx, parsed.module)?;
    Ok(print_op(&ctx, parsed.module, &PrintOptions::default()))
}

fn wrap(body: &str) -> String {
    format!(
        "\"test.region\"() ({{\n^bb0(%a: i32, %b: i32, %c: f32):\n{body}\n  \"test.terminator\"() : () -> ()\n}}) : () -> ()\n"
    )
}

/// Custom text of every formatted op (as printed: the fixed points).
const CORPUS: &[&str] = &[
    "%0 = test.add %a, %b {tag = \"x\"} : i32",
    "%0 = test.format_operands %a, %b, %c : i32, i32, f32 -> i32",
    "%0 = test.format_operands : -> i32",
    "%0 = test.format_operands %a {level = 2 : i64, other} : i32 -> i32",
    "%0 = test.format_operands %c {a = \"x\", level, z = [1 : i64]} : f32 -> f32",
    "%0 = test.format_optional %a, %b : i32 : i32 -> i32",
    "%0 = test.format_optional %a {k} : i32 -> i32",
    "%0 = test.format_attr %a by 3 : i64 scale = \"s\" {other} : i32 -> i32",
    "%0 = test.format_attr %a by -1 : i32 : i32 -> f32",
    "%0 = test.format_functional %a, %c : (i32, f32) -> i32",
    "%0 = test.format_functional %a, %c : (i32, f32) -> ((i32) -> i32)",
    "%0 = test.format_region(%a, %c : i32, f32) -> i32 attributes {k = 1 : i64} {\n    \"test.terminator\"(%a) : (i32) -> ()\n  }",
    "%0 = test.format_region -> f32 {\n    \"test.terminator\"() : () -> ()\n  }",
    "test.format_list[%a, %c] : i32, f32",
    "test.format_list[] :",
];

#[test]
fn corpus_prints_as_written_and_is_a_fixed_point() {
    for text in CORPUS {
        let printed = round(&wrap(text)).unwrap_or_else(|d| panic!("{text}: {d}"));
        // Block arguments print as %arg0.. and results renumber.
        let expected = text
            .replace("%a", "%arg0")
            .replace("%b", "%arg1")
            .replace("%c", "%arg2")
            .replace('\n', "\n  ");
        assert!(
            printed.contains(&format!("    {expected}\n")),
            "{text}\n---\n{printed}"
        );
        assert_eq!(
            round(&printed).unwrap(),
            printed,
            "not a fixed point: {text}"
        );
        // The generic form parses back to the same custom text.
        let mut ctx = context();
        let m = parse_source(&mut ctx, "t.mlir", &printed).unwrap().module;
        let generic = print_op(&ctx, m, &PrintOptions::generic());
        assert_eq!(round(&generic).unwrap(), printed, "{generic}");
    }
}

#[test]
fn successors_and_block_arguments_round_trip() {
    let src = "\"test.region\"() ({\n^bb0(%a: i32, %c: f32):\n  test.format_branch ^bb1(%a, %c : i32, f32)\n^bb1(%x: i32, %y: f32):\n  test.format_branch ^bb2\n^bb2:\n  \"test.terminator\"() : () -> ()\n}) : () -> ()\n";
    let printed = round(src).unwrap_or_else(|d| panic!("{d}"));
    assert!(
        printed.contains("  test.format_branch ^bb1(%arg0, %arg1 : i32, f32)\n"),
        "{printed}"
    );
    assert!(printed.contains("  test.format_branch ^bb2\n"), "{printed}");
    assert_eq!(round(&printed).unwrap(), printed);
}

#[test]
fn properties_and_discardable_attributes_are_split_on_parse() {
    let mut ctx = context();
    let src =
        wrap("%0 = test.format_attr %a by 3 : i64 scale = 2 : i32 {other = 1 : i64} : i32 -> i32");
    let m = parse_source(&mut ctx, "t.mlir", &src).unwrap().module;
    let op = ctx
        .collect_ops(m, crate::WalkOrder::PreOrder)
        .into_iter()
        .find(|&o| ctx.name_str(o) == "test.format_attr")
        .unwrap();
    let props = ctx
        .properties(op)
        .expect("format attributes are properties");
    assert!(props.get("count").is_some() && props.get("scale").is_some());
    assert!(ctx.attributes(op).get("other").is_some());
    assert!(ctx.attributes(op).get("count").is_none());
}

#[test]
fn malformed_ops_print_generically() {
    // A required attribute missing, and a count the declarations refuse.
    let src = wrap(
        "%0 = \"test.format_attr\"(%a) : (i32) -> i32\n%1 = \"test.format_functional\"(%a) : (i32) -> i32\n%2:2 = \"test.format_operands\"(%a) <{level = 1 : i64}> : (i32) -> (i32, i32)",
    );
    let mut ctx = context();
    let m = parse_source(&mut ctx, "t.mlir", &src).unwrap().module;
    let printed = print_op(&ctx, m, &PrintOptions::default());
    assert!(
        printed.contains("%0 = \"test.format_attr\"(%arg0) : (i32) -> i32"),
        "{printed}"
    );
    assert!(
        printed.contains("%1 = \"test.format_functional\"(%arg0) : (i32) -> i32"),
        "{printed}"
    );
    assert!(
        printed.contains(
            "%2:2 = \"test.format_operands\"(%arg0) <{level = 1 : i64}> : (i32) -> (i32, i32)"
        ),
        "{printed}"
    );
}

/// Parses `body` (which must fail) and returns `(line, column, message)`.
fn parse_error(body: &str) -> (u32, u32, String) {
    let mut ctx = context();
    let Err(d) = parse_source(&mut ctx, "t.mlir", &wrap(body)) else {
        panic!("{body} should not parse")
    };
    let (_, l, c) = d.loc.file_line_col_of().expect("a file location");
    (l, c, d.message)
}

#[test]
fn parse_errors_name_the_expected_token_at_the_offending_one() {
    let cases: &[(&str, u32, &str)] = &[
        // (text, column of the offending token, message)
        ("%0 = test.add %a : i32", 18, "expected ',', found ':'"),
        ("%0 = test.add %a, %b i32", 22, "expected ':', found 'i32'"),
        (
            "%0 = test.format_attr %a 3 : i64 : i32 -> i32",
            26,
            "expected 'by', found '3'",
        ),
        (
            "%0 = test.format_attr %a by : i32 -> i32",
            29,
            "expected an attribute, found ':'",
        ),
        (
            "%0 = test.format_attr %a by \"x\" : i32 -> i32",
            29,
            "attribute 'count' must be an integer attribute",
        ),
        (
            "%0 = test.format_operands %a, %b : i32 -> i32",
            40,
            "2 operands present, but 1 operand types given",
        ),
        (
            "%0 = test.format_operands %a : i32 i32",
            36,
            "expected '->', found 'i32'",
        ),
        (
            "%0 = test.format_optional %a, : i32 -> i32",
            31,
            "expected an SSA operand, found ':'",
        ),
        (
            "%0 = test.format_functional %a, %b : i32",
            38,
            "expected a function type '(inputs) -> results'",
        ),
        ("test.format_list %a : i32", 18, "expected '[', found '%a'"),
        (
            "%0 = test.format_region(%a : i32) -> i32 {k}",
            42,
            "expected a region",
        ),
        (
            "%0 = test.add %a, %b {k = 1 : i64} : i32 extra",
            42,
            "unexpected 'extra'",
        ),
        (
            "%0 = test.format_functional %a, %b : (i32, f32) -> i32",
            33,
            "use of value '%b' expects different type",
        ),
    ];
    for (text, col, msg) in cases {
        let (line, c, m) = parse_error(text);
        assert!(m.contains(msg), "{text}: {m:?} lacks {msg:?}");
        assert_eq!((line, c), (3, *col), "{text}: {m}");
    }
}

#[test]
fn a_format_attribute_may_not_repeat_in_the_dictionary() {
    let (_, _, m) =
        parse_error("%0 = test.format_attr %a by 3 : i64 {count = 4 : i64} : i32 -> i32");
    assert!(
        m.contains("attribute 'count' is written by the op's format"),
        "{m}"
    );
}

// ----- property: print(parse(x)) is a fixed point --------------------------------------

fn value_name(i: usize) -> &'static str {
    ["%a", "%b", "%c"][i]
}

fn value_type(i: usize) -> &'static str {
    ["i32", "i32", "f32"][i]
}

/// One random formatted op over the values `%a: i32, %b: i32, %c: f32`.
fn op_text() -> impl Strategy<Value = String> {
    let operands = proptest::collection::vec(0usize..3, 0..4);
    let dict = proptest::option::of(prop_oneof![
        Just("{k}".to_string()),
        (0i64..100).prop_map(|v| format!("{{n = {v} : i64, s = \"t\"}}")),
    ]);
    let ty = prop_oneof![Just("i32"), Just("f32"), Just("tensor<2x?xf16>")];
    (0usize..6, operands, dict, ty, proptest::bool::ANY, -5i64..5).prop_map(
        |(kind, ops, dict, ty, flag, n)| {
            let d = dict.map(|d| format!(" {d}")).unwrap_or_default();
            let names: Vec<&str> = ops.iter().map(|&i| value_name(i)).collect();
            let types: Vec<&str> = ops.iter().map(|&i| value_type(i)).collect();
            match kind {
                0 => format!("%0 = test.add %a, %b{d} : i32"),
                1 => format!(
                    "%0 = test.format_operands {}{d} : {} -> {ty}",
                    names.join(", "),
                    types.join(", ")
                ),
                2 => {
                    let extra = if flag { ", %c : f32" } else { "" };
                    format!("%0 = test.format_optional %a{extra}{d} : i32 -> {ty}")
                }
                3 => {
                    let scale = if flag {
                        format!(" scale = {n} : i32")
                    } else {
                        String::new()
                    };
                    format!("%0 = test.format_attr %c by {n} : i64{scale}{d} : f32 -> {ty}")
                }
                4 => format!("%0 = test.format_functional %b, %c{d} : (i32, f32) -> {ty}"),
                _ => format!(
                    "test.format_list[{}]{d} : {}",
                    names.join(", "),
                    types.join(", ")
                ),
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn printing_a_parsed_op_is_a_fixed_point(text in op_text()) {
        let once = round(&wrap(&text)).map_err(|d| TestCaseError::fail(format!("{text}: {d}")))?;
        let twice = round(&once).map_err(|d| TestCaseError::fail(format!("{once}: {d}")))?;
        prop_assert_eq!(&once, &twice);
    }
}
