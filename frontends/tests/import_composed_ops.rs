//! Ops built of `nn` ops at import, on cases the ONNX node suite leaves
//! out: each model is imported, run on the reference interpreter, and
//! compared with the values the ONNX reference implementation
//! (`onnx.reference.ReferenceEvaluator`, onnx 1.23) or float64 numpy gives.

mod common;

use common::graph_builder::{floats, ints, node, value, A, F32, G, I64};
use ipuc_runtime::reference::interpreter::{entry_function, run_function};
use ipuc_runtime::reference::HostTensor;

/// Runs the imported `g` on `inputs` and returns its outputs as f64.
fn run(g: &G, inputs: &[HostTensor]) -> Vec<Vec<f64>> {
    let (ctx, module) = g.import();
    let main = entry_function(&ctx, module).unwrap();
    run_function(&ctx, main, inputs)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(HostTensor::to_f64_vec)
        .collect()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-4 * b.abs(),
            "element {i}: {a} vs {b} in {got:?}"
        );
    }
}

#[test]
fn det_of_3x3_and_4x4_matrices_matches_float64() {
    let mut g = G::new(22);
    g.inputs.push(value("x", F32, &[2, 3, 3]));
    g.nodes = vec![node("Det", "det", &["x"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let x = HostTensor::from_f32(
        vec![2, 3, 3],
        &[
            2., -1., 0., 1., 3., 2., 0., 5., -4., 1., 2., 3., 4., 5., 6., 7., 8., 10.,
        ],
    );
    // numpy.linalg.det in float64.
    assert_close(&run(&g, &[x])[0], &[-48.0, -3.0]);

    let mut g = G::new(22);
    g.inputs.push(value("x", F32, &[4, 4]));
    g.nodes = vec![node("Det", "det", &["x"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let x = HostTensor::from_f32(
        vec![4, 4],
        &[
            1., 2., 0., 1., 0., 3., 1., -1., 2., 0., 1., 4., 1., 1., 1., 1.,
        ],
    );
    assert_close(&run(&g, &[x])[0], &[-5.0]);
}

#[test]
fn det_refuses_non_square_matrices() {
    let mut g = G::new(22);
    g.inputs.push(value("x", F32, &[2, 3]));
    g.nodes = vec![node("Det", "det", &["x"], &["y"], vec![])];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(
        err.contains("`det` (Det)") && err.contains("square"),
        "{err}"
    );
}

#[test]
fn col2im_with_strides_and_pads_matches_the_onnx_reference() {
    // 3x3 blocks every 2 pixels overlap; pads [1, 0, 0, 1] on a 4x5 image.
    let mut g = G::new(18);
    g.inputs.push(value("x", F32, &[1, 9, 4]));
    g.inits = vec![ints("img", &[2], &[4, 5]), ints("blk", &[2], &[3, 3])];
    g.nodes = vec![node(
        "Col2Im",
        "col2im",
        &["x", "img", "blk"],
        &["y"],
        vec![("strides", A::Is(&[2, 2])), ("pads", A::Is(&[1, 0, 0, 1]))],
    )];
    g.outputs = vec!["y"];
    let values: Vec<f32> = (0..36).map(|v| v as f32 - 10.0).collect();
    let x = HostTensor::from_f32(vec![1, 9, 4], &values);
    assert_close(
        &run(&g, &[x])[0],
        &[
            2., 6., 13., 7., 11., 6., 14., 30., 16., 24., 4., 8., 17., 9., 13., 16., 20., 41., 21.,
            25.,
        ],
    );
}

fn tfidf(mode: &str) -> G {
    let mut g = G::new(9);
    g.inputs.push(value("x", I64, &[2, 5]));
    g.nodes = vec![node(
        "TfIdfVectorizer",
        "tfidf",
        &["x"],
        &["y"],
        vec![
            ("mode", A::S(mode)),
            ("min_gram_length", A::I(1)),
            ("max_gram_length", A::I(2)),
            ("max_skip_count", A::I(1)),
            ("ngram_counts", A::Is(&[0, 3])),
            ("ngram_indexes", A::Is(&[2, 0, 1, 3, 4])),
            ("pool_int64s", A::Is(&[4, 5, 6, 4, 5, 5, 6])),
            ("weights", A::Fs(&[0.5, 2.0, 3.0, 1.5, 0.25])),
        ],
    )];
    g.outputs = vec!["y"];
    g
}

#[test]
fn tfidf_weights_in_idf_and_tfidf_modes_match_the_onnx_reference() {
    let x = HostTensor::from_i64(vec![2, 5], &[4, 5, 6, 5, 6, 6, 4, 9, 5, 4]);
    assert_close(
        &run(&tfidf("IDF"), std::slice::from_ref(&x))[0],
        &[0.5, 2.0, 3.0, 1.5, 0.25, 0.5, 2.0, 3.0, 1.5, 0.0],
    );
    assert_close(
        &run(&tfidf("TFIDF"), &[x])[0],
        &[1.0, 4.0, 3.0, 1.5, 0.5, 0.5, 2.0, 6.0, 1.5, 0.0],
    );
}

#[test]
fn tfidf_refuses_string_pools() {
    let mut g = G::new(9);
    g.inputs.push(value("x", I64, &[5]));
    g.nodes = vec![node(
        "TfIdfVectorizer",
        "tfidf",
        &["x"],
        &["y"],
        vec![
            ("mode", A::S("TF")),
            ("min_gram_length", A::I(1)),
            ("max_gram_length", A::I(1)),
            ("ngram_counts", A::Is(&[0])),
            ("ngram_indexes", A::Is(&[0])),
            ("pool_strings", A::S("a")),
        ],
    )];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(err.contains("string tensors"), "{err}");
}

#[test]
fn max_unpool_needs_known_indices() {
    let mut g = G::new(22);
    g.inputs.push(value("x", F32, &[1, 1, 2, 2]));
    g.inputs.push(value("i", I64, &[1, 1, 2, 2]));
    g.nodes = vec![node(
        "MaxUnpool",
        "unpool",
        &["x", "i"],
        &["y"],
        vec![
            ("kernel_shape", A::Is(&[2, 2])),
            ("strides", A::Is(&[2, 2])),
        ],
    )];
    g.outputs = vec!["y"];
    let err = g.error();
    assert!(
        err.contains("`unpool` (MaxUnpool)") && err.contains("indices"),
        "{err}"
    );

    g.inputs.pop();
    g.inits = vec![ints("i", &[1, 1, 2, 2], &[5, 2, 8, 15])];
    let x = HostTensor::from_f32(vec![1, 1, 2, 2], &[1., 2., 3., 4.]);
    let mut want = vec![0.0; 16];
    for (v, j) in [(1.0, 5), (2.0, 2), (3.0, 8), (4.0, 15)] {
        want[j] = v;
    }
    assert_close(&run(&g, &[x])[0], &want);
}

#[test]
fn lp_pool_with_p3_matches_the_cube_root_of_cubed_sums() {
    let mut g = G::new(22);
    g.inputs.push(value("x", F32, &[1, 1, 4]));
    g.nodes = vec![node(
        "LpPool",
        "lp",
        &["x"],
        &["y"],
        vec![("kernel_shape", A::Is(&[2])), ("p", A::I(3))],
    )];
    g.outputs = vec!["y"];
    let x = HostTensor::from_f32(vec![1, 1, 4], &[1., -2., 3., 0.5]);
    let cube_root = |v: f64| v.powf(1.0 / 3.0);
    assert_close(
        &run(&g, &[x])[0],
        &[cube_root(9.0), cube_root(35.0), cube_root(27.125)],
    );
}

#[test]
fn deform_conv_with_groups_dilations_and_pads_matches_the_onnx_reference() {
    // Two groups of one channel, a dilated 2x2 kernel, pads [1, 0, 0, 1].
    let mut g = G::new(22);
    g.inputs.push(value("x", F32, &[1, 2, 3, 3]));
    g.inputs.push(value("offset", F32, &[1, 8, 3, 2]));
    g.inits = vec![floats(
        "w",
        &[2, 1, 2, 2],
        &[1.0, -1.0, 0.5, 2.0, -0.5, 1.5, 1.0, -2.0],
    )];
    g.nodes = vec![node(
        "DeformConv",
        "deform",
        &["x", "w", "offset"],
        &["y"],
        vec![
            ("kernel_shape", A::Is(&[2, 2])),
            ("group", A::I(2)),
            ("dilations", A::Is(&[1, 2])),
            ("pads", A::Is(&[1, 0, 0, 1])),
        ],
    )];
    g.outputs = vec!["y"];
    let x: Vec<f32> = (0..18).map(|v| v as f32 * 0.5 - 3.0).collect();
    // numpy: (np.sin(np.arange(48)).astype(np.float32) * 1.3)
    let offset: Vec<f32> = (0..48).map(|v| (f64::from(v).sin() as f32) * 1.3).collect();
    let inputs = [
        HostTensor::from_f32(vec![1, 2, 3, 3], &x),
        HostTensor::from_f32(vec![1, 8, 3, 2], &offset),
    ];
    assert_close(
        &run(&g, &inputs)[0],
        &[
            0.0,
            -3.7426249980926514,
            -0.25882774591445923,
            -1.6920466423034668,
            0.3073367476463318,
            -0.5804597735404968,
            0.0,
            -0.6492239236831665,
            -6.057828903198242,
            1.6422852277755737,
            8.064115524291992,
            5.788928985595703,
        ],
    );
}
