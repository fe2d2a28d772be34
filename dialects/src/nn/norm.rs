//! Normalisations and activations with a closed form: `nn.softmax`,
//! `nn.layer_normalization` and `nn.gelu` (the targets the graph rewriter
//! recognises from their decomposed ONNX forms).

use ipuc_ir::dialect::Traits;
use ipuc_ir::interfaces::{
    CombiningKind, ElementWork, Elementwise, OpSignature, Reduction, ReductionShape,
};
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::support::*;

/// `nn.softmax`.
pub const SOFTMAX: &str = "nn.softmax";
/// `nn.layer_normalization`.
pub const LAYER_NORMALIZATION: &str = "nn.layer_normalization";
/// `nn.gelu`.
pub const GELU: &str = "nn.gelu";

/// ONNX's default `epsilon` of `LayerNormalization`.
pub const DEFAULT_LAYER_NORM_EPSILON: f32 = 1e-5;

fn float_tensor<'t>(x: &'t Type, what: &str) -> InferResult<&'t [i64]> {
    let (s, e) = ranked(x, what)?;
    if !e.is_float() {
        return Err(shape_err!(
            "{what} must have a floating-point element type, but got '{e}'"
        ));
    }
    Ok(s)
}

/// Result type of `nn.softmax {axis}`: the operand type.
pub fn infer_softmax(x: &Type, axis: i64) -> InferResult<Type> {
    let s = float_tensor(x, "operand")?;
    normalize_axis(axis, s.len())?;
    Ok(x.clone())
}

/// Result type of `nn.layer_normalization(x, scale[, bias]) {axis}`: the type
/// of `x`. Statistics are taken over `x[axis..]`, to which `scale` and `bias`
/// must broadcast.
pub fn infer_layer_normalization(
    x: &Type,
    scale: &Type,
    bias: Option<&Type>,
    axis: i64,
) -> InferResult<Type> {
    let s = float_tensor(x, "input")?;
    let a = normalize_axis(axis, s.len())?;
    let normalized = &s[a..];
    for (what, t) in [("scale", Some(scale)), ("bias", bias)] {
        let Some(t) = t else { continue };
        let st = float_tensor(t, what)?;
        if !broadcasts_to(st, normalized) {
            return Err(shape_err!(
                "{what} of shape [{}] does not broadcast to the normalized shape [{}]",
                shape_str(st),
                shape_str(normalized)
            ));
        }
    }
    Ok(x.clone())
}

/// The `approximate` modes of `nn.gelu`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GeluApproximation {
    /// `x * Φ(x)` with the exact normal CDF (via erf).
    None,
    /// `0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))`.
    Tanh,
}

impl GeluApproximation {
    /// Parses the attribute value.
    pub fn parse(s: &str) -> InferResult<GeluApproximation> {
        match s {
            "none" => Ok(GeluApproximation::None),
            "tanh" => Ok(GeluApproximation::Tanh),
            _ => Err(shape_err!(
                "'approximate' must be \"none\" or \"tanh\", but is \"{s}\""
            )),
        }
    }
    /// The attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            GeluApproximation::None => "none",
            GeluApproximation::Tanh => "tanh",
        }
    }
    /// The scalar function.
    pub fn apply_f64(self, x: f64) -> f64 {
        match self {
            GeluApproximation::None => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
            GeluApproximation::Tanh => {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
            }
        }
    }
}

/// Result type of `nn.gelu`: the operand type.
pub fn infer_gelu(x: &Type) -> InferResult<Type> {
    float_tensor(x, "operand")?;
    Ok(x.clone())
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let t = value_types(ctx, ctx.operands(op));
    let r = match ctx.name_str(op) {
        SOFTMAX => infer_softmax(&t[0], attr_i64(ctx, op, "axis", -1)),
        LAYER_NORMALIZATION => {
            infer_layer_normalization(&t[0], &t[1], t.get(2), attr_i64(ctx, op, "axis", -1))
        }
        GELU => GeluApproximation::parse(attr_str(ctx, op, "approximate", "none"))
            .and_then(|_| infer_gelu(&t[0])),
        _ => return None,
    };
    Some(r.and_then(|ty| {
        check_acc_type(ctx, op, &t[0])?;
        Ok(vec![ty])
    }))
}

/// `nn.softmax` reduces each row along `axis` twice (the maximum, then the
/// sum of `exp(x - max)`) and rescales every element.
struct SoftmaxReduction;

impl Reduction for SoftmaxReduction {
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape> {
        let x = sig.operand(0)?;
        let axis = sig.i64_attr("axis", -1);
        infer_softmax(x, axis).ok()?;
        let shape = x.shape()?;
        let axis = normalize_axis(axis, shape.len()).ok()?;
        let (outer, inner) = reduction_extent(shape, |d| d == axis)?;
        Some(ReductionShape {
            outer,
            inner,
            passes: vec![CombiningKind::Max, CombiningKind::Add],
            // x - max, exp, times 1/sum.
            per_element: ElementWork::flops(2) + ElementWork::special(1),
        })
    }
}

/// `nn.layer_normalization` reduces `x[axis..]` twice (the mean, then the
/// variance) and normalises, scales and shifts every element.
struct LayerNormReduction;

impl Reduction for LayerNormReduction {
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape> {
        let (x, scale) = (sig.operand(0)?, sig.operand(1)?);
        let bias = sig.operand(2);
        let axis = sig.i64_attr("axis", -1);
        infer_layer_normalization(x, scale, bias, axis).ok()?;
        let shape = x.shape()?;
        let axis = normalize_axis(axis, shape.len()).ok()?;
        let (outer, inner) = reduction_extent(shape, |d| d >= axis)?;
        Some(ReductionShape {
            outer,
            inner,
            passes: vec![CombiningKind::Add, CombiningKind::Add],
            // x - mean, its square, times 1/std, times scale (plus bias).
            per_element: ElementWork::flops(4 + u32::from(bias.is_some())),
        })
    }
}

