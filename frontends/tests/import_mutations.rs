//! Mutated real models never panic the importer: structural edits of ONNX
//! node-test models and of the SigLIP-tiny graph (attribute values set to
//! zero, negative or huge numbers, inputs rewired or dropped, op types
//! swapped, declared dimensions changed), then decode, import, verify and
//! print. Each either imports or fails with an error; a panic fails the test.
//! (Byte-level fuzzing of the same path is `fuzz/fuzz_targets/import_onnx.rs`.)

use std::path::{Path, PathBuf};

use bytes::Bytes;
use ipuc_frontends::onnx::import::{import_model, ImportOptions};
use ipuc_frontends::onnx::proto::{tensor_shape_proto::dimension, type_proto, ModelProto};
use ipuc_frontends::onnx::{LoadOptions, Model};
use ipuc_ir::{print_op, verify, Context, PrintOptions};
use proptest::prelude::*;
use prost::Message;

/// Seed models: small node tests of varied op families, and SigLIP-tiny.
fn seeds() -> Vec<ModelProto> {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let tests = [
        "test_conv_with_strides_padding",
        "test_reshape_negative_dim",
        "test_slice_neg_steps",
        "test_range_float_type_positive_delta",
        "test_gather_2d_indices",
        "test_split_variable_parts_2d_opset18",
        "test_layer_normalization_4d_axis1",
        "test_softmax_axis_0",
        "test_gemm_all_attributes",
        "test_constant_pad",
        "test_expand_dim_changed",
        "test_constantofshape_int_zeros",
        "test_reduce_mean_keepdims_example",
        "test_concat_3d_axis_negative_2",
        "test_tile",
        "test_where_example",
    ];
    let mut paths: Vec<PathBuf> = tests
        .iter()
        .map(|t| {
            shared
                .join("onnx-node-tests-full")
                .join(t)
                .join("model.onnx")
        })
        .collect();
    paths.push(shared.join("models/siglip-tiny/model.onnx"));
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            ModelProto::decode(bytes.as_slice()).expect("a seed model decodes")
        })
        .collect()
}

/// Numbers that break arithmetic: zero, negatives, extremes.
const NASTY: [i64; 9] = [0, -1, 1, 2, -7, 1 << 31, i64::MAX, i64::MIN, 1 << 40];

/// One structural edit, chosen by `kind` and applied at positions `a`, `b`.
fn mutate(model: &mut ModelProto, kind: u8, a: usize, b: usize, value: i64) {
    let Some(graph) = model.graph.as_mut() else {
        return;
    };
    let names: Vec<String> = graph
        .node
        .iter()
        .flat_map(|n| n.output.iter().cloned())
        .chain(graph.input.iter().filter_map(|i| i.name.clone()))
        .chain(graph.initializer.iter().filter_map(|t| t.name.clone()))
        .collect();
    let n_nodes = graph.node.len().max(1);
    let Some(node) = graph.node.get_mut(a % n_nodes) else {
        return;
    };
    match kind % 8 {
        // An integer attribute (or one entry of a list) set to a nasty value.
        0 | 1 => {
            let count = node.attribute.len().max(1);
            if let Some(attr) = node.attribute.get_mut(b % count) {
                if attr.i.is_some() {
                    attr.i = Some(value);
                }
                let len = attr.ints.len();
                if let Some(x) = attr.ints.get_mut(b % len.max(1)) {
                    *x = value;
                }
                if kind % 8 == 1 {
                    attr.ints.truncate(b % (len + 1));
                }
            }
        }
        // An input rewired to another value of the graph.
        2 => {
            let len = node.input.len();
            if let (Some(slot), false) = (node.input.get_mut(b % len.max(1)), names.is_empty()) {
                *slot = names[(b / 3) % names.len()].clone();
            }
        }
        // An input dropped (an optional one, or a required one).
        3 => {
            let len = node.input.len();
            if len > 0 {
                node.input.remove(b % len);
            }
        }
        // The op type swapped for another supported one.
        4 => {
            const OPS: [&str; 10] = [
                "Reshape",
                "Slice",
                "Concat",
                "Gather",
                "Conv",
                "Range",
                "Pad",
                "Split",
                "ReduceSum",
                "Softmax",
            ];
            node.op_type = Some(OPS[b % OPS.len()].to_string());
        }
        // A declared input dimension changed.
        5 => {
            let count = graph.input.len().max(1);
            if let Some(input) = graph.input.get_mut(b % count) {
                if let Some(type_proto::Value::TensorType(t)) =
                    input.r#type.as_mut().and_then(|t| t.value.as_mut())
                {
                    if let Some(shape) = t.shape.as_mut() {
                        let len = shape.dim.len();
                        if let Some(d) = shape.dim.get_mut(b % len.max(1)) {
                            d.value = Some(dimension::Value::DimValue(value));
                        }
                    }
                }
            }
        }
        // A small integer initializer's value changed (shapes, axes, bounds).
        6 => {
            let len = graph.initializer.len();
            if let Some(t) = graph.initializer.get_mut(b % len.max(1)) {
                let n = t.int64_data.len();
                if let Some(x) = t.int64_data.get_mut(a % n.max(1)) {
                    *x = value;
                }
            }
        }
        // An output dropped from a node.
        _ => {
            node.output.truncate(b % (node.output.len() + 1));
        }
    }
}

fn import(model: &ModelProto) {
    let Ok(model) = Model::decode(
        Bytes::from(model.encode_to_vec()),
        "mutated model",
        None,
        &LoadOptions::default(),
    ) else {
        return;
    };
    let mut ctx = Context::new(ipuc_dialects::registry());
    if let Ok(module) = import_model(&mut ctx, &model, &ImportOptions::default()) {
        verify(&ctx, module).expect("an imported module verifies");
        print_op(&ctx, module, &PrintOptions::default());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_models_import_or_fail_cleanly(
        seed in any::<prop::sample::Index>(),
        edits in proptest::collection::vec(
            (any::<u8>(), any::<usize>(), any::<usize>(), any::<prop::sample::Index>()),
            1..4,
        ),
    ) {
        let seeds = seeds();
        let mut model = seeds[seed.index(seeds.len())].clone();
        for (kind, a, b, v) in edits {
            mutate(&mut model, kind, a, b, NASTY[v.index(NASTY.len())]);
        }
        import(&model);
    }
}
