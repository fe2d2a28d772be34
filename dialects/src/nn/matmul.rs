//! Contractions: `nn.matmul` (numpy matmul: batched, broadcast batch
//! dimensions, 1-D operands promoted), `nn.gemm` (ONNX Gemm:
//! `alpha * op(A) * op(B) + beta * C`) and `nn.linear` (`x[..., K] * w[K, N] +
//! b[N]`, the fusion target of matmul + bias).
//!
//! Float operands may differ in format (f16 activations times f8E4M3FNUZ
//! weights). The result element type is [`contraction_element`] of the
//! first operand: its own type, except that an 8-bit float first operand
//! gives an f16 result. FP8 is a storage format of operands, not of
//! results: an FP8 product is accumulated wider and comes out in f16, as
//! the IPU's FP8 AMP (`f8v8hihov4amp`) delivers it, and an FP8 result
//! would lose all but 3 or 4 significand bits of every sum. The rule holds
//! for `nn.matmul`, `nn.gemm` and `nn.linear` alike (and `nn.linear`'s
//! bias joins the f16 result). An 8-bit float right operand of `nn.matmul`
//! or `nn.linear` may carry a per-tensor power-of-two scale,
//! `rhs_scale = s`: it stands for its elements times `2^s` (the FP8 tensor
//! scale of the IPU and of `convert-precision`).

use ipuc_ir::interfaces::{Contraction, ContractionShape, OpSignature};
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::support::*;

/// `nn.matmul`.
pub const MATMUL: &str = "nn.matmul";
/// `nn.gemm`.
pub const GEMM: &str = "nn.gemm";
/// `nn.linear`.
pub const LINEAR: &str = "nn.linear";

/// The FP8 tensor scale attribute of `nn.matmul` and `nn.linear`.
pub const RHS_SCALE: &str = "rhs_scale";

/// The power-of-two scale exponent of `op`'s right operand (0 without
/// `rhs_scale`).
pub fn rhs_scale(ctx: &Context, op: OpId) -> i64 {
    attr_i64(ctx, op, RHS_SCALE, 0)
}

/// `rhs_scale` is only meaningful on 8-bit float weights.
fn check_rhs_scale(ctx: &Context, op: OpId, rhs: &Type) -> InferResult<()> {
    if ctx.attr(op, RHS_SCALE).is_none() {
        return Ok(());
    }
    match rhs.element_type().and_then(|e| e.float_kind()) {
        // A bare exponent (f8E8M0FNU) is a scale, not a weight format.
        Some(k) if k.bit_width() == 8 && k != ipuc_ir::FloatKind::F8E8M0FNU => Ok(()),
        _ => Err(ShapeError::Invalid(format!(
            "'{RHS_SCALE}' scales 8-bit float weights, but the right operand is '{rhs}'"
        ))),
    }
}

/// Checks that two element types may be contracted together: both floats
/// (any formats) or the same integer type.
fn check_contractable(a: &Type, b: &Type) -> InferResult<()> {
    if (a.is_float() && b.is_float()) || (a == b && a.is_integer()) {
        Ok(())
    } else {
        Err(shape_err!(
            "operand element types '{a}' and '{b}' cannot be contracted together"
        ))
    }
}

/// The element type of a contraction whose first operand has element type
/// `lhs`: `lhs` itself, except that 8-bit floats (FP8 storage formats)
/// give f16, the format the FP8 AMP's products come out in.
pub fn contraction_element(lhs: &Type) -> Type {
    match lhs.float_kind() {
        Some(k) if k.bit_width() == 8 => Type::f16(),
        _ => lhs.clone(),
    }
}

fn check_contraction(k1: i64, k2: i64) -> InferResult<()> {
    if k1 != k2 && k1 != DYNAMIC && k2 != DYNAMIC {
        return Err(shape_err!("contraction dimensions differ: {k1} vs {k2}"));
    }
    Ok(())
}

/// The product `nn.matmul(a, b)` performs (numpy `matmul`, 1-D operands
/// promoted): the result type and the contraction's dimensions are both
/// read from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulDims {
    /// The broadcast batch dimensions.
    pub batch: Vec<i64>,
    /// Rows of the product (1 for a 1-D lhs).
    pub m: i64,
    /// Columns of the product (1 for a 1-D rhs).
    pub n: i64,
    /// The contracted dimension (the static one when one side is dynamic).
    pub k: i64,
    /// Whether the lhs is 1-D (its row dimension is dropped from the result).
    pub vector_lhs: bool,
    /// Whether the rhs is 1-D (its column dimension is dropped).
    pub vector_rhs: bool,
}

