//! The f32 fast paths of the hot kernels (LayerNorm, softmax, GELU, tanh, linear,
//! matmul, attention, transpose, slice) at a transformer's sizes: each
//! against its float64 definition (or, for data movement, the index
//! definition), and bit-identical on one, two and three threads.

mod common;

use common::pseudo_random;
use ipuc_runtime::reference::{self as k, HostTensor};

/// A tensor of `shape` whose values are drawn from [-bound, bound).
fn f32s_within(shape: &[usize], seed: u64, bound: f32) -> HostTensor {
    let n = shape.iter().product();
    let values: Vec<f32> = pseudo_random(n, seed).iter().map(|v| v * bound).collect();
    HostTensor::from_f32(shape.to_vec(), &values)
}

/// A tensor of `shape` whose values are drawn from [-2, 2).
fn f32s(shape: &[usize], seed: u64) -> HostTensor {
    f32s_within(shape, seed, 2.0)
}

/// Every element within `rtol` of the float64 value (plus `atol`).
fn assert_close(what: &str, got: &HostTensor, want: &[f64], atol: f64, rtol: f64) {
    let got = got.to_f64_vec();
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what}: element {i} is {g}, float64 gives {w}"
        );
    }
}

/// `f` on pools of 1, 2 and 3 threads gives the same bytes.
fn same_on_every_thread_count(what: &str, f: impl Fn() -> HostTensor + Sync) -> HostTensor {
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool")
            .install(&f)
    };
    let one = run(1);
    for threads in [2, 3] {
        assert!(
            one.data == run(threads).data,
            "{what} differs between 1 and {threads} threads"
        );
    }
    one
}

#[test]
fn layer_norm_matches_float64_on_model_rows() {
    let (rows, row) = (37, 1152);
    let x = f32s(&[1, rows, row], 1);
    let scale = f32s(&[row], 2);
    let bias = f32s(&[row], 3);
    let y = same_on_every_thread_count("layer_normalization", || {
        k::layer_normalization(&x, &scale, Some(&bias), -1, 1e-6)
            .unwrap()
            .y
    });
    let (xs, g, b) = (x.to_f64_vec(), scale.to_f64_vec(), bias.to_f64_vec());
    let mut want = Vec::new();
    for r in xs.chunks(row) {
        let mean = r.iter().sum::<f64>() / row as f64;
        let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / row as f64;
        let inv = 1.0 / (var + 1e-6).sqrt();
        want.extend(
            r.iter()
                .enumerate()
                .map(|(j, v)| (v - mean) * inv * g[j] + b[j]),
        );
    }
    assert_close("layer_normalization", &y, &want, 1e-6, 1e-6);
}

#[test]
fn softmax_matches_float64_on_attention_rows() {
    let x = f32s(&[2, 3, 50, 729], 4);
    let y = same_on_every_thread_count("softmax", || k::softmax(&x, -1).unwrap());
    let mut want = Vec::new();
    for r in x.to_f64_vec().chunks(729) {
        let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
        want.extend(r.iter().map(|v| (v - m).exp() / s));
    }
    // A few ulp, plus x - max rounded to f32 (|x - max| <= 4 here) turned
    // into a relative error by the exponential.
    assert_close("softmax", &y, &want, 1e-12, 7e-7);
}

#[test]
fn gelu_tanh_matches_float64() {
    let x = f32s_within(&[100, 431], 5, 8.0);
    let y = same_on_every_thread_count("gelu", || {
        k::unary(k::UnaryOp::Gelu(k::GeluApproximation::Tanh), &x).unwrap()
    });
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let got = y.to_f64_vec();
    for (&v, g) in x.to_f64_vec().iter().zip(got) {
        let u = c * (v + 0.044715 * v * v * v);
        // x/2 · (1 + tanh u), in the form that does not cancel in f64 where
        // tanh u is near -1.
        let want = v / (1.0 + (-2.0 * u).exp());
        // A few ulp, plus the rounding of the f32 argument u amplified by
        // e^(-2u) (about |2u| times u's relative error) where GELU is tiny.
        let tolerance = 4e-7 * (1.0 + 2.0 * u.abs()) * want.abs() + 1e-37;
        assert!(
            (g - want).abs() <= tolerance,
            "gelu({v}) = {g}, float64 gives {want}"
        );
    }
}

#[test]
fn tanh_matches_float64() {
    let x = f32s_within(&[100, 431], 14, 6.0);
    let y = same_on_every_thread_count("tanh", || k::unary(k::UnaryKind::Tanh, &x).unwrap());
    let want: Vec<f64> = x.to_f64_vec().iter().map(|v| v.tanh()).collect();
    assert_close("tanh", &y, &want, 1e-30, 4e-7);
}

fn product_f64(a: &[f64], b: &[f64], m: usize, kk: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for l in 0..kk {
            for j in 0..n {
                c[i * n + j] += a[i * kk + l] * b[l * n + j];
            }
        }
    }
    c
}

