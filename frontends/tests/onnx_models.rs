//! Loading the shared SigLIP fixtures and checking the frontend's view of them.

use std::path::{Path, PathBuf};

use ipuc_frontends::onnx::{
    read_tensor_pb, read_test_data_set, write_tensor_pb, Dim, LoadOptions, Model, OnnxError,
    Tensor, ValueType, WeightRole, WeightSource, WeightsPolicy,
};
use ipuc_ir::numeric::ElementKind;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

fn fixture(name: &str) -> PathBuf {
    shared().join("models").join(name).join("model.onnx")
}

#[test]
fn tiny_model_matches_its_published_description() {
    let model = Model::load(&fixture("siglip-tiny"), &LoadOptions::default()).unwrap();
    assert_eq!(model.ir_version, 8);
    assert_eq!(model.opset_version(""), Some(17));
    assert_eq!(model.opset_version("ai.onnx"), Some(17));
    assert_eq!(model.graph.nodes.len(), 340);
    let inputs: Vec<_> = model.graph.runtime_inputs().collect();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "pixel_values");
    assert_eq!(
        inputs[0].ty,
        ValueType::Tensor {
            kind: ElementKind::F32,
            shape: Some(vec![
                Dim::Symbolic("batch".into()),
                Dim::Fixed(3),
                Dim::Fixed(32),
                Dim::Fixed(32)
            ])
        }
    );
    let outputs: Vec<_> = model
        .graph
        .outputs
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(outputs, ["last_hidden_state", "pooler_output"]);

    // Histogram from fixtures.json.
    let histogram = model.graph.op_histogram();
    let count = |op: &str| histogram.iter().find(|c| c.op_type == op).map(|c| c.count);
    assert_eq!(histogram[0].op_type, "Constant");
    assert_eq!(count("Constant"), Some(109));
    assert_eq!(count("MatMul"), Some(22));
    assert_eq!(count("LayerNormalization"), Some(6));
    assert_eq!(count("Tile"), Some(1));
    assert_eq!(histogram.iter().map(|c| c.count).sum::<usize>(), 340);

    // One error lists every unsupported op type with its count and first node.
    let err = model
        .graph
        .check_supported(|_, op| !matches!(op, "Tile" | "Mod" | "Unsqueeze"))
        .unwrap_err()
        .to_string();
    let first_unsqueeze = &model.graph.first_node("Unsqueeze").unwrap().name;
    assert!(
        err.starts_with(
            "3 unsupported operator type(s) (38 node(s)):\n  Unsqueeze x36 (first: node `"
        ),
        "{err}"
    );
    assert!(
        err.contains(&format!("`{first_unsqueeze}`"))
            && err.contains("\n  Mod x1")
            && err.contains("\n  Tile x1"),
        "{err}"
    );
    model
        .graph
        .check_supported(|domain, _| domain.is_empty())
        .unwrap();

    // File order is already topological; the helper keeps it.
    let order = model.graph.topological_order().unwrap();
    assert_eq!(order, (0..340).collect::<Vec<_>>());

    // Node names are unique; attributes decode with their types.
    let mut names: Vec<_> = model.graph.nodes.iter().map(|n| n.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 340);
    let ln = model.graph.first_node("LayerNormalization").unwrap();
    assert!((ln.float_attr("epsilon", 0.0).unwrap() - 1e-6).abs() < 1e-12);
    let conv = model.graph.first_node("Conv").unwrap();
    assert_eq!(conv.ints_attr("strides").unwrap(), Some(&[8i64, 8][..]));
    assert!(conv
        .float_attr("strides", 0.0)
        .unwrap_err()
        .to_string()
        .contains("expected FLOAT, found INTS"));

    // Roles: LayerNorm scale/bias, linear biases.
    let role = |input: usize, node: &ipuc_frontends::onnx::Node| {
        model.graph.initializer(&node.inputs[input]).map(|i| i.role)
    };
    assert_eq!(role(1, ln), Some(WeightRole::NormScale));
    assert_eq!(role(2, ln), Some(WeightRole::NormBias));
    assert_eq!(role(2, conv), Some(WeightRole::Bias));
    let matmul_weight = model
        .graph
        .nodes
        .iter()
        .filter(|n| n.op_type == "MatMul")
        .find_map(|n| role(1, n));
    assert_eq!(matmul_weight, Some(WeightRole::Weight));
    assert!(model
        .graph
        .initializers
        .iter()
        .any(|i| i.role == WeightRole::Bias && i.tensor.dims == [64]));
}

