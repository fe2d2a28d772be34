//! The node-test runner through the real compile path: import into `nn`
//! IR, verify, run on the reference interpreter, compare with the stored
//! outputs. Shared by the SigLIP-subset and the full-suite harnesses.
//!
//! The test data is bound to the model before import as `ipu-run` binds a
//! user's data set (`ipuc_frontends::onnx::import::bind_inputs`): inputs an
//! operator reads as a shape, axes, sizes, ... become constants holding their
//! test values; every other input is fed at run time with its shape fixed
//! from the data.

use std::path::Path;

use super::expectations::compare_outputs;
use super::node_runner::host;
use ipuc_frontends::onnx::import::{bind_inputs, import_model, ImportOptions};
use ipuc_frontends::onnx::{read_test_data_set, LoadOptions, Model, ValueType};
use ipuc_ir::Context;
use ipuc_runtime::reference::interpreter::{entry_function, run_function};

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
    let bound = bind_inputs(&mut model, &inputs).map_err(|e| e.to_string())?;
    let opts = ImportOptions {
        input_shapes: bound.input_shapes,
        batch: None,
        file_name: "model.onnx".into(),
    };
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = import_model(&mut ctx, &model, &opts).map_err(|e| format!("import: {e}"))?;
    ipuc_ir::verify(&ctx, module).map_err(|d| format!("verify: {}", d.message))?;
    let main = entry_function(&ctx, module).map_err(|e| e.to_string())?;
    let args: Vec<_> = bound.fed.iter().map(|&k| host(&inputs[k].tensor)).collect();
    let results = run_function(&ctx, main, &args).map_err(|e| format!("run: {e}"))?;
    compare_outputs(&results, &outputs, false)
}