impl MatmulDims {
    /// The result shape.
    pub fn result_shape(&self) -> Vec<i64> {
        let mut shape = self.batch.clone();
        if !self.vector_lhs {
            shape.push(self.m);
        }
        if !self.vector_rhs {
            shape.push(self.n);
        }
        shape
    }
}

/// The dimensions of `nn.matmul(a, b)`.
pub fn matmul_dims(a: &Type, b: &Type) -> InferResult<MatmulDims> {
    let (sa, ea) = ranked(a, "lhs")?;
    let (sb, eb) = ranked(b, "rhs")?;
    check_contractable(ea, eb)?;
    if sa.is_empty() || sb.is_empty() {
        return Err(ShapeError::invalid("operands must have rank >= 1"));
    }
    let a2: Vec<i64> = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.to_vec()
    };
    let b2: Vec<i64> = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.to_vec()
    };
    let (m, k1) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    check_contraction(k1, k2)?;
    let batch = broadcast_shapes(&a2[..a2.len() - 2], &b2[..b2.len() - 2])
        .map_err(|e| e.within("batch dimensions"))?;
    Ok(MatmulDims {
        batch,
        m,
        n,
        k: if k1 == DYNAMIC { k2 } else { k1 },
        vector_lhs: sa.len() == 1,
        vector_rhs: sb.len() == 1,
    })
}

/// Result type of `nn.matmul(a, b)` (numpy `matmul`).
pub fn infer_matmul(a: &Type, b: &Type) -> InferResult<Type> {
    let dims = matmul_dims(a, b)?;
    let (_, ea) = ranked(a, "lhs")?;
    Ok(tensor(&dims.result_shape(), &contraction_element(ea)))
}

/// Attributes of `nn.gemm` (ONNX defaults: 1.0, 1.0, false, false).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GemmParams {
    /// Scale of `op(A) * op(B)`.
    pub alpha: f32,
    /// Scale of `C`.
    pub beta: f32,
    /// Whether `A` is transposed.
    pub trans_a: bool,
    /// Whether `B` is transposed.
    pub trans_b: bool,
}

impl Default for GemmParams {
    fn default() -> Self {
        GemmParams {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: false,
        }
    }
}

impl GemmParams {
    /// Reads the attributes of a `nn.gemm` op.
    pub fn of(ctx: &Context, op: OpId) -> GemmParams {
        GemmParams {
            alpha: attr_f32(ctx, op, "alpha", 1.0),
            beta: attr_f32(ctx, op, "beta", 1.0),
            trans_a: attr_i64(ctx, op, "transA", 0) != 0,
            trans_b: attr_i64(ctx, op, "transB", 0) != 0,
        }
    }
    /// The attributes that differ from the defaults.
    pub fn attributes(&self) -> Vec<(&'static str, Attribute)> {
        let mut v = Vec::new();
        if self.alpha != 1.0 {
            v.push(("alpha", f32_attribute(self.alpha)));
        }
        if self.beta != 1.0 {
            v.push(("beta", f32_attribute(self.beta)));
        }
        if self.trans_a {
            v.push(("transA", Attribute::i64(1)));
        }
        if self.trans_b {
            v.push(("transB", Attribute::i64(1)));
        }
        v
    }
}

/// `[M, N, K]` of `nn.gemm(a, b)`: `op(A)` is `[M, K]`, `op(B)` is `[K, N]`.
pub fn gemm_dims(a: &Type, b: &Type, trans_a: bool, trans_b: bool) -> InferResult<[i64; 3]> {
    let (sa, ea) = ranked(a, "A")?;
    let (sb, eb) = ranked(b, "B")?;
    check_contractable(ea, eb)?;
    if sa.len() != 2 || sb.len() != 2 {
        return Err(shape_err!(
            "A and B must have rank 2, but have ranks {} and {}",
            sa.len(),
            sb.len()
        ));
    }
    let (m, k1) = if trans_a {
        (sa[1], sa[0])
    } else {
        (sa[0], sa[1])
    };
    let (k2, n) = if trans_b {
        (sb[1], sb[0])
    } else {
        (sb[0], sb[1])
    };
    check_contraction(k1, k2)?;
    Ok([m, n, if k1 == DYNAMIC { k2 } else { k1 }])
}