#[test]
fn other_fixtures_load() {
    for (name, nodes, opset) in [
        ("siglip-tiny-dynamo", 126, 18),
        ("siglip-tiny-opset14", 0, 14),
        ("siglip-small", 0, 17),
    ] {
        let model = Model::load(&fixture(name), &LoadOptions::default()).unwrap();
        assert_eq!(model.opset_version(""), Some(opset), "{name}");
        if nodes > 0 {
            assert_eq!(model.graph.nodes.len(), nodes, "{name}");
        }
        model.graph.topological_order().unwrap();
        let (inputs, outputs) =
            read_test_data_set(&fixture(name).with_file_name("test_data_set_0")).unwrap();
        assert_eq!(inputs.len(), 1);
        assert_eq!(outputs.len(), 2);
        assert_eq!(inputs[0].name, "pixel_values");
    }
    // The opset-14 export decomposes LayerNorm; the role heuristic still finds scales.
    let model = Model::load(&fixture("siglip-tiny-opset14"), &LoadOptions::default()).unwrap();
    assert!(model
        .graph
        .initializers
        .iter()
        .any(|i| i.role == WeightRole::NormScale));
    assert!(model
        .graph
        .initializers
        .iter()
        .any(|i| i.role == WeightRole::NormBias));
}

#[test]
fn graph_only_model_needs_weights_or_a_policy() {
    let path = fixture("siglip-so400m");
    let err = Model::load(&path, &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, OnnxError::MissingExternalData { .. }));
    let message = err.to_string();
    assert!(message.contains("so400m.weights"), "{message}");
    assert!(message.contains("--weights=zeros"), "{message}");
    assert!(message.starts_with("initializer `"), "{message}");
}

#[test]
fn graph_only_model_with_zero_weights() {
    let model = Model::load(
        &fixture("siglip-so400m"),
        &LoadOptions {
            weights: WeightsPolicy::Zeros,
        },
    )
    .unwrap();
    assert_eq!(model.graph.nodes.len(), 2265);
    assert_eq!(model.graph.initializers.len(), 448);
    // Parameter count from the fixture README (float32: 4 bytes each); small inline
    // initializers are included in both.
    let params: usize = model
        .graph
        .initializers
        .iter()
        .map(|i| i.tensor.element_count())
        .sum();
    assert_eq!(params, 428_225_600);
    let external: usize = model
        .graph
        .initializers
        .iter()
        .filter(|i| matches!(i.source, WeightSource::Synthesized(_)))
        .map(|i| i.tensor.data.len())
        .sum();
    assert_eq!(external, 1_712_902_400);
    assert!(model.graph.initializers.iter().all(|i| i
        .tensor
        .data
        .iter()
        .take(64)
        .all(|&b| b == 0)));
}

#[test]
fn random_weights_are_seeded_scaled_by_role_and_saved_in_the_expected_layout() {
    // Build a small graph-only model from the tiny fixture: move its weights out.
    let dir = tempdir("random_weights");
    let model = Model::load(&fixture("siglip-tiny"), &LoadOptions::default()).unwrap();
    let proto = externalize(&fixture("siglip-tiny"), "weights.bin");
    std::fs::write(dir.join("model.onnx"), proto).unwrap();

    let random = |seed| {
        Model::load(
            &dir.join("model.onnx"),
            &LoadOptions {
                weights: WeightsPolicy::Random { seed },
            },
        )
        .unwrap()
    };
    let a = random(7);
    let b = random(7);
    let c = random(8);
    assert_eq!(a, b, "same seed, same weights");
    assert_ne!(a.graph.initializers, c.graph.initializers);
    let stats = |role: WeightRole| {
        let values: Vec<f64> = a
            .graph
            .initializers
            .iter()
            .filter(|i| i.role == role && matches!(i.source, WeightSource::Synthesized(_)))
            .flat_map(|i| i.tensor.to_f64_vec())
            .collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let std =
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64).sqrt();
        (mean, std, values.len())
    };
    let (mean, std, n) = stats(WeightRole::Weight);
    assert!(
        n > 10_000 && mean.abs() < 0.002 && (std - 0.02).abs() < 0.002,
        "{mean} {std} {n}"
    );
    let (mean, std, n) = stats(WeightRole::NormScale);
    assert!(
        n >= 64 && (mean - 1.0).abs() < 0.03 && (std - 0.1).abs() < 0.03,
        "{mean} {std} {n}"
    );

    // save_weights writes the file the graph points to; loading it back with the
    // strict policy gives the same tensors, read from disk.
    let written = a.save_weights(&dir).unwrap();
    assert_eq!(written, vec![dir.join("weights.bin")]);
    let reloaded = Model::load(&dir.join("model.onnx"), &LoadOptions::default()).unwrap();
    assert_same_tensors(&a, &reloaded);
    for (x, y) in a
        .graph
        .initializers
        .iter()
        .zip(&reloaded.graph.initializers)
    {
        assert_eq!(
            matches!(x.source, WeightSource::Synthesized(_)),
            matches!(y.source, WeightSource::External(_))
        );
    }
    // And the original weights survive the same round trip byte for byte.
    std::fs::remove_file(dir.join("weights.bin")).unwrap();
    let orig_external = Model::load(
        &dir.join("model.onnx"),
        &LoadOptions {
            weights: WeightsPolicy::Zeros,
        },
    )
    .unwrap();
    let mut with_original = orig_external.clone();
    for (init, original) in with_original
        .graph
        .initializers
        .iter_mut()
        .zip(&model.graph.initializers)
    {
        init.tensor = original.tensor.clone();
    }
    with_original.save_weights(&dir).unwrap();
    let reloaded = Model::load(&dir.join("model.onnx"), &LoadOptions::default()).unwrap();
    assert_same_tensors(&model, &reloaded);
}

