//! `--extract` on the siglip-small fixture: each extracted block, run alone
//! on the reference executor, gives the values the whole model computes at
//! the same place.
//!
//! The check is independent of the extraction's scope rules: the block's
//! input and output are found in the *unfused* import by the exact ONNX
//! node names the exporter gave them (the first LayerNorm's input, the
//! residual add's output), the whole model is made to return those two
//! tensors and runs on the fixture's test input; the extracted block (fused
//! by `eqsat-fuse` first, as `--extract` does, and unfused) then runs on
//! that input and must give that output.

mod common;

use std::path::Path;

use ipuc_dialects::func;
use ipuc_frontends::onnx::read_test_data_set;
use ipuc_ir::attributes::Attribute;
use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions, PassRegistry};
use ipuc_ir::{Context, OpId, Type, Value, WalkOrder};
use ipuc_passes::extract::extract_pipeline;
use ipuc_runtime::reference::interpreter::run_function;
use ipuc_runtime::reference::HostTensor;
use ipuc_tools::run::{compare, Tolerance};

fn import(dir: &Path) -> (Context, OpId) {
    common::import_fixture(dir, None)
}

fn function(ctx: &Context, module: OpId) -> OpId {
    ctx.collect_ops(module, WalkOrder::PreOrder)
        .into_iter()
        .find(|&op| ctx.name_str(op) == func::FUNC)
        .expect("a function")
}

/// The op the exporter named `name` (unfused import: one name per op).
fn node(ctx: &Context, f: OpId, name: &str) -> OpId {
    ctx.collect_ops(f, WalkOrder::PreOrder)
        .into_iter()
        .find(|&op| ctx.loc(op).name_of() == Some(name))
        .unwrap_or_else(|| panic!("no node named {name}"))
}

fn test_input(dir: &Path) -> HostTensor {
    let (inputs, _) = read_test_data_set(&dir.join("test_data_set_0")).expect("test data");
    let t = &inputs[0].tensor;
    HostTensor::new(t.kind, t.dims.clone(), t.data[..].into())
}

/// The whole model's values of `input_of` node's first operand and
/// `output_of` node's result, on the fixture's test input.
fn intermediates(dir: &Path, input_of: &str, output_of: &str) -> (HostTensor, HostTensor) {
    let (mut ctx, module) = import(dir);
    let f = function(&ctx, module);
    let x: Value = ctx.operand(node(&ctx, f, input_of), 0);
    let y: Value = ctx.result(node(&ctx, f, output_of), 0);
    let body = func::entry_block(&ctx, f).unwrap();
    let ret = ctx.terminator(body).unwrap();
    ctx.set_operands(ret, &[x, y]);
    let (inputs, _) = func::function_type(&ctx, f).unwrap();
    let results: Vec<Type> = [x, y].iter().map(|&v| ctx.value_type(v).clone()).collect();
    ctx.set_attr(
        f,
        "function_type",
        Attribute::type_attr(Type::function(inputs, results)),
    );
    let mut out = run_function(&ctx, f, &[test_input(dir)]).expect("run the model");
    let y = out.pop().unwrap();
    (out.pop().unwrap(), y)
}

/// Runs `pipeline` on the imported model and the resulting function on `x`.
fn run_extracted(dir: &Path, pipeline: &str, expected_name: &str, x: &HostTensor) -> HostTensor {
    let mut out = run_extracted_all(dir, pipeline, expected_name, x);
    assert_eq!(out.len(), 1, "{expected_name} returns one value");
    out.pop().unwrap()
}

/// [`run_extracted`], every result.
fn run_extracted_all(
    dir: &Path,
    pipeline: &str,
    expected_name: &str,
    x: &HostTensor,
) -> Vec<HostTensor> {
    let (mut ctx, module) = import(dir);
    let mut registry = PassRegistry::new();
    ipuc_tools::registry::register_passes(&mut registry).unwrap();
    let mut pm = PassManager::new(PassManagerOptions::default());
    pm.add_pipeline(&registry, &parse_pipeline(pipeline).unwrap())
        .unwrap();
    pm.run(&mut ctx, module).expect("extract");
    let f = function(&ctx, module);
    assert_eq!(
        ctx.attr(f, "sym_name").and_then(|a| a.as_str()),
        Some(expected_name)
    );
    run_function(&ctx, f, std::slice::from_ref(x)).expect("run the block")
}

