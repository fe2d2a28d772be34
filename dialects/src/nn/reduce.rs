//! Reductions: `nn.reduce_mean`, `nn.reduce_sum`, `nn.reduce_max`,
//! `nn.reduce_min`, `nn.reduce_prod` over
//! `axes` (default: all) with ONNX `keepdims` (default 1).

use ipuc_ir::dialect::FoldResult;
use ipuc_ir::interfaces::{CombiningKind, ElementWork, OpSignature, Reduction, ReductionShape};
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::elements::{
    dense_data, floats, fold_target, from_floats, from_ints, ints, strides, unravel,
};
use super::support::*;

/// Reductions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    /// `nn.reduce_mean`
    Mean,
    /// `nn.reduce_sum`
    Sum,
    /// `nn.reduce_max`
    Max,
    /// `nn.reduce_min`
    Min,
    /// `nn.reduce_prod`
    Prod,
}

impl ReduceKind {
    /// All reductions.
    pub const ALL: [ReduceKind; 5] = [
        ReduceKind::Mean,
        ReduceKind::Sum,
        ReduceKind::Max,
        ReduceKind::Min,
        ReduceKind::Prod,
    ];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Mean => "nn.reduce_mean",
            ReduceKind::Sum => "nn.reduce_sum",
            ReduceKind::Max => "nn.reduce_max",
            ReduceKind::Min => "nn.reduce_min",
            ReduceKind::Prod => "nn.reduce_prod",
        }
    }
    /// The kind of an op name.
    pub fn from_name(name: &str) -> Option<ReduceKind> {
        ReduceKind::ALL.into_iter().find(|k| k.name() == name)
    }
    /// Where a float reduction starts (an empty one's result, but for the
    /// mean, whose sum is then divided by the count).
    pub fn float_start(self) -> f64 {
        match self {
            ReduceKind::Max => f64::NEG_INFINITY,
            ReduceKind::Min => f64::INFINITY,
            ReduceKind::Prod => 1.0,
            ReduceKind::Mean | ReduceKind::Sum => 0.0,
        }
    }
    /// The float reduction so far, `acc`, with `v` taken in (a NaN wins
    /// the maximum and the minimum, as ONNX's reference computes them).
    pub fn float_step(self, acc: f64, v: f64) -> f64 {
        match self {
            ReduceKind::Max | ReduceKind::Min if v.is_nan() || acc.is_nan() => f64::NAN,
            ReduceKind::Max => acc.max(v),
            ReduceKind::Min => acc.min(v),
            ReduceKind::Prod => acc * v,
            ReduceKind::Mean | ReduceKind::Sum => acc + v,
        }
    }
}

/// The reduced axes: `axes` normalised, or every axis when absent or empty.
pub fn reduce_axes(rank: usize, axes: Option<&[i64]>) -> InferResult<Vec<usize>> {
    match axes {
        Some(a) if !a.is_empty() => {
            let mut v = normalize_axes(a, rank)?;
            v.sort_unstable();
            Ok(v)
        }
        _ => Ok((0..rank).collect()),
    }
}

