//! Dialect conversion: `test.add_i32` -> `test.add_i64` under a type
//! converter i32 -> i64, partial vs full conversion, materializations at the
//! boundary, and the failure report.

mod support;

use ipuc_ir::attributes::AttrKind;
use ipuc_ir::conversion::{
    apply_full_conversion, apply_partial_conversion, convert, ConversionConfig, ConversionMode,
    ConversionPatternSet, ConversionTarget, FnConversionPattern, TypeConverter,
};
use ipuc_ir::{verify, Attribute, OperationState, SourceMgr, Type};
use support::{parse, print};

fn i32_to_i64() -> TypeConverter {
    let mut tc = TypeConverter::new();
    tc.add_identity_conversion()
        .add_type_mapping(Type::i32(), Type::i64());
    tc
}

/// `test.add_i32` -> `test.add_i64` on the converted operands.
fn add_pattern(set: &mut ConversionPatternSet) {
    set.add(FnConversionPattern::new(
        "add-i32-to-i64",
        Some("test.add_i32"),
        1,
        |op, operands, rw| {
            let loc = rw.ctx().loc(op).clone();
            let name = rw.ctx().op_name("test.add_i64");
            let state = OperationState::new(name, loc)
                .operands(operands)
                .results(&[Type::i64()]);
            rw.replace_op_with_new(op, state);
            true
        },
    ));
}

/// `test.constant : i32` -> `test.constant : i64` with the value retyped.
fn constant_pattern(set: &mut ConversionPatternSet) {
    set.add(FnConversionPattern::new(
        "constant-i32-to-i64",
        Some("test.constant"),
        1,
        |op, _, rw| {
            let Some(AttrKind::Integer { value, .. }) =
                rw.ctx().attr(op, "value").map(|a| a.kind())
            else {
                return false;
            };
            let value = *value;
            let loc = rw.ctx().loc(op).clone();
            let state = OperationState::new(rw.ctx().op_name("test.constant"), loc)
                .results(&[Type::i64()])
                .attr("value", Attribute::integer(value, Type::i64()));
            rw.replace_op_with_new(op, state);
            true
        },
    ));
}

/// Terminators take the converted operands in place.
fn terminator_pattern(set: &mut ConversionPatternSet) {
    set.add(FnConversionPattern::new(
        "terminator-operands",
        Some("test.terminator"),
        1,
        |op, operands, rw| {
            rw.ctx_mut().set_operands(op, operands);
            rw.notify_modified(op);
            true
        },
    ));
}

const CHAIN: &str = r#""test.isolated"() ({
  %0 = "test.constant"() {value = 5 : i32} : () -> i32
  %1 = test.add_i32 %0, %0 : i32
  %2 = test.add_i32 %1, %0 : i32
  "test.terminator"(%2) : (i32) -> ()
}) : () -> ()
"#;

fn base_target() -> ConversionTarget {
    let mut t = ConversionTarget::new();
    t.add_illegal_op("test.add_i32")
        .add_legal_op("test.add_i64")
        .add_legal_op("test.constant")
        .add_legal_op("test.terminator")
        .add_legal_op("test.isolated");
    t
}

#[test]
fn partial_conversion_materializes_casts_at_the_boundary() {
    let (mut ctx, m) = parse(CHAIN);
    let mut patterns = ConversionPatternSet::new();
    add_pattern(&mut patterns);
    let tc = i32_to_i64();
    let stats = apply_partial_conversion(&mut ctx, m, &base_target(), &patterns, Some(&tc))
        .unwrap_or_else(|d| panic!("{d}"));
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}\n{}", print(&ctx, m)));
    let out = print(&ctx, m);
    let expected = r#"module {
  "test.isolated"() ({
    %0 = "test.constant"() <{value = 5 : i32}> : () -> i32
    %1 = unrealized_conversion_cast %0 : i32 to i64
    %2 = test.add_i64 %1, %1 : i64
    %3 = test.add_i64 %2, %1 : i64
    %4 = unrealized_conversion_cast %3 : i64 to i32
    "test.terminator"(%4) : (i32) -> ()
  }) : () -> ()
}
"#;
    assert_eq!(out, expected);
    assert_eq!(stats.rewrites, 2);
    // One target cast for %0, two source casts (for %1 and %2); the one for
    // %1 lost its user when %2 was converted and was removed.
    assert_eq!(stats.materializations, 3);
    assert_eq!(stats.casts_removed, 1);
    assert_eq!(stats.casts_remaining, 2);
}

