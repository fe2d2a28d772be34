//! The fused kernels `attention` and `linear`, and mixed-format contractions,
//! checked against float64 references computed here with plain loops.

use ipuc_ir::numeric::ElementKind;
use ipuc_runtime::reference::{self as k, HostTensor};

mod common;
use common::{assert_close, pseudo_random};

/// Attention in float64 with explicit head split, softmax and merge.
#[allow(clippy::too_many_arguments)]
fn attention_f64(
    q: &[f64],
    kk: &[f64],
    v: &[f64],
    mask: Option<(&[f64], [usize; 4])>,
    (b, sq, skv): (usize, usize, usize),
    heads: usize,
    dh: usize,
    dv: usize,
    scale: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; b * sq * heads * dv];
    for bi in 0..b {
        for h in 0..heads {
            for i in 0..sq {
                let scores: Vec<f64> = (0..skv)
                    .map(|t| {
                        let dot: f64 = (0..dh)
                            .map(|d| {
                                q[(bi * sq + i) * heads * dh + h * dh + d]
                                    * kk[(bi * skv + t) * heads * dh + h * dh + d]
                            })
                            .sum();
                        let m = mask.map_or(0.0, |(m, shape)| {
                            // Broadcast index: size-1 dimensions read index 0.
                            let idx = [bi, h, i, t];
                            let mut flat = 0;
                            for d in 0..4 {
                                let j = if shape[d] == 1 { 0 } else { idx[d] };
                                flat = flat * shape[d] + j;
                            }
                            m[flat]
                        });
                        dot * scale + m
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                for j in 0..dv {
                    out[(bi * sq + i) * heads * dv + h * dv + j] = (0..skv)
                        .map(|t| e[t] / sum * v[(bi * skv + t) * heads * dv + h * dv + j])
                        .sum();
                }
            }
        }
    }
    out
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

#[test]
fn attention_matches_float64_reference() {
    let (b, sq, skv, heads, dh, dv) = (2, 5, 7, 3, 4, 2);
    let q = pseudo_random(b * sq * heads * dh, 1);
    let kk = pseudo_random(b * skv * heads * dh, 2);
    let v = pseudo_random(b * skv * heads * dv, 3);
    let scale = 0.7f32;
    let got = k::attention(
        &HostTensor::from_f32(vec![b, sq, heads * dh], &q),
        &HostTensor::from_f32(vec![b, skv, heads * dh], &kk),
        &HostTensor::from_f32(vec![b, skv, heads * dv], &v),
        None,
        heads,
        scale,
    )
    .unwrap();
    assert_eq!(got.shape, [b, sq, heads * dv]);
    let want = attention_f64(
        &widen(&q),
        &widen(&kk),
        &widen(&v),
        None,
        (b, sq, skv),
        heads,
        dh,
        dv,
        f64::from(scale),
    );
    assert_close(&got.to_f64_vec(), &want, 1e-6, 1e-5);
}

#[test]
fn attention_mask_broadcasts_and_masks_out_keys() {
    let (b, sq, skv, heads, dh) = (1, 3, 4, 2, 2);
    let q = pseudo_random(b * sq * heads * dh, 4);
    let kk = pseudo_random(b * skv * heads * dh, 5);
    let v = pseudo_random(b * skv * heads * dh, 6);
    // A [seq_q, seq_kv] mask (broadcast over batch and heads) that hides the last key.
    let mask: Vec<f32> = (0..sq * skv)
        .map(|i| {
            if i % skv == skv - 1 {
                -1e9
            } else {
                0.1 * i as f32
            }
        })
        .collect();
    // The kernel over these q, keys and mask, with the value rows `v`.
    let attend = |v: &[f32]| {
        k::attention(
            &HostTensor::from_f32(vec![b, sq, heads * dh], &q),
            &HostTensor::from_f32(vec![b, skv, heads * dh], &kk),
            &HostTensor::from_f32(vec![b, skv, heads * dh], v),
            Some(&HostTensor::from_f32(vec![sq, skv], &mask)),
            heads,
            0.5,
        )
        .unwrap()
    };
    let got = attend(&v);
    let want = attention_f64(
        &widen(&q),
        &widen(&kk),
        &widen(&v),
        Some((&widen(&mask), [1, 1, sq, skv])),
        (b, sq, skv),
        heads,
        dh,
        dh,
        0.5,
    );
    assert_close(&got.to_f64_vec(), &want, 1e-6, 1e-5);
    // The masked key has no influence: changing its value row changes nothing.
    let mut v2 = v.clone();
    for x in &mut v2[(skv - 1) * heads * dh..] {
        *x += 100.0;
    }
    let again = attend(&v2);
    assert_close(&again.to_f64_vec(), &got.to_f64_vec(), 1e-6, 0.0);
}

#[test]
fn attention_in_f16_rounds_the_float_result_once() {
    let (b, sq, skv, heads, dh) = (1, 4, 6, 2, 8);
    let to_f16 = |v: Vec<f32>| {
        k::cast(
            &HostTensor::from_f32(vec![v.len()], &v),
            ElementKind::F16,
            true,
        )
    };
    let q = to_f16(pseudo_random(b * sq * heads * dh, 7));
    let kk = to_f16(pseudo_random(b * skv * heads * dh, 8));
    let v = to_f16(pseudo_random(b * skv * heads * dh, 9));
    let shape = |s: usize| vec![b, s, heads * dh];
    let got = k::attention(
        &q.with_shape(shape(sq)),
        &kk.with_shape(shape(skv)),
        &v.with_shape(shape(skv)),
        None,
        heads,
        0.25,
    )
    .unwrap();
    assert_eq!(got.kind, ElementKind::F16);
    let want = attention_f64(
        &q.to_f64_vec(),
        &kk.to_f64_vec(),
        &v.to_f64_vec(),
        None,
        (b, sq, skv),
        heads,
        dh,
        dh,
        0.25,
    );
    // Half an f16 ulp (2^-11 relative) plus f32 accumulation error.
    assert_close(&got.to_f64_vec(), &want, 1e-6, 2f64.powi(-11) + 1e-5);
}

#[test]
fn attention_rejects_bad_shapes_clearly() {
    let x = HostTensor::from_f32(vec![1, 2, 6], &[0.0; 12]);
    let err = k::attention(&x, &x, &x, None, 4, 1.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("divide into 4 heads"), "{err}");
    let mask = HostTensor::from_f32(vec![3, 2], &[0.0; 6]);
    let err = k::attention(&x, &x, &x, Some(&mask), 2, 1.0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not broadcast"), "{err}");
}

#[test]
fn linear_matches_float64_and_rounds_once() {
    let (batch, seq, kdim, n) = (2, 3, 16, 5);
    let x = pseudo_random(batch * seq * kdim, 10);
    let w = pseudo_random(kdim * n, 11);
    let bias = pseudo_random(n, 12);
    let got = k::linear(
        &HostTensor::from_f32(vec![batch, seq, kdim], &x),
        &HostTensor::from_f32(vec![kdim, n], &w),
        Some(&HostTensor::from_f32(vec![n], &bias)),
    )
    .unwrap();
    assert_eq!(got.shape, [batch, seq, n]);
    let want: Vec<f64> = (0..batch * seq)
        .flat_map(|r| {
            let (x, w, bias) = (&x, &w, &bias);
            (0..n).map(move |j| {
                (0..kdim)
                    .map(|l| f64::from(x[r * kdim + l]) * f64::from(w[l * n + j]))
                    .sum::<f64>()
                    + f64::from(bias[j])
            })
        })
        .collect();
    assert_close(&got.to_f64_vec(), &want, 1e-6, 1e-5);

    // Integers are exact; the bias wraps like the product.
    let xi = HostTensor::from_i64(vec![2, 2], &[1, 2, 3, 4]);
    let wi = HostTensor::from_i64(vec![2, 1], &[10, 100]);
    let bi = HostTensor::from_i64(vec![1], &[-7]);
    assert_eq!(
        k::linear(&xi, &wi, Some(&bi)).unwrap().to_i64_vec(),
        [203, 423]
    );
}

#[test]
fn contractions_accept_mixed_float_formats() {
    // f16 activations times f8E4M3FNUZ weights: the weights widen exactly and the
    // result is f16.
    let x = k::cast(
        &HostTensor::from_f32(vec![2, 3], &[0.5, -1.0, 2.0, 1.5, 0.25, -0.75]),
        ElementKind::F16,
        true,
    );
    let w = k::cast(
        &HostTensor::from_f32(vec![3, 2], &[1.0, 0.5, -2.0, 0.125, 4.0, 1.0]),
        ElementKind::F8E4M3FNUZ,
        true,
    );
    let want = [10.5, 2.125, -2.0, 0.03125];
    for out in [
        k::matmul(&x, &w).unwrap(),
        k::linear(&x, &w, None).unwrap(),
        k::gemm(&x, &w, None, k::GemmParams::default()).unwrap(),
    ] {
        assert_eq!(out.kind, ElementKind::F16);
        assert_eq!(out.to_f64_vec(), want);
    }
    // FP8 on both sides (the activations are on the FP8 grid): FP8 is a
    // storage format, the products come out in f16 (not in the lhs's FP8,
    // which could not even hold 10.5), and an f16 bias or C joins them.
    let x8 = k::cast(&x, ElementKind::F8E4M3FNUZ, true);
    assert_eq!(x8.to_f64_vec(), x.to_f64_vec());
    assert_eq!(k::product_kind(ElementKind::F8E4M3FNUZ), ElementKind::F16);
    assert_eq!(k::product_kind(ElementKind::F8E5M2), ElementKind::F16);
    assert_eq!(k::product_kind(ElementKind::F32), ElementKind::F32);
    let bias = k::cast(
        &HostTensor::from_f32(vec![2], &[0.25, -1.0]),
        ElementKind::F16,
        true,
    );
    let biased = [10.75, 1.125, -1.75, -0.96875];
    for (out, want) in [
        (k::matmul(&x8, &w).unwrap(), &want),
        (k::linear(&x8, &w, Some(&bias)).unwrap(), &biased),
        (
            k::gemm(&x8, &w, Some(&bias), k::GemmParams::default()).unwrap(),
            &biased,
        ),
    ] {
        assert_eq!(out.kind, ElementKind::F16);
        assert_eq!(out.to_f64_vec(), want);
    }
    // Integers with floats do not mix.
    let i = HostTensor::from_i64(vec![3, 2], &[1; 6]);
    assert!(k::matmul(&x, &i).is_err());
}
