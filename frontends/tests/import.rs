//! The ONNX → `nn` importer on the shared SigLIP fixtures (verify, static
//! shapes, op histograms, determinism) and on small hand-built graphs (opset
//! differences, folding of shape arithmetic, error reports).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ipuc_frontends::onnx::import::{import_file, import_model, ImportOptions};
use ipuc_frontends::onnx::proto::StringStringEntryProto;
use ipuc_frontends::onnx::proto::TensorProto;
use ipuc_frontends::onnx::{LoadOptions, Model, WeightsPolicy};
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::rewrite::constant_value;
use ipuc_ir::{print_op, verify, Context, OpId, PrintOptions, Type, WalkOrder};
use prost::Message;

mod common;
use common::graph_builder::*;

// ----- helpers ------------------------------------------------------------------

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/models")
        .join(name)
        .join("model.onnx")
}

/// Op name → count over everything nested in `module`.
fn histogram(ctx: &Context, module: OpId) -> BTreeMap<String, usize> {
    let mut h = BTreeMap::new();
    ctx.walk(module, WalkOrder::PreOrder, &mut |c, op| {
        *h.entry(c.name_str(op).to_string()).or_insert(0) += 1;
    });
    h
}

fn count(h: &BTreeMap<String, usize>, name: &str) -> usize {
    h.get(name).copied().unwrap_or(0)
}

/// The `func.func @main` of an imported module.
fn main_func(ctx: &Context, module: OpId) -> OpId {
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let ops = ctx.block_ops_vec(body);
    assert_eq!(ops.len(), 1, "the module holds one function");
    assert_eq!(ctx.name_str(ops[0]), "func.func");
    ops[0]
}

fn signature(ctx: &Context, module: OpId) -> (Vec<String>, Vec<String>) {
    let (i, r) = ipuc_dialects::func::function_type(ctx, main_func(ctx, module)).unwrap();
    let s = |v: Vec<Type>| v.iter().map(|t| t.to_string()).collect();
    (s(i), s(r))
}

/// Every value in the module has a static shape, and only compute ops remain.
fn assert_static_and_shape_free(ctx: &Context, module: OpId) {
    ctx.walk(module, WalkOrder::PreOrder, &mut |c, op| {
        for &r in c.results(op) {
            let ty = c.value_type(r);
            assert!(
                ty.has_static_shape(),
                "{} has a non-static result {ty}",
                c.name_str(op)
            );
        }
        let name = c.name_str(op);
        assert!(
            name.starts_with("nn.")
                || ["builtin.module", "func.func", "func.return"].contains(&name),
            "unexpected op {name}"
        );
    });
    if let Some(block) = ipuc_dialects::func::entry_block(ctx, main_func(ctx, module)) {
        for &arg in ctx.block_args(block) {
            assert!(ctx.value_type(arg).has_static_shape());
        }
    }
}

fn import_fixture(name: &str, weights: WeightsPolicy, opts: &ImportOptions) -> (Context, OpId) {
    let mut ctx = new_context();
    let module = import_file(&mut ctx, &fixture(name), &LoadOptions { weights }, opts)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    verify(&ctx, module).unwrap();
    assert_static_and_shape_free(&ctx, module);
    (ctx, module)
}

// ----- fixtures ---------------------------------------------------------------------

#[test]
fn siglip_tiny_imports_static_with_two_encoder_layers() {
    let (ctx, module) = import_fixture("siglip-tiny", WeightsPolicy::Require, &Default::default());
    let (args, results) = signature(&ctx, module);
    assert_eq!(args, ["tensor<1x3x32x32xf32>"]);
    assert_eq!(results, ["tensor<1x16x64xf32>", "tensor<1x64xf32>"]);
    let h = histogram(&ctx, module);
    // Per layer: 4 attention + 2 MLP matmuls, 2 score matmuls; the head adds 6.
    assert_eq!(count(&h, "nn.matmul"), 22, "{h:?}");
    // 2 per layer, post_layernorm, the head's layernorm.
    assert_eq!(count(&h, "nn.layer_normalization"), 6, "{h:?}");
    assert_eq!(count(&h, "nn.softmax"), 3, "{h:?}");
    assert_eq!(count(&h, "nn.tanh"), 3, "{h:?}");
    assert_eq!(count(&h, "nn.conv2d"), 1, "{h:?}");
    assert_eq!(count(&h, "nn.gemm"), 1, "{h:?}");
    // The no-op casts are gone and the shape arithmetic folded.
    assert_eq!(count(&h, "nn.cast"), 0, "{h:?}");
    assert_eq!(count(&h, "nn.concat"), 0, "{h:?}");
    assert_eq!(count(&h, "nn.slice"), 0, "{h:?}");
    assert_eq!(count(&h, "nn.expand") + count(&h, "nn.tile"), 0, "{h:?}");
}

