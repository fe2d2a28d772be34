//! Running sums and products along one axis: `nn.cumsum` and `nn.cumprod
//! {axis, exclusive, reverse}` (ONNX `CumSum`/`CumProd`: with `exclusive`
//! each element leaves itself out, with `reverse` the scan runs from the
//! end). The result has the operand's type.
//!
//! [`cumulative_scan`] is the one definition of the scan: the folder and
//! the reference executor both call it (floats in `f64`, rounded once to the
//! element type; integers exactly, wrapped to the element width).

use ipuc_ir::dialect::{FoldResult, Traits};
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::elements::{dense_data, floats, fold_target, from_floats, from_ints, ints};
use super::support::*;

/// The running combinations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CumulativeKind {
    /// `nn.cumsum`
    Sum,
    /// `nn.cumprod`
    Prod,
}

impl CumulativeKind {
    /// Both kinds.
    pub const ALL: [CumulativeKind; 2] = [CumulativeKind::Sum, CumulativeKind::Prod];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            CumulativeKind::Sum => "nn.cumsum",
            CumulativeKind::Prod => "nn.cumprod",
        }
    }
    /// The kind of the op called `name`.
    pub fn from_name(name: &str) -> Option<CumulativeKind> {
        CumulativeKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Where and how a scan runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScanParams {
    /// The scanned axis (normalised).
    pub axis: usize,
    /// Each element leaves itself out (the first gets the identity).
    pub exclusive: bool,
    /// The scan runs from the last element to the first.
    pub reverse: bool,
}

/// The scan of `values` (row-major, of `shape`) along `params.axis`:
/// `combine` folds from `identity`.
pub fn cumulative_scan<T: Copy>(
    values: &[T],
    shape: &[usize],
    params: ScanParams,
    identity: T,
    combine: impl Fn(T, T) -> T,
) -> Vec<T> {
    let len = shape.get(params.axis).copied().unwrap_or(1);
    let inner: usize = shape[params.axis + 1..].iter().product();
    let outer = values.len() / (len * inner).max(1);
    let mut out = values.to_vec();
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = identity;
            for step in 0..len {
                let k = if params.reverse { len - 1 - step } else { step };
                let at = (o * len + k) * inner + i;
                let x = values[at];
                if params.exclusive {
                    out[at] = acc;
                    acc = combine(acc, x);
                } else {
                    acc = combine(acc, x);
                    out[at] = acc;
                }
            }
        }
    }
    out
}

// ----- inference --------------------------------------------------------------

/// Result type of `nn.cumsum`/`nn.cumprod {axis}`: the operand's type, which
/// must be numeric with `axis` one of its axes.
pub fn infer_cumulative(x: &Type, axis: i64) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    if !(e.is_float() || (e.is_integer() && !e.is_integer_of_width(1))) {
        return Err(shape_err!(
            "operand must have a numeric element type, but got '{e}'"
        ));
    }
    normalize_axis(axis, s.len())?;
    Ok(x.clone())
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    CumulativeKind::from_name(ctx.name_str(op))?;
    let t = value_types(ctx, ctx.operands(op));
    Some(infer_cumulative(&t[0], attr_i64(ctx, op, "axis", 0)).map(|t| vec![t]))
}

// ----- folding ----------------------------------------------------------------

