//! The op interfaces of the `nn` dialect: which ops implement which, and
//! what each reports for ops parsed from text, checked against the
//! dimensions worked out by hand.

use std::collections::BTreeSet;
use std::sync::Arc;

use ipuc_dialects::nn;
use ipuc_ir::interfaces::{
    CombiningKind, Contraction, ContractionShape, ElementWork, Elementwise, OpSignature, Reduction,
    ReductionShape, ViewLike,
};
use ipuc_ir::{parse_source, verify, Context, DialectRegistry, FloatKind, OpId, Type};

fn registry() -> Arc<DialectRegistry> {
    let mut registry = DialectRegistry::new();
    registry.register(nn::dialect());
    Arc::new(registry)
}

/// The interfaces every `nn` op implements. A registered op missing from
/// this table, or with other interfaces, fails
/// `every_nn_op_implements_its_interfaces`: an op that loses an interface
/// silently leaves the cost models and passes that ask for it.
const EXPECTED: &[(&str, &[&str])] = &[
    ("nn.abs", &["Elementwise"]),
    ("nn.acos", &["Elementwise"]),
    ("nn.acosh", &["Elementwise"]),
    ("nn.add", &["Elementwise"]),
    ("nn.and", &["Elementwise"]),
    ("nn.argmax", &["Reduction"]),
    ("nn.argmin", &["Reduction"]),
    ("nn.asin", &["Elementwise"]),
    ("nn.asinh", &["Elementwise"]),
    ("nn.atan", &["Elementwise"]),
    ("nn.atanh", &["Elementwise"]),
    ("nn.attention", &["Contraction", "Reduction"]),
    ("nn.average_pool", &["Reduction"]),
    ("nn.bitcast", &[]),
    ("nn.bitwise_and", &["Elementwise"]),
    ("nn.bitwise_not", &["Elementwise"]),
    ("nn.bitwise_or", &["Elementwise"]),
    ("nn.bitwise_xor", &["Elementwise"]),
    ("nn.cast", &["Elementwise"]),
    ("nn.ceil", &["Elementwise"]),
    ("nn.concat", &[]),
    ("nn.constant", &[]),
    ("nn.conv2d", &["Contraction"]),
    ("nn.cos", &["Elementwise"]),
    ("nn.cosh", &["Elementwise"]),
    ("nn.cumprod", &[]),
    ("nn.cumsum", &[]),
    ("nn.div", &["Elementwise"]),
    ("nn.equal", &["Elementwise"]),
    ("nn.erf", &["Elementwise"]),
    ("nn.exp", &["Elementwise"]),
    ("nn.expand", &[]),
    ("nn.flatten", &["ViewLike"]),
    ("nn.floor", &["Elementwise"]),
    ("nn.gather", &[]),
    ("nn.gather_elements", &[]),
    ("nn.gelu", &["Elementwise"]),
    ("nn.gemm", &["Contraction"]),
    ("nn.greater", &["Elementwise"]),
    ("nn.greater_equal", &["Elementwise"]),
    ("nn.identity", &["ViewLike"]),
    ("nn.layer_normalization", &["Reduction"]),
    ("nn.less", &["Elementwise"]),
    ("nn.less_equal", &["Elementwise"]),
    ("nn.linear", &["Contraction"]),
    ("nn.log", &["Elementwise"]),
    ("nn.matmul", &["Contraction"]),
    ("nn.max", &["Elementwise"]),
    ("nn.max_pool", &["Reduction"]),
    ("nn.min", &["Elementwise"]),
    ("nn.mod", &["Elementwise"]),
    ("nn.mul", &["Elementwise"]),
    ("nn.neg", &["Elementwise"]),
    ("nn.not", &["Elementwise"]),
    ("nn.or", &["Elementwise"]),
    ("nn.pad", &[]),
    ("nn.pow", &["Elementwise"]),
    ("nn.reciprocal", &["Elementwise"]),
    ("nn.reduce_max", &["Reduction"]),
    ("nn.reduce_mean", &["Reduction"]),
    ("nn.reduce_min", &["Reduction"]),
    ("nn.reduce_prod", &["Reduction"]),
    ("nn.reduce_sum", &["Reduction"]),
    ("nn.relu", &["Elementwise"]),
    ("nn.reshape", &["ViewLike"]),
    ("nn.round", &["Elementwise"]),
    ("nn.shift_left", &["Elementwise"]),
    ("nn.shift_right", &["Elementwise"]),
    ("nn.sigmoid", &["Elementwise"]),
    ("nn.sin", &["Elementwise"]),
    ("nn.sinh", &["Elementwise"]),
    ("nn.slice", &[]),
    ("nn.softmax", &["Reduction"]),
    ("nn.split", &["ViewLike"]),
    ("nn.sqrt", &["Elementwise"]),
    ("nn.squeeze", &["ViewLike"]),
    ("nn.sub", &["Elementwise"]),
    ("nn.tan", &["Elementwise"]),
    ("nn.tanh", &["Elementwise"]),
    ("nn.tile", &[]),
    ("nn.transpose", &[]),
    ("nn.unsqueeze", &["ViewLike"]),
    ("nn.where", &["Elementwise"]),
    ("nn.xor", &["Elementwise"]),
];

