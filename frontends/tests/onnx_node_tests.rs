//! Runs the runtime's reference kernels on the ONNX backend node tests
//! (`../shared/onnx-node-tests`): each folder holds a one-node `model.onnx` and
//! `test_data_set_0/{input,output}_K.pb`. The node and its attributes are decoded
//! by this crate's ONNX loader, mapped onto a kernel, and the outputs compared
//! (floats: rtol 1e-3 / atol 1e-5, NaN where NaN is expected; integers, bools and
//! 8-bit floats: exact).
//!
//! `onnx_node_tests.expected` lists every test with PASS or FAIL and a reason
//! (see `common/expectations.rs`; `IPUC_BLESS=1` rewrites it).

mod common;

use std::path::Path;

use common::expectations::{compare_outputs, run_node_tests};
use common::node_runner::{node_inputs, run_node, start_values};
use ipuc_frontends::onnx::{read_test_data_set, LoadOptions, Model};

fn run_test(dir: &Path) -> Result<(), String> {
    let model =
        Model::load(&dir.join("model.onnx"), &LoadOptions::default()).map_err(|e| e.to_string())?;
    let graph = &model.graph;
    let [node] = graph.nodes.as_slice() else {
        return Err(format!("expected one node, found {}", graph.nodes.len()));
    };
    let (inputs, outputs) =
        read_test_data_set(&dir.join("test_data_set_0")).map_err(|e| e.to_string())?;
    let values = start_values(graph, &inputs);
    let opset = model.opset_version("").unwrap_or(1);
    let results = run_node(node, opset, &node_inputs(node, &values))?;
    compare_outputs(&results, &outputs, true)
}

#[test]
fn onnx_backend_node_tests() {
    run_node_tests(
        "ONNX node tests at kernel level",
        "onnx-node-tests",
        "onnx_node_tests.expected",
        "ONNX backend node tests run by tests/onnx_node_tests.rs: PASS, or FAIL with the reason.",
        run_test,
    );
}
