//! 1:N dialect conversion: `tensor<2x4xf32>` held as two `tensor<4xf32>`
//! pieces. Values replaced again after they were handed to a stand-in,
//! materialization hooks (called only for the casts that survive, checked
//! for the types they build), results converted to nothing, and signature
//! conversions that fail without changing anything.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ipuc_ir::conversion::{
    apply_partial_conversion, ConversionPatternSet, ConversionRewriter, ConversionStats,
    ConversionTarget, FnConversionPattern, TypeConversion, TypeConverter,
};
use ipuc_ir::{verify, Context, Diagnostic, OpId, OperationState, Type, Value};
use support::{parse, print};

fn whole() -> Type {
    Type::tensor(&[2, 4], Type::f32())
}

fn piece() -> Type {
    Type::tensor(&[4], Type::f32())
}

/// `tensor<2x4xf32>` -> two `tensor<4xf32>`; `tensor<0x4xf32>` -> nothing.
fn splitter() -> TypeConverter {
    let mut tc = TypeConverter::new();
    tc.add_identity_conversion().add_conversion(|t| {
        if *t == whole() {
            Some(TypeConversion::Multiple(vec![piece(), piece()]))
        } else if *t == Type::tensor(&[0, 4], Type::f32()) {
            Some(TypeConversion::Multiple(vec![]))
        } else {
            None
        }
    });
    tc
}