/// `nn.gelu` counts the work of its decomposed form.
struct GeluElementwise;

impl Elementwise for GeluElementwise {
    fn work(&self, sig: &OpSignature<'_>) -> ElementWork {
        match GeluApproximation::parse(sig.str_attr("approximate", "none")) {
            // x^3 (2), times 0.044715, plus x, times sqrt(2/pi), tanh, plus 1,
            // times x, times 0.5.
            Ok(GeluApproximation::Tanh) => ElementWork::flops(7) + ElementWork::special(1),
            // x / sqrt 2 (as a product), erf, plus 1, times x, times 0.5.
            _ => ElementWork::flops(4) + ElementWork::special(1),
        }
    }
}

pub(crate) fn register(d: Dialect) -> Dialect {
    d.op(nn_op(SOFTMAX, "Softmax along 'axis' (default -1)").traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE).attribute(i64_attr("axis", true)).attribute(ACC_TYPE_ATTR).operands(&[one("operand", TENSOR)]).results(&[one("result", TENSOR)]).implement::<dyn Reduction>(Box::new(SoftmaxReduction)))
    .op(nn_op(LAYER_NORMALIZATION, "Layer normalization over x[axis..] with scale and optional bias (ONNX LayerNormalization)").attribute(i64_attr("axis", true)).attribute(f32_attr("epsilon", true)).attribute(ACC_TYPE_ATTR).operands(&[one("input", TENSOR), one("scale", TENSOR), optional("bias", TENSOR)]).results(&[one("result", TENSOR)]).implement::<dyn Reduction>(Box::new(LayerNormReduction)))
    .op(nn_op(GELU, "Gaussian error linear unit; 'approximate' = \"none\" (default) or \"tanh\"").traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE).attribute(string_attr("approximate", true)).operands(&[one("operand", TENSOR)]).results(&[one("result", TENSOR)]).implement::<dyn Elementwise>(Box::new(GeluElementwise)))
}

op_wrapper!(
    /// `nn.softmax {axis}`.
    SoftmaxOp,
    SOFTMAX
);

operand_accessors!(SoftmaxOp {
    /// The operand.
    input = 0,
});

impl SoftmaxOp {
    /// The softmax axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.input(ctx), -1)
    }
}
inferred_builder!(SoftmaxOp {
    /// A state for softmax of `x` along `axis`.
    build(x; axis: i64 => Attribute::i64) = infer_softmax(x, axis)
});

op_wrapper!(
    /// `nn.layer_normalization(input, scale[, bias]) {axis, epsilon}`.
    LayerNormalizationOp,
    LAYER_NORMALIZATION
);

operand_accessors!(LayerNormalizationOp {
    /// `x`.
    input = 0,
    /// `scale`.
    scale = 1,
});

impl LayerNormalizationOp {
    /// `bias`, if given.
    pub fn bias(self, ctx: &Context) -> Option<Value> {
        ctx.operands(self.0).get(2).copied()
    }
    /// The first normalized axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.input(ctx), -1)
    }
    /// `epsilon` (default 1e-5).
    pub fn epsilon(self, ctx: &Context) -> f32 {
        attr_f32(ctx, self.0, "epsilon", DEFAULT_LAYER_NORM_EPSILON)
    }
    /// A state normalising `x` over `x[axis..]`.
    pub fn build(
        ctx: &Context,
        x: Value,
        scale: Value,
        bias: Option<Value>,
        axis: i64,
        epsilon: f32,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_layer_normalization(
            ctx.value_type(x),
            ctx.value_type(scale),
            bias.map(|b| ctx.value_type(b)),
            axis,
        );
        let mut operands = vec![x, scale];
        operands.extend(bias);
        let attrs = vec![
            ("axis", Attribute::i64(axis)),
            ("epsilon", f32_attribute(epsilon)),
        ];
        build_inferred(ctx, LAYER_NORMALIZATION, &operands, ty, attrs, loc)
    }
}

op_wrapper!(
    /// `nn.gelu {approximate}`.
    GeluOp,
    GELU
);

operand_accessors!(GeluOp {
    /// The operand.
    input = 0,
});

impl GeluOp {
    /// The approximation (of a verified op).
    pub fn approximate(self, ctx: &Context) -> GeluApproximation {
        GeluApproximation::parse(attr_str(ctx, self.0, "approximate", "none"))
            .unwrap_or(GeluApproximation::None)
    }
    /// A state for GELU of `x`.
    pub fn build(
        ctx: &Context,
        x: Value,
        approximate: GeluApproximation,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_gelu(ctx.value_type(x));
        let attrs = match approximate {
            GeluApproximation::None => vec![],
            GeluApproximation::Tanh => vec![("approximate", Attribute::string("tanh"))],
        };
        build_inferred(ctx, GELU, &[x], ty, attrs, loc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_matches_reference_values() {
        // x * Phi(x) at 1 and -2 (Phi from standard normal tables).
        assert!((GeluApproximation::None.apply_f64(1.0) - 0.841_344_746_068_542_9).abs() < 1e-12);
        assert!((GeluApproximation::None.apply_f64(-2.0) - -0.045_500_263_896_358_4).abs() < 1e-12);
        // The tanh form is within 1e-3 of the exact one and differs from it.
        let t = GeluApproximation::Tanh.apply_f64(1.0);
        assert!((t - 0.841_192).abs() < 1e-6, "{t}");
        assert_eq!(GeluApproximation::parse("tanh").unwrap().as_str(), "tanh");
        assert!(GeluApproximation::parse("fast").is_err());
    }
}