#[test]
fn full_conversion_rejects_leftover_casts_then_succeeds_when_everything_converts() {
    // Same patterns, full mode: the casts are not legal.
    let (mut ctx, m) = parse(CHAIN);
    let mut patterns = ConversionPatternSet::new();
    add_pattern(&mut patterns);
    let tc = i32_to_i64();
    let err = apply_full_conversion(&mut ctx, m, &base_target(), &patterns, Some(&tc))
        .expect_err("casts remain");
    assert_eq!(
        SourceMgr::default().render(&err),
        "in.mlir:3:8: error: failed to legalize 2 operations of 1 kind in full conversion\n\
         in.mlir:3:8: note: 'builtin.unrealized_conversion_cast': 2 operations not marked legal (no pattern converts it); first here\n"
    );

    // Converting constants and terminators too leaves no cast.
    let (mut ctx, m) = parse(CHAIN);
    let mut patterns = ConversionPatternSet::new();
    add_pattern(&mut patterns);
    constant_pattern(&mut patterns);
    terminator_pattern(&mut patterns);
    let mut target = base_target();
    let legal_types = i32_to_i64();
    target
        .add_dynamically_legal_op("test.constant", move |ctx, op| {
            legal_types.is_legal_op(ctx, op)
        })
        .add_dynamically_legal_op("test.terminator", |ctx, op| {
            ctx.operands(op)
                .iter()
                .all(|&v| *ctx.value_type(v) != Type::i32())
        });
    let stats = apply_full_conversion(&mut ctx, m, &target, &patterns, Some(&tc))
        .unwrap_or_else(|d| panic!("{d}\n{}", print(&ctx, m)));
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    assert!(!out.contains("unrealized_conversion_cast"), "{out}");
    assert!(
        out.contains("\"test.constant\"() <{value = 5 : i64}> : () -> i64"),
        "{out}"
    );
    assert!(out.contains("%2 = test.add_i64 %1, %0 : i64"), "{out}");
    assert!(
        out.contains("\"test.terminator\"(%2) : (i64) -> ()"),
        "{out}"
    );
    assert_eq!(stats.casts_remaining, 0);
    assert_eq!(stats.rewrites, 4);
}

#[test]
fn partial_allows_unknown_ops_full_does_not() {
    let src = r#"%0 = "test.constant"() {value = 1 : i32} : () -> i32
%1 = test.add_i32 %0, %0 : i32
"other.use"(%1) : (i32) -> ()
"#;
    let mut patterns = ConversionPatternSet::new();
    add_pattern(&mut patterns);
    let tc = i32_to_i64();
    let mut target = base_target();
    target.add_legal_op("builtin.unrealized_conversion_cast");

    let (mut ctx, m) = parse(src);
    apply_partial_conversion(&mut ctx, m, &target, &patterns, Some(&tc))
        .unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    assert!(out.contains("\"other.use\"(%3) : (i32) -> ()"), "{out}");

    let (mut ctx, m) = parse(src);
    let err = apply_full_conversion(&mut ctx, m, &target, &patterns, Some(&tc)).unwrap_err();
    assert_eq!(
        SourceMgr::default().render(&err),
        "in.mlir:3:1: error: failed to legalize 1 operation of 1 kind in full conversion\n\
         in.mlir:3:1: note: 'other.use': 1 operation not marked legal (no pattern converts it); first here\n"
    );
}

#[test]
fn report_lists_every_illegal_kind_with_count_and_first_location() {
    let src = r#"%0 = "test.constant"() {value = 1 : i32} : () -> i32
%1 = test.mul_i32 %0, %0 : i32
%2 = test.add_i32 %1, %0 : i32
%3 = test.mul_i32 %2, %2 : i32
%4 = test.add_i32 %3, %3 : i32
%5 = test.mul_i32 %4, %4 : i32
"#;
    let (mut ctx, m) = parse(src);
    let mut target = base_target();
    target
        .add_illegal_dialect("test")
        .add_legal_op("test.constant");
    // A pattern that never matches: the report says patterns were tried.
    let mut patterns = ConversionPatternSet::new();
    patterns.add(FnConversionPattern::new(
        "never",
        Some("test.add_i32"),
        1,
        |_, _, _| false,
    ));
    let err = apply_partial_conversion(&mut ctx, m, &target, &patterns, None).unwrap_err();
    assert_eq!(
        SourceMgr::default().render(&err),
        "in.mlir:2:6: error: failed to legalize 5 operations of 2 kinds in partial conversion\n\
         in.mlir:2:6: note: 'test.mul_i32': 3 operations marked illegal (no pattern converts it); first here\n\
         in.mlir:3:6: note: 'test.add_i32': 2 operations marked illegal (no pattern succeeded); first here\n"
    );
    // The rendered report with the source shows carets under each first occurrence.
    let mut sm = SourceMgr::new();
    sm.add("in.mlir", src.into());
    let rendered = sm.render(&err);
    assert!(
        rendered.contains("%2 = test.add_i32 %1, %0 : i32\n     ^\n"),
        "{rendered}"
    );
}

