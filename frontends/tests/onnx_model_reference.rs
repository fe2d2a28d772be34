//! Whole SigLIP fixtures run node by node on the reference kernels, compared with
//! the onnxruntime outputs shipped beside them (rtol 1e-3 / atol 1e-4, the
//! tolerance the fixture README recommends).

mod common;

use std::path::Path;

use common::node_runner::{node_inputs, run_node, start_values};
use ipuc_frontends::onnx::{read_test_data_set, LoadOptions, Model};

fn run_fixture(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/models")
        .join(name);
    let model = Model::load(&dir.join("model.onnx"), &LoadOptions::default()).unwrap();
    let (inputs, outputs) = read_test_data_set(&dir.join("test_data_set_0")).unwrap();
    let graph = &model.graph;
    let opset = model.opset_version("").unwrap();
    let mut values = start_values(graph, &inputs);
    for index in graph.topological_order().unwrap() {
        let node = &graph.nodes[index];
        let results = run_node(node, opset, &node_inputs(node, &values))
            .unwrap_or_else(|e| panic!("{name}: node `{}` ({}): {e}", node.name, node.op_type));
        for (output, value) in node.outputs.iter().zip(results) {
            if !output.is_empty() {
                values.insert(output, value);
            }
        }
    }
    for (info, want) in graph.outputs.iter().zip(&outputs) {
        let got = &values[info.name.as_str()];
        assert_eq!(got.shape, want.tensor.dims, "{name}: {}", info.name);
        let (g, w) = (got.to_f64_vec(), want.tensor.to_f64_vec());
        let worst = g
            .iter()
            .zip(&w)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!("{name}: {} max |diff| = {worst:.2e}", info.name);
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 + 1e-3 * b.abs(),
                "{name}: {}[{i}] = {a}, onnxruntime {b}",
                info.name
            );
        }
    }
}

#[test]
fn siglip_tiny_matches_onnxruntime() {
    run_fixture("siglip-tiny");
}

#[test]
fn siglip_tiny_dynamo_matches_onnxruntime() {
    run_fixture("siglip-tiny-dynamo");
}

#[test]
fn siglip_tiny_opset14_matches_onnxruntime() {
    run_fixture("siglip-tiny-opset14");
}

#[test]
fn siglip_small_matches_onnxruntime() {
    run_fixture("siglip-small");
}