/// Asserts that two models hold the same initializer tensors, in order.
fn assert_same_tensors(a: &Model, b: &Model) {
    assert_eq!(a.graph.initializers.len(), b.graph.initializers.len());
    for (x, y) in a.graph.initializers.iter().zip(&b.graph.initializers) {
        assert_eq!(x.tensor, y.tensor, "{}", x.name);
    }
}

#[test]
fn external_data_errors_name_the_initializer() {
    let dir = tempdir("external_errors");
    std::fs::write(
        dir.join("model.onnx"),
        externalize(&fixture("siglip-tiny"), "w.bin"),
    )
    .unwrap();
    std::fs::write(dir.join("w.bin"), [0u8; 16]).unwrap();
    let err = Model::load(&dir.join("model.onnx"), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("beyond the end of") && err.contains("initializer `"),
        "{err}"
    );
}

#[test]
fn pb_files_round_trip() {
    let dir = tempdir("pb");
    let path = dir.join("t.pb");
    let t = Tensor::from_f32(vec![2, 3], &[1.0, 2.0, 3.0, -4.0, 0.5, 1e-3]);
    write_tensor_pb(&path, "x", &t).unwrap();
    let back = read_tensor_pb(&path).unwrap();
    assert_eq!(back.name, "x");
    assert_eq!(back.tensor, t);
    let err = read_tensor_pb(&dir.join("missing.pb"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.pb"), "{err}");
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipuc-onnx-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Rewrites a model so that every initializer of 256 bytes or more lives in an external
/// file `location` (not written), as `onnx.save_model(save_as_external_data=True)` does.
fn externalize(path: &Path, location: &str) -> Vec<u8> {
    externalize_with_data(path, location).0
}

/// The model bytes [`externalize`] makes, and the external file's bytes.
fn externalize_with_data(path: &Path, location: &str) -> (Vec<u8>, Vec<u8>) {
    use ipuc_frontends::onnx::proto::ModelProto;
    use prost::Message;
    let mut proto = ModelProto::decode(std::fs::read(path).unwrap().as_slice()).unwrap();
    let data = ipuc_frontends::onnx::externalize_initializers(&mut proto, location, 256, 4096);
    (proto.encode_to_vec(), data)
}

#[test]
fn externalized_initializers_load_back_from_their_file() {
    let dir = tempdir("externalized");
    let (model, data) = externalize_with_data(&fixture("siglip-tiny"), "w.bin");
    std::fs::write(dir.join("model.onnx"), model).unwrap();
    std::fs::write(dir.join("w.bin"), data).unwrap();
    let original = Model::load(&fixture("siglip-tiny"), &LoadOptions::default()).unwrap();
    let moved = Model::load(&dir.join("model.onnx"), &LoadOptions::default()).unwrap();
    let external = moved
        .graph
        .initializers
        .iter()
        .filter(|i| matches!(i.source, WeightSource::External(_)))
        .count();
    assert!(external > 0, "no initializer moved out");
    assert_same_tensors(&original, &moved);
}
