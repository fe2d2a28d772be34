//! `fold-layernorm-affine`: a LayerNorm's scale and shift folded into the
//! products that read it.
//!
//! LayerNorm over the last axis is `y = n * gamma + beta` with
//! `n = (x - mean) / sqrt(var + eps)` per row. Where every user of `y` is
//! `nn.linear(y, W[C, N], b[N])` with constant `W` and `b`,
//!
//! ```text
//! y W + b = (n * gamma + beta) W + b = n (diag(gamma) W) + (beta W + b)
//! W'[k][j] = gamma[k] W[k][j],     b'[j] = b[j] + sum_k beta[k] W[k][j]
//! ```
//!
//! so the pass gives the LayerNorm a scale of ones and a shift of zeros
//! and each product `W'` and `b'` (new constants, computed in float64 and
//! rounded once to the weights' element type). The function computes the
//! same values up to that rounding; a backend then normalises without the
//! scale's multiply and the shift's add (the IPU's LayerNorm saves two of
//! its five instructions a word, `ipuc_backend_ipu::codelets::layernorm`),
//! and the layers of an encoder keep no scale and shift of their own.
//!
//! Run it before `convert-precision`: the FP8 weights are then the folded
//! ones, quantised once. A LayerNorm whose result is returned, or read by
//! anything but the left operand of such a product (the post-LayerNorm of
//! an encoder, its output), or whose constants have no data, is left as
//! it is; so is one already folded (scale ones, shift zeros or absent).
//! A product without a bias takes a LayerNorm with a zero shift only.
//!
//! Differences from MLIR: upstream has no such pass (TOSA and linalg keep
//! normalisation and its affine part together); ONNX Runtime's transformer
//! optimisations fold the other way (the bias into the next add).
//!
//! ```text
//! ipu-opt model.mlir --pass-pipeline='builtin.module(func.func(fold-layernorm-affine))'
//! ```

use std::sync::Arc;

use ipuc_dialects::func;
use ipuc_dialects::nn::{self, elements};
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::attributes::{zeroed_bytes, AttrKind, DenseElements};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{float_format, Attribute, Context, Diagnostic, OpId, Type, Value};

use crate::precision::{new_resource, release_replaced, rounded, INLINE_ELEMENTS};

/// The pass.
#[derive(Clone, Debug, Default)]
pub struct FoldLayerNormAffine;

ipuc_ir::declare_pass! {
    FoldLayerNormAffine => "fold-layernorm-affine" {
        summary: "Fold each LayerNorm's scale and shift into the constant nn.linear products that read it (the LayerNorm keeps a scale of ones and a shift of zeros)",
        anchor: "func.func",
        options FoldLayerNormAffineOptions {}
        statistics FoldLayerNormAffineStatistics {
            /// LayerNorms whose scale and shift were folded
            folded: u64 => "num-folded-layernorms",
            /// Products given folded weights
            products: u64 => "num-folded-products",
        }
    }
}

impl DeclaredPass for FoldLayerNormAffine {
    fn create(_: &FoldLayerNormAffineOptions, _: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(FoldLayerNormAffine)
    }

    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut FoldLayerNormAffineStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let Some(body) = func::entry_block(ctx, op) else {
            return Ok(PreservedAnalyses::all());
        };
        let mut changed = false;
        // One constant of ones and one of zeros per type, at the top of
        // the body, for every folded LayerNorm.
        let mut splats = Splats {
            body,
            made: Vec::new(),
        };
        let mut spares = Spares::default();
        for ln in ctx.block_ops_vec(body) {
            // Constants a fold replaced are gone from the snapshot's tail.
            if !ctx.is_live(ln) || ctx.name_str(ln) != nn::LAYER_NORMALIZATION {
                continue;
            }
            if let Some(fold) = Fold::of(ctx, ln) {
                stats.products += fold.products.len() as u64;
                fold.apply(ctx, ln, &mut splats, &mut spares)?;
                stats.folded += 1;
                changed = true;
            }
        }
        Ok(if changed {
            PreservedAnalyses::none()
        } else {
            PreservedAnalyses::all()
        })
    }
}