#[test]
fn siglip_tiny_follows_the_requested_batch() {
    let opts = ImportOptions {
        input_shapes: vec![("pixel_values".into(), vec![3, 3, 32, 32])],
        batch: None,
        file_name: "tiny.onnx".into(),
    };
    let (ctx, module) = import_fixture("siglip-tiny", WeightsPolicy::Require, &opts);
    let (args, results) = signature(&ctx, module);
    assert_eq!(args, ["tensor<3x3x32x32xf32>"]);
    assert_eq!(results, ["tensor<3x16x64xf32>", "tensor<3x64xf32>"]);
}

#[test]
fn siglip_small_dynamo_and_opset14_variants_import() {
    let (ctx, module) = import_fixture("siglip-small", WeightsPolicy::Require, &Default::default());
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.matmul"), 38, "{h:?}");
    assert_eq!(count(&h, "nn.layer_normalization"), 10, "{h:?}");
    assert_eq!(count(&h, "nn.softmax"), 5, "{h:?}");
    assert_eq!(
        signature(&ctx, module).1,
        ["tensor<1x64x256xf32>", "tensor<1x256xf32>"]
    );

    let (ctx, module) = import_fixture(
        "siglip-tiny-dynamo",
        WeightsPolicy::Require,
        &Default::default(),
    );
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.matmul"), 22, "{h:?}");
    assert_eq!(count(&h, "nn.layer_normalization"), 6, "{h:?}");
    assert_eq!(count(&h, "nn.softmax"), 3, "{h:?}");
    assert_eq!(count(&h, "nn.pow"), 3, "{h:?}");
    assert_eq!(
        count(&h, "nn.split"),
        0,
        "Split of constant weights folds: {h:?}"
    );
    assert_eq!(
        signature(&ctx, module).1,
        ["tensor<1x16x64xf32>", "tensor<1x64xf32>"]
    );

    let (ctx, module) = import_fixture(
        "siglip-tiny-opset14",
        WeightsPolicy::Require,
        &Default::default(),
    );
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.matmul"), 22, "{h:?}");
    assert_eq!(count(&h, "nn.layer_normalization"), 0, "{h:?}");
    // Each of the 6 decomposed LayerNorms: 2 ReduceMean, 1 Sqrt, 1 Div.
    assert_eq!(count(&h, "nn.reduce_mean"), 12, "{h:?}");
    assert_eq!(count(&h, "nn.sqrt"), 6, "{h:?}");
    assert_eq!(count(&h, "nn.softmax"), 3, "{h:?}");
}

#[test]
fn siglip_so400m_imports_with_synthesised_weights() {
    let (ctx, module) = import_fixture("siglip-so400m", WeightsPolicy::Zeros, &Default::default());
    let (args, results) = signature(&ctx, module);
    assert_eq!(args, ["tensor<1x3x384x384xf32>"]);
    assert_eq!(results, ["tensor<1x729x1152xf32>", "tensor<1x1152xf32>"]);
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.matmul"), 222, "{h:?}");
    assert_eq!(count(&h, "nn.layer_normalization"), 56, "{h:?}");
    assert_eq!(count(&h, "nn.softmax"), 28, "{h:?}");
    assert_eq!(count(&h, "nn.tanh"), 28, "{h:?}");
    // Weights are resources, never inline: nothing large is printed.
    let mut large_inline = 0;
    ctx.walk(module, WalkOrder::PreOrder, &mut |c, op| {
        if let Some(a) = c.attr(op, "value") {
            if let AttrKind::DenseElements(d) = a.kind() {
                if !d.splat && d.len() > 64 {
                    large_inline += 1;
                }
            }
        }
    });
    assert_eq!(large_inline, 0);
}