fn fold_cumulative(
    ctx: &Context,
    op: OpId,
    consts: &[Option<Attribute>],
) -> Option<Vec<FoldResult>> {
    let c = CumulativeOp::cast(ctx, op)?;
    let out = fold_target(ctx, op, 0)?;
    let d = dense_data(consts[0].as_ref()?)?;
    let shape: Vec<usize> = out.shape()?.iter().map(|&n| n as usize).collect();
    let params = c.params(ctx);
    let attr = if d.element_type().is_float() {
        let v = floats(&d)?;
        let r = match c.kind(ctx) {
            CumulativeKind::Sum => cumulative_scan(&v, &shape, params, 0.0, |a, b| a + b),
            CumulativeKind::Prod => cumulative_scan(&v, &shape, params, 1.0, |a, b| a * b),
        };
        from_floats(&out, &r)?
    } else {
        let v = ints(&d)?;
        let r = match c.kind(ctx) {
            CumulativeKind::Sum => cumulative_scan(&v, &shape, params, 0, i128::wrapping_add),
            CumulativeKind::Prod => cumulative_scan(&v, &shape, params, 1, i128::wrapping_mul),
        };
        from_ints(&out, &r)?
    };
    Some(vec![FoldResult::Constant(attr)])
}

// ----- registration -------------------------------------------------------------

/// No op interface: a scan is neither elementwise (each result depends on
/// a whole prefix) nor a reduction (the axis stays).
pub(crate) fn register(mut d: Dialect) -> Dialect {
    for k in CumulativeKind::ALL {
        d = d.op(nn_op(
            k.name(),
            "Running sum or product along 'axis' (ONNX CumSum/CumProd)",
        )
        .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        .attribute(i64_attr("axis", false))
        .attribute(i64_attr("exclusive", true))
        .attribute(i64_attr("reverse", true))
        .operands(&[one("operand", TENSOR)])
        .results(&[one("result", TENSOR)])
        .folder(fold_cumulative));
    }
    d
}

// ----- typed wrappers -----------------------------------------------------------

op_family_wrapper!(
    /// `nn.cumsum` or `nn.cumprod`.
    CumulativeOp,
    CumulativeKind,
    "running combination"
);
operand_accessors!(CumulativeOp {
    /// The operand.
    input = 0,
});
impl CumulativeOp {
    /// The scanned axis (normalised), `exclusive` and `reverse` (ONNX
    /// defaults: both off).
    pub fn params(self, ctx: &Context) -> ScanParams {
        ScanParams {
            axis: axis_attr(ctx, self.0, self.input(ctx), 0),
            exclusive: attr_i64(ctx, self.0, "exclusive", 0) != 0,
            reverse: attr_i64(ctx, self.0, "reverse", 0) != 0,
        }
    }
    /// A state for `kind` of `x` along `axis`.
    pub fn build(
        ctx: &Context,
        kind: CumulativeKind,
        x: Value,
        axis: i64,
        exclusive: bool,
        reverse: bool,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_cumulative(ctx.value_type(x), axis);
        let mut attrs = vec![("axis", Attribute::i64(axis))];
        if exclusive {
            attrs.push(("exclusive", Attribute::i64(1)));
        }
        if reverse {
            attrs.push(("reverse", Attribute::i64(1)));
        }
        build_inferred(ctx, kind.name(), &[x], ty, attrs, loc)
    }
}

#[cfg(test)]
mod tests {
    use super::{cumulative_scan, ScanParams};

    #[test]
    fn scans_follow_onnx_exclusive_and_reverse() {
        let x = [1, 2, 3, 4, 5, 6];
        let p = |axis, exclusive, reverse| ScanParams {
            axis,
            exclusive,
            reverse,
        };
        let sum = |params| cumulative_scan(&x, &[2, 3], params, 0, |a, b| a + b);
        assert_eq!(sum(p(1, false, false)), [1, 3, 6, 4, 9, 15]);
        assert_eq!(sum(p(1, true, false)), [0, 1, 3, 0, 4, 9]);
        assert_eq!(sum(p(1, false, true)), [6, 5, 3, 15, 11, 6]);
        assert_eq!(sum(p(1, true, true)), [5, 3, 0, 11, 6, 0]);
        assert_eq!(sum(p(0, false, false)), [1, 2, 3, 5, 7, 9]);
        let prod = cumulative_scan(&x, &[6], p(0, false, false), 1, |a, b| a * b);
        assert_eq!(prod, [1, 2, 6, 24, 120, 720]);
    }
}