fn check(block: &str, function_name: &str, input_of: &str, output_of: &str) {
    let Some(dir) = common::fixture_dir("siglip-small") else {
        return;
    };
    let (x, y) = intermediates(&dir, input_of, output_of);
    // A block that passed its input through would fail: the block moves it.
    let moved = compare(
        &x.to_f64_vec(),
        &y.to_f64_vec(),
        Tolerance::allclose(0.0, 0.0),
    );
    assert!(moved.rel_l2_err > 1e-2, "{block}: {moved:?}");
    for (pipeline, max_rel_l2) in [
        // Unfused: the same ops on the same values, only the order of
        // evaluation can differ.
        (
            format!("builtin.module(extract-block{{block={block}}})"),
            1e-7,
        ),
        // Fused, as `--extract` does: GELU, linear and attention kernels
        // replace their decompositions.
        (extract_pipeline(block), 1e-5),
    ] {
        let out = run_extracted(&dir, &pipeline, function_name, &x);
        assert_eq!(out.shape, y.shape);
        let m = compare(
            &out.to_f64_vec(),
            &y.to_f64_vec(),
            Tolerance::allclose(1e-4, 1e-3),
        );
        eprintln!(
            "{block} ({pipeline}): rel L2 {:.2e}, cosine {:.9}",
            m.rel_l2_err, m.cosine
        );
        assert!(
            m.rel_l2_err < max_rel_l2 && m.mismatches == 0,
            "{block} via {pipeline}: {m:?}"
        );
    }
}

#[test]
fn mlp_block_equals_the_models_values() {
    check(
        "mlp:2",
        "layer2_mlp",
        "/model/encoder/layers.2/layer_norm2/LayerNormalization",
        "/model/encoder/layers.2/Add_1",
    );
}

#[test]
fn attention_block_equals_the_models_values() {
    check(
        "attention:0",
        "layer0_attention",
        "/model/encoder/layers.0/layer_norm1/LayerNormalization",
        "/model/encoder/layers.0/Add",
    );
}

#[test]
fn layer_equals_the_models_values() {
    check(
        "layer:3",
        "layer3",
        "/model/encoder/layers.3/layer_norm1/LayerNormalization",
        "/model/encoder/layers.3/Add_1",
    );
}

#[test]
fn head_gives_the_models_outputs() {
    let Some(dir) = common::fixture_dir("siglip-small") else {
        return;
    };
    // The head's input: the post-LayerNorm's, the last layer's output;
    // its outputs: the whole model's (last hidden state, pooled output).
    let (mut ctx, module) = import(&dir);
    let f = function(&ctx, module);
    let ln = node(&ctx, f, "/model/post_layernorm/LayerNormalization");
    let x: Value = ctx.operand(ln, 0);
    let body = func::entry_block(&ctx, f).unwrap();
    let ret = ctx.terminator(body).unwrap();
    let mut returned = ctx.operands(ret).to_vec();
    returned.insert(0, x);
    ctx.set_operands(ret, &returned);
    let (inputs, _) = func::function_type(&ctx, f).unwrap();
    let results: Vec<Type> = returned
        .iter()
        .map(|&v| ctx.value_type(v).clone())
        .collect();
    ctx.set_attr(
        f,
        "function_type",
        Attribute::type_attr(Type::function(inputs, results)),
    );
    let mut want = run_function(&ctx, f, &[test_input(&dir)]).expect("run the model");
    let x = want.remove(0);
    assert_eq!(want.len(), 2, "the model's two outputs");
    for (pipeline, max_rel_l2) in [
        (
            "builtin.module(extract-block{block=head})".to_string(),
            1e-7,
        ),
        (extract_pipeline("head"), 1e-5),
    ] {
        let got = run_extracted_all(&dir, &pipeline, "head", &x);
        assert_eq!(
            got.len(),
            2,
            "head returns the post-LayerNorm and the pooled row"
        );
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.shape, w.shape);
            let m = compare(
                &g.to_f64_vec(),
                &w.to_f64_vec(),
                Tolerance::allclose(1e-4, 1e-3),
            );
            eprintln!(
                "head ({pipeline}): rel L2 {:.2e}, cosine {:.9}",
                m.rel_l2_err, m.cosine
            );
            assert!(
                m.rel_l2_err < max_rel_l2 && m.mismatches == 0,
                "head via {pipeline}: {m:?}"
            );
        }
    }
}