#[test]
fn import_is_deterministic() {
    let print = || {
        let (ctx, module) =
            import_fixture("siglip-tiny", WeightsPolicy::Require, &Default::default());
        print_op(&ctx, module, &PrintOptions::default())
    };
    let (a, b) = (print(), print());
    assert!(a.contains("dense_resource<"));
    assert_eq!(a, b);
}

#[test]
fn import_model_and_import_file_agree_and_locations_name_nodes() {
    let path = fixture("siglip-tiny");
    let model = Model::load(&path, &LoadOptions::default()).unwrap();
    let opts = ImportOptions {
        input_shapes: vec![],
        batch: None,
        file_name: path.display().to_string(),
    };
    let mut ctx = new_context();
    let module = import_model(&mut ctx, &model, &opts).unwrap();
    let mut ctx2 = new_context();
    let module2 = import_file(&mut ctx2, &path, &LoadOptions::default(), &opts).unwrap();
    let debug = PrintOptions {
        debug_info: true,
        ..Default::default()
    };
    let text = print_op(&ctx, module, &debug);
    assert_eq!(text, print_op(&ctx2, module2, &debug));
    // The conv's location is the ONNX node's name.
    let conv = model.graph.first_node("Conv").unwrap();
    assert!(
        text.contains(&format!("loc(\"{}\")", conv.name)),
        "no location naming {}",
        conv.name
    );
}

// ----- hand-built graphs (builder in common/graph_builder.rs) ------------------

/// The integer values of result `i` of `@main`, which must be a constant.
fn returned_ints(ctx: &Context, module: OpId, i: usize) -> Vec<i128> {
    let f = main_func(ctx, module);
    let block = ipuc_dialects::func::entry_block(ctx, f).unwrap();
    let ret = ctx.terminator(block).unwrap();
    let v = ctx.operand(ret, i);
    let attr = constant_value(ctx, v).expect("the result folded to a constant");
    let d = ipuc_dialects::nn::elements::dense_data(&attr).unwrap();
    ipuc_dialects::nn::elements::ints(&d).unwrap()
}

#[test]
fn shape_arithmetic_folds_into_static_attributes() {
    // x[batch, 6] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1, 2])).
    let mut g = G::new(13);
    g.inputs.push(value("x", F32, &[-1, 6]));
    g.inits.push(ints("zero", &[], &[0]));
    g.inits.push(ints("axes0", &[1], &[0]));
    g.inits.push(ints("tail", &[2], &[-1, 2]));
    g.nodes = vec![
        node("Shape", "shape", &["x"], &["s"], vec![]),
        node(
            "Gather",
            "gather",
            &["s", "zero"],
            &["b"],
            vec![("axis", A::I(0))],
        ),
        node("Unsqueeze", "unsq", &["b", "axes0"], &["b1"], vec![]),
        node(
            "Concat",
            "concat",
            &["b1", "tail"],
            &["target"],
            vec![("axis", A::I(0))],
        ),
        node("Reshape", "reshape", &["x", "target"], &["y"], vec![]),
    ];
    g.outputs = vec!["y"];
    let opts = ImportOptions {
        input_shapes: vec![("x".into(), vec![4, 6])],
        batch: None,
        file_name: String::new(),
    };
    let (ctx, module) = g.import_with(&opts).unwrap();
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.reshape"), 1, "{h:?}");
    assert_eq!(
        count(&h, "nn.constant"),
        0,
        "dead constants are removed: {h:?}"
    );
    assert_eq!(signature(&ctx, module).1, ["tensor<4x3x2xf32>"]);
}

