//! Tests of the `nn` dialect through the public API: parsing, printing,
//! verification, type inference and constant folding.

use std::sync::Arc;

use ipuc_dialects::nn::{self, elements};
use ipuc_ir::attributes::DenseElements;
use ipuc_ir::rewrite::{apply_patterns_greedily, GreedyConfig, RewritePatternSet};
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{
    parse_source, print_op, verify, Context, DialectRegistry, Location, OpId, PrintOptions,
    SourceMgr, Type, WalkOrder,
};

fn context() -> Context {
    let mut registry = DialectRegistry::new();
    registry.register(nn::dialect());
    let mut ctx = Context::new(Arc::new(registry));
    // `test.*` ops stand in for function arguments and users.
    ctx.allow_unregistered = true;
    ctx
}

fn parse(src: &str) -> (Context, OpId) {
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "test.mlir", src)
        .unwrap_or_else(|d| panic!("{}\n{src}", SourceMgr::default().render(&d)));
    (ctx, parsed.module)
}

fn parse_verified(src: &str) -> (Context, OpId) {
    let (ctx, m) = parse(src);
    verify(&ctx, m).unwrap_or_else(|d| panic!("{}\n{src}", d.message));
    (ctx, m)
}

/// The verifier's message for `src`, which must parse.
fn verify_error(src: &str) -> String {
    let (ctx, m) = parse(src);
    match verify(&ctx, m) {
        Ok(()) => panic!("expected a verifier error for\n{src}"),
        Err(d) => d.message,
    }
}

fn print(ctx: &Context, m: OpId, generic: bool) -> String {
    print_op(
        ctx,
        m,
        &PrintOptions {
            generic,
            ..PrintOptions::default()
        },
    )
}

/// Parses, verifies and prints `src`; checks that the custom form is a fixed
/// point and that the generic form parses back to the same IR.
fn roundtrip(src: &str) -> String {
    // The custom form of what `text` parses to.
    let custom_form_of = |text: &str| {
        let (ctx, m) = parse_verified(text);
        print(&ctx, m, false)
    };
    let (ctx, m) = parse_verified(src);
    let once = print(&ctx, m, false);
    assert_eq!(
        once,
        custom_form_of(&once),
        "custom form is not a fixed point"
    );
    let generic = print(&ctx, m, true);
    assert_eq!(
        once,
        custom_form_of(&generic),
        "generic form parses to different IR:\n{generic}"
    );
    once
}

fn t(shape: &[i64]) -> Type {
    Type::tensor(shape, Type::f32())
}

fn ti(shape: &[i64], width: u32) -> Type {
    Type::tensor(shape, Type::int(width))
}

// ----- assembly -----------------------------------------------------------------

#[test]
fn custom_form_matches_the_documented_spelling() {
    let out = roundtrip(
        r#"
%0 = "test.source"() : () -> tensor<729x1152xf32>
%1 = "test.source"() : () -> tensor<1152x4304xf32>
%2 = nn.matmul %0, %1 : tensor<729x1152xf32>, tensor<1152x4304xf32> -> tensor<729x4304xf32>
%3 = nn.softmax %2 {axis = -1 : i64} : tensor<729x4304xf32> -> tensor<729x4304xf32>
"#,
    );
    assert!(
        out.contains("%2 = nn.matmul %0, %1 : tensor<729x1152xf32>, tensor<1152x4304xf32> -> tensor<729x4304xf32>"),
        "{out}"
    );
    assert!(
        out.contains(
            "%3 = nn.softmax %2 {axis = -1 : i64} : tensor<729x4304xf32> -> tensor<729x4304xf32>"
        ),
        "{out}"
    );
}

