//! Kernels the ONNX node-test set does not cover (Relu, Sigmoid, Log, Abs, Max,
//! Min, Equal/Less/Greater, Pad, Range, integer and f16 matmul, grouped and dilated
//! convolution), checked against direct float64 formulas.

use ipuc_ir::numeric::{f16, ElementKind, Float8Format};
use ipuc_runtime::reference::{self as k, BinaryKind, CompareKind, HostTensor, UnaryKind, Values};

mod common;
use common::{assert_close, pseudo_random};

fn f32s(shape: &[usize], v: &[f32]) -> HostTensor {
    HostTensor::from_f32(shape.to_vec(), v)
}

/// Within the f32 kernels' error: f32 accumulation over a few hundred
/// terms is off by around 1e-6.
fn close(got: &[f64], want: &[f64]) {
    assert_close(got, want, 1e-5, 1e-5);
}

#[test]
fn activations_and_logs() {
    let xs = [-3.0f32, -0.5, 0.0, 0.25, 2.0, 10.0];
    let x = f32s(&[6], &xs);
    let want = |f: fn(f64) -> f64| {
        xs.iter()
            .map(|&v| f(f64::from(v)) as f32 as f64)
            .collect::<Vec<_>>()
    };
    close(
        &k::unary(UnaryKind::Relu, &x).unwrap().to_f64_vec(),
        &want(|v| v.max(0.0)),
    );
    close(
        &k::unary(UnaryKind::Sigmoid, &x).unwrap().to_f64_vec(),
        &want(|v| 1.0 / (1.0 + (-v).exp())),
    );
    close(
        &k::unary(UnaryKind::Abs, &x).unwrap().to_f64_vec(),
        &want(f64::abs),
    );
    let logs = k::unary(UnaryKind::Log, &x).unwrap().to_f64_vec();
    assert!(logs[0].is_nan() && logs[2] == f64::NEG_INFINITY);
    close(&logs[3..], &want(f64::ln)[3..]);
    // Integers: exact, and Sqrt is rejected with a clear error.
    let i = HostTensor::from_i64(vec![3], &[-4, 0, 7]);
    assert_eq!(
        k::unary(UnaryKind::Relu, &i).unwrap().to_i64_vec(),
        [0, 0, 7]
    );
    assert_eq!(
        k::unary(UnaryKind::Abs, &i).unwrap().to_i64_vec(),
        [4, 0, 7]
    );
    assert!(k::unary(UnaryKind::Sqrt, &i)
        .unwrap_err()
        .to_string()
        .contains("unsupported element type i64"));
}