/// Result type of a reduction.
pub fn infer_reduce(x: &Type, axes: Option<&[i64]>, keepdims: bool) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    if !(e.is_float() || e.is_integer()) {
        return Err(shape_err!(
            "operand must have a numeric element type, but got '{e}'"
        ));
    }
    let axes = reduce_axes(s.len(), axes)?;
    let shape: Vec<i64> = (0..s.len())
        .filter_map(|d| match (axes.contains(&d), keepdims) {
            (false, _) => Some(s[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    Ok(tensor(&shape, e))
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    ReduceKind::from_name(ctx.name_str(op))?;
    let t = value_types(ctx, ctx.operands(op));
    let axes = attr_i64_list(ctx, op, "axes");
    Some(
        infer_reduce(
            &t[0],
            axes.as_deref(),
            attr_i64(ctx, op, "keepdims", 1) != 0,
        )
        .map(|ty| vec![ty]),
    )
}

/// For each input element, the flat index of the result element it reduces into.
fn reduction_targets(in_shape: &[i64], axes: &[usize]) -> Vec<usize> {
    let kept: Vec<i64> = (0..in_shape.len())
        .map(|d| if axes.contains(&d) { 1 } else { in_shape[d] })
        .collect();
    let st = strides(&kept);
    let n: i64 = in_shape.iter().product();
    (0..n.max(0) as usize)
        .map(|i| {
            unravel(i, in_shape)
                .iter()
                .enumerate()
                .map(|(d, &v)| if axes.contains(&d) { 0 } else { v * st[d] })
                .sum()
        })
        .collect()
}

fn fold_reduce(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let kind = ReduceKind::from_name(ctx.name_str(op))?;
    let out = fold_target(ctx, op, 0)?;
    let d = dense_data(consts[0].as_ref()?)?;
    let in_shape = d.ty.shape()?.to_vec();
    let axes = reduce_axes(in_shape.len(), attr_i64_list(ctx, op, "axes").as_deref()).ok()?;
    let targets = reduction_targets(&in_shape, &axes);
    let n_out = out.num_elements()? as usize;
    let count: i64 = axes.iter().map(|&a| in_shape[a]).product();
    let attr = if d.element_type().is_float() {
        let mut acc = vec![kind.float_start(); n_out];
        for (v, &t) in floats(&d)?.into_iter().zip(&targets) {
            acc[t] = kind.float_step(acc[t], v);
        }
        if kind == ReduceKind::Mean {
            acc.iter_mut().for_each(|a| *a /= count as f64);
        }
        from_floats(&out, &acc)?
    } else {
        // Integer means have no agreed rounding; leave them to run time.
        if kind == ReduceKind::Mean || count == 0 {
            return None;
        }
        let mut acc: Vec<Option<i128>> = vec![None; n_out];
        for (v, &t) in ints(&d)?.into_iter().zip(&targets) {
            acc[t] = Some(match (kind, acc[t]) {
                (_, None) => v,
                (ReduceKind::Max, Some(a)) => a.max(v),
                (ReduceKind::Min, Some(a)) => a.min(v),
                (ReduceKind::Prod, Some(a)) => a.wrapping_mul(v),
                (ReduceKind::Mean | ReduceKind::Sum, Some(a)) => a.wrapping_add(v),
            });
        }
        let acc: Option<Vec<i128>> = acc.into_iter().collect();
        from_ints(&out, &acc?)?
    };
    Some(vec![FoldResult::Constant(attr)])
}

impl ReduceKind {
    /// How the reduction combines elements (a mean sums, then scales each
    /// result).
    pub fn combining(self) -> CombiningKind {
        match self {
            ReduceKind::Mean | ReduceKind::Sum => CombiningKind::Add,
            ReduceKind::Max => CombiningKind::Max,
            ReduceKind::Min => CombiningKind::Min,
            ReduceKind::Prod => CombiningKind::Mul,
        }
    }
}

impl Reduction for ReduceKind {
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape> {
        let shape = sig.operand(0)?.shape()?;
        let axes = reduce_axes(shape.len(), sig.i64_list("axes").as_deref()).ok()?;
        let (outer, inner) = reduction_extent(shape, |d| axes.contains(&d))?;
        Some(ReductionShape {
            outer,
            inner,
            passes: vec![self.combining()],
            per_element: ElementWork::NONE,
        })
    }
}

pub(crate) fn register(mut d: Dialect) -> Dialect {
    for k in ReduceKind::ALL {
        d = d.op(nn_op(
            k.name(),
            "Reduction over 'axes' (default: all) keeping dimensions when 'keepdims' (default 1)",
        )
        .attribute(i64_array_attr("axes", true))
        .attribute(i64_attr("keepdims", true))
        .operands(&[one("operand", TENSOR)])
        .results(&[one("result", TENSOR)])
        .folder(fold_reduce)
        .implement::<dyn Reduction>(Box::new(k)));
    }
    d
}

op_family_wrapper!(
    /// Any reduction op.
    ReduceOp,
    ReduceKind,
    "reduction op"
);

operand_accessors!(ReduceOp {
    /// The operand.
    input = 0,
});

impl ReduceOp {
    /// The reduced axes, normalised and sorted (of a verified op).
    pub fn axes(self, ctx: &Context) -> Vec<usize> {
        let rank = rank_of(ctx, self.input(ctx));
        reduce_axes(rank, attr_i64_list(ctx, self.0, "axes").as_deref()).unwrap_or_default()
    }
    /// Whether reduced dimensions are kept as size 1.
    pub fn keepdims(self, ctx: &Context) -> bool {
        attr_i64(ctx, self.0, "keepdims", 1) != 0
    }
    /// A state reducing `x` over `axes` (`None`: all).
    pub fn build(
        ctx: &Context,
        kind: ReduceKind,
        x: Value,
        axes: Option<&[i64]>,
        keepdims: bool,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_reduce(ctx.value_type(x), axes, keepdims);
        let mut attrs = Vec::new();
        if let Some(a) = axes {
            attrs.push(("axes", Attribute::dense_i64_array(a)));
        }
        attrs.push(("keepdims", Attribute::i64(keepdims as i64)));
        build_inferred(ctx, kind.name(), &[x], ty, attrs, loc)
    }
}