#[test]
fn every_nn_op_implements_its_interfaces() {
    let registry = registry();
    let registered: BTreeSet<&str> = registry
        .op_defs()
        .into_iter()
        .map(|d| d.name)
        .filter(|n| n.starts_with("nn."))
        .collect();
    let listed: BTreeSet<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        registered, listed,
        "every nn op must be listed in EXPECTED with the interfaces it implements"
    );
    for (name, want) in EXPECTED {
        let got = registry.op_def(name).unwrap().interfaces.names();
        assert_eq!(&got, want, "{name}");
    }
}

/// The ops named `name` in `src`, which must parse and verify.
fn ops_named(src: &str, name: &str) -> (Context, Vec<OpId>) {
    let mut ctx = Context::new(registry());
    // `test.*` ops stand in for function arguments.
    ctx.allow_unregistered = true;
    let module = parse_source(&mut ctx, "t.mlir", src)
        .unwrap_or_else(|d| panic!("{}\n{src}", d.message))
        .module;
    verify(&ctx, module).unwrap_or_else(|d| panic!("{}\n{src}", d.message));
    let mut found = Vec::new();
    ctx.walk(module, ipuc_ir::WalkOrder::PreOrder, &mut |ctx, op| {
        if ctx.name_str(op) == name {
            found.push(op);
        }
    });
    assert!(!found.is_empty(), "no {name} in\n{src}");
    (ctx, found)
}

/// The first op named `name` in `src`.
fn signature_of(src: &str, name: &str) -> (Context, OpId) {
    let (ctx, ops) = ops_named(src, name);
    (ctx, ops[0])
}

/// The products `src`'s `name` op reports.
fn contractions(src: &str, name: &str) -> Option<Vec<ContractionShape>> {
    let (ctx, op) = signature_of(src, name);
    let sig = OpSignature::of(&ctx, op);
    ctx.name(op)
        .interface::<dyn Contraction>()
        .expect("a contraction")
        .contractions(&sig.view())
}

fn reduction(src: &str, name: &str) -> Option<ReductionShape> {
    let (ctx, op) = signature_of(src, name);
    let sig = OpSignature::of(&ctx, op);
    ctx.name(op)
        .interface::<dyn Reduction>()
        .expect("a reduction")
        .reduction(&sig.view())
}

fn work(src: &str, name: &str) -> ElementWork {
    let (ctx, op) = signature_of(src, name);
    let sig = OpSignature::of(&ctx, op);
    ctx.name(op)
        .interface::<dyn Elementwise>()
        .expect("elementwise")
        .work(&sig.view())
}

/// `[batch, m, n, k]` of each product.
fn dims(shapes: &[ContractionShape]) -> Vec<[u64; 4]> {
    shapes.iter().map(|c| [c.batch, c.m, c.n, c.k]).collect()
}

#[test]
fn matmul_reports_batch_m_n_k() {
    let src = r#"
%a = "test.a"() : () -> tensor<5x1x7x12xf16>
%b = "test.b"() : () -> tensor<3x12x9xf8E4M3FNUZ>
%0 = nn.matmul %a, %b : tensor<5x1x7x12xf16>, tensor<3x12x9xf8E4M3FNUZ> -> tensor<5x3x7x9xf16>
"#;
    let c = contractions(src, "nn.matmul").unwrap();
    // The batch dimensions broadcast to 5x3.
    assert_eq!(dims(&c), [[15, 7, 9, 12]]);
    assert_eq!(c[0].lhs, Type::f16());
    assert_eq!(c[0].rhs, Type::float(FloatKind::F8E4M3FNUZ));
    assert_eq!(c[0].result, Type::f16());
    // MACs: result elements times K.
    assert_eq!(c[0].macs(), 5 * 3 * 7 * 9 * 12);
    // 1-D operands are promoted: a vector times a matrix is one row.
    let src = r#"
%a = "test.a"() : () -> tensor<12xf32>
%b = "test.b"() : () -> tensor<12x9xf32>
%0 = nn.matmul %a, %b : tensor<12xf32>, tensor<12x9xf32> -> tensor<9xf32>
"#;
    assert_eq!(
        dims(&contractions(src, "nn.matmul").unwrap()),
        [[1, 1, 9, 12]]
    );
    // A dynamic dimension leaves the product unknown.
    let src = r#"
%a = "test.a"() : () -> tensor<?x12xf32>
%b = "test.b"() : () -> tensor<12x9xf32>
%0 = nn.matmul %a, %b : tensor<?x12xf32>, tensor<12x9xf32> -> tensor<?x9xf32>
"#;
    assert_eq!(contractions(src, "nn.matmul"), None);
}