#[test]
fn range_constant_of_shape_where_and_slice_fold_to_constants() {
    let mut g = G::new(17);
    g.inputs.push(value("x", F32, &[2, 5]));
    for (name, v) in [
        ("start", 1),
        ("limit", 8),
        ("delta", 3),
        ("one", 1),
        ("zero", 0),
    ] {
        g.inits.push(ints(name, &[], &[v]));
    }
    g.inits.push(ints("ax1", &[1], &[1]));
    g.inits.push(ints("big", &[1], &[i64::MAX]));
    g.nodes = vec![
        node(
            "Range",
            "range",
            &["start", "limit", "delta"],
            &["r"],
            vec![],
        ),
        node("Shape", "shape", &["x"], &["s"], vec![]),
        // Slice(shape, [1], [INT64_MAX]) -> [5]
        node("Slice", "slice", &["s", "ax1", "big"], &["tail"], vec![]),
        node(
            "ConstantOfShape",
            "cos",
            &["s"],
            &["c"],
            vec![("value", A::T(Box::new(ints("v", &[1], &[7]))))],
        ),
        node("Equal", "eq", &["s", "tail"], &["e"], vec![]),
        node("Where", "where", &["e", "one", "s"], &["w"], vec![]),
        node("Mod", "mod", &["w", "delta"], &["m"], vec![]),
        node(
            "Shape",
            "shape_from",
            &["x"],
            &["s1"],
            vec![("start", A::I(-1))],
        ),
        node("Cast", "cast", &["zero"], &["z"], vec![("to", A::I(1))]),
    ];
    g.outputs = vec!["r", "tail", "c", "w", "m", "s1", "z"];
    let (ctx, module) = g.import();
    assert_eq!(returned_ints(&ctx, module, 0), [1, 4, 7]);
    assert_eq!(returned_ints(&ctx, module, 1), [5]);
    assert_eq!(returned_ints(&ctx, module, 2), vec![7; 10]);
    assert_eq!(returned_ints(&ctx, module, 3), [2, 1]);
    assert_eq!(returned_ints(&ctx, module, 4), [2, 1]);
    assert_eq!(returned_ints(&ctx, module, 5), [5]);
    let (_, results) = signature(&ctx, module);
    assert_eq!(results[2], "tensor<2x5xi64>");
    assert_eq!(results[6], "tensor<f32>");
    let h = histogram(&ctx, module);
    assert_eq!(
        h.keys().filter(|k| k.starts_with("nn.")).count(),
        1,
        "{h:?}"
    );
}

#[test]
fn softmax_axis_semantics_changed_in_opset_13() {
    for (opset, softmax_over) in [(11, "tensor<2x12xf32>"), (13, "tensor<2x3x4xf32>")] {
        let mut g = G::new(opset);
        g.inputs.push(value("x", F32, &[2, 3, 4]));
        g.nodes = vec![node("Softmax", "sm", &["x"], &["y"], vec![])];
        g.outputs = vec!["y"];
        let (ctx, module) = g.import();
        let text = print_op(&ctx, module, &PrintOptions::default());
        assert!(
            text.contains(&format!(
                "nn.softmax %{}",
                if opset == 11 { "0" } else { "arg0" }
            )) && text.contains(&format!(": {softmax_over} -> {softmax_over}")),
            "opset {opset}:\n{text}"
        );
        assert_eq!(signature(&ctx, module).1, ["tensor<2x3x4xf32>"]);
    }
}

#[test]
fn split_sizes_come_from_attribute_input_or_num_outputs() {
    type Case<'a> = (i64, Vec<(&'a str, A<'a>)>, Vec<&'a str>, Vec<&'a str>);
    let cases: [Case; 3] = [
        (
            11,
            vec![("split", A::Is(&[2, 5]))],
            vec!["x"],
            vec!["tensor<2x4xf32>", "tensor<5x4xf32>"],
        ),
        (
            13,
            vec![],
            vec!["x", "sizes"],
            vec!["tensor<3x4xf32>", "tensor<4x4xf32>"],
        ),
        (
            18,
            vec![("num_outputs", A::I(2))],
            vec!["x"],
            vec!["tensor<4x4xf32>", "tensor<3x4xf32>"],
        ),
    ];
    for (opset, attrs, inputs, want) in cases {
        let mut g = G::new(opset);
        g.inputs.push(value("x", F32, &[7, 4]));
        g.inits.push(ints("sizes", &[2], &[3, 4]));
        g.nodes = vec![node("Split", "split", &inputs, &["a", "b"], attrs)];
        g.outputs = vec!["a", "b"];
        let (ctx, module) = g.import();
        assert_eq!(signature(&ctx, module).1, want, "opset {opset}");
    }
}