#[test]
fn dynamic_legality_and_recursive_legality() {
    let src = r#"%0 = "test.constant"() {value = 1 : i32} : () -> i32
%1 = test.add %0, %0 : i32
"test.region"() ({
  %2 = test.add %0, %0 : i32
  "test.terminator"() : () -> ()
}) : () -> ()
"#;
    let mut target = ConversionTarget::new();
    // `test.add` is legal only on i64; everything under `test.region` is legal.
    target
        .add_dynamically_legal_op("test.add", |ctx, op| {
            *ctx.value_type(ctx.result(op, 0)) == Type::i64()
        })
        .mark_op_recursively_legal("test.region");
    let (mut ctx, m) = parse(src);
    let err = apply_partial_conversion(&mut ctx, m, &target, &ConversionPatternSet::new(), None)
        .unwrap_err();
    assert_eq!(
        err.notes[0].message,
        "'test.add': 1 operation rejected by its legality predicate (no pattern converts it); first here"
    );
    assert_eq!(err.loc.file_line_col_of(), Some(("in.mlir", 2, 6)));
}

#[test]
fn a_pattern_producing_its_own_root_hits_the_depth_limit() {
    let src = r#"%0 = "test.constant"() {value = 1 : i32} : () -> i32
%1 = test.add_i32 %0, %0 : i32
"#;
    let (mut ctx, m) = parse(src);
    let mut patterns = ConversionPatternSet::new();
    patterns.add(FnConversionPattern::new(
        "self",
        Some("test.add_i32"),
        1,
        |op, operands, rw| {
            let loc = rw.ctx().loc(op).clone();
            let state = OperationState::new(rw.ctx().op_name("test.add_i32"), loc)
                .operands(operands)
                .results(&[Type::i32()]);
            rw.replace_op_with_new(op, state);
            true
        },
    ));
    let config = ConversionConfig {
        max_pattern_depth: 4,
    };
    let err = convert(
        &mut ctx,
        m,
        &base_target(),
        &patterns,
        None,
        ConversionMode::Partial,
        &config,
    )
    .unwrap_err();
    assert!(
        err.notes[0].message.contains("pattern depth limit reached"),
        "{err}"
    );
}

#[test]
fn region_block_arguments_convert_with_source_materializations() {
    let src = r#""test.isolated"() ({
^bb0(%a: i32, %b: f32):
  %1 = test.add_i32 %a, %a : i32
  "test.terminator"(%1, %b) : (i32, f32) -> ()
}) : () -> ()
"#;
    let (mut ctx, m) = parse(src);
    let mut patterns = ConversionPatternSet::new();
    add_pattern(&mut patterns);
    patterns.add(FnConversionPattern::new(
        "isolated-signature",
        Some("test.isolated"),
        1,
        |op, _, rw| {
            let r = rw.ctx().regions(op)[0];
            rw.convert_region_types(r).expect("convertible");
            rw.notify_modified(op);
            true
        },
    ));
    let tc = i32_to_i64();
    let mut target = base_target();
    let legal = i32_to_i64();
    target.add_dynamically_legal_op("test.isolated", move |ctx, op| legal.is_legal_op(ctx, op));
    apply_partial_conversion(&mut ctx, m, &target, &patterns, Some(&tc))
        .unwrap_or_else(|d| panic!("{d}"));
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    // The add consumes the converted argument directly; only the terminator
    // (left unconverted) needs a cast back to i32.
    assert!(out.contains("^bb0(%arg0: i64, %arg1: f32):"), "{out}");
    assert!(
        out.contains("%0 = test.add_i64 %arg0, %arg0 : i64"),
        "{out}"
    );
    assert!(
        out.contains("%1 = unrealized_conversion_cast %0 : i64 to i32"),
        "{out}"
    );
    assert!(!out.contains("%arg0 : i64 to i32"), "{out}");
}