/// Ops named `names` are legal when all their types are.
fn target(tc: &Arc<TypeConverter>, names: &[&'static str]) -> ConversionTarget {
    let mut t = ConversionTarget::new();
    for &n in names {
        let c = tc.clone();
        t.add_dynamically_legal_op(n, move |ctx, op| c.is_legal_op(ctx, op));
    }
    t
}

/// Converts what `root` holds with `patterns`, ops named `names` legal
/// once all their types are.
fn convert(
    ctx: &mut Context,
    root: OpId,
    tc: &Arc<TypeConverter>,
    names: &[&'static str],
    patterns: &ConversionPatternSet,
) -> Result<ConversionStats, Diagnostic> {
    apply_partial_conversion(ctx, root, &target(tc, names), patterns, Some(tc))
}

/// Builds `name(operands) -> results` before `op` through the rewriter.
fn create(
    rw: &mut ConversionRewriter<'_>,
    op: OpId,
    name: &str,
    operands: &[Value],
    results: &[Type],
) -> Vec<Value> {
    let loc = rw.ctx().loc(op).clone();
    let state = OperationState::new(rw.ctx().op_name(name), loc)
        .operands(operands)
        .results(results);
    let new = rw.create_before(op, state);
    rw.ctx().results(new).to_vec()
}

#[test]
fn a_piece_converted_again_reaches_later_users_as_its_replacement() {
    // `test.relu` becomes one illegal `test.relu_tmp` per piece, which a
    // second pattern turns into `test.relu_piece`. `test.sink` (legal) has
    // read the stand-in for the tmp pieces in between; `test.use` is
    // converted last and must receive the final pieces, not the erased tmps.
    let src = r#"%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.relu"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
"test.sink"(%1) : (tensor<2x4xf32>) -> ()
"test.use"(%1) : (tensor<2x4xf32>) -> ()
"#;
    let (mut ctx, m) = parse(src);
    let tc = Arc::new(splitter());
    let mut target = target(&tc, &["test.relu", "test.use"]);
    target.add_illegal_op("test.relu_tmp");
    let mut patterns = ConversionPatternSet::new();
    per_piece(&mut patterns, "test.relu", "test.relu_tmp");
    patterns.add(FnConversionPattern::new(
        "tmp",
        Some("test.relu_tmp"),
        1,
        |op, operands, rw| {
            let v = create(rw, op, "test.relu_piece", operands, &[piece()]);
            rw.replace_op(op, &v);
            true
        },
    ));
    patterns.add(FnConversionPattern::one_to_n(
        "use",
        Some("test.use"),
        1,
        |op, operands, rw| {
            create(rw, op, "test.use_pieces", &operands[0], &[]);
            rw.erase_op(op);
            true
        },
    ));
    let stats = apply_partial_conversion(&mut ctx, m, &target, &patterns, Some(&tc))
        .unwrap_or_else(|d| panic!("{d}"));
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    assert!(!out.contains("test.relu_tmp"), "{out}");
    assert!(
        out.contains("%4 = unrealized_conversion_cast %2, %3 : tensor<4xf32>, tensor<4xf32> to tensor<2x4xf32>"),
        "{out}"
    );
    assert!(out.contains("\"test.use_pieces\"(%2, %3)"), "{out}");
    assert!(out.contains("%2 = \"test.relu_piece\"(%1#0)"), "{out}");
    assert_eq!(stats.rewrites, 4);
    assert_eq!(stats.casts_remaining, 2);
}

/// A 1:N pattern that replaces each `root` op with one `into` op per piece
/// of its operand.
fn per_piece(set: &mut ConversionPatternSet, root: &'static str, into: &'static str) {
    set.add(FnConversionPattern::one_to_n(
        root,
        Some(root),
        1,
        move |op, operands, rw| {
            let pieces: Vec<Value> = operands[0]
                .iter()
                .flat_map(|&p| create(rw, op, into, &[p], &[piece()]))
                .collect();
            rw.replace_op_with_multiple(op, &[pieces]);
            true
        },
    ));
}

/// Hooks that build `test.split` / `test.concat`, counting their calls.
fn with_hooks(tc: &mut TypeConverter, calls: Arc<AtomicUsize>) {
    let c = calls.clone();
    tc.add_target_materialization(Box::new(move |ctx, at, input, to, loc| {
        c.fetch_add(1, Ordering::Relaxed);
        let state = OperationState::new(ctx.op_name("test.split"), loc.clone())
            .operands(&[input])
            .results(to);
        let op = ctx.create_op(state);
        at.insert(ctx, op);
        Some(ctx.results(op).to_vec())
    }));
    tc.add_source_materialization(Box::new(move |ctx, at, inputs, to, loc| {
        calls.fetch_add(1, Ordering::Relaxed);
        let state = OperationState::new(ctx.op_name("test.concat"), loc.clone())
            .operands(inputs)
            .results(std::slice::from_ref(to));
        let op = ctx.create_op(state);
        at.insert(ctx, op);
        Some(ctx.result(op, 0))
    }));
}

#[test]
fn hooks_replace_only_the_casts_that_survive() {
    // Between the two maps the pieces flow directly; the stand-in built for
    // the first map's result goes unused and is removed before any hook runs.
    let src = r#"%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.map"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
%2 = "test.map"(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
"test.sink"(%2) : (tensor<2x4xf32>) -> ()
"#;
    let (mut ctx, m) = parse(src);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tc = splitter();
    with_hooks(&mut tc, calls.clone());
    let tc = Arc::new(tc);
    let mut patterns = ConversionPatternSet::new();
    per_piece(&mut patterns, "test.map", "test.map");
    let stats =
        convert(&mut ctx, m, &tc, &["test.map"], &patterns).unwrap_or_else(|d| panic!("{d}"));
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    assert_eq!(calls.load(Ordering::Relaxed), 2, "{out}");
    assert_eq!(out.matches("test.split").count(), 1, "{out}");
    assert_eq!(out.matches("test.concat").count(), 1, "{out}");
    assert!(!out.contains("unrealized_conversion_cast"), "{out}");
    assert_eq!((stats.casts_removed, stats.casts_remaining), (1, 0));
}

#[test]
fn a_hook_that_builds_the_wrong_types_fails_the_conversion_at_the_op() {
    let src = r#"%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.map"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
"#;
    let (mut ctx, m) = parse(src);
    let mut tc = splitter();
    // One piece where two are asked for.
    tc.add_target_materialization(Box::new(|ctx, at, input, _to, loc| {
        let state = OperationState::new(ctx.op_name("test.half"), loc.clone())
            .operands(&[input])
            .results(&[piece()]);
        let op = ctx.create_op(state);
        at.insert(ctx, op);
        Some(vec![ctx.result(op, 0)])
    }));
    let tc = Arc::new(tc);
    let mut patterns = ConversionPatternSet::new();
    per_piece(&mut patterns, "test.map", "test.map");
    let err = convert(&mut ctx, m, &tc, &["test.map"], &patterns).unwrap_err();
    assert_eq!(
        err.message,
        "target materialization #0 built values of types (tensor<4xf32>) where (tensor<4xf32>, tensor<4xf32>) were asked for"
    );
    assert_eq!(err.loc.file_line_col_of(), Some(("in.mlir", 2, 6)));
    // The cast stays in its place: the IR is still valid.
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
}

#[test]
fn a_result_converted_to_nothing_keeps_its_users_through_a_cast_of_no_values() {
    let src = r#"%0 = "test.empty"() : () -> tensor<0x4xf32>
"test.sink"(%0) : (tensor<0x4xf32>) -> ()
"#;
    let (mut ctx, m) = parse(src);
    let tc = Arc::new(splitter());
    let mut patterns = ConversionPatternSet::new();
    patterns.add(FnConversionPattern::new(
        "empty",
        Some("test.empty"),
        1,
        |op, _, rw| {
            rw.replace_op_with_multiple(op, &[vec![]]);
            true
        },
    ));
    convert(&mut ctx, m, &tc, &["test.empty"], &patterns).unwrap_or_else(|d| panic!("{d}"));
    verify(&ctx, m).unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    assert!(
        out.contains("%0 = unrealized_conversion_cast to tensor<0x4xf32>\n  \"test.sink\"(%0)"),
        "{out}"
    );
}

#[test]
fn a_failed_region_signature_conversion_changes_nothing() {
    // The first block converts, the second cannot: neither changes.
    let src = r#""test.region"() ({
^bb0(%a: tensor<2x4xf32>):
  "test.br"()[^bb1] : () -> ()
^bb1(%b: tensor<?x4xf32>):
  "test.terminator"() : () -> ()
}) : () -> ()
"#;
    let (mut ctx, m) = parse(src);
    let mut tc = splitter();
    tc.add_conversion(|t| {
        (t.shape()
            .is_some_and(|s| s.first() == Some(&ipuc_ir::types::DYNAMIC)))
        .then_some(TypeConversion::Illegal)
    });
    let tc = Arc::new(tc);
    let mut patterns = ConversionPatternSet::new();
    patterns.add(FnConversionPattern::new(
        "region",
        Some("test.region"),
        1,
        |op, _, rw| {
            let r = rw.ctx().regions(op)[0];
            match rw.convert_region_types(r) {
                Ok(()) => {
                    rw.notify_modified(op);
                    true
                }
                Err(d) => {
                    rw.fail(d);
                    false
                }
            }
        },
    ));
    let err = convert(&mut ctx, m, &tc, &["test.region"], &patterns).unwrap_err();
    assert_eq!(
        err.message,
        "block argument type 'tensor<?x4xf32>' has no conversion"
    );
    assert_eq!(err.loc.file_line_col_of(), Some(("in.mlir", 4, 6)));
    let out = print(&ctx, m);
    assert!(out.contains("^bb0(%arg0: tensor<2x4xf32>):"), "{out}");
}

#[test]
fn a_target_materialization_is_reused_by_every_converted_user() {
    let src = r#"%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.map"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
%2 = "test.map"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
"#;
    let (mut ctx, m) = parse(src);
    let tc = Arc::new(splitter());
    let mut patterns = ConversionPatternSet::new();
    per_piece(&mut patterns, "test.map", "test.map");
    convert(&mut ctx, m, &tc, &["test.map"], &patterns).unwrap_or_else(|d| panic!("{d}"));
    let out = print(&ctx, m);
    assert_eq!(
        out.matches("unrealized_conversion_cast").count(),
        1,
        "{out}"
    );
    assert_eq!(out.matches("\"test.map\"(%1#0)").count(), 2, "{out}");
}
