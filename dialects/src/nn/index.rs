//! Ops that select elements by index: `nn.gather_elements {axis}` (ONNX
//! `GatherElements`: `result[i][j][k] = data[index[i][j][k]][j][k]` for
//! axis 0) and the index reductions `nn.argmax` / `nn.argmin {axis,
//! keepdims, select_last_index}` (ONNX `ArgMax`/`ArgMin`: the `i64` position
//! of the largest or smallest element along `axis`, the first one unless
//! `select_last_index`).

use ipuc_ir::interfaces::{CombiningKind, ElementWork, OpSignature, Reduction, ReductionShape};
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::support::*;

/// `nn.gather_elements`.
pub const GATHER_ELEMENTS: &str = "nn.gather_elements";

/// The index reductions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// `nn.argmax`
    Max,
    /// `nn.argmin`
    Min,
}

impl ArgKind {
    /// Both index reductions.
    pub const ALL: [ArgKind; 2] = [ArgKind::Max, ArgKind::Min];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            ArgKind::Max => "nn.argmax",
            ArgKind::Min => "nn.argmin",
        }
    }
    /// The kind of the op called `name`.
    pub fn from_name(name: &str) -> Option<ArgKind> {
        ArgKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

// ----- inference --------------------------------------------------------------

/// Result type of `nn.gather_elements {axis}`: the shape of `indices` with
/// the element type of `data`; both have the same rank, and `indices` are
/// integers.
pub fn infer_gather_elements(data: &Type, indices: &Type, axis: i64) -> InferResult<Type> {
    let (s, e) = ranked(data, "data")?;
    let (si, ei) = ranked(indices, "indices")?;
    if !ei.is_integer() {
        return Err(shape_err!(
            "indices must be integers, but have element type '{ei}'"
        ));
    }
    if s.is_empty() || si.len() != s.len() {
        return Err(shape_err!(
            "data and indices must have the same rank >= 1, but have ranks {} and {}",
            s.len(),
            si.len()
        ));
    }
    normalize_axis(axis, s.len())?;
    Ok(tensor(si, e))
}

/// Result type of `nn.argmax`/`nn.argmin {axis, keepdims}`: the operand's
/// shape with `axis` removed (or kept as 1), element type `i64`.
pub fn infer_arg_reduce(x: &Type, axis: i64, keepdims: bool) -> InferResult<Type> {
    let (s, _) = ranked(x, "operand")?;
    if s.is_empty() {
        return Err(ShapeError::invalid("the operand must have rank >= 1"));
    }
    let a = normalize_axis(axis, s.len())?;
    let shape: Vec<i64> = s
        .iter()
        .enumerate()
        .filter_map(|(d, &n)| match (d == a, keepdims) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(n),
        })
        .collect();
    Ok(tensor(&shape, &Type::i64()))
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let t = value_types(ctx, ctx.operands(op));
    let axis = attr_i64(ctx, op, "axis", 0);
    let r = match ctx.name_str(op) {
        GATHER_ELEMENTS => infer_gather_elements(&t[0], &t[1], axis),
        n if ArgKind::from_name(n).is_some() => {
            infer_arg_reduce(&t[0], axis, attr_i64(ctx, op, "keepdims", 1) != 0)
        }
        _ => return None,
    };
    Some(r.map(|t| vec![t]))
}

// ----- interfaces ---------------------------------------------------------------

impl Reduction for ArgKind {
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape> {
        let shape = sig.operand(0)?.shape()?;
        let axis = normalize_axis(sig.i64_attr("axis", 0), shape.len()).ok()?;
        let (outer, inner) = reduction_extent(shape, |d| d == axis)?;
        Some(ReductionShape {
            outer,
            inner,
            passes: vec![match self {
                ArgKind::Max => CombiningKind::Max,
                ArgKind::Min => CombiningKind::Min,
            }],
            // Keeping the position beside the extreme value.
            per_element: ElementWork::flops(1),
        })
    }
}

// ----- registration -------------------------------------------------------------

pub(crate) fn register(mut d: Dialect) -> Dialect {
    d = d.op(nn_op(
        GATHER_ELEMENTS,
        "Elements of 'data' at 'indices' along 'axis' (ONNX GatherElements)",
    )
    .attribute(i64_attr("axis", true))
    .operands(&[one("data", TENSOR), one("indices", INT_TENSOR)])
    .results(&[one("result", TENSOR)]));
    for k in ArgKind::ALL {
        d = d.op(nn_op(
            k.name(),
            "Index of the extreme element along 'axis' (ONNX ArgMax/ArgMin); i64 results",
        )
        .attribute(i64_attr("axis", true))
        .attribute(i64_attr("keepdims", true))
        .attribute(i64_attr("select_last_index", true))
        .operands(&[one("operand", TENSOR)])
        .results(&[one("result", TENSOR)])
        .implement::<dyn Reduction>(Box::new(k)));
    }
    d
}

// ----- typed wrappers -----------------------------------------------------------

op_wrapper!(
    /// `nn.gather_elements {axis}`.
    GatherElementsOp,
    GATHER_ELEMENTS
);
operand_accessors!(GatherElementsOp {
    /// The gathered tensor.
    data = 0,
    /// The positions along the axis.
    indices = 1,
});
impl GatherElementsOp {
    /// The gather axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.data(ctx), 0)
    }
}
inferred_builder!(GatherElementsOp {
    /// A state gathering the elements of `data` at `indices` along `axis`.
    build(data, indices; axis: i64 => Attribute::i64) = infer_gather_elements(data, indices, axis)
});

op_family_wrapper!(
    /// `nn.argmax` or `nn.argmin`.
    ArgReduceOp,
    ArgKind,
    "index reduction"
);
operand_accessors!(ArgReduceOp {
    /// The operand.
    input = 0,
});
impl ArgReduceOp {
    /// The reduced axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.input(ctx), 0)
    }
    /// Whether the reduced axis stays as a 1 (ONNX default: yes).
    pub fn keepdims(self, ctx: &Context) -> bool {
        attr_i64(ctx, self.0, "keepdims", 1) != 0
    }
    /// Whether ties give the last position (ONNX default: the first).
    pub fn select_last_index(self, ctx: &Context) -> bool {
        attr_i64(ctx, self.0, "select_last_index", 0) != 0
    }
    /// A state for `kind` over `axis`.
    pub fn build(
        ctx: &Context,
        kind: ArgKind,
        x: Value,
        axis: i64,
        keepdims: bool,
        select_last_index: bool,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_arg_reduce(ctx.value_type(x), axis, keepdims);
        build_inferred(
            ctx,
            kind.name(),
            &[x],
            ty,
            vec![
                ("axis", Attribute::i64(axis)),
                ("keepdims", Attribute::i64(i64::from(keepdims))),
                (
                    "select_last_index",
                    Attribute::i64(i64::from(select_last_index)),
                ),
            ],
            loc,
        )
    }
}