#[test]
fn variadic_max_min_and_comparisons_broadcast() {
    let a = f32s(&[2, 2], &[1.0, 5.0, -2.0, f32::NAN]);
    let b = f32s(&[2], &[3.0, 0.0]);
    let c = f32s(&[], &[2.0]);
    let max = k::max(&[&a, &b, &c]).unwrap().to_f64_vec();
    assert_eq!(&max[..3], &[3.0, 5.0, 3.0]);
    assert!(max[3].is_nan(), "NaN propagates");
    assert_eq!(
        &k::min(&[&a, &b]).unwrap().to_f64_vec()[..3],
        &[1.0, 0.0, -2.0]
    );
    let less = k::binary(CompareKind::Less, &a, &b).unwrap();
    assert_eq!(less.kind, ElementKind::Bool);
    assert_eq!(less.to_i64_vec(), [1, 0, 1, 0]);
    assert_eq!(
        k::binary(CompareKind::Greater, &a, &b)
            .unwrap()
            .to_i64_vec(),
        [0, 1, 0, 0]
    );
    assert_eq!(
        k::binary(CompareKind::Equal, &a, &a).unwrap().to_i64_vec(),
        [1, 1, 1, 0],
        "NaN != NaN"
    );
    let err = k::binary(BinaryKind::Add, &a, &f32s(&[3], &[0.0; 3]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot be broadcast"), "{err}");
    let err = k::binary(BinaryKind::Add, &a, &HostTensor::from_i64(vec![1], &[1]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("f32 with i64"), "{err}");
}

#[test]
fn integer_division_by_zero_is_an_error_not_a_panic() {
    let a = HostTensor::from_i64(vec![2], &[1, 2]);
    let z = HostTensor::from_i64(vec![2], &[1, 0]);
    assert!(k::binary(BinaryKind::Div, &a, &z)
        .unwrap_err()
        .to_string()
        .contains("division by zero"));
    assert!(k::modulo(&a, &z, false).is_err());
}

#[test]
fn pad_modes() {
    let x = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let pads = [0, 2, 0, 1];
    let run = |mode| k::pad(&x, &pads, mode, None, None).unwrap().to_f64_vec();
    for (mode, want) in [
        (
            k::PadMode::Constant,
            [0., 0., 1., 2., 3., 0., 0., 0., 4., 5., 6., 0.],
        ),
        (
            k::PadMode::Edge,
            [1., 1., 1., 2., 3., 3., 4., 4., 4., 5., 6., 6.],
        ),
        (
            k::PadMode::Reflect,
            [3., 2., 1., 2., 3., 2., 6., 5., 4., 5., 6., 5.],
        ),
        (
            k::PadMode::Wrap,
            [2., 3., 1., 2., 3., 1., 5., 6., 4., 5., 6., 4.],
        ),
    ] {
        assert_eq!(run(mode), want, "{mode:?}");
    }
    let value = f32s(&[], &[9.0]);
    let cropped = k::pad(&x, &[-1, 1], k::PadMode::Constant, Some(&value), Some(&[1])).unwrap();
    assert_eq!(cropped.shape, [2, 3]);
    assert_eq!(cropped.to_f64_vec(), [2., 3., 9., 5., 6., 9.]);
}

#[test]
fn range_counts_like_onnx() {
    let s = |v: i64| HostTensor::from_i64(vec![], &[v]);
    assert_eq!(
        k::range(&s(10), &s(4), &s(-3)).unwrap().to_i64_vec(),
        [10, 7]
    );
    assert_eq!(
        k::range(&s(1), &s(1), &s(2)).unwrap().to_i64_vec(),
        Vec::<i64>::new()
    );
    let f = |v: f32| f32s(&[], &[v]);
    assert_eq!(
        k::range(&f(0.0), &f(1.0), &f(0.25)).unwrap().to_f64_vec(),
        [0.0, 0.25, 0.5, 0.75]
    );
    assert!(k::range(&s(0), &s(3), &s(0)).is_err());
}

/// Straightforward triple loop in f64 as the matmul reference.
fn matmul_ref(a: &[f64], b: &[f64], m: usize, kk: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..kk).map(|l| a[i * kk + l] * b[l * n + j]).sum();
        }
    }
    c
}

#[test]
fn large_parallel_matmul_matches_reference() {
    let (m, kk, n) = (300, 200, 150);
    let a = pseudo_random(m * kk, 1);
    let b = pseudo_random(kk * n, 2);
    let got = k::matmul(&f32s(&[m, kk], &a), &f32s(&[kk, n], &b))
        .unwrap()
        .to_f64_vec();
    let want = matmul_ref(
        &a.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        &b.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        m,
        kk,
        n,
    );
    close(&got, &want);
}

#[test]
fn integer_matmul_is_exact_and_f16_rounds_once() {
    let a = HostTensor::from_i64(vec![2, 2], &[i64::MAX / 2, 1, -3, 4]);
    let b = HostTensor::from_i64(vec![2, 1], &[2, 5]);
    // (MAX/2)*2 + 5 wraps exactly as two's complement i64 arithmetic does.
    let want0 = (i64::MAX / 2).wrapping_mul(2).wrapping_add(5);
    assert_eq!(k::matmul(&a, &b).unwrap().to_i64_vec(), [want0, 14]);

    let x: Vec<f32> = pseudo_random(64, 3);
    let h = |v: &[f32], shape: &[usize]| {
        HostTensor::from_values(ElementKind::F16, shape.to_vec(), Values::F32(v.to_vec()))
    };
    let (a16, b16) = (h(&x[..32], &[4, 8]), h(&x[32..], &[8, 4]));
    let got = k::matmul(&a16, &b16).unwrap();
    assert_eq!(got.kind, ElementKind::F16);
    let want = matmul_ref(&a16.to_f64_vec(), &b16.to_f64_vec(), 4, 8, 4);
    for (g, w) in got.to_f64_vec().iter().zip(want) {
        // One f16 rounding of the (f32-accumulated) exact product.
        assert_eq!(*g, f16::from_f32(w as f32).to_f64(), "{w}");
    }
}