#[test]
fn squeeze_unsqueeze_and_reduce_axes_move_from_attributes_to_inputs() {
    // Opset 11: attributes. Opset 18: inputs.
    for opset in [11, 18] {
        let mut g = G::new(opset);
        g.inputs.push(value("x", F32, &[3, 1, 4]));
        g.inits.push(ints("a1", &[1], &[1]));
        g.inits.push(ints("a0", &[1], &[0]));
        let attr = |v: &'static [i64]| vec![("axes", A::Is(v))];
        let (sq_in, usq_in, red_in): (&[&str], &[&str], &[&str]) = if opset >= 13 {
            (&["x", "a1"], &["sq", "a0"], &["usq", "a0"])
        } else {
            (&["x"], &["sq"], &["usq"])
        };
        let pick = |v: &'static [i64]| if opset >= 13 { vec![] } else { attr(v) };
        let mut red_attrs = pick(&[0]);
        red_attrs.push(("keepdims", A::I(0)));
        g.nodes = vec![
            node("Squeeze", "sq", sq_in, &["sq"], pick(&[1])),
            node("Unsqueeze", "usq", usq_in, &["usq"], pick(&[0])),
            node("ReduceMean", "red", red_in, &["y"], red_attrs),
            // ReduceSum took axes as an input from opset 13; here: all axes.
            node("ReduceSum", "sum", &["x"], &["t"], vec![]),
        ];
        g.outputs = vec!["sq", "usq", "y", "t"];
        let (ctx, module) = g.import();
        assert_eq!(
            signature(&ctx, module).1,
            [
                "tensor<3x4xf32>",
                "tensor<1x3x4xf32>",
                "tensor<3x4xf32>",
                "tensor<1x1x1xf32>"
            ],
            "opset {opset}"
        );
    }
}

#[test]
fn reshape_allowzero_and_conv_auto_pad() {
    let mut g = G::new(14);
    g.inputs.push(value("x", F32, &[1, 2, 5, 5]));
    g.inits.push(ints("target", &[3], &[0, 0, -1]));
    g.inits.push(floats("w", &[4, 2, 3, 3], &[0.5; 72]));
    g.inits.push(floats("w2", &[4, 2, 2, 2], &[0.5; 32]));
    g.nodes = vec![
        node("Reshape", "copy_dims", &["x", "target"], &["r"], vec![]),
        node(
            "Conv",
            "same_upper",
            &["x", "w"],
            &["c1"],
            vec![
                ("auto_pad", A::S("SAME_UPPER")),
                ("strides", A::Is(&[2, 2])),
            ],
        ),
        node(
            "Conv",
            "same_lower",
            &["x", "w2"],
            &["c2"],
            vec![("auto_pad", A::S("SAME_LOWER"))],
        ),
        node(
            "Conv",
            "valid",
            &["x", "w"],
            &["c3"],
            vec![("auto_pad", A::S("VALID"))],
        ),
    ];
    g.outputs = vec!["r", "c1", "c2", "c3"];
    let (ctx, module) = g.import();
    assert_eq!(
        signature(&ctx, module).1,
        [
            "tensor<1x2x25xf32>",
            "tensor<1x4x3x3xf32>",
            "tensor<1x4x5x5xf32>",
            "tensor<1x4x3x3xf32>"
        ]
    );
    let text = print_op(&ctx, module, &PrintOptions::default());
    assert!(text.contains("pads = array<i64: 1, 1, 1, 1>"), "{text}");
    assert!(text.contains("pads = array<i64: 1, 1, 0, 0>"), "{text}");

    // allowzero = 1: a 0 in the target is a real zero-sized dimension.
    let mut g = G::new(14);
    g.inputs.push(value("x", F32, &[0, 4]));
    g.inits.push(ints("target", &[2], &[4, 0]));
    g.nodes = vec![node(
        "Reshape",
        "r",
        &["x", "target"],
        &["y"],
        vec![("allowzero", A::I(1))],
    )];
    g.outputs = vec!["y"];
    let (ctx, module) = g.import();
    assert_eq!(signature(&ctx, module).1, ["tensor<4x0xf32>"]);
}

