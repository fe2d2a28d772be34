//! A block's input and constants held by value, drawn at random at the
//! scales of a trained block: the data the blocks' tests and `ipu-bench
//! mlp` / `ipu-bench attention` run them on.

use half::f16;

use ipuc_ipu_arch::float8::{decode_scaled, encode_scaled};

use super::attention_block::{AttentionConstants, AttentionFp8, AttentionShape};
use super::block::{Fp8Domains, MlpConstants, MlpShape};
use super::patch_embed::{PatchConstants, PatchShape};
use super::pool_head::{PoolConstants, PoolShape};

/// The block's input `x` (`[m, c]`, row-major) and its constants, every
/// value representable in f16 (the block's element type).
#[derive(Clone, Debug, PartialEq)]
pub struct MlpValues {
    /// The block's input.
    pub x: Vec<f64>,
    /// LayerNorm's and the products' constants.
    pub constants: MlpConstants,
}

impl MlpValues {
    /// Values for `shape` from `uniform`, a source of numbers in `[-1, 1)`
    /// (the caller's seeded generator, so that its stream stays its own):
    /// `x` of unit scale, LayerNorm's scale near 1, weights scaled by
    /// `2/sqrt(fan-in)` so that activations keep their size, small biases.
    /// Each value is rounded to f16. Drawn in the order `x`, `gamma`,
    /// `beta`, `w1`, `b1`, `w2`, `b2`.
    pub fn random(shape: MlpShape, mut uniform: impl FnMut() -> f64) -> Self {
        let (m, c, h) = (shape.m as usize, shape.c as usize, shape.h as usize);
        let mut vals = |n: usize, scale: f64, offset: f64| draw(&mut uniform, n, scale, offset);
        let x = vals(m * c, 1.0, 0.0);
        let constants = MlpConstants {
            gamma: vals(c, 0.2, 1.0),
            beta: vals(c, 0.1, 0.0),
            w1: vals(c * h, 2.0 / (c as f64).sqrt(), 0.0),
            b1: vals(h, 0.1, 0.0),
            w2: vals(h * c, 2.0 / (h as f64).sqrt(), 0.0),
            b2: vals(c, 0.1, 0.0),
        };
        MlpValues { x, constants }
    }
}

impl MlpValues {
    /// Folds LayerNorm's scale and shift into fc1 as
    /// `fold-layernorm-affine` does (then a scale of ones and a shift of
    /// zeros: the model's blocks after the pipeline), each value rounded
    /// to f16 again.
    pub fn fold_ln(&mut self) {
        let k = &mut self.constants;
        fold_ln_into((&mut k.gamma, &mut k.beta), (&mut k.w1, &mut k.b1));
    }

    /// Rounds both products' weights to FP8 values as `convert-precision`
    /// does (per-tensor power-of-two scale from the weights' range, codes
    /// rounded to nearest even) and returns the domains the block's FP8
    /// lowering runs them in.
    pub fn quantize_fp8(&mut self) -> Fp8Domains {
        let s1 = quantize_fp8(&mut self.constants.w1);
        let s2 = quantize_fp8(&mut self.constants.w2);
        Fp8Domains::from_scales(s1, s2)
    }
}

/// Folds a LayerNorm's scale and shift into the product `(w, b)` reading
/// it, as `fold-layernorm-affine` does, the folded values rounded to f16,
/// and leaves the LayerNorm ones and zeros.
fn fold_ln_into((gamma, beta): (&mut [f64], &mut [f64]), (w, b): (&mut [f64], &mut [f64])) {
    ipuc_passes::fold_layernorm::fold_into(gamma, beta, w, b);
    for x in w.iter_mut().chain(b.iter_mut()) {
        *x = half::f16::from_f64(*x).to_f64();
    }
    gamma.fill(1.0);
    beta.fill(0.0);
}

/// Rounds `w` to FP8 values as `convert-precision` does (per-tensor
/// power-of-two scale from the range, codes rounded to nearest even);
/// returns the scale exponent.
fn quantize_fp8(w: &mut [f64]) -> i32 {
    let max = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let s = ipuc_passes::precision::fp8_scale(max);
    for v in w.iter_mut() {
        *v = decode_scaled(encode_scaled(*v, s), s);
    }
    s
}

/// An attention block's input `x` (`[m, c]`) and constants, f16 values.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionValues {
    /// The block's input.
    pub x: Vec<f64>,
    /// LayerNorm's and the products' constants.
    pub constants: AttentionConstants,
}

impl AttentionValues {
    /// Values for `shape` from `uniform` (numbers in `[-1, 1)`), as
    /// [`MlpValues::random`]: `x` of unit scale, LayerNorm's scale near 1,
    /// weights scaled by `2/sqrt(c)` (scores of a few units: softmax rows
    /// neither flat nor one-hot), small biases. Drawn in the order `x`,
    /// `gamma`, `beta`, `w_qkv`, `b_qkv`, `w_o`, `b_o`.
    pub fn random(shape: AttentionShape, mut uniform: impl FnMut() -> f64) -> Self {
        let (m, c) = (shape.rows() as usize, shape.c as usize);
        let mut vals = |n: usize, scale: f64, offset: f64| draw(&mut uniform, n, scale, offset);
        let w = 2.0 / (c as f64).sqrt();
        let x = vals(m * c, 1.0, 0.0);
        let constants = AttentionConstants {
            gamma: vals(c, 0.2, 1.0),
            beta: vals(c, 0.1, 0.0),
            w_qkv: vals(c * 3 * c, w, 0.0),
            b_qkv: vals(3 * c, 0.2, 0.0),
            w_o: vals(c * c, w, 0.0),
            b_o: vals(c, 0.1, 0.0),
        };
        AttentionValues { x, constants }
    }