#[test]
fn linear_and_matmul_match_float64_at_model_sizes() {
    let (m, kk, n) = (97, 1152, 300);
    let x = f32s(&[1, m, kk], 6);
    let w = f32s(&[kk, n], 7);
    let b = f32s(&[n], 8);
    let product = product_f64(&x.to_f64_vec(), &w.to_f64_vec(), m, kk, n);
    let bias = b.to_f64_vec();
    let with_bias: Vec<f64> = product
        .iter()
        .enumerate()
        .map(|(i, v)| v + bias[i % n])
        .collect();
    // Sums of 1152 products of values in [-2, 2] (tens in magnitude),
    // accumulated in f32: well under 1e-3 off, where a wrong element is off
    // by whole units.
    let y = same_on_every_thread_count("linear", || k::linear(&x, &w, Some(&b)).unwrap());
    assert_close("linear", &y, &with_bias, 1e-3, 1e-5);
    let y = same_on_every_thread_count("matmul", || k::matmul(&x, &w).unwrap());
    assert_close("matmul", &y, &product, 1e-3, 1e-5);
}

#[test]
fn attention_matches_float64_at_a_model_head_size() {
    let (seq, heads, dh) = (129, 4, 72);
    let q = f32s(&[1, seq, heads * dh], 9);
    let kt = f32s(&[1, seq, heads * dh], 10);
    let v = f32s(&[1, seq, heads * dh], 11);
    let scale = 1.0 / (dh as f32).sqrt();
    let y = same_on_every_thread_count("attention", || {
        k::attention(&q, &kt, &v, None, heads, scale).unwrap()
    });
    let (qs, ks, vs) = (q.to_f64_vec(), kt.to_f64_vec(), v.to_f64_vec());
    let hidden = heads * dh;
    let mut want = vec![0f64; seq * hidden];
    for h in 0..heads {
        for i in 0..seq {
            let scores: Vec<f64> = (0..seq)
                .map(|t| {
                    (0..dh)
                        .map(|j| qs[i * hidden + h * dh + j] * ks[t * hidden + h * dh + j])
                        .sum::<f64>()
                        * f64::from(scale)
                })
                .collect();
            let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = scores.iter().map(|x| (x - m).exp()).sum();
            for j in 0..dh {
                want[i * hidden + h * dh + j] = (0..seq)
                    .map(|t| (scores[t] - m).exp() / s * vs[t * hidden + h * dh + j])
                    .sum();
            }
        }
    }
    assert_close("attention", &y, &want, 2e-6, 1e-5);
}

#[test]
fn transpose_and_slice_match_their_index_definitions() {
    // The attention head split of a [1, 729, 16, 72] tensor, and its key
    // transpose.
    let shape = [1usize, 29, 16, 72];
    let x = f32s(&shape, 12);
    let xs = x.to_f64_vec();
    let at = |b: usize, s: usize, h: usize, d: usize| xs[((b * 29 + s) * 16 + h) * 72 + d];
    let heads = k::transpose(&x, Some(&[0, 2, 1, 3])).unwrap();
    assert_eq!(heads.shape, [1, 16, 29, 72]);
    let mut want = Vec::new();
    for h in 0..16 {
        for s in 0..29 {
            want.extend((0..72).map(|d| at(0, s, h, d)));
        }
    }
    assert_eq!(heads.to_f64_vec(), want);
    let keys = k::transpose(&x, Some(&[0, 2, 3, 1])).unwrap();
    let mut want = Vec::new();
    for h in 0..16 {
        for d in 0..72 {
            want.extend((0..29).map(|s| at(0, s, h, d)));
        }
    }
    assert_eq!(keys.to_f64_vec(), want);
    // The QKV split of a fused projection, and a reversed strided slice.
    let qkv = f32s(&[1, 7, 3 * 40], 13);
    let v = qkv.to_f64_vec();
    let parts = k::split(&qkv, -1, Some(&[40, 40, 40]), None).unwrap();
    for (p, part) in parts.iter().enumerate() {
        let want: Vec<f64> = (0..7)
            .flat_map(|r| v[r * 120 + p * 40..r * 120 + p * 40 + 40].to_vec())
            .collect();
        assert_eq!(part.to_f64_vec(), want);
    }
    let back = k::slice(
        &qkv,
        &[-1, 100],
        &[i64::MIN, 3],
        Some(&[1, 2]),
        Some(&[-2, -7]),
    )
    .unwrap();
    let want: Vec<f64> = [6usize, 4, 2, 0]
        .iter()
        .flat_map(|&r| (0..14).map(move |c| (r, 100 - 7 * c)))
        .map(|(r, c)| v[r * 120 + c])
        .collect();
    assert_eq!(back.to_f64_vec(), want);
}