/// Whether a LayerNorm's scale `gamma` and shift `beta` (zeros where it
/// has none) are ones and zeros: nothing to fold, as the pass leaves a
/// folded LayerNorm (and a backend may skip both).
pub fn is_identity_affine(gamma: &[f64], beta: &[f64]) -> bool {
    gamma.iter().all(|&g| g == 1.0) && beta.iter().all(|&b| b == 0.0)
}

/// The fold's arithmetic on one product: `w` (`[C, N]` row-major)
/// becomes `diag(gamma) w` and `b` (`[N]`) `b + beta w`, in float64.
pub fn fold_into(gamma: &[f64], beta: &[f64], w: &mut [f64], b: &mut [f64]) {
    let n = b.len();
    debug_assert_eq!(w.len(), gamma.len() * n);
    for (k, row) in w.chunks_exact_mut(n).enumerate() {
        if beta[k] != 0.0 {
            for (f, &v) in b.iter_mut().zip(row.iter()) {
                *f += beta[k] * v;
            }
        }
        row.iter_mut().for_each(|v| *v *= gamma[k]);
    }
}

/// A float constant's data (its values not decoded) and type, if `v` is
/// one with data.
fn constant_data(ctx: &Context, v: Value) -> Option<(DenseElements, Type)> {
    let op = ctx.defining_op(v)?;
    if ctx.name_str(op) != nn::CONSTANT {
        return None;
    }
    let data = elements::dense_data(ctx.attr(op, "value")?)?;
    data.element_type().float_kind()?;
    Some((data, ctx.value_type(v).clone()))
}

/// A float constant's values and type, if `v` is one with data.
fn constant_values(ctx: &Context, v: Value) -> Option<(Vec<f64>, Type)> {
    let (data, ty) = constant_data(ctx, v)?;
    Some((elements::floats(&data)?, ty))
}

/// The value of the constant defining operand `index` of `op`.
fn operand_value(ctx: &Context, op: OpId, index: usize) -> Option<Attribute> {
    let d = ctx.defining_op(ctx.operand(op, index))?;
    ctx.attr(d, "value").cloned()
}

/// The folded weights of a product as a new constant's value: `w` (`[C,
/// N]`, the value `old` holds) becomes `diag(gamma) w` and `b` becomes `b +
/// beta w` ([`fold_into`], the same float64 arithmetic and one rounding to
/// `w`'s element type). A large resource (a model's weight) is folded a
/// row at a time, from its stored bytes into a new blob: neither the
/// weights' float64 copy (8 bytes an element; so400m folds 0.24 G) nor a
/// copy of the new bytes is ever made; the bytes are written into a spare
/// buffer of their size where there is one (every byte is written).
fn folded_weights(
    ctx: &Context,
    old: &Attribute,
    w: &DenseElements,
    gamma: &[f64],
    beta: &[f64],
    b: &mut [f64],
    spares: &mut Spares,
) -> Option<Attribute> {
    let kind = w.element_type().float_kind()?;
    let is_resource = matches!(old.kind(), AttrKind::DenseResource { .. });
    if !is_resource || w.splat || w.len() as u64 <= INLINE_ELEMENTS {
        let mut values = elements::floats(w)?;
        fold_into(gamma, beta, &mut values, b);
        return rounded(ctx, old, &values, w.element_type().clone(), "folded_w");
    }
    let n = b.len();
    let width = kind.byte_size();
    let mut bytes = spares.take(w.len() * width);
    let out = Arc::get_mut(&mut bytes).expect("a spare or new buffer is unique");
    let mut row = Vec::with_capacity(n);
    for (k, (src, dst)) in w
        .data
        .chunks_exact(n * width)
        .zip(out.chunks_exact_mut(n * width))
        .enumerate()
    {
        float_format::decode_into(kind, src, &mut row);
        fold_into(&gamma[k..=k], &beta[k..=k], &mut row, b);
        float_format::encode_into(kind, &row, dst);
    }
    // The type `rounded` gives the folded weights.
    let ty = Type::tensor(old.ty()?.shape()?, w.element_type().clone());
    Some(new_resource(ctx, ty, kind, bytes, "folded_w"))
}