    /// Folds LayerNorm's scale and shift into the QKV product, as
    /// [`MlpValues::fold_ln`] into fc1.
    pub fn fold_ln(&mut self) {
        let k = &mut self.constants;
        fold_ln_into((&mut k.gamma, &mut k.beta), (&mut k.w_qkv, &mut k.b_qkv));
    }

    /// Rounds both products' weights to FP8 values as `convert-precision`
    /// does and returns their scales, the shape's
    /// [`AttentionShape::fp8`].
    pub fn quantize_fp8(&mut self) -> AttentionFp8 {
        AttentionFp8 {
            qkv_scale: quantize_fp8(&mut self.constants.w_qkv),
            out_scale: Some(quantize_fp8(&mut self.constants.w_o)),
        }
    }
}

/// A patch embedding's image (`[C, H, W]`, row-major) and constants,
/// every value representable in f16.
#[derive(Clone, Debug, PartialEq)]
pub struct PatchValues {
    /// The image.
    pub x: Vec<f64>,
    /// The kernel as the product's weights and the per-token rows.
    pub constants: PatchConstants,
}

impl PatchValues {
    /// Values for `shape` from `uniform` (numbers in `[-1, 1)`): pixels of
    /// unit scale (every image's), weights scaled by `2/sqrt(fan-in)`, per-token rows (a
    /// bias plus a position table) of scale 0.5. Drawn in the order `x`,
    /// `w`, `rows`.
    pub fn random(shape: PatchShape, mut uniform: impl FnMut() -> f64) -> Self {
        let mut vals = |n: u32, scale: f64| -> Vec<f64> {
            (0..n)
                .map(|_| f16::from_f64(scale * uniform()).to_f64())
                .collect()
        };
        let x = vals(
            shape.images * shape.channels * shape.height * shape.width,
            1.0,
        );
        let w = vals(shape.k() * shape.d, 2.0 / f64::from(shape.k()).sqrt());
        let rows = vals(shape.tokens() * shape.d, 0.5);
        PatchValues {
            x,
            constants: PatchConstants { w, rows },
        }
    }
}

/// A pooling head's input `x` (`[m, c]`) and constants, f16 values.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolValues {
    /// The block's input.
    pub x: Vec<f64>,
    /// The post-LayerNorm's and the head's constants.
    pub constants: PoolConstants,
}

impl PoolValues {
    /// Values for `shape` from `uniform` (numbers in `[-1, 1)`), as
    /// [`AttentionValues::random`]; the query of unit scale (a trained
    /// probe's projection), so that scores are a few units. Drawn in the
    /// order `x`, `gamma`, `beta`, `query`, `w_k`, `b_k`, `w_v`, `b_v`,
    /// `w_o`, `b_o`.
    pub fn random(shape: PoolShape, mut uniform: impl FnMut() -> f64) -> Self {
        let (m, c) = (shape.rows() as usize, shape.c as usize);
        let mut vals = |n: usize, scale: f64, offset: f64| draw(&mut uniform, n, scale, offset);
        let w = 2.0 / (c as f64).sqrt();
        let x = vals(m * c, 1.0, 0.0);
        let constants = PoolConstants {
            gamma: vals(c, 0.2, 1.0),
            beta: vals(c, 0.1, 0.0),
            query: vals(c, 1.0, 0.0),
            w_k: vals(c * c, w, 0.0),
            b_k: vals(c, 0.2, 0.0),
            w_v: vals(c * c, w, 0.0),
            b_v: vals(c, 0.2, 0.0),
            w_o: vals(c * c, w, 0.0),
            b_o: vals(c, 0.1, 0.0),
        };
        PoolValues { x, constants }
    }

    /// Rounds the key and value weights (one fused product in the model:
    /// one scale) and, with `out`, the output weights to FP8 values as
    /// `convert-precision` does; returns the shape's
    /// [`AttentionShape::fp8`].
    pub fn quantize_fp8(&mut self, out: bool) -> AttentionFp8 {
        let k = &mut self.constants;
        let mut kv: Vec<f64> = k.w_k.iter().chain(&k.w_v).copied().collect();
        let qkv_scale = quantize_fp8(&mut kv);
        let (w_k, w_v) = kv.split_at(k.w_k.len());
        k.w_k = w_k.to_vec();
        k.w_v = w_v.to_vec();
        AttentionFp8 {
            qkv_scale,
            out_scale: out.then(|| quantize_fp8(&mut k.w_o)),
        }
    }
}

/// `n` values `offset + scale * uniform()`, each rounded to f16.
fn draw(uniform: &mut impl FnMut() -> f64, n: usize, scale: f64, offset: f64) -> Vec<f64> {
    (0..n)
        .map(|_| f16::from_f64(offset + scale * uniform()).to_f64())
        .collect()
}