/// Result type of `nn.gemm(a, b[, c])`: `[M, N]`; `c` must broadcast to it.
pub fn infer_gemm(
    a: &Type,
    b: &Type,
    c: Option<&Type>,
    trans_a: bool,
    trans_b: bool,
) -> InferResult<Type> {
    let [m, n, _] = gemm_dims(a, b, trans_a, trans_b)?;
    if let Some(c) = c {
        let (sc, _) = ranked(c, "C")?;
        if !broadcasts_to(sc, &[m, n]) {
            return Err(shape_err!(
                "C of shape [{}] does not broadcast to the result shape [{}]",
                shape_str(sc),
                shape_str(&[m, n])
            ));
        }
    }
    let (_, ea) = ranked(a, "A")?;
    Ok(tensor(&[m, n], &contraction_element(ea)))
}

/// The leading dimensions of `x`, then N and K, of `nn.linear(x[..., K], w[K, N])`.
pub fn linear_dims(x: &Type, w: &Type) -> InferResult<(Vec<i64>, i64, i64)> {
    let (sx, ex) = ranked(x, "input")?;
    let (sw, ew) = ranked(w, "weight")?;
    check_contractable(ex, ew)?;
    if sx.is_empty() {
        return Err(ShapeError::invalid("input must have rank >= 1"));
    }
    if sw.len() != 2 {
        return Err(shape_err!(
            "weight must have rank 2, but has rank {}",
            sw.len()
        ));
    }
    let k1 = sx[sx.len() - 1];
    check_contraction(k1, sw[0])?;
    let k = if k1 == DYNAMIC { sw[0] } else { k1 };
    Ok((sx[..sx.len() - 1].to_vec(), sw[1], k))
}

/// Result type of `nn.linear(x[..., K], w[K, N][, b[N]])`: `[..., N]`.
pub fn infer_linear(x: &Type, w: &Type, b: Option<&Type>) -> InferResult<Type> {
    let (mut shape, n, _) = linear_dims(x, w)?;
    if let Some(b) = b {
        let (sb, _) = ranked(b, "bias")?;
        if sb.len() != 1 || (sb[0] != n && sb[0] != DYNAMIC && n != DYNAMIC) {
            return Err(shape_err!(
                "bias must have shape [{}], but has shape [{}]",
                shape_str(&[n]),
                shape_str(sb)
            ));
        }
    }
    shape.push(n);
    let (_, ex) = ranked(x, "input")?;
    Ok(tensor(&shape, &contraction_element(ex)))
}

/// `nn.matmul`'s product, from [`matmul_dims`].
struct MatmulContraction;

impl Contraction for MatmulContraction {
    fn contractions(&self, sig: &OpSignature<'_>) -> Option<Vec<ContractionShape>> {
        let d = matmul_dims(sig.operand(0)?, sig.operand(1)?).ok()?;
        Some(vec![contraction(
            sig,
            (0, 1),
            &d.batch,
            &[d.m],
            [d.n, d.k],
        )?])
    }
}

/// `nn.gemm`'s product `op(A) op(B)`, from [`gemm_dims`] (the `beta * C`
/// epilogue is not a contraction).
struct GemmContraction;

impl Contraction for GemmContraction {
    fn contractions(&self, sig: &OpSignature<'_>) -> Option<Vec<ContractionShape>> {
        let trans = |name| sig.i64_attr(name, 0) != 0;
        let [m, n, k] = gemm_dims(
            sig.operand(0)?,
            sig.operand(1)?,
            trans("transA"),
            trans("transB"),
        )
        .ok()?;
        Some(vec![contraction(sig, (0, 1), &[], &[m], [n, k])?])
    }
}

/// `nn.linear`'s product: the leading dimensions of the input are its rows.
struct LinearContraction;

