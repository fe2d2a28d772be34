//! Bad ONNX input gives an error naming the node and what to do, never a
//! panic: one regression test per case found by review or by fuzzing
//! (`fuzz/fuzz_targets/import_onnx.rs`).

mod common;

use common::graph_builder::*;
use ipuc_frontends::onnx::proto::TensorProto;

fn range_graph(start: TensorProto, limit: TensorProto, delta: TensorProto) -> G {
    let mut g = G::new(17);
    g.inits = vec![start, limit, delta];
    g.nodes = vec![node(
        "Range",
        "positions",
        &["start", "limit", "delta"],
        &["y"],
        vec![],
    )];
    g.outputs = vec!["y"];
    g
}

#[test]
fn range_with_mixed_float_and_integer_inputs_is_an_error() {
    let g = range_graph(
        floats("start", &[], &[0.0]),
        ints("limit", &[], &[10]),
        floats("delta", &[], &[1.0]),
    );
    let err = g.error();
    assert!(
        err.contains("node `positions` (Range): `start` is f32 but input #1 is i64"),
        "{err}"
    );
    assert!(err.contains("insert a Cast"), "{err}");
}

#[test]
fn range_with_an_enormous_limit_is_an_error() {
    let g = range_graph(
        ints("start", &[], &[0]),
        ints("limit", &[], &[i64::MAX]),
        ints("delta", &[], &[1]),
    );
    let err = g.error();
    assert!(
        err.contains("node `positions` (Range): would produce 9223372036854775807 elements"),
        "{err}"
    );
    let g = range_graph(
        ints("start", &[], &[i64::MIN]),
        ints("limit", &[], &[i64::MAX]),
        ints("delta", &[], &[3]),
    );
    assert!(g.error().contains("would produce"));
    let g = range_graph(
        floats("start", &[], &[0.0]),
        floats("limit", &[], &[1e30]),
        floats("delta", &[], &[1e-30]),
    );
    assert!(g.error().contains("would produce"));
    let g = range_graph(
        floats("start", &[], &[0.0]),
        floats("limit", &[], &[f32::INFINITY]),
        floats("delta", &[], &[1.0]),
    );
    assert!(g.error().contains("needs finite values"), "{}", g.error());
}

fn conv_graph(attrs: Vec<(&'static str, A<'static>)>) -> G {
    let mut g = G::new(17);
    g.inputs.push(value("x", F32, &[1, 1, 5, 5]));
    g.inits = vec![floats("w", &[1, 1, 3, 3], &[1.0; 9])];
    g.nodes = vec![node("Conv", "stem", &["x", "w"], &["y"], attrs)];
    g.outputs = vec!["y"];
    g
}

#[test]
fn conv_with_a_zero_stride_is_an_error() {
    for auto_pad in ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"] {
        let err = conv_graph(vec![
            ("strides", A::Is(&[0, 1])),
            ("auto_pad", A::S(auto_pad)),
        ])
        .error();
        assert!(
            err.contains("node `stem` (Conv): `strides` [0, 1] must be positive"),
            "{auto_pad}: {err}"
        );
    }
    let err = conv_graph(vec![("dilations", A::Is(&[1, -2]))]).error();
    assert!(
        err.contains("`dilations` [1, -2] must be positive"),
        "{err}"
    );
}

#[test]
fn conv_with_overflowing_pads_is_an_error() {
    let err = conv_graph(vec![("pads", A::Is(&[i64::MAX, 0, i64::MAX, 0]))]).error();
    assert!(err.contains("node `stem` (Conv)"), "{err}");
}

/// The storage-only element types (INT4, ..., FLOAT8E8M0) go through Cast and
/// data movement, but an op that computes on them is refused with the way out.
#[test]
fn arithmetic_on_a_storage_only_type_is_an_error() {
    use ipuc_frontends::onnx::proto::tensor_proto::DataType;
    let mut g = G::new(21);
    g.inputs.push(value("q", DataType::Int4 as i32, &[4]));
    g.nodes = vec![node("Add", "add_q", &["q", "q"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(
        err.contains("node `add_q` (Add): input #0 (`q`) has element type i4"),
        "{err}"
    );
    assert!(err.contains("Cast it to a wider type"), "{err}");

    // The same for an initializer (packed, two per byte), which must not be
    // materialised first; through Cast and Reshape it is fine.
    let packed = TensorProto {
        name: Some("w".into()),
        dims: vec![4],
        data_type: Some(DataType::Uint4 as i32),
        raw_data: Some(vec![0x21, 0x43].into()),
        ..Default::default()
    };
    let mut g = G::new(21);
    g.inits = vec![packed.clone()];
    g.nodes = vec![node("Mul", "scale_w", &["w", "w"], &["y"], vec![])];
    g.outputs = vec!["y"];
    assert!(g
        .error()
        .contains("node `scale_w` (Mul): input #0 (`w`) has element type ui4"));
    let mut g = G::new(21);
    g.inits = vec![packed, ints("shape", &[2], &[2, 2])];
    g.nodes = vec![
        node("Reshape", "r", &["w", "shape"], &["w2"], vec![]),
        node("Cast", "c", &["w2"], &["y"], vec![("to", A::I(F32 as i64))]),
    ];
    g.outputs = vec!["y"];
    g.import();
}
