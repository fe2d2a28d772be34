//! The node-test runner through the real compile path: import into `nn`
//! IR, verify, run on the reference interpreter, compare with the stored
//! outputs. Shared by the SigLIP-subset and the full-suite harnesses.
//!
//! ipuc compiles static shapes, so a graph input that an operator reads as a
//! shape, axes, sizes, ... (see [`STATIC_INPUTS`]) is bound to its test value
//! before import: it becomes an initializer holding the test tensor, exactly
//! as if the model had been exported with that constant. Every other input is
//! passed to the compiled function at run time, with its shape fixed from the
//! test data (what `--input-shape` does for a user).

use std::collections::HashSet;
use std::path::Path;

use super::expectations::compare;
use super::node_runner::host;
use ipuc_frontends::onnx::import::{import_model, ImportOptions};
use ipuc_frontends::onnx::{
    read_test_data_set, Initializer, LoadOptions, Model, NamedTensor, ValueType, WeightRole,
    WeightSource,
};
use ipuc_ir::Context;
use ipuc_runtime::reference::interpreter::{entry_function, run_function};

/// The operator inputs that must be constants at import, by op type: input
/// positions and what they mean. A graph input in one of these positions is
/// bound to its test value. Inputs not listed (data, and `Gather`'s indices,
/// which `nn.gather` takes as an operand) stay run-time inputs.
const STATIC_INPUTS: &[(&str, &[usize], &str)] = &[
    ("ConstantOfShape", &[0], "output shape"),
    ("Expand", &[1], "target shape"),
    ("Pad", &[1, 2, 3], "pads, fill value, axes"),
    (
        "Range",
        &[0, 1, 2],
        "start, limit, delta (they fix the length)",
    ),
    ("ReduceMax", &[1], "axes (opset 18)"),
    ("ReduceMean", &[1], "axes (opset 18)"),
    ("ReduceSum", &[1], "axes (opset 13)"),
    ("Reshape", &[1], "target shape"),
    ("Slice", &[1, 2, 3, 4], "starts, ends, axes, steps"),
    ("Split", &[1], "split sizes (opset 13)"),
    ("Squeeze", &[1], "axes (opset 13)"),
    ("Tile", &[1], "repeats"),
    ("Unsqueeze", &[1], "axes (opset 13)"),
];

/// Names of the graph inputs some node reads in a [`STATIC_INPUTS`] position.
fn static_input_names(model: &Model) -> HashSet<String> {
    let mut names = HashSet::new();
    for node in &model.graph.nodes {
        let Some((_, positions, _)) = STATIC_INPUTS.iter().find(|(op, ..)| *op == node.op_type)
        else {
            continue;
        };
        for &i in *positions {
            if let Some(name) = node.input(i) {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// Binds the static inputs of `model` to their values in `inputs` (the test
/// data, one per runtime input in order) by turning them into initializers,
/// and returns the tensors still to be fed at run time, in order.
fn bind_static_inputs(
    model: &mut Model,
    inputs: Vec<NamedTensor>,
) -> Result<Vec<NamedTensor>, String> {
    let runtime: Vec<String> = model
        .graph
        .runtime_inputs()
        .map(|v| v.name.clone())
        .collect();
    if runtime.len() != inputs.len() {
        return Err(format!(
            "the model has {} runtime input(s), the test data {}",
            runtime.len(),
            inputs.len()
        ));
    }
    let statics = static_input_names(model);
    let mut fed = Vec::new();
    for (name, data) in runtime.into_iter().zip(inputs) {
        if statics.contains(&name) {
            model.graph.initializers.push(Initializer {
                name,
                tensor: data.tensor,
                source: WeightSource::Inline,
                role: WeightRole::default(),
            });
        } else {
            fed.push(NamedTensor { name, ..data });
        }
    }
    Ok(fed)
}

/// Runs the case in folder `dir`.
pub fn run_test(dir: &Path) -> Result<(), String> {
    let mut model =
        Model::load(&dir.join("model.onnx"), &LoadOptions::default()).map_err(|e| e.to_string())?;
    // Such inputs' test data are not TensorProtos; say so rather than fail to decode them.
    if let Some((name, what)) = model.graph.runtime_inputs().find_map(|v| match &v.ty {
        ValueType::Unsupported(what) => Some((&v.name, what)),
        _ => None,
    }) {
        return Err(format!(
            "graph input `{name}` has type {what}; ipuc imports tensor inputs only"
        ));
    }
    let (inputs, outputs) =
        read_test_data_set(&dir.join("test_data_set_0")).map_err(|e| e.to_string())?;
    let fed = bind_static_inputs(&mut model, inputs)?;
    let opts = ImportOptions {
        input_shapes: fed
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    t.tensor.dims.iter().map(|&d| d as i64).collect(),
                )
            })
            .collect(),
        file_name: "model.onnx".into(),
    };
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = import_model(&mut ctx, &model, &opts).map_err(|e| format!("import: {e}"))?;
    ipuc_ir::verify(&ctx, module).map_err(|d| format!("verify: {}", d.message))?;
    let main = entry_function(&ctx, module).map_err(|e| e.to_string())?;
    let args: Vec<_> = fed.iter().map(|t| host(&t.tensor)).collect();
    let results = run_function(&ctx, main, &args).map_err(|e| format!("run: {e}"))?;
    if results.len() != outputs.len() {
        return Err(format!(
            "{} outputs, expected {}",
            results.len(),
            outputs.len()
        ));
    }
    for (i, (got, want)) in results.iter().zip(&outputs).enumerate() {
        compare(&format!("output {i}"), got, &want.tensor)?;
    }
    Ok(())
}