impl Contraction for LinearContraction {
    fn contractions(&self, sig: &OpSignature<'_>) -> Option<Vec<ContractionShape>> {
        let (leading, n, k) = linear_dims(sig.operand(0)?, sig.operand(1)?).ok()?;
        Some(vec![contraction(sig, (0, 1), &[], &leading, [n, k])?])
    }
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let t = value_types(ctx, ctx.operands(op));
    let r = match ctx.name_str(op) {
        MATMUL => infer_matmul(&t[0], &t[1]),
        GEMM => {
            let p = GemmParams::of(ctx, op);
            infer_gemm(&t[0], &t[1], t.get(2), p.trans_a, p.trans_b)
        }
        LINEAR => infer_linear(&t[0], &t[1], t.get(2)),
        _ => return None,
    };
    Some(r.and_then(|ty| {
        check_rhs_scale(ctx, op, &t[1])?;
        Ok(vec![ty])
    }))
}

pub(crate) fn register(d: Dialect) -> Dialect {
    d.op(nn_op(
        MATMUL,
        "Matrix product with numpy semantics (batched, broadcast batch dimensions)",
    )
    .attribute(i64_attr(RHS_SCALE, true))
    .operands(&[one("lhs", TENSOR), one("rhs", TENSOR)])
    .results(&[one("result", TENSOR)])
    .implement::<dyn Contraction>(Box::new(MatmulContraction)))
        .op(nn_op(
            GEMM,
            "General matrix multiply: alpha * op(A) * op(B) + beta * C (ONNX Gemm)",
        )
        .attribute(f32_attr("alpha", true))
        .attribute(f32_attr("beta", true))
        .attribute(i64_attr("transA", true))
        .attribute(i64_attr("transB", true))
        .operands(&[one("a", TENSOR), one("b", TENSOR), optional("c", TENSOR)])
        .results(&[one("result", TENSOR)])
        .implement::<dyn Contraction>(Box::new(GemmContraction)))
        .op(nn_op(LINEAR, "Dense layer: x[..., K] * w[K, N] + b[N]")
            .attribute(i64_attr(RHS_SCALE, true))
            .operands(&[
                one("input", TENSOR),
                one("weight", TENSOR),
                optional("bias", TENSOR),
            ])
            .results(&[one("result", TENSOR)])
            .implement::<dyn Contraction>(Box::new(LinearContraction)))
}

op_wrapper!(
    /// `nn.matmul(lhs, rhs)`.
    MatmulOp,
    MATMUL
);

operand_accessors!(MatmulOp {
    /// The left operand.
    lhs = 0,
    /// The right operand.
    rhs = 1,
});

inferred_builder!(MatmulOp {
    /// A state for `matmul(lhs, rhs)`.
    build(lhs, rhs) = infer_matmul(lhs, rhs)
});

op_wrapper!(
    /// `nn.gemm(a, b[, c])`.
    GemmOp,
    GEMM
);

operand_accessors!(GemmOp {
    /// `A`.
    a = 0,
    /// `B`.
    b = 1,
});

impl GemmOp {
    /// `C`, if given.
    pub fn c(self, ctx: &Context) -> Option<Value> {
        ctx.operands(self.0).get(2).copied()
    }
    /// The attributes.
    pub fn params(self, ctx: &Context) -> GemmParams {
        GemmParams::of(ctx, self.0)
    }
    /// A state for `gemm(a, b[, c])`.
    pub fn build(
        ctx: &Context,
        a: Value,
        b: Value,
        c: Option<Value>,
        params: GemmParams,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_gemm(
            ctx.value_type(a),
            ctx.value_type(b),
            c.map(|c| ctx.value_type(c)),
            params.trans_a,
            params.trans_b,
        );
        let mut operands = vec![a, b];
        operands.extend(c);
        build_inferred(ctx, GEMM, &operands, ty, params.attributes(), loc)
    }
}

op_wrapper!(
    /// `nn.linear(input, weight[, bias])`.
    LinearOp,
    LINEAR
);

operand_accessors!(LinearOp {
    /// `x[..., K]`.
    input = 0,
    /// `w[K, N]`.
    weight = 1,
});

impl LinearOp {
    /// `b[N]`, if given.
    pub fn bias(self, ctx: &Context) -> Option<Value> {
        ctx.operands(self.0).get(2).copied()
    }
    /// A state for `linear(x, w[, b])`.
    pub fn build(
        ctx: &Context,
        x: Value,
        w: Value,
        b: Option<Value>,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_linear(
            ctx.value_type(x),
            ctx.value_type(w),
            b.map(|b| ctx.value_type(b)),
        );
        let mut operands = vec![x, w];
        operands.extend(b);
        build_inferred(ctx, LINEAR, &operands, ty, vec![], loc)
    }
}