/// What folding one LayerNorm takes: its scale and shift, and each
/// product reading it with its weights `[C, N]` and bias.
struct Fold {
    gamma: (Vec<f64>, Type),
    beta: Option<(Vec<f64>, Type)>,
    products: Vec<Product>,
}

struct Product {
    op: OpId,
    w: DenseElements,
    b: Option<(Vec<f64>, Type)>,
}

impl Fold {
    /// The fold of LayerNorm `ln`, if it can be folded and is not yet.
    fn of(ctx: &Context, ln: OpId) -> Option<Fold> {
        let operands = ctx.operands(ln);
        let y = ctx.result(ln, 0);
        let gamma = constant_values(ctx, operands[1])?;
        let c = gamma.0.len();
        let beta = match operands.get(2) {
            Some(&b) => Some(constant_values(ctx, b)?),
            None => None,
        };
        // Statistics over the last axis alone: the scale and shift are
        // vectors of its length.
        let x = ctx.value_type(operands[0]);
        let rank = x.shape()?.len() as i64;
        let axis = ctx
            .attr(ln, "axis")
            .and_then(Attribute::as_int)
            .unwrap_or(-1);
        if (axis != -1 && axis != i128::from(rank - 1))
            || x.shape()?.last() != Some(&(c as i64))
            || beta.as_ref().is_some_and(|b| b.0.len() != c)
        {
            return None;
        }
        let beta_values = beta.as_ref().map_or(&[][..], |b| &b.0[..]);
        if is_identity_affine(&gamma.0, beta_values) {
            return None;
        }
        let shift = beta_values.iter().any(|&v| v != 0.0);
        // Every reader a product's input, checked before any weights are
        // decoded.
        let uses = ctx.uses(y);
        let mut readers: Vec<OpId> = Vec::with_capacity(uses.len());
        for u in uses {
            let p = u.op;
            if ctx.name_str(p) != nn::LINEAR
                || u.index != 0
                || ctx.attr(p, nn::RHS_SCALE).is_some()
                || readers.contains(&p)
            {
                return None;
            }
            readers.push(p);
        }
        if readers.is_empty() {
            return None;
        }
        let mut products = Vec::new();
        for p in readers {
            let ops = ctx.operands(p);
            let (w, w_ty) = constant_data(ctx, ops[1])?;
            let dims = w_ty.shape()?;
            if dims.len() != 2 || dims[0] != c as i64 || ops[1] == ops[0] {
                return None;
            }
            let n = dims[1] as usize;
            let b = match ops.get(2) {
                Some(&b) => {
                    let b = constant_values(ctx, b)?;
                    Some((b.0.len() == n).then_some(b)?)
                }
                None if shift => return None,
                None => None,
            };
            products.push(Product { op: p, w, b });
        }
        Some(Fold {
            gamma,
            beta,
            products,
        })
    }

    /// Rewrites `ln` and its products.
    fn apply(
        self,
        ctx: &mut Context,
        ln: OpId,
        splats: &mut Splats,
        spares: &mut Spares,
    ) -> Result<(), Diagnostic> {
        let c = self.gamma.0.len();
        let zeros = vec![0.0; c];
        let beta = self.beta.as_ref().map_or(&zeros[..], |b| &b.0[..]);
        for p in self.products {
            let n = p.w.len() / c;
            // Without a bias the shift is zero (`Fold::of`).
            let (mut b, b_ty) = p.b.map_or((vec![0.0; n], None), |(b, ty)| (b, Some(ty)));
            let w = operand_value(ctx, p.op, 1).and_then(|old| {
                folded_weights(ctx, &old, &p.w, &self.gamma.0, beta, &mut b, spares)
            });
            // The old weights' bytes go with their constant (kept for the
            // next product of their size).
            drop(p.w);
            spares.keep(replace_operand(ctx, p.op, 1, w, "folded_w")?);
            if let Some(ty) = b_ty {
                let b = operand_value(ctx, p.op, 2)
                    .zip(ty.element_type())
                    .and_then(|(old, element)| rounded(ctx, &old, &b, element.clone(), "folded_b"));
                drop(replace_operand(ctx, p.op, 2, b, "folded_b")?);
            }
        }
        let ones = splats.get(ctx, ln, &self.gamma.1, 1.0)?;
        set_operand(ctx, ln, 1, ones);
        if let Some((_, ty)) = &self.beta {
            let zeros = splats.get(ctx, ln, ty, 0.0)?;
            set_operand(ctx, ln, 2, zeros);
        }
        Ok(())
    }
}