#[test]
fn initializers_inline_when_small_and_as_shared_resources_when_large() {
    let mut g = G::new(17);
    g.inputs.push(value("x", F32, &[65]));
    let small: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let large: Vec<f32> = (0..65).map(|i| i as f32 * 0.5).collect();
    g.inits.push(floats("small", &[64], &small));
    g.inits.push(floats("large/weight:0", &[65], &large));
    g.nodes = vec![
        node("Add", "add", &["x", "large/weight:0"], &["y"], vec![]),
        node("Mul", "mul", &["small", "small"], &["z"], vec![]),
    ];
    g.outputs = vec!["y", "z"];
    let (ctx, module) = g.import();
    let text = print_op(&ctx, module, &PrintOptions::default());
    assert!(
        text.contains("dense_resource<large_weight_0> : tensor<65xf32>"),
        "{text}"
    );
    let blob = ctx.resources().get("large_weight_0").unwrap();
    let bytes: Vec<u8> = large.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(&blob.blob().unwrap().data[..], &bytes[..]);
    // The 64-element product folded to an inline constant.
    assert!(
        text.contains("nn.constant dense<[0.000000e+00, 1.000000e+00, 4.000000e+00"),
        "{text}"
    );
}

#[test]
fn unsupported_ops_are_listed_in_one_error() {
    let mut g = G::new(17);
    g.inputs.push(value("x", F32, &[2]));
    g.nodes = vec![
        node("Foo", "foo_a", &["x"], &["a"], vec![]),
        node("Relu", "relu", &["a"], &["b"], vec![]),
        node("Foo", "foo_b", &["b"], &["c"], vec![]),
        node("Bar", "bar", &["c"], &["d"], vec![]),
    ];
    g.outputs = vec!["d"];
    let err = g.error();
    assert!(
        err.contains("2 unsupported operator type(s) (3 node(s))"),
        "{err}"
    );
    assert!(err.contains("Foo x2 (first: node `foo_a`)"), "{err}");
    assert!(err.contains("Bar x1 (first: node `bar`)"), "{err}");
    assert!(!err.contains("Relu"), "{err}");
}

#[test]
fn inputs_that_must_be_constant_are_reported_with_the_node() {
    let mut g = G::new(13);
    g.inputs.push(value("x", F32, &[3]));
    g.inputs.push(value("axes", I64, &[1]));
    g.nodes = vec![node(
        "Unsqueeze",
        "expand_dims",
        &["x", "axes"],
        &["y"],
        vec![],
    )];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(
        err.contains(
            "node `expand_dims` (Unsqueeze): input #1 (`axes`, the axes) must be a constant"
        ),
        "{err}"
    );
    let diagnostic = g
        .import_with(&Default::default())
        .err()
        .unwrap()
        .to_diagnostic();
    assert_eq!(diagnostic.loc.name_of(), Some("expand_dims"));
}

