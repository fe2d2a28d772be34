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