/// The data of weights a fold replaced, nothing else holding it: the next
/// folded weights of the same size are written into it rather than into
/// new memory (an encoder's layers repeat two sizes, so so400m's 54 folded
/// weights take two new buffers; new memory costs the kernel's zeroing of
/// its pages, and the allocator does not reliably hand freed memory back).
#[derive(Default)]
struct Spares(Vec<Arc<[u8]>>);

impl Spares {
    /// Keeps `data` if it is unique (else it is dropped).
    fn keep(&mut self, data: Option<Arc<[u8]>>) {
        if let Some(mut data) = data {
            if Arc::get_mut(&mut data).is_some() {
                self.0.push(data);
            }
        }
    }

    /// A unique buffer of `len` bytes: a spare one (its old bytes
    /// still in it) or a new one of zeros.
    fn take(&mut self, len: usize) -> Arc<[u8]> {
        match self.0.iter().position(|d| d.len() == len) {
            Some(i) => self.0.swap_remove(i),
            None => zeroed_bytes(len),
        }
    }
}

/// The splat constants made so far in a function body: `(type, value,
/// the constant's result)`.
struct Splats {
    body: ipuc_ir::BlockId,
    made: Vec<(Type, f64, Value)>,
}

impl Splats {
    /// The constant of type `ty` with every element `value`, made at the
    /// top of the body the first time (`at` names the op for errors).
    fn get(
        &mut self,
        ctx: &mut Context,
        at: OpId,
        ty: &Type,
        value: f64,
    ) -> Result<Value, Diagnostic> {
        if let Some((_, _, v)) = self.made.iter().find(|(t, x, _)| t == ty && *x == value) {
            return Ok(*v);
        }
        let n = ty.num_elements().unwrap_or(0) as usize;
        let attr = elements::from_floats(ty, &vec![value; n]).ok_or_else(|| {
            Diagnostic::op_error(
                ctx,
                at,
                "fold-layernorm-affine: cannot build a splat of this type",
            )
        })?;
        let loc = ctx.loc(at).clone();
        let state = nn::ConstantOp::build(ctx, attr, loc)?;
        let k = ctx.create_op(state);
        ctx.prepend_op(self.body, k);
        let v = ctx.result(k, 0);
        self.made.push((ty.clone(), value, v));
        Ok(v)
    }
}

/// Sets operand `index` of `op` to `v`; the old operand's constant goes if
/// nothing else uses it.
fn set_operand(ctx: &mut Context, op: OpId, index: usize, v: Value) {
    let old = ctx.operand(op, index);
    ctx.set_operand(op, index, v);
    if ctx.use_empty(old) {
        if let Some(d) = ctx.defining_op(old) {
            ctx.erase_op(d);
        }
    }
}

/// Sets operand `index` of `op` to a new constant of value `attr` (right
/// before `op`; `None`: the value could not be built, an error naming
/// `hint`); the old constant goes if nothing else uses it, and its blob
/// with it: returned, for its memory to be reused or freed.
fn replace_operand(
    ctx: &mut Context,
    op: OpId,
    index: usize,
    attr: Option<Attribute>,
    hint: &str,
) -> Result<Option<Arc<[u8]>>, Diagnostic> {
    // `attr` is built as convert-precision builds its constants: inline
    // where the old one was inline or is small, else in a new resource.
    let attr = attr.ok_or_else(|| {
        Diagnostic::op_error(
            ctx,
            op,
            format!("fold-layernorm-affine: cannot build a {hint} constant of this type"),
        )
    })?;
    let old = operand_value(ctx, op, index);
    let loc = ctx.loc(op).clone();
    let state = nn::ConstantOp::build(ctx, attr, loc)?;
    let k = ctx.create_op(state);
    ctx.insert_op_before(op, k);
    let v = ctx.result(k, 0);
    set_operand(ctx, op, index, v);
    Ok(old.and_then(|old| release_replaced(ctx, old)))
}