#[test]
fn grouped_dilated_strided_conv_matches_direct_loops() {
    let (n, c, h, w, m, g) = (2, 4, 7, 6, 6, 2);
    let (kh, kw) = (3, 2);
    let params = k::Conv2dParams {
        strides: [2, 1],
        pads: [1, 0, 2, 1],
        dilations: [2, 1],
        groups: g as i64,
    };
    let x = pseudo_random(n * c * h * w, 4);
    let wt = pseudo_random(m * (c / g) * kh * kw, 5);
    let bias = pseudo_random(m, 6);
    let got = k::conv2d(
        &f32s(&[n, c, h, w], &x),
        &f32s(&[m, c / g, kh, kw], &wt),
        Some(&f32s(&[m], &bias)),
        &params,
    )
    .unwrap();
    let (oh, ow) = ((h + 3 - ((kh - 1) * 2 + 1)) / 2 + 1, (w + 1 - kw) + 1);
    assert_eq!(got.shape, [n, m, oh, ow]);
    let mut want = Vec::new();
    for img in 0..n {
        for oc in 0..m {
            let grp = oc / (m / g);
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = f64::from(bias[oc]);
                    for ic in 0..c / g {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * 2 + ky * 2) as isize - 1;
                                let ix = (ox + kx) as isize;
                                if iy < 0 || iy >= h as isize || ix >= w as isize {
                                    continue;
                                }
                                let xv = x[((img * c + grp * (c / g) + ic) * h + iy as usize) * w
                                    + ix as usize];
                                let wv = wt[((oc * (c / g) + ic) * kh + ky) * kw + kx];
                                acc += f64::from(xv) * f64::from(wv);
                            }
                        }
                    }
                    want.push(acc);
                }
            }
        }
    }
    close(&got.to_f64_vec(), &want);
    let bad = k::conv2d(
        &f32s(&[1, 3, 4, 4], &[0.0; 48]),
        &f32s(&[2, 2, 1, 1], &[0.0; 4]),
        None,
        &k::Conv2dParams::default(),
    );
    assert!(bad.unwrap_err().to_string().contains("do not agree"));
    // The parameters are nn's signed attributes: a negative one is refused, not wrapped.
    let negative = k::conv2d(
        &f32s(&[1, 1, 4, 4], &[0.0; 16]),
        &f32s(&[1, 1, 1, 1], &[0.0; 1]),
        None,
        &k::Conv2dParams {
            pads: [0, -1, 0, 0],
            ..k::Conv2dParams::default()
        },
    );
    assert!(negative
        .unwrap_err()
        .to_string()
        .contains("'pads' must be non-negative, but is [0, -1, 0, 0]"),);
}

#[test]
fn cast_to_f143_saturates_or_not() {
    let x = f32s(&[4], &[1.0, 300.0, -1e-9, f32::INFINITY]);
    let sat = k::cast(&x, ElementKind::F8E4M3FNUZ, true);
    assert_eq!(&sat.data[..], &[0x40, 0x7F, 0x00, 0x7F]);
    let no_sat = k::cast(&x, ElementKind::F8E4M3FNUZ, false);
    assert_eq!(&no_sat.data[..], &[0x40, 0x80, 0x00, 0x80]);
    let back = k::cast(&sat, ElementKind::F32, true).to_f64_vec();
    assert_eq!(back, [1.0, Float8Format::E4M3FNUZ.max_finite(), 0.0, 240.0]);
}

#[test]
fn layer_norm_without_bias_and_softmax_rows_sum_to_one() {
    let x = f32s(&[2, 4], &pseudo_random(8, 7));
    let scale = f32s(&[4], &[1.0, 2.0, 0.5, 1.0]);
    let out = k::layer_normalization(&x, &scale, None, -1, 1e-5).unwrap();
    let xs = x.to_f64_vec();
    for r in 0..2 {
        let row = &xs[r * 4..r * 4 + 4];
        let mean = row.iter().sum::<f64>() / 4.0;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 4.0;
        let want: Vec<f64> = row
            .iter()
            .zip([1.0, 2.0, 0.5, 1.0])
            .map(|(v, s)| (v - mean) / (var + 1e-5).sqrt() * s)
            .collect();
        close(&out.y.to_f64_vec()[r * 4..r * 4 + 4], &want);
    }
    let s = k::softmax(&f32s(&[2, 3], &[1.0, 2.0, 3.0, 1000.0, 0.0, -1000.0]), 1)
        .unwrap()
        .to_f64_vec();
    close(&[s[0] + s[1] + s[2], s[3] + s[4] + s[5]], &[1.0, 1.0]);
}