#[test]
fn every_op_round_trips_in_custom_and_generic_form() {
    let out = roundtrip(
        r#"
%a = "test.source"() : () -> tensor<2x3xf32>
%b = "test.source"() : () -> tensor<3xf32>
%i = "test.source"() : () -> tensor<2x3xi32>
%c = "test.source"() : () -> tensor<2x3xi1>
%idx = "test.source"() : () -> tensor<4xi64>
%img = "test.source"() : () -> tensor<1x3x8x8xf32>
%w = "test.source"() : () -> tensor<4x3x3x3xf32>
%q = "test.source"() : () -> tensor<2x5x8xf32>
%mask = "test.source"() : () -> tensor<2x1x5x5xf32>
%c2 = "test.source"() : () -> tensor<2xf32>
%0 = nn.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%1 = nn.sub %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%2 = nn.mul %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
%3 = nn.div %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%4 = nn.mod %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi32>
%5 = nn.mod %a, %a {fmod = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
%6 = nn.pow %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%7 = nn.max %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%8 = nn.min %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%9 = nn.sqrt %a : tensor<2x3xf32> -> tensor<2x3xf32>
%10 = nn.reciprocal %a : tensor<2x3xf32> -> tensor<2x3xf32>
%11 = nn.exp %a : tensor<2x3xf32> -> tensor<2x3xf32>
%12 = nn.log %a : tensor<2x3xf32> -> tensor<2x3xf32>
%13 = nn.tanh %a : tensor<2x3xf32> -> tensor<2x3xf32>
%14 = nn.erf %a : tensor<2x3xf32> -> tensor<2x3xf32>
%15 = nn.neg %i : tensor<2x3xi32> -> tensor<2x3xi32>
%16 = nn.abs %a : tensor<2x3xf32> -> tensor<2x3xf32>
%17 = nn.relu %a : tensor<2x3xf32> -> tensor<2x3xf32>
%18 = nn.sigmoid %a : tensor<2x3xf32> -> tensor<2x3xf32>
%19 = nn.where %c, %a, %b : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%20 = nn.cast %a {saturate = 0 : i64, to = f8E4M3FNUZ} : tensor<2x3xf32> -> tensor<2x3xf8E4M3FNUZ>
%21 = nn.equal %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
%22 = nn.less %i, %i : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x3xi1>
%23 = nn.greater %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
%24 = nn.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
%25 = nn.matmul %a, %24 : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
%26 = nn.gemm %a, %a, %c2 {alpha = 5.000000e-01 : f32, transB = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32> -> tensor<2x2xf32>
%27 = nn.linear %a, %24 : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
%28 = nn.conv2d %img, %w {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
%29 = nn.reshape %a {shape = array<i64: 3, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
%30 = nn.concat %a, %a {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
%31:2 = nn.split %a {axis = 1 : i64, sizes = array<i64: 1, 2>} : tensor<2x3xf32> -> (tensor<2x1xf32>, tensor<2x2xf32>)
%32 = nn.slice %a {axes = array<i64: 1>, ends = array<i64: -4>, starts = array<i64: -1>, steps = array<i64: -1>} : tensor<2x3xf32> -> tensor<2x3xf32>
%33 = nn.gather %a, %idx {axis = 1 : i64} : tensor<2x3xf32>, tensor<4xi64> -> tensor<2x4xf32>
%34 = nn.unsqueeze %a {axes = array<i64: 0, 3>} : tensor<2x3xf32> -> tensor<1x2x3x1xf32>
%35 = nn.squeeze %34 : tensor<1x2x3x1xf32> -> tensor<2x3xf32>
%36 = nn.expand %b {shape = array<i64: 4, 1>} : tensor<3xf32> -> tensor<4x3xf32>
%37 = nn.tile %a {repeats = array<i64: 2, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
%38 = nn.flatten %img {axis = 2 : i64} : tensor<1x3x8x8xf32> -> tensor<3x64xf32>
%39 = nn.pad %a {mode = "constant", pads = array<i64: 0, 1, 0, 2>, value = 1.000000e+00 : f32} : tensor<2x3xf32> -> tensor<2x6xf32>
%40 = nn.identity %a : tensor<2x3xf32> -> tensor<2x3xf32>
%41 = nn.reduce_mean %a {axes = array<i64: -1>, keepdims = 1 : i64} : tensor<2x3xf32> -> tensor<2x1xf32>
%42 = nn.reduce_sum %a {keepdims = 0 : i64} : tensor<2x3xf32> -> tensor<f32>
%43 = nn.reduce_max %a {axes = array<i64: 0>, keepdims = 0 : i64} : tensor<2x3xf32> -> tensor<3xf32>
%44 = nn.layer_normalization %a, %b, %b {axis = -1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%45 = nn.gelu %a {approximate = "tanh"} : tensor<2x3xf32> -> tensor<2x3xf32>
%46 = nn.attention %q, %q, %q, %mask {heads = 2 : i64, scale = 5.000000e-01 : f32} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x1x5x5xf32> -> tensor<2x5x8xf32>
%47 = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
%48 = nn.constant {note = "w"} dense<7> : tensor<2x2xi8>
"test.use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %25, %26, %27, %28, %29, %30, %31#0, %31#1, %32, %33, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf8E4M3FNUZ>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x4x4x4xf32>, tensor<3x2xf32>, tensor<4x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x64xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x1xf32>, tensor<f32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5x8xf32>, tensor<3xf32>, tensor<2x2xi8>) -> ()
"#,
    );
    assert!(
        out.contains("%41:2 = nn.split %0 {axis = 1 : i64, sizes = array<i64: 1, 2>} : tensor<2x3xf32> -> (tensor<2x1xf32>, tensor<2x2xf32>)"),
        "{out}"
    );
    assert!(
        out.contains("%58 = nn.constant {note = \"w\"} dense<7> : tensor<2x2xi8>"),
        "{out}"
    );
    assert!(out.contains("%54 = nn.layer_normalization %0, %1, %1 {axis = -1 : i64, epsilon = 1.000000e-06 : f32}"), "{out}");
    assert!(
        out.contains("%45 = nn.squeeze %44 : tensor<1x2x3x1xf32> -> tensor<2x3xf32>"),
        "{out}"
    );
    // Properties print in the generic form as `<{...}>`.
    let (ctx, m) = parse_verified(&out);
    let generic = print(&ctx, m, true);
    assert!(
        generic.contains("\"nn.gemm\"(%0, %0, %9) <{alpha = 5.000000e-01 : f32, transB = 1 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>"),
        "{generic}"
    );
}

#[test]
fn generic_form_of_registered_ops_is_accepted() {
    let (ctx, m) = parse_verified(
        r#"
%0 = "test.source"() : () -> tensor<4x8xf32>
%1 = "nn.softmax"(%0) {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
%2 = "nn.gelu"(%1) <{approximate = "none"}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
"#,
    );
    let out = print(&ctx, m, false);
    assert!(
        out.contains("%1 = nn.softmax %0 {axis = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>"),
        "{out}"
    );
    // Inherent attributes written in the discardable dictionary become properties.
    let softmax = ctx
        .collect_ops(m, WalkOrder::PreOrder)
        .into_iter()
        .find(|&o| ctx.name_str(o) == "nn.softmax")
        .unwrap();
    assert!(ctx
        .properties(softmax)
        .and_then(|p| p.get("axis"))
        .is_some());
}

#[test]
fn custom_form_parse_errors_are_reported() {
    let mut ctx = context();
    let src = "%0 = \"test.source\"() : () -> tensor<4xf32>\n%1 = nn.exp %0 : tensor<4xf32>\n";
    let Err(d) = parse_source(&mut ctx, "t.mlir", src) else {
        panic!("expected a parse error")
    };
    assert!(d.message.contains("expected '->'"), "{}", d.message);
    let mut ctx = context();
    let src = "%0 = \"test.source\"() : () -> tensor<4xf32>\n%1 = nn.add %0, %0 : tensor<4xf32> -> tensor<4xf32>\n";
    let Err(d) = parse_source(&mut ctx, "t.mlir", src) else {
        panic!("expected a parse error")
    };
    assert!(
        d.message
            .contains("2 operands present, but 1 operand types given"),
        "{}",
        d.message
    );
}

// ----- verifier -----------------------------------------------------------------

#[test]
fn verifier_reports_precise_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "%0 = \"test.source\"() : () -> tensor<729x1152xf32>\n%1 = \"test.source\"() : () -> tensor<1024x8xf32>\n%2 = nn.matmul %0, %1 : tensor<729x1152xf32>, tensor<1024x8xf32> -> tensor<729x8xf32>",
            "'nn.matmul' op contraction dimensions differ: 1152 vs 1024",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.add %0, %0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3x2xf32>",
            "'nn.add' op result #0 has type 'tensor<3x2xf32>', but the inferred type is 'tensor<2x3xf32>'",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = \"test.source\"() : () -> tensor<4xf32>\n%2 = nn.mul %0, %1 : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>",
            "'nn.mul' op shapes [2x3] and [4] are not broadcast-compatible: dimension 3 vs 4 at result axis 1",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = \"test.source\"() : () -> tensor<2x3xf16>\n%2 = nn.sub %0, %1 : tensor<2x3xf32>, tensor<2x3xf16> -> tensor<2x3xf32>",
            "'nn.sub' op operands have different element types: 'f32' vs 'f16'",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xi32>\n%1 = nn.exp %0 : tensor<2x3xi32> -> tensor<2x3xi32>",
            "'nn.exp' op operand must have a floating-point element type, but got 'i32'",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.softmax %0 {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>",
            "'nn.softmax' op axis 2 is out of range for rank 2 (expected [-2, 1])",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.softmax %0 {axis = 1 : i32} : tensor<2x3xf32> -> tensor<2x3xf32>",
            "'nn.softmax' op attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.reshape %0 {shape = array<i64: 4, 2>} : tensor<2x3xf32> -> tensor<4x2xf32>",
            "'nn.reshape' op cannot reshape [2x3] (6 elements) to [4x2] (8 elements)",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.reshape %0 : tensor<2x3xf32> -> tensor<6xf32>",
            "'nn.reshape' op requires attribute 'shape'",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.transpose %0 {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>",
            "'nn.transpose' op 'perm' [0, 0] is not a permutation of 0..2",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.gelu %0 {approximate = \"erf\"} : tensor<2x3xf32> -> tensor<2x3xf32>",
            "'nn.gelu' op 'approximate' must be \"none\" or \"tanh\", but is \"erf\"",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1:2 = nn.split %0 {axis = 1 : i64, sizes = array<i64: 1, 1>} : tensor<2x3xf32> -> (tensor<2x1xf32>, tensor<2x1xf32>)",
            "'nn.split' op 'sizes' [1, 1] sum to 2, but axis 1 has size 3",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = \"test.source\"() : () -> tensor<2xf32>\n%2 = nn.gemm %0, %0, %1, %1 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x2xf32>",
            "'nn.gemm' op requires 2 to 3 operands, but found 4",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.gemm %0, %0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x2xf32>",
            "'nn.gemm' op contraction dimensions differ: 3 vs 2",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<1x3x8x8xf32>\n%1 = \"test.source\"() : () -> tensor<4x2x3x3xf32>\n%2 = nn.conv2d %0, %1 : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>",
            "'nn.conv2d' op weight expects 2 input channels per group, but the input has 3 channels in 1 group(s)",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x5x8xf32>\n%1 = nn.attention %0, %0, %0 {heads = 3 : i64} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x5x8xf32>",
            "'nn.attention' op query hidden size 8 is not divisible by 3 heads",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = \"test.source\"() : () -> tensor<2xf32>\n%2 = nn.layer_normalization %0, %1 : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>",
            "'nn.layer_normalization' op scale of shape [2] does not broadcast to the normalized shape [3]",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.cast %0 {to = f16} : tensor<2x3xf32> -> tensor<2x3xbf16>",
            "'nn.cast' op result #0 has type 'tensor<2x3xbf16>', but the inferred type is 'tensor<2x3xf16>'",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = nn.pad %0 {mode = \"reflect\", pads = array<i64: 0, 0, 1, 1>} : tensor<2x3xf32> -> tensor<3x4xf32>",
            "'nn.pad' op 'mode' \"reflect\" is not supported (only \"constant\")",
        ),
        (
            "%0 = nn.constant dense<1.0> : tensor<2xf32>\n%1 = \"nn.constant\"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>",
            "'nn.constant' op result #0 has type 'tensor<3xf32>', but the inferred type is 'tensor<2xf32>'",
        ),
        (
            "%0 = \"test.source\"() : () -> tensor<2x3xf32>\n%1 = \"test.source\"() : () -> tensor<2x3xf32>\n%2 = nn.where %0, %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>",
            "'nn.where' op operand #0 ('condition') must be ranked tensor of i1, but got 'tensor<2x3xf32>'",
        ),
    ];
    for (src, want) in cases {
        let got = verify_error(src);
        assert_eq!(&got, want, "for\n{src}");
    }
}

// ----- type inference -------------------------------------------------------------

#[test]
fn elementwise_inference_broadcasts() {
    use nn::{
        infer_binary, infer_cast, infer_compare, infer_unary, infer_where, BinaryKind, UnaryKind,
    };
    assert_eq!(
        infer_binary(BinaryKind::Add, &t(&[2, 1, 4]), &t(&[3, 1])).unwrap(),
        t(&[2, 3, 4])
    );
    assert_eq!(
        infer_binary(BinaryKind::Pow, &t(&[]), &t(&[5])).unwrap(),
        t(&[5])
    );
    assert_eq!(
        infer_binary(BinaryKind::Mul, &t(&[DYNAMIC, 4]), &t(&[1, 4])).unwrap(),
        t(&[DYNAMIC, 4])
    );
    assert!(infer_binary(BinaryKind::Div, &t(&[3]), &t(&[4])).is_err());
    assert!(infer_binary(BinaryKind::Add, &t(&[3]), &Type::f32())
        .unwrap_err()
        .to_string()
        .contains("ranked tensor"));
    assert_eq!(
        infer_compare(&ti(&[4, 1], 32), &ti(&[5], 32)).unwrap(),
        ti(&[4, 5], 1)
    );
    assert_eq!(
        infer_unary(UnaryKind::Neg, &ti(&[3], 8)).unwrap(),
        ti(&[3], 8)
    );
    assert!(infer_unary(UnaryKind::Sqrt, &ti(&[3], 8)).is_err());
    assert_eq!(
        infer_where(&ti(&[2, 1], 1), &t(&[3]), &t(&[1])).unwrap(),
        t(&[2, 3])
    );
    assert!(infer_where(&ti(&[2], 8), &t(&[2]), &t(&[2]))
        .unwrap_err()
        .to_string()
        .contains("i1"));
    assert_eq!(
        infer_cast(&t(&[2, 2]), &Type::f16()).unwrap(),
        Type::tensor(&[2, 2], Type::f16())
    );
    assert!(infer_cast(&t(&[2]), &Type::index()).is_ok());
}

#[test]
fn contraction_inference() {
    use nn::{infer_gemm, infer_linear, infer_matmul};
    assert_eq!(
        infer_matmul(&t(&[729, 1152]), &t(&[1152, 4304])).unwrap(),
        t(&[729, 4304])
    );
    // Batch dimensions broadcast.
    assert_eq!(
        infer_matmul(&t(&[2, 1, 4, 8]), &t(&[3, 8, 5])).unwrap(),
        t(&[2, 3, 4, 5])
    );
    // 1-D operands are promoted and the promoted dimension dropped.
    assert_eq!(infer_matmul(&t(&[8]), &t(&[3, 8, 5])).unwrap(), t(&[3, 5]));
    assert_eq!(infer_matmul(&t(&[4, 8]), &t(&[8])).unwrap(), t(&[4]));
    assert_eq!(infer_matmul(&t(&[8]), &t(&[8])).unwrap(), t(&[]));
    // Mixed float formats: the result takes the lhs element type.
    let w8 = Type::tensor(&[1152, 16], Type::float(ipuc_ir::FloatKind::F8E4M3FNUZ));
    let a16 = Type::tensor(&[4, 1152], Type::f16());
    assert_eq!(
        infer_matmul(&a16, &w8).unwrap(),
        Type::tensor(&[4, 16], Type::f16())
    );
    assert_eq!(
        infer_matmul(&t(&[4, 1152]), &w8).unwrap(),
        t(&[4, 16]) // f32 lhs: f32
    );
    assert_eq!(
        infer_matmul(&t(&[4, 1152]), &t(&[1024, 8]))
            .unwrap_err()
            .to_string(),
        "contraction dimensions differ: 1152 vs 1024"
    );
    assert!(infer_matmul(&t(&[2, 4, 8]), &t(&[3, 8, 5]))
        .unwrap_err()
        .to_string()
        .contains("batch dimensions"));
    assert!(infer_matmul(&t(&[4, 8]), &ti(&[8, 2], 32)).is_err());

    assert_eq!(
        infer_gemm(&t(&[3, 2]), &t(&[4, 3]), Some(&t(&[4])), true, true).unwrap(),
        t(&[2, 4])
    );
    assert_eq!(
        infer_gemm(&t(&[2, 3]), &t(&[3, 4]), Some(&t(&[2, 1])), false, false).unwrap(),
        t(&[2, 4])
    );
    assert!(
        infer_gemm(&t(&[2, 3]), &t(&[3, 4]), Some(&t(&[3])), false, false)
            .unwrap_err()
            .to_string()
            .contains("does not broadcast")
    );
    assert!(infer_gemm(&t(&[1, 2, 3]), &t(&[3, 4]), None, false, false)
        .unwrap_err()
        .to_string()
        .contains("rank 2"));

    assert_eq!(
        infer_linear(&t(&[2, 729, 1152]), &t(&[1152, 4304]), Some(&t(&[4304]))).unwrap(),
        t(&[2, 729, 4304])
    );
    assert!(infer_linear(&t(&[2, 8]), &t(&[8, 4]), Some(&t(&[8])))
        .unwrap_err()
        .to_string()
        .contains("bias must have shape [4]"));
}

#[test]
fn fp8_contractions_give_f16() {
    use ipuc_ir::FloatKind::{F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ};
    use nn::{contraction_element, infer_gemm, infer_linear, infer_matmul};
    let f8 = |shape: &[i64]| Type::tensor(shape, Type::float(F8E4M3FNUZ));
    let h = |shape: &[i64]| Type::tensor(shape, Type::f16());
    // FP8 on both sides, or an FP8 lhs with f16 weights: f16, never FP8
    // (FP8 is a storage format; the FP8 AMP's products come out in f16).
    assert_eq!(
        infer_matmul(&f8(&[4, 64]), &f8(&[64, 8])).unwrap(),
        h(&[4, 8])
    );
    assert_eq!(
        infer_matmul(&f8(&[2, 4, 64]), &h(&[64, 8])).unwrap(),
        h(&[2, 4, 8])
    );
    assert_eq!(
        infer_linear(&f8(&[3, 4, 64]), &f8(&[64, 8]), Some(&h(&[8]))).unwrap(),
        h(&[3, 4, 8])
    );
    assert_eq!(
        infer_gemm(&f8(&[64, 4]), &f8(&[8, 64]), Some(&h(&[8])), true, true).unwrap(),
        h(&[4, 8])
    );
    // Every 8-bit float format; wider formats keep their own type.
    for k in [F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ] {
        assert_eq!(contraction_element(&Type::float(k)), Type::f16());
    }
    for e in [
        Type::f16(),
        Type::f32(),
        Type::float(ipuc_ir::FloatKind::BF16),
    ] {
        assert_eq!(contraction_element(&e), e);
    }
    assert_eq!(contraction_element(&Type::int(8)), Type::int(8));
}

#[test]
fn conv_inference() {
    use nn::{infer_conv2d, Conv2dParams};
    // SigLIP patch embedding: 14x14 patches, stride 14.
    let p = Conv2dParams {
        strides: [14, 14],
        ..Conv2dParams::default()
    };
    assert_eq!(
        infer_conv2d(
            &t(&[1, 3, 384, 384]),
            &t(&[1152, 3, 14, 14]),
            Some(&t(&[1152])),
            &p
        )
        .unwrap(),
        t(&[1, 1152, 27, 27])
    );
    let p = Conv2dParams {
        strides: [2, 1],
        pads: [1, 0, 1, 2],
        dilations: [2, 1],
        groups: 2,
    };
    // H: (7 + 2 - 2*2 - 1) / 2 + 1 = 3; W: (5 + 2 - 3) / 1 + 1 = 5.
    assert_eq!(
        infer_conv2d(&t(&[2, 4, 7, 5]), &t(&[6, 2, 3, 3]), None, &p).unwrap(),
        t(&[2, 6, 3, 5])
    );
    assert!(infer_conv2d(
        &t(&[1, 3, 2, 2]),
        &t(&[4, 3, 3, 3]),
        None,
        &Conv2dParams::default()
    )
    .unwrap_err()
    .to_string()
    .contains("kernel extent 3 exceeds the padded input extent 2 along H"));
    let bad = Conv2dParams {
        groups: 2,
        ..Conv2dParams::default()
    };
    assert!(
        infer_conv2d(&t(&[1, 3, 8, 8]), &t(&[4, 1, 3, 3]), None, &bad)
            .unwrap_err()
            .to_string()
            .contains("not divisible by groups 2")
    );
}

#[test]
fn shape_op_inference() {
    use nn::*;
    assert_eq!(infer_reshape(&t(&[2, 3, 4]), &[6, 4]).unwrap(), t(&[6, 4]));
    assert!(infer_reshape(&t(&[2, 3]), &[-1, 3])
        .unwrap_err()
        .to_string()
        .contains("static"));
    assert_eq!(
        onnx_reshape_shape(&[2, 3, 4], &[0, -1], false).unwrap(),
        vec![2, 12]
    );
    assert_eq!(
        onnx_reshape_shape(&[2, 3, 4], &[4, 0, -1], false).unwrap(),
        vec![4, 3, 2]
    );
    assert_eq!(
        onnx_reshape_shape(&[0, 3], &[0, 3], true).unwrap(),
        vec![0, 3]
    );
    assert!(onnx_reshape_shape(&[2, 3], &[-1, -1], false).is_err());
    assert!(onnx_reshape_shape(&[2, 3], &[4, -1], false).is_err());
    // Element counts past 64 bits (crafted models) are errors, not overflows.
    assert!(onnx_reshape_shape(&[1 << 40, 1 << 40], &[-1], false)
        .unwrap_err()
        .to_string()
        .contains("64 bits"));
    assert!(infer_reshape(&t(&[1 << 40, 1 << 40]), &[1]).is_err());

    assert_eq!(
        infer_transpose(&t(&[2, 3, 4]), Some(&[2, 0, 1])).unwrap(),
        t(&[4, 2, 3])
    );
    assert_eq!(
        infer_transpose(&t(&[2, 3, 4]), None).unwrap(),
        t(&[4, 3, 2])
    );
    assert!(infer_transpose(&t(&[2, 3]), Some(&[0])).is_err());

    assert_eq!(
        infer_concat(&[&t(&[2, 3]), &t(&[2, 5])], -1).unwrap(),
        t(&[2, 8])
    );
    assert!(infer_concat(&[&t(&[2, 3]), &t(&[3, 5])], 1)
        .unwrap_err()
        .to_string()
        .contains("outside axis 1"));
    assert!(infer_concat(&[], 0).is_err());

    assert_eq!(
        infer_split(&t(&[6, 2]), 0, &[1, 2, 3]).unwrap(),
        vec![t(&[1, 2]), t(&[2, 2]), t(&[3, 2])]
    );

    let slice =
        |starts: &[i64], ends: &[i64], axes: Option<&[i64]>, steps: Option<&[i64]>| SliceParams {
            starts: starts.to_vec(),
            ends: ends.to_vec(),
            axes: axes.map(<[i64]>::to_vec),
            steps: steps.map(<[i64]>::to_vec),
        };
    assert_eq!(
        infer_slice(&t(&[10, 4]), &slice(&[2], &[8], None, None)).unwrap(),
        t(&[6, 4])
    );
    // Clamping of huge ends (ONNX exporters write INT64_MAX).
    assert_eq!(
        infer_slice(&t(&[10, 4]), &slice(&[1], &[i64::MAX], Some(&[1]), None)).unwrap(),
        t(&[10, 3])
    );
    assert_eq!(
        infer_slice(&t(&[10]), &slice(&[0], &[10], None, Some(&[3]))).unwrap(),
        t(&[4])
    );
    // Reverse the whole axis.
    assert_eq!(
        infer_slice(&t(&[10]), &slice(&[-1], &[i64::MIN], None, Some(&[-1]))).unwrap(),
        t(&[10])
    );
    assert_eq!(
        infer_slice(&t(&[10]), &slice(&[5], &[2], None, None)).unwrap(),
        t(&[0])
    );
    assert!(infer_slice(&t(&[10]), &slice(&[0], &[1], None, Some(&[0])))
        .unwrap_err()
        .to_string()
        .contains("zero"));
    // Extreme steps take one element; they never overflow the count.
    for step in [i64::MAX, i64::MIN] {
        let (start, end) = if step > 0 { (0, 10) } else { (9, -11) };
        assert_eq!(
            infer_slice(&t(&[10]), &slice(&[start], &[end], None, Some(&[step]))).unwrap(),
            t(&[1]),
            "step {step}"
        );
    }
    // Sizes past 64 bits (crafted models) are errors, not overflows.
    let huge = i64::MAX / 2 + 1;
    assert!(infer_concat(&[&t(&[huge]), &t(&[huge])], 0).is_err());
    assert!(infer_split(&t(&[4]), 0, &[i64::MAX, 1]).is_err());
    assert!(infer_tile(&t(&[huge]), &[2]).is_err());
    assert!(infer_pad(&t(&[huge]), &[huge, huge]).is_err());

    assert_eq!(
        infer_gather(&t(&[5, 4, 3]), &ti(&[2, 7], 64), 1).unwrap(),
        t(&[5, 2, 7, 3])
    );
    assert_eq!(infer_gather(&t(&[5, 4]), &ti(&[], 64), 0).unwrap(), t(&[4]));
    assert!(infer_gather(&t(&[5]), &t(&[2]), 0)
        .unwrap_err()
        .to_string()
        .contains("integers"));

    assert_eq!(infer_squeeze(&t(&[1, 3, 1]), None).unwrap(), t(&[3]));
    assert_eq!(
        infer_squeeze(&t(&[1, 3, 1]), Some(&[-1])).unwrap(),
        t(&[1, 3])
    );
    assert!(infer_squeeze(&t(&[1, 3]), Some(&[1]))
        .unwrap_err()
        .to_string()
        .contains("size 3"));
    assert_eq!(
        infer_unsqueeze(&t(&[3, 4]), &[0, -1]).unwrap(),
        t(&[1, 3, 4, 1])
    );
    assert_eq!(infer_unsqueeze(&t(&[3, 4]), &[1]).unwrap(), t(&[3, 1, 4]));

    assert_eq!(
        infer_expand(&t(&[3, 1]), &[2, 1, 6]).unwrap(),
        t(&[2, 3, 6])
    );
    assert!(infer_expand(&t(&[3]), &[4]).is_err());
    assert_eq!(infer_tile(&t(&[2, 3]), &[3, 2]).unwrap(), t(&[6, 6]));
    assert!(infer_tile(&t(&[2, 3]), &[3]).is_err());
    assert_eq!(infer_flatten(&t(&[2, 3, 4]), 0).unwrap(), t(&[1, 24]));
    assert_eq!(infer_flatten(&t(&[2, 3, 4]), 3).unwrap(), t(&[24, 1]));
    assert_eq!(infer_flatten(&t(&[2, 3, 4]), -1).unwrap(), t(&[6, 4]));
    assert!(infer_flatten(&t(&[2, 3, 4]), 4).is_err());
    assert_eq!(infer_pad(&t(&[2, 3]), &[1, 0, 1, -1]).unwrap(), t(&[4, 2]));
    assert!(infer_pad(&t(&[2, 3]), &[0, 0, 0, -4])
        .unwrap_err()
        .to_string()
        .contains("negative size"));
}

#[test]
fn reduction_and_norm_inference() {
    use nn::*;
    assert_eq!(
        infer_reduce(&t(&[2, 3, 4]), Some(&[1]), true).unwrap(),
        t(&[2, 1, 4])
    );
    assert_eq!(
        infer_reduce(&t(&[2, 3, 4]), Some(&[-1, 0]), false).unwrap(),
        t(&[3])
    );
    assert_eq!(infer_reduce(&t(&[2, 3]), None, false).unwrap(), t(&[]));
    assert_eq!(
        infer_reduce(&t(&[2, 3]), Some(&[]), true).unwrap(),
        t(&[1, 1])
    );
    assert!(infer_reduce(&t(&[2, 3]), Some(&[1, -1]), true).is_err());

    assert_eq!(infer_softmax(&t(&[4, 8]), -1).unwrap(), t(&[4, 8]));
    assert!(infer_softmax(&ti(&[4], 32), 0).is_err());
    assert_eq!(
        infer_layer_normalization(&t(&[2, 729, 1152]), &t(&[1152]), Some(&t(&[1152])), -1).unwrap(),
        t(&[2, 729, 1152])
    );
    assert_eq!(
        infer_layer_normalization(&t(&[2, 3, 4]), &t(&[3, 4]), None, 1).unwrap(),
        t(&[2, 3, 4])
    );
    assert!(infer_layer_normalization(&t(&[2, 3, 4]), &t(&[3]), None, -1).is_err());
    assert_eq!(infer_gelu(&t(&[3])).unwrap(), t(&[3]));

    assert_eq!(
        infer_attention(
            &t(&[1, 729, 1152]),
            &t(&[1, 729, 1152]),
            &t(&[1, 729, 1152]),
            None,
            16
        )
        .unwrap(),
        t(&[1, 729, 1152])
    );
    // Cross attention with a different value width and a broadcast mask.
    assert_eq!(
        infer_attention(
            &t(&[2, 4, 8]),
            &t(&[2, 6, 8]),
            &t(&[2, 6, 4]),
            Some(&t(&[4, 6])),
            2
        )
        .unwrap(),
        t(&[2, 4, 4])
    );
    assert!(
        infer_attention(&t(&[2, 4, 8]), &t(&[2, 6, 8]), &t(&[2, 5, 8]), None, 2)
            .unwrap_err()
            .to_string()
            .contains("sequence lengths differ: 6 vs 5")
    );
    assert!(infer_attention(
        &t(&[2, 4, 8]),
        &t(&[2, 6, 8]),
        &t(&[2, 6, 8]),
        Some(&t(&[3, 6])),
        2
    )
    .unwrap_err()
    .to_string()
    .contains("does not broadcast"));
    assert!((attention_scale(None, 72) - 1.0 / 72f32.sqrt()).abs() < 1e-9);
}

// ----- builders -------------------------------------------------------------------

#[test]
fn builders_infer_result_types_and_report_errors() {
    let (mut ctx, m) = parse_verified(
        "%0 = \"test.source\"() : () -> tensor<4x8xf32>\n%1 = \"test.source\"() : () -> tensor<8x3xf32>\n%2 = \"test.source\"() : () -> tensor<3xf32>\n",
    );
    let block = ctx.entry_block(ctx.regions(m)[0]).unwrap();
    let ops = ctx.block_ops_vec(block);
    let (x, w, b) = (
        ctx.result(ops[0], 0),
        ctx.result(ops[1], 0),
        ctx.result(ops[2], 0),
    );
    let loc = Location::unknown();
    let state = nn::MatmulOp::build(&ctx, x, w, loc.clone()).unwrap();
    let mm = ctx.create_op(state);
    ctx.append_op(block, mm);
    assert_eq!(*ctx.value_type(ctx.result(mm, 0)), t(&[4, 3]));
    let add = ctx.create_op(
        nn::BinaryOp::build(&ctx, nn::BinaryKind::Add, ctx.result(mm, 0), b, loc.clone()).unwrap(),
    );
    ctx.append_op(block, add);
    let sm =
        ctx.create_op(nn::SoftmaxOp::build(&ctx, ctx.result(add, 0), -1, loc.clone()).unwrap());
    ctx.append_op(block, sm);
    let split = ctx
        .create_op(nn::SplitOp::build(&ctx, ctx.result(sm, 0), 1, &[1, 2], loc.clone()).unwrap());
    ctx.append_op(block, split);
    verify(&ctx, m).unwrap();
    let wrapped = nn::SplitOp::cast(&ctx, split).unwrap();
    assert_eq!(wrapped.axis(&ctx), 1);
    assert_eq!(wrapped.sizes(&ctx), vec![1, 2]);
    assert_eq!(nn::SoftmaxOp::cast(&ctx, sm).unwrap().axis(&ctx), 1);
    assert_eq!(
        nn::BinaryOp::cast(&ctx, add).unwrap().kind(&ctx),
        nn::BinaryKind::Add
    );
    assert!(nn::MatmulOp::cast(&ctx, add).is_none());
    assert_eq!(
        nn::infer_result_types(&ctx, mm).unwrap().unwrap(),
        vec![t(&[4, 3])]
    );

    let Err(err) = nn::MatmulOp::build(&ctx, w, w, loc) else {
        panic!("expected an inference error")
    };
    assert_eq!(
        err.message,
        "'nn.matmul' op contraction dimensions differ: 3 vs 8"
    );
}

// ----- folding --------------------------------------------------------------------

/// Folds `src` and returns, for each operand of the final `test.use`, the
/// constant it became.
fn fold(src: &str) -> (Context, Vec<DenseElements>) {
    let (mut ctx, m) = parse_verified(src);
    let patterns = RewritePatternSet::new().freeze();
    let stats = apply_patterns_greedily(&mut ctx, m, &patterns, &GreedyConfig::default());
    assert!(stats.converged, "{stats:?}");
    verify(&ctx, m).unwrap_or_else(|d| panic!("{}", d.message));
    let user = ctx
        .collect_ops(m, WalkOrder::PreOrder)
        .into_iter()
        .find(|&o| ctx.name_str(o) == "test.use")
        .expect("a test.use op");
    let consts = ctx
        .operands(user)
        .iter()
        .map(|&v| {
            let def = ctx.defining_op(v).expect("folded to an op result");
            assert_eq!(
                ctx.name_str(def),
                "nn.constant",
                "operand not folded:\n{}",
                print(&ctx, m, false)
            );
            elements::dense_data(ctx.attr(def, "value").unwrap()).unwrap()
        })
        .collect();
    (ctx, consts)
}

fn f(d: &DenseElements) -> Vec<f64> {
    elements::floats(d).unwrap()
}
/// Bit patterns, so that NaNs compare equal.
fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}
fn i(d: &DenseElements) -> Vec<i128> {
    elements::ints(d).unwrap()
}
fn r32(v: f64) -> f64 {
    v as f32 as f64
}

#[test]
fn folds_elementwise_arithmetic_with_broadcasting() {
    let (_, c) = fold(
        r#"
%a = nn.constant dense<[[1.0, -2.0, 3.0], [4.0, 5.5, -6.0]]> : tensor<2x3xf32>
%b = nn.constant dense<[10.0, 0.5, -3.0]> : tensor<3xf32>
%ia = nn.constant dense<[7, -7, 7, -7]> : tensor<4xi32>
%ib = nn.constant dense<[2, 2, -2, -2]> : tensor<4xi32>
%0 = nn.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%1 = nn.sub %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%2 = nn.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%3 = nn.div %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%4 = nn.max %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%5 = nn.pow %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
%6 = nn.div %ia, %ib : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
%7 = nn.mod %ia, %ib : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
%8 = nn.mod %ia, %ib {fmod = 1 : i64} : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
%9 = nn.mod %a, %b {fmod = 1 : i64} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
"test.use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<2x3xf32>) -> ()
"#,
    );
    let a = [1.0, -2.0, 3.0, 4.0, 5.5, -6.0];
    let b = [10.0, 0.5, -3.0];
    let expect =
        |op: fn(f64, f64) -> f64| -> Vec<f64> { (0..6).map(|k| r32(op(a[k], b[k % 3]))).collect() };
    assert_eq!(f(&c[0]), expect(|x, y| x + y));
    assert_eq!(f(&c[1]), expect(|x, y| x - y));
    assert_eq!(f(&c[2]), expect(|x, y| x * y));
    assert_eq!(f(&c[3]), expect(|x, y| x / y));
    assert_eq!(f(&c[4]), expect(f64::max));
    assert_eq!(bits(&f(&c[5])), bits(&expect(f64::powf)));
    // Integer division truncates; mod follows the divisor's sign, fmod the dividend's.
    assert_eq!(i(&c[6]), vec![3, -3, -3, 3]);
    assert_eq!(i(&c[7]), vec![1, 1, -1, -1]);
    assert_eq!(i(&c[8]), vec![1, -1, 1, -1]);
    assert_eq!(f(&c[9]), expect(|x, y| x % y));
}

#[test]
fn folds_unary_compare_where_and_cast() {
    let (_, c) = fold(
        r#"
%a = nn.constant dense<[-1.5, 0.0, 0.25, 2.0]> : tensor<4xf32>
%b = nn.constant dense<[0.0, 0.0, 1.0, 1.0]> : tensor<4xf32>
%big = nn.constant dense<[1000.0, -1000.0, 3.7, -2.9]> : tensor<4xf32>
%n = nn.constant dense<[-3, 0, 5, 127]> : tensor<4xi8>
%0 = nn.exp %a : tensor<4xf32> -> tensor<4xf32>
%1 = nn.erf %a : tensor<4xf32> -> tensor<4xf32>
%2 = nn.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
%3 = nn.relu %a : tensor<4xf32> -> tensor<4xf32>
%4 = nn.neg %n : tensor<4xi8> -> tensor<4xi8>
%5 = nn.greater %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
%6 = nn.where %5, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
%7 = nn.cast %big {to = f8E4M3FNUZ} : tensor<4xf32> -> tensor<4xf8E4M3FNUZ>
%8 = nn.cast %big {saturate = 0 : i64, to = f8E4M3FNUZ} : tensor<4xf32> -> tensor<4xf8E4M3FNUZ>
%9 = nn.cast %big {to = i32} : tensor<4xf32> -> tensor<4xi32>
%10 = nn.cast %n {to = f16} : tensor<4xi8> -> tensor<4xf16>
%11 = nn.cast %n {to = i1} : tensor<4xi8> -> tensor<4xi1>
%12 = nn.sqrt %b : tensor<4xf32> -> tensor<4xf32>
"test.use"(%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xf8E4M3FNUZ>, tensor<4xf8E4M3FNUZ>, tensor<4xi32>, tensor<4xf16>, tensor<4xi1>, tensor<4xf32>) -> ()
"#,
    );
    let a = [-1.5f64, 0.0, 0.25, 2.0];
    assert_eq!(f(&c[0]), a.iter().map(|x| r32(x.exp())).collect::<Vec<_>>());
    // erf reference values (Abramowitz & Stegun tables), to f32 precision.
    let erf_ref = [
        -0.966_105_146_475_310_7,
        0.0,
        0.276_326_390_168_236_9,
        0.995_322_265_018_952_7,
    ];
    for (got, want) in f(&c[1]).iter().zip(erf_ref) {
        assert!((got - want).abs() < 1e-7, "{got} vs {want}");
    }
    assert_eq!(
        f(&c[2]),
        a.iter()
            .map(|x| r32(1.0 / (1.0 + (-x).exp())))
            .collect::<Vec<_>>()
    );
    assert_eq!(f(&c[3]), vec![0.0, 0.0, 0.25, 2.0]);
    // -(-128) wraps; 127 negates exactly.
    assert_eq!(i(&c[4]), vec![3, 0, -5, -127]);
    assert_eq!(i(&c[5]), vec![0, 0, 0, 1]);
    assert_eq!(f(&c[6]), vec![0.0, 0.0, 1.0, 2.0]);
    // F143 (f8E4M3FNUZ): largest finite 240; saturation clamps, otherwise NaN.
    // 3.7 rounds to 3.75 (steps of 0.25 in [2, 4)), -2.9 to -3.0.
    assert_eq!(f(&c[7]), vec![240.0, -240.0, 3.75, -3.0]);
    let unsaturated = f(&c[8]);
    assert!(unsaturated[0].is_nan() && unsaturated[1].is_nan());
    assert_eq!(&unsaturated[2..], &[3.75, -3.0]);
    assert_eq!(i(&c[9]), vec![1000, -1000, 3, -2]);
    assert_eq!(f(&c[10]), vec![-3.0, 0.0, 5.0, 127.0]);
    assert_eq!(i(&c[11]), vec![1, 0, 1, 1]);
    assert_eq!(f(&c[12]), vec![0.0, 0.0, 1.0, 1.0]);
}

#[test]
fn folds_shape_ops_on_constants() {
    let (_, c) = fold(
        r#"
%a = nn.constant dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi32>
%idx = nn.constant dense<[2, -3, 1]> : tensor<3xi64>
%ridx = nn.constant dense<[-2, 1, -1]> : tensor<3xi64>
%0 = nn.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32>
%1 = nn.reshape %a {shape = array<i64: 3, 2>} : tensor<2x3xi32> -> tensor<3x2xi32>
%2 = nn.slice %a {axes = array<i64: 1>, ends = array<i64: -9223372036854775808>, starts = array<i64: -1>, steps = array<i64: -2>} : tensor<2x3xi32> -> tensor<2x2xi32>
%3 = nn.concat %a, %a {axis = 0 : i64} : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<4x3xi32>
%4 = nn.concat %a, %a {axis = 1 : i64} : tensor<2x3xi32>, tensor<2x3xi32> -> tensor<2x6xi32>
%5:2 = nn.split %a {axis = 1 : i64, sizes = array<i64: 2, 1>} : tensor<2x3xi32> -> (tensor<2x2xi32>, tensor<2x1xi32>)
%6 = nn.gather %a, %idx {axis = 1 : i64} : tensor<2x3xi32>, tensor<3xi64> -> tensor<2x3xi32>
%7 = nn.unsqueeze %a {axes = array<i64: 1>} : tensor<2x3xi32> -> tensor<2x1x3xi32>
%8 = nn.squeeze %7 {axes = array<i64: 1>} : tensor<2x1x3xi32> -> tensor<2x3xi32>
%9 = nn.expand %5#1 {shape = array<i64: 2, 4>} : tensor<2x1xi32> -> tensor<2x4xi32>
%10 = nn.tile %a {repeats = array<i64: 1, 2>} : tensor<2x3xi32> -> tensor<2x6xi32>
%11 = nn.pad %a {pads = array<i64: 1, 0, 0, 1>, value = 9.000000e+00 : f32} : tensor<2x3xi32> -> tensor<3x4xi32>
%12 = nn.flatten %7 {axis = 2 : i64} : tensor<2x1x3xi32> -> tensor<2x3xi32>
%13 = nn.gather %a, %ridx {axis = 0 : i64} : tensor<2x3xi32>, tensor<3xi64> -> tensor<3x3xi32>
"test.use"(%0, %1, %2, %3, %4, %5#0, %5#1, %6, %8, %9, %10, %11, %12, %13) : (tensor<3x2xi32>, tensor<3x2xi32>, tensor<2x2xi32>, tensor<4x3xi32>, tensor<2x6xi32>, tensor<2x2xi32>, tensor<2x1xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x4xi32>, tensor<2x6xi32>, tensor<3x4xi32>, tensor<2x3xi32>, tensor<3x3xi32>) -> ()
"#,
    );
    // A reference evaluation in plain Rust over a[r][c] = 3r + c.
    let a = |r: usize, col: usize| (3 * r + col) as i128;
    assert_eq!(i(&c[0]), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(i(&c[1]), (0..6).collect::<Vec<_>>());
    assert_eq!(i(&c[2]), vec![a(0, 2), a(0, 0), a(1, 2), a(1, 0)]);
    assert_eq!(i(&c[3]), vec![0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]);
    assert_eq!(i(&c[4]), vec![0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
    assert_eq!(i(&c[5]), vec![0, 1, 3, 4]);
    assert_eq!(i(&c[6]), vec![2, 5]);
    // Negative indices count from the end: -3 is column 0.
    assert_eq!(i(&c[7]), vec![2, 0, 1, 5, 3, 4]);
    assert_eq!(i(&c[8]), (0..6).collect::<Vec<_>>());
    assert_eq!(i(&c[9]), vec![2, 2, 2, 2, 5, 5, 5, 5]);
    assert_eq!(i(&c[10]), vec![0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
    assert_eq!(i(&c[11]), vec![9, 9, 9, 9, 0, 1, 2, 9, 3, 4, 5, 9]);
    assert_eq!(i(&c[12]), (0..6).collect::<Vec<_>>());
    // Rows -2, 1, -1 of a 2-row tensor are rows 0, 1, 1.
    let rows: Vec<i128> = [0usize, 1, 1]
        .iter()
        .flat_map(|&r| (0..3).map(move |col| a(r, col)))
        .collect();
    assert_eq!(i(&c[13]), rows);
}

#[test]
fn out_of_range_gather_and_integer_division_by_zero_stay_unfolded() {
    let (mut ctx, m) = parse_verified(
        r#"
%a = nn.constant dense<[1, 2, 3]> : tensor<3xi32>
%z = nn.constant dense<0> : tensor<3xi32>
%idx = nn.constant dense<[3]> : tensor<1xi64>
%0 = nn.gather %a, %idx {axis = 0 : i64} : tensor<3xi32>, tensor<1xi64> -> tensor<1xi32>
%1 = nn.div %a, %z : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
"test.use"(%0, %1) : (tensor<1xi32>, tensor<3xi32>) -> ()
"#,
    );
    apply_patterns_greedily(
        &mut ctx,
        m,
        &RewritePatternSet::new().freeze(),
        &GreedyConfig::default(),
    );
    let out = print(&ctx, m, false);
    assert!(out.contains("nn.gather"), "{out}");
    assert!(out.contains("nn.div"), "{out}");
}

#[test]
fn folds_reductions_and_splats() {
    let (_, c) = fold(
        r#"
%a = nn.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]]> : tensor<2x3xf32>
%s = nn.constant dense<2.5> : tensor<2x3xf32>
%0 = nn.reduce_sum %a {axes = array<i64: 1>, keepdims = 0 : i64} : tensor<2x3xf32> -> tensor<2xf32>
%1 = nn.reduce_mean %a {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<1x3xf32>
%2 = nn.reduce_max %a : tensor<2x3xf32> -> tensor<1x1xf32>
%3 = nn.mul %s, %s : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
%4 = nn.transpose %s {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
"test.use"(%0, %1, %2, %3, %4) : (tensor<2xf32>, tensor<1x3xf32>, tensor<1x1xf32>, tensor<2x3xf32>, tensor<3x2xf32>) -> ()
"#,
    );
    assert_eq!(f(&c[0]), vec![6.0, 16.0]);
    assert_eq!(f(&c[1]), vec![2.5, 3.5, 5.0]);
    assert_eq!(f(&c[2]), vec![7.0]);
    // Splat inputs give splat results.
    assert!(c[3].splat && f(&c[3]) == vec![6.25; 6]);
    assert!(c[4].splat && f(&c[4]) == vec![2.5; 6]);
}

#[test]
fn no_op_shape_ops_fold_to_their_operand() {
    let (mut ctx, m) = parse_verified(
        r#"
%x = "test.source"() : () -> tensor<2x3xf32>
%0 = nn.identity %x : tensor<2x3xf32> -> tensor<2x3xf32>
%1 = nn.transpose %0 {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
%2 = nn.reshape %1 {shape = array<i64: 2, 3>} : tensor<2x3xf32> -> tensor<2x3xf32>
%3 = nn.slice %2 {ends = array<i64: 100>, starts = array<i64: 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
%4 = nn.cast %3 {to = f32} : tensor<2x3xf32> -> tensor<2x3xf32>
%5 = nn.pad %4 {pads = array<i64: 0, 0, 0, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
%6 = nn.concat %5 {axis = 0 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
%7 = nn.tile %6 {repeats = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
%8 = nn.slice %7 {ends = array<i64: -100>, starts = array<i64: -1>, steps = array<i64: -1>} : tensor<2x3xf32> -> tensor<2x3xf32>
"test.use"(%7, %8) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
"#,
    );
    apply_patterns_greedily(
        &mut ctx,
        m,
        &RewritePatternSet::new().freeze(),
        &GreedyConfig::default(),
    );
    verify(&ctx, m).unwrap();
    let out = print(&ctx, m, false);
    // Everything but the reversing slice disappears.
    assert!(
        out.contains("%1 = nn.slice %0 {ends = array<i64: -100>"),
        "{out}"
    );
    assert!(out.contains("\"test.use\"(%0, %1)"), "{out}");
    assert_eq!(out.matches("nn.").count(), 1, "{out}");
}

#[test]
fn large_constants_are_not_folded() {
    let n = nn::FOLD_ELEMENT_LIMIT as i64 + 1;
    let src = format!(
        "%a = nn.constant dense<1.0> : tensor<{n}xf32>\n%0 = nn.add %a, %a : tensor<{n}xf32>, tensor<{n}xf32> -> tensor<{n}xf32>\n\"test.use\"(%0) : (tensor<{n}xf32>) -> ()\n"
    );
    let (mut ctx, m) = parse_verified(&src);
    apply_patterns_greedily(
        &mut ctx,
        m,
        &RewritePatternSet::new().freeze(),
        &GreedyConfig::default(),
    );
    assert!(print(&ctx, m, false).contains("nn.add"));
}

#[test]
fn folds_through_dense_resources() {
    let (_, c) = fold(
        r#"
%w = nn.constant dense_resource<w0> : tensor<2x2xf32>
%0 = nn.transpose %w {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
"test.use"(%0) : (tensor<2x2xf32>) -> ()
{-#
  dialect_resources: {
    builtin: {
      w0: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
"#,
    );
    assert_eq!(f(&c[0]), vec![1.0, 3.0, 2.0, 4.0]);
}

// ----- a realistic graph ---------------------------------------------------------

#[test]
fn transformer_block_fragment_verifies() {
    let (ctx, m) = parse_verified(
        r#"
%x = "test.source"() : () -> tensor<1x729x1152xf32>
%gamma = nn.constant dense<1.0> : tensor<1152xf32>
%beta = nn.constant dense<0.0> : tensor<1152xf32>
%w = nn.constant dense<0.01> : tensor<1152x4304xf32>
%b = nn.constant dense<0.0> : tensor<4304xf32>
%0 = nn.layer_normalization %x, %gamma, %beta {axis = -1 : i64, epsilon = 9.99999997E-7 : f32} : tensor<1x729x1152xf32>, tensor<1152xf32>, tensor<1152xf32> -> tensor<1x729x1152xf32>
%1 = nn.matmul %0, %w : tensor<1x729x1152xf32>, tensor<1152x4304xf32> -> tensor<1x729x4304xf32>
%2 = nn.add %1, %b : tensor<1x729x4304xf32>, tensor<4304xf32> -> tensor<1x729x4304xf32>
%3 = nn.gelu %2 {approximate = "tanh"} : tensor<1x729x4304xf32> -> tensor<1x729x4304xf32>
%4 = nn.softmax %3 {axis = -1 : i64} : tensor<1x729x4304xf32> -> tensor<1x729x4304xf32>
"test.use"(%4) : (tensor<1x729x4304xf32>) -> ()
"#,
    );
    let ops = ctx.collect_ops(m, WalkOrder::PreOrder);
    let ln = ops
        .iter()
        .find_map(|&o| nn::LayerNormalizationOp::cast(&ctx, o))
        .unwrap();
    assert_eq!(ln.axis(&ctx), 2);
    assert!((ln.epsilon(&ctx) - 1e-6).abs() < 1e-12);
    let gelu = ops.iter().find_map(|&o| nn::GeluOp::cast(&ctx, o)).unwrap();
    assert_eq!(gelu.approximate(&ctx), nn::GeluApproximation::Tanh);
    for &o in &ops {
        if ctx.name_str(o).starts_with("nn.") {
            let inferred = nn::infer_result_types(&ctx, o).unwrap().unwrap();
            assert_eq!(
                inferred[0],
                *ctx.value_type(ctx.result(o, 0)),
                "{}",
                ctx.name_str(o)
            );
        }
    }
}

#[test]
fn dialect_registers_traits() {
    use ipuc_ir::Traits;
    let d = nn::dialect();
    let get = |n: &str| {
        d.ops
            .iter()
            .find(|o| o.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    for op in &d.ops {
        assert!(op.traits.contains(Traits::PURE), "{} is not Pure", op.name);
        assert!(
            (op.print.is_some() && op.parse.is_some()) || op.format_source.is_some(),
            "{} has no custom form",
            op.name
        );
        assert!(op.verify.is_some(), "{} has no verifier", op.name);
    }
    for n in ["nn.add", "nn.mul", "nn.max", "nn.min", "nn.equal"] {
        assert!(get(n).traits.contains(Traits::COMMUTATIVE), "{n}");
    }
    for n in ["nn.sub", "nn.div", "nn.less", "nn.matmul"] {
        assert!(!get(n).traits.contains(Traits::COMMUTATIVE), "{n}");
    }
    assert!(get("nn.constant").traits.contains(Traits::CONSTANT_LIKE));
    assert!(get("nn.exp")
        .traits
        .contains(Traits::SAME_OPERANDS_AND_RESULT_TYPE));
    assert!(d.materialize_constant.is_some());
    assert_eq!(d.ops.len(), 84);
}

#[test]
fn builders_for_ops_with_parameters() {
    let (mut ctx, m) = parse_verified(
        "%0 = \"test.source\"() : () -> tensor<1x3x8x8xf32>\n%1 = \"test.source\"() : () -> tensor<4x3x3x3xf32>\n%2 = \"test.source\"() : () -> tensor<2x5x8xf32>\n%3 = \"test.source\"() : () -> tensor<3x2xf32>\n",
    );
    let block = ctx.entry_block(ctx.regions(m)[0]).unwrap();
    let src: Vec<_> = ctx
        .block_ops_vec(block)
        .iter()
        .map(|&o| ctx.result(o, 0))
        .collect();
    let loc = Location::unknown();
    let conv = nn::Conv2dParams {
        strides: [2, 2],
        pads: [1, 1, 1, 1],
        ..Default::default()
    };
    let states = vec![
        nn::Conv2dOp::build(&ctx, src[0], src[1], None, &conv, loc.clone()).unwrap(),
        nn::AttentionOp::build(
            &ctx,
            src[2],
            src[2],
            src[2],
            None,
            nn::AttentionParams {
                heads: 2,
                scale: None,
            },
            loc.clone(),
        )
        .unwrap(),
        nn::GemmOp::build(
            &ctx,
            src[3],
            src[3],
            None,
            nn::GemmParams {
                trans_a: true,
                alpha: 0.5,
                ..Default::default()
            },
            loc.clone(),
        )
        .unwrap(),
        nn::CastOp::build(&ctx, src[3], &Type::f16(), false, loc.clone()).unwrap(),
        nn::ReduceOp::build(
            &ctx,
            nn::ReduceKind::Mean,
            src[3],
            Some(&[0]),
            false,
            loc.clone(),
        )
        .unwrap(),
    ];
    let mut built = Vec::new();
    for s in states {
        let op = ctx.create_op(s);
        ctx.append_op(block, op);
        built.push(op);
    }
    verify(&ctx, m).unwrap_or_else(|d| panic!("{}", d.message));
    let ty = |i: usize| ctx.value_type(ctx.result(built[i], 0)).clone();
    assert_eq!(ty(0), t(&[1, 4, 4, 4]));
    assert_eq!(ty(1), t(&[2, 5, 8]));
    assert_eq!(ty(2), t(&[2, 2]));
    assert_eq!(ty(3), Type::tensor(&[3, 2], Type::f16()));
    assert_eq!(ty(4), t(&[2]));
    assert_eq!(nn::Conv2dOp(built[0]).params(&ctx), conv);
    let att = nn::AttentionOp(built[1]);
    assert_eq!(att.heads(&ctx), 2);
    assert_eq!(att.scale(&ctx), 0.5);
    let g = nn::GemmOp(built[2]).params(&ctx);
    assert!(g.trans_a && !g.trans_b && g.alpha == 0.5 && g.beta == 1.0);
    assert!(!nn::CastOp(built[3]).saturate(&ctx));
    assert_eq!(nn::ReduceOp(built[4]).axes(&ctx), vec![0]);
    let text = print(&ctx, m, false);
    assert!(
        text.contains(
            "nn.conv2d %0, %1 {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}"
        ),
        "{text}"
    );
}

#[test]
fn invalid_ops_are_not_folded() {
    // The driver may run on IR that was never verified: folders must not trust it.
    let (mut ctx, m) = parse(
        r#"
%a = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
%b = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
%0 = nn.add %a, %b : tensor<2xf32>, tensor<3xf32> -> tensor<f32>
"test.use"(%0) : (tensor<f32>) -> ()
"#,
    );
    apply_patterns_greedily(
        &mut ctx,
        m,
        &RewritePatternSet::new().freeze(),
        &GreedyConfig::default(),
    );
    assert!(print(&ctx, m, false).contains("nn.add"));
}
