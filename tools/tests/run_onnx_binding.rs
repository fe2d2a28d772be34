//! `ipu-run` binds an ONNX model to its data set before import, as
//! onnxruntime does at run time: dynamic dimensions take the data's sizes,
//! inputs used as shapes become constants, and data that does not fit the
//! model's declared inputs is refused with an error naming the input.

use std::path::{Path, PathBuf};

use ipuc_frontends::onnx::{read_tensor_pb, write_tensor_pb, Tensor};
use serde_json::Value;

mod common;

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// `ipu-run ARGS --device reference --json`: the binding is the
/// importer's, tested on the host reference executor (which runs any graph
/// the importer reads).
fn ipu_run(args: &[&Path]) -> (i32, String, String) {
    let args = args.iter().map(|a| a.as_os_str());
    common::run_tool(
        env!("CARGO_BIN_EXE_ipu-run"),
        args.chain(["--device", "reference", "--json"].map(std::ffi::OsStr::new)),
    )
}

/// `t` twice along its leading (batch) dimension.
fn doubled(t: &Tensor) -> Tensor {
    let mut dims = t.dims.clone();
    dims[0] *= 2;
    let data: Vec<u8> = t.data.iter().chain(t.data.iter()).copied().collect();
    Tensor::new(t.kind, dims, data.into()).expect("twice the bytes for twice the batch")
}

#[test]
fn a_batch_of_two_binds_the_dynamic_batch_dimension() {
    let fixture = shared().join("models/siglip-tiny");
    let set = fixture.join("test_data_set_0");
    let tmp = tempfile::tempdir().unwrap();
    // The batch-1 image twice; the expected outputs are onnxruntime's
    // batch-1 outputs twice (batch items are independent).
    for name in ["input_0", "output_0", "output_1"] {
        let t = read_tensor_pb(&set.join(format!("{name}.pb"))).unwrap();
        write_tensor_pb(
            &tmp.path().join(format!("{name}.pb")),
            &t.name,
            &doubled(&t.tensor),
        )
        .unwrap();
    }
    let (code, stdout, stderr) = ipu_run(&[
        &fixture.join("model.onnx"),
        Path::new("--input"),
        tmp.path(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let outputs = report["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0]["shape"], serde_json::json!([2, 16, 64]));
    assert_eq!(outputs[1]["shape"], serde_json::json!([2, 64]));
    for o in outputs {
        assert_eq!(o["passed"], true, "{o}");
    }
}

#[test]
fn an_input_used_as_a_shape_is_bound_from_its_value() {
    // Reshape's target shape is a graph input: ipu-run makes it a constant.
    let case = shared().join("onnx-node-tests/test_reshape_reordered_all_dims");
    let (code, stdout, stderr) = ipu_run(&[
        &case.join("model.onnx"),
        Path::new("--input"),
        &case.join("test_data_set_0"),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["passed"], true, "{report}");
}

#[test]
fn data_that_does_not_fit_the_declared_inputs_is_refused() {
    let fixture = shared().join("models/siglip-tiny");
    let tmp = tempfile::tempdir().unwrap();
    // `pixel_values` as `t` is refused with an error saying `says`.
    let refused = |t: Tensor, says: &str| {
        write_tensor_pb(&tmp.path().join("input_0.pb"), "pixel_values", &t).unwrap();
        let (code, _, stderr) = ipu_run(&[
            &fixture.join("model.onnx"),
            Path::new("--input"),
            tmp.path(),
        ]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    };
    // The model fixes 3 channels.
    refused(
        Tensor::from_f32(vec![1, 4, 32, 32], &vec![0.0; 4 * 32 * 32]),
        "graph input `pixel_values`: dimension 1 is fixed to 3 by the model, but the data has \
         shape [1, 4, 32, 32]",
    );
    // A wrong element type.
    refused(
        Tensor::new(
            ipuc_ir::numeric::ElementKind::F64,
            vec![1, 3, 32, 32],
            vec![0u8; 8 * 3 * 32 * 32].into(),
        )
        .unwrap(),
        "graph input `pixel_values`: is declared with element type f32, but the data holds f64",
    );
}