#[test]
fn unresolved_symbolic_dims_are_errors_unless_batch_like_or_given() {
    let mut g = G::new(17);
    g.inputs.push(value("tokens", F32, &[-1, -1, 8]));
    g.nodes = vec![node("Relu", "relu", &["tokens"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(
        err.contains("graph input `tokens`: dimension 1 (`d1`) is not static")
            && err.contains("--input-shape tokens=1xNx8"),
        "{err}"
    );
    let opts = ImportOptions {
        input_shapes: vec![("tokens".into(), vec![2, 5, 8])],
        batch: None,
        file_name: String::new(),
    };
    let (ctx, module) = g.import_with(&opts).unwrap();
    assert_eq!(signature(&ctx, module).0, ["tensor<2x5x8xf32>"]);
    let wrong = ImportOptions {
        input_shapes: vec![("tokens".into(), vec![2, 5, 9])],
        batch: None,
        file_name: String::new(),
    };
    let err = g.import_with(&wrong).err().unwrap().to_string();
    assert!(
        err.contains("sets dimension 2 to 9, but the model fixes it to 8"),
        "{err}"
    );
    let unknown = ImportOptions {
        input_shapes: vec![("pixels".into(), vec![1])],
        batch: None,
        file_name: String::new(),
    };
    let err = g.import_with(&unknown).err().unwrap().to_string();
    assert!(
        err.contains("names no graph input (the model's inputs: `tokens`)"),
        "{err}"
    );
}

#[test]
fn batch_sets_the_batch_like_dims_left_symbolic() {
    // `--batch 3`: the leading symbolic dimension (and any named like a
    // batch) takes 3; a shape given by --input-shape is left as given.
    let mut g = G::new(17);
    g.inputs.push(value("pixels", F32, &[-1, 3, 4]));
    g.nodes = vec![node("Relu", "relu", &["pixels"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let batch = |n: i64, shapes: Vec<(String, Vec<i64>)>| ImportOptions {
        input_shapes: shapes,
        batch: Some(n),
        file_name: String::new(),
    };
    let (ctx, module) = g.import_with(&batch(3, vec![])).unwrap();
    assert_eq!(signature(&ctx, module).0, ["tensor<3x3x4xf32>"]);
    // Nothing left for --batch to set: the shape is given.
    let err = g
        .import_with(&batch(3, vec![("pixels".into(), vec![2, 3, 4])]))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("--batch 3: no input has a symbolic batch dimension left to set"),
        "{err}"
    );
    let err = g.import_with(&batch(0, vec![])).err().unwrap().to_string();
    assert!(
        err.contains("--batch 0: the batch must be at least 1"),
        "{err}"
    );
    // A model whose batch is fixed.
    let mut fixed = G::new(17);
    fixed.inputs.push(value("pixels", F32, &[1, 3, 4]));
    fixed.nodes = vec![node("Relu", "relu", &["pixels"], &["y"], vec![])];
    fixed.outputs = vec!["y"];
    let err = fixed
        .import_with(&batch(2, vec![]))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("the model fixes its inputs' shapes"), "{err}");
    // --batch 1 is what the model says anyway.
    let (ctx, module) = fixed.import_with(&batch(1, vec![])).unwrap();
    assert_eq!(signature(&ctx, module).0, ["tensor<1x3x4xf32>"]);
}

#[test]
fn layer_norm_statistics_are_built_in_the_stash_type_when_used() {
    const F16: i32 = 10;
    let mut g = G::new(17);
    g.inputs.push(value("x", F16, &[2, 3, 4]));
    g.inits.push(TensorProto {
        name: Some("g".into()),
        dims: vec![4],
        data_type: Some(F16),
        int32_data: vec![0x3C00; 4],
        ..Default::default()
    });
    g.nodes = vec![node(
        "LayerNormalization",
        "ln",
        &["x", "g"],
        &["y", "mean", "inv_std_dev"],
        vec![("axis", A::I(-2))],
    )];
    g.outputs = vec!["y", "mean", "inv_std_dev"];
    let (ctx, module) = g.import();
    // Y stays one fused op; the statistics (stash_type float by default)
    // reduce the normalised axes 1..3 of x cast to f32, keeping them as 1s.
    let (_, results) = signature(&ctx, module);
    assert_eq!(
        results,
        [
            "tensor<2x3x4xf16>",
            "tensor<2x1x1xf32>",
            "tensor<2x1x1xf32>"
        ]
    );
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.layer_normalization"), 1, "{h:?}");
    assert_eq!(count(&h, "nn.cast"), 1, "{h:?}");
    assert_eq!(count(&h, "nn.reduce_mean"), 2, "{h:?}");
    assert_eq!(count(&h, "nn.reciprocal"), 1, "{h:?}");

    // Unused statistics leave nothing behind.
    g.outputs = vec!["y"];
    let (ctx, module) = g.import();
    let h = histogram(&ctx, module);
    assert_eq!(count(&h, "nn.layer_normalization"), 1, "{h:?}");
    assert_eq!(
        count(&h, "nn.reduce_mean") + count(&h, "nn.cast"),
        0,
        "{h:?}"
    );

    // A stash type that is not a float is reported.
    g.nodes = vec![node(
        "LayerNormalization",
        "ln",
        &["x", "g"],
        &["y", "mean"],
        vec![("stash_type", A::I(7))],
    )];
    g.outputs = vec!["y", "mean"];
    let err = g.error();
    assert!(
        err.contains("node `ln` (LayerNormalization): `stash_type` = 7 (INT64)"),
        "{err}"
    );
}

#[test]
fn opsets_outside_the_supported_range_are_rejected() {
    let mut g = G::new(29);
    g.inputs.push(value("x", F32, &[2]));
    g.nodes = vec![node("Relu", "relu", &["x"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(
        err.contains("opset 29 is not supported (supported: 7 to 28)"),
        "{err}"
    );
}

#[test]
fn pad_gemm_gelu_and_variadic_max() {
    let mut g = G::new(20);
    g.inputs.push(value("x", F32, &[2, 3]));
    g.inputs.push(value("y", F32, &[2, 3]));
    g.inits.push(ints("pads", &[2], &[1, 2]));
    g.inits.push(ints("axes", &[1], &[1]));
    g.inits.push(floats("cv", &[], &[0.5]));
    g.inits.push(floats("b", &[3, 4], &[1.0; 12]));
    g.nodes = vec![
        node("Pad", "pad", &["x", "pads", "cv", "axes"], &["p"], vec![]),
        node(
            "Gemm",
            "gemm",
            &["x", "b"],
            &["m"],
            vec![("alpha", A::F(2.0))],
        ),
        node(
            "Gelu",
            "gelu",
            &["x"],
            &["ge"],
            vec![("approximate", A::S("tanh"))],
        ),
        node("Max", "max", &["x", "y", "x"], &["mx"], vec![]),
    ];
    g.outputs = vec!["p", "m", "ge", "mx"];
    let (ctx, module) = g.import();
    assert_eq!(
        signature(&ctx, module).1,
        [
            "tensor<2x6xf32>",
            "tensor<2x4xf32>",
            "tensor<2x3xf32>",
            "tensor<2x3xf32>"
        ]
    );
    let text = print_op(&ctx, module, &PrintOptions::default());
    assert!(text.contains("pads = array<i64: 0, 1, 0, 2>"), "{text}");
    assert!(text.contains("value = 5.000000e-01 : f32"), "{text}");
    assert!(text.contains("approximate = \"tanh\""), "{text}");
    assert_eq!(count(&histogram(&ctx, module), "nn.max"), 2);
}

/// An f32 initializer whose data lives in a file that does not exist.
fn missing_external(name: &str, dims: &[i64], offset: usize) -> TensorProto {
    let entry = |k: &str, v: String| StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v),
    };
    let length = dims.iter().product::<i64>() * 4;
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(F32),
        data_location: Some(1),
        external_data: vec![
            entry("location", "missing.weights".into()),
            entry("offset", offset.to_string()),
            entry("length", length.to_string()),
        ],
        ..Default::default()
    }
}

#[test]
fn import_file_synthesises_the_same_random_weights_as_the_loader() {
    let mut g = G::new(17);
    g.inputs.push(value("x", F32, &[-1, 100]));
    g.inits.push(missing_external("w", &[100, 100], 0));
    g.inits.push(missing_external("b", &[10], 40_000));
    g.nodes = vec![
        node("MatMul", "mm", &["x", "w"], &["h"], vec![]),
        node("Slice", "head", &["h", "s", "e"], &["hs"], vec![]),
        node("Add", "bias", &["hs", "b"], &["y"], vec![]),
    ];
    g.inits.push(ints("s", &[1], &[0]));
    g.inits.push(ints("e", &[1], &[10]));
    g.nodes[1].input = vec!["h".into(), "s".into(), "e".into(), "ax".into()];
    g.inits.push(ints("ax", &[1], &[1]));
    g.outputs = vec!["y"];
    let dir = std::env::temp_dir().join(format!("ipuc-import-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.onnx");
    std::fs::write(&path, g.proto().encode_to_vec()).unwrap();

    let load = LoadOptions {
        weights: WeightsPolicy::Random { seed: 3 },
    };
    let mut ctx = new_context();
    let module = import_file(&mut ctx, &path, &load, &Default::default()).unwrap();
    let mut ctx2 = new_context();
    let model = Model::load(&path, &load).unwrap();
    let module2 = import_model(&mut ctx2, &model, &Default::default()).unwrap();
    let print = |c: &Context, m| print_op(c, m, &PrintOptions::default());
    let (a, b) = (print(&ctx, module), print(&ctx2, module2));
    assert!(a.contains("dense_resource<w>"), "{a}");
    // The 10-element bias is inline, and random (not zeros).
    assert!(!a.contains("dense<0.000000e+00> : tensor<10xf32>"), "{a}");
    assert_eq!(a, b);
    // Without a weights policy the missing file is an error naming it.
    let err = import_file(
        &mut new_context(),
        &path,
        &LoadOptions::default(),
        &Default::default(),
    )
    .err()
    .unwrap()
    .to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(err.contains("missing.weights"), "{err}");
}