#[test]
fn gemm_linear_and_conv_report_their_products() {
    let src = r#"
%a = "test.a"() : () -> tensor<12x7xf32>
%b = "test.b"() : () -> tensor<9x12xf32>
%0 = nn.gemm %a, %b {transA = 1 : i64, transB = 1 : i64} : tensor<12x7xf32>, tensor<9x12xf32> -> tensor<7x9xf32>
"#;
    assert_eq!(
        dims(&contractions(src, "nn.gemm").unwrap()),
        [[1, 7, 9, 12]]
    );
    let src = r#"
%x = "test.x"() : () -> tensor<2x729x1152xf16>
%w = "test.w"() : () -> tensor<1152x4304xf16>
%b = "test.b"() : () -> tensor<4304xf16>
%0 = nn.linear %x, %w, %b : tensor<2x729x1152xf16>, tensor<1152x4304xf16>, tensor<4304xf16> -> tensor<2x729x4304xf16>
"#;
    // The leading dimensions are rows of one shared weight.
    assert_eq!(
        dims(&contractions(src, "nn.linear").unwrap()),
        [[1, 2 * 729, 4304, 1152]]
    );
    // Conv as im2col per group: M = N * H_out * W_out, N = M_out / groups,
    // K = C / groups * kH * kW. 10x10 input, 3x3 kernel, stride 2, pad 1:
    // a 5x5 output.
    let src = r#"
%x = "test.x"() : () -> tensor<2x8x10x10xf32>
%w = "test.w"() : () -> tensor<6x4x3x3xf32>
%0 = nn.conv2d %x, %w {groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8x10x10xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x5x5xf32>
"#;
    let c = contractions(src, "nn.conv2d").unwrap();
    assert_eq!(dims(&c), [[2, 2 * 5 * 5, 3, 4 * 3 * 3]]);
    // Every output element takes C / groups * kH * kW products.
    assert_eq!(c[0].macs(), (2 * 6 * 5 * 5) * (4 * 3 * 3));
}

#[test]
fn attention_reports_two_products_and_a_softmax() {
    let src = r#"
%q = "test.q"() : () -> tensor<2x10x64xf16>
%k = "test.k"() : () -> tensor<2x12x64xf16>
%v = "test.v"() : () -> tensor<2x12x32xf16>
%0 = nn.attention %q, %k, %v {heads = 4 : i64} : tensor<2x10x64xf16>, tensor<2x12x64xf16>, tensor<2x12x32xf16> -> tensor<2x10x32xf16>
"#;
    // Per batch entry and head: [10, 16] x [16, 12], then [10, 12] x [12, 8].
    let c = contractions(src, "nn.attention").unwrap();
    assert_eq!(dims(&c), [[8, 10, 12, 16], [8, 10, 8, 12]]);
    let r = reduction(src, "nn.attention").unwrap();
    assert_eq!((r.outer, r.inner), (8 * 10, 12));
    assert_eq!(r.passes, [CombiningKind::Max, CombiningKind::Add]);
    assert_eq!(
        r.per_element,
        ElementWork::flops(3) + ElementWork::special(1)
    );
}

#[test]
fn reductions_report_kept_and_reduced_extents() {
    let src = r#"
%x = "test.x"() : () -> tensor<2x3x4x5xf32>
%0 = nn.reduce_sum %x {axes = array<i64: 1, 3>, keepdims = 0 : i64} : tensor<2x3x4x5xf32> -> tensor<2x4xf32>
%1 = nn.reduce_max %x : tensor<2x3x4x5xf32> -> tensor<1x1x1x1xf32>
%2 = nn.reduce_mean %x {axes = array<i64: -1>} : tensor<2x3x4x5xf32> -> tensor<2x3x4x1xf32>
"#;
    let sum = reduction(src, "nn.reduce_sum").unwrap();
    assert_eq!((sum.outer, sum.inner), (8, 15));
    assert_eq!(sum.passes, [CombiningKind::Add]);
    assert_eq!(sum.per_element, ElementWork::NONE);
    let max = reduction(src, "nn.reduce_max").unwrap();
    assert_eq!((max.outer, max.inner), (1, 120));
    assert_eq!(max.passes, [CombiningKind::Max]);
    let mean = reduction(src, "nn.reduce_mean").unwrap();
    assert_eq!((mean.outer, mean.inner, mean.elements()), (24, 5, 120));
    assert_eq!(mean.passes, [CombiningKind::Add]);
}

#[test]
fn pooling_reduces_one_window_per_output() {
    let src = r#"
%x = "test.x"() : () -> tensor<2x3x10x10xf32>
%0 = nn.max_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x3x10x10xf32> -> tensor<2x3x5x5xf32>
%1 = nn.average_pool %x {kernel_shape = array<i64: 2, 5>} : tensor<2x3x10x10xf32> -> tensor<2x3x9x6xf32>
"#;
    let max = reduction(src, "nn.max_pool").unwrap();
    assert_eq!((max.outer, max.inner), (2 * 3 * 5 * 5, 9));
    assert_eq!(max.passes, [CombiningKind::Max]);
    let avg = reduction(src, "nn.average_pool").unwrap();
    assert_eq!((avg.outer, avg.inner), (2 * 3 * 9 * 6, 10));
    assert_eq!(avg.passes, [CombiningKind::Add]);
    assert_eq!(avg.per_element, ElementWork::NONE);
}

#[test]
fn normalizations_reduce_then_rescale() {
    let src = r#"
%x = "test.x"() : () -> tensor<2x3x8xf32>
%s = "test.s"() : () -> tensor<3x8xf32>
%b = "test.b"() : () -> tensor<8xf32>
%0 = nn.softmax %x {axis = 1 : i64} : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
%1 = nn.layer_normalization %x, %s, %b {axis = 1 : i64} : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
"#;
    let softmax = reduction(src, "nn.softmax").unwrap();
    assert_eq!((softmax.outer, softmax.inner), (16, 3));
    assert_eq!(softmax.passes, [CombiningKind::Max, CombiningKind::Add]);
    assert_eq!(
        softmax.per_element,
        ElementWork::flops(2) + ElementWork::special(1)
    );
    let norm = reduction(src, "nn.layer_normalization").unwrap();
    assert_eq!((norm.outer, norm.inner), (2, 24));
    assert_eq!(norm.passes, [CombiningKind::Add, CombiningKind::Add]);
    assert_eq!(norm.per_element, ElementWork::flops(5));
}

#[test]
fn elementwise_ops_count_flops_and_special_functions() {
    let src = r#"
%x = "test.x"() : () -> tensor<4xf32>
%c = "test.c"() : () -> tensor<4xi1>
%0 = nn.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
%1 = nn.div %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
%2 = nn.exp %x : tensor<4xf32> -> tensor<4xf32>
%3 = nn.relu %x : tensor<4xf32> -> tensor<4xf32>
%4 = nn.less %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
%5 = nn.where %c, %x, %x : tensor<4xi1>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
%6 = nn.cast %x {to = f16} : tensor<4xf32> -> tensor<4xf16>
%7 = nn.gelu %x : tensor<4xf32> -> tensor<4xf32>
%8 = nn.gelu %x {approximate = "tanh"} : tensor<4xf32> -> tensor<4xf32>
"#;
    assert_eq!(work(src, "nn.add"), ElementWork::flops(1));
    assert_eq!(work(src, "nn.div"), ElementWork::special(1));
    assert_eq!(work(src, "nn.exp"), ElementWork::special(1));
    assert_eq!(work(src, "nn.relu"), ElementWork::flops(1));
    assert_eq!(work(src, "nn.less"), ElementWork::flops(1));
    assert_eq!(work(src, "nn.where"), ElementWork::flops(1));
    assert_eq!(work(src, "nn.cast"), ElementWork::flops(1));
    assert_eq!(
        work(src, "nn.gelu"),
        ElementWork::flops(4) + ElementWork::special(1)
    );
    // The tanh form's decomposition has three more products and a sum.
    let (ctx, gelus) = ops_named(src, "nn.gelu");
    let tanh = OpSignature::of(&ctx, gelus[1]);
    let w = ctx
        .name(gelus[1])
        .interface::<dyn Elementwise>()
        .unwrap()
        .work(&tanh.view());
    assert_eq!(w, ElementWork::flops(7) + ElementWork::special(1));
}

#[test]
fn shape_ops_that_keep_row_major_order_are_views() {
    let registry = registry();
    for name in [
        nn::RESHAPE,
        nn::SQUEEZE,
        nn::UNSQUEEZE,
        nn::FLATTEN,
        nn::SPLIT,
        nn::IDENTITY,
    ] {
        let op = registry.op_name(name);
        assert_eq!(
            op.interface::<dyn ViewLike>().unwrap().view_source(),
            0,
            "{name}"
        );
    }
    // A transpose moves data.
    assert!(registry
        .op_name(nn::TRANSPOSE)
        .interface::<dyn ViewLike>()
        .is_none());
}
