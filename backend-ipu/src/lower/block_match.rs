//! What the block matchers ([`super::mlp`], [`super::attention`],
//! [`super::chain`]) check of the function around their blocks: that the
//! first block reads the function's only argument (or its cast), that the
//! function returns the last block's result (or its cast), and that every
//! other op is a block's, a constant or the return.

use ipuc_dialects::func;
use ipuc_dialects::nn;
use ipuc_ir::attributes::DenseElements;
use ipuc_ir::{Attribute, Context, Diagnostic, FloatKind, OpId, Value};

use super::passes::{constant_of, float_constant, only_user};

/// The function `f`'s body and its one op named `name`: `None` when the
/// function has no body or no such op, an error (`too_many`, at the second)
/// when it has several.
pub fn the_only(
    ctx: &Context,
    f: OpId,
    name: &str,
    too_many: &str,
) -> Result<Option<(ipuc_ir::BlockId, OpId)>, Diagnostic> {
    let Some(body) = func::entry_block(ctx, f) else {
        return Ok(None);
    };
    let found: Vec<OpId> = ctx
        .block_ops_vec(body)
        .into_iter()
        .filter(|&o| ctx.name_str(o) == name)
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [op] => Ok(Some((body, *op))),
        [_, second, ..] => Err(Diagnostic::op_error(ctx, *second, too_many)),
    }
}

/// Whether `input` is the only argument of the function whose body is
/// `body`, or an `nn.cast` of it.
pub fn from_only_argument(ctx: &Context, body: ipuc_ir::BlockId, input: Value) -> bool {
    let args = ctx.block_args(body);
    args.len() == 1
        && (input == args[0]
            || ctx
                .defining_op(input)
                .is_some_and(|d| ctx.name_str(d) == nn::CAST && ctx.operands(d)[0] == args[0]))
}

/// Checks that the function whose body is `body` returns `result` (or its
/// only user, an `nn.cast`) and holds nothing but `block_ops`, constants,
/// the return, the input's cast and that cast; `mismatch` words the error
/// at an op.
pub fn check_function_holds(
    ctx: &Context,
    body: ipuc_ir::BlockId,
    (input, result, last): (Value, Value, OpId),
    block_ops: &[OpId],
    mismatch: &dyn Fn(OpId, &str) -> Diagnostic,
) -> Result<(), Diagnostic> {
    let ops = ctx.block_ops_vec(body);
    let ret = ops
        .last()
        .copied()
        .filter(|&o| ctx.name_str(o) == func::RETURN);
    let out_cast = match ctx.uses(result) {
        [u] if ctx.name_str(u.op) == nn::CAST => Some(u.op),
        _ => None,
    };
    let returned = out_cast.map_or(result, |c| ctx.results(c)[0]);
    if ret.is_none_or(|r| ctx.operands(r) != [returned]) {
        return Err(mismatch(
            last,
            "the function must return the block's result",
        ));
    }
    if let Some(stray) = ops.iter().copied().find(|&o| {
        ![nn::CONSTANT, func::RETURN].contains(&ctx.name_str(o))
            && !block_ops.contains(&o)
            && Some(o) != out_cast
            && ctx.results(o).first() != Some(&input)
    }) {
        return Err(mismatch(stray, "is not part of the block"));
    }
    Ok(())
}

/// The values of `v`, an operand of `op` that the `block` lowering needs
/// to be an `nn.constant` (`what` names it in the error).
pub fn constant_operand(
    ctx: &Context,
    op: OpId,
    block: &str,
    what: &str,
    v: Value,
) -> Result<Vec<f64>, Diagnostic> {
    Ok(constant_operand_ref(ctx, op, block, what, v)?.values())
}

/// A block's constant operand, matched but not yet read: its elements
/// (the IR's bytes, shared, not copied) and the factor its values take.
/// The lowering reads them ([`ConstantRef::values`]) when it builds a
/// block's constants, a block at a time, so that a chain never holds a
/// whole model's weights as f64 at once (so400m's 428 M weights would
/// take 3.4 GB).
#[derive(Clone, Debug)]
pub struct ConstantRef {
    /// Where the values come from.
    source: ConstantSource,
    /// What each value is multiplied by.
    factor: f64,
}

/// A [`ConstantRef`]'s values before they are read.
#[derive(Clone, Debug)]
enum ConstantSource {
    /// A float tensor constant's elements.
    Elements(DenseElements),
    /// This many zeros (an operand the op does not have).
    Zeros(usize),
}

impl ConstantRef {
    /// `len` zeros.
    pub fn zeros(len: usize) -> Self {
        ConstantRef {
            source: ConstantSource::Zeros(len),
            factor: 1.0,
        }
    }

    /// The constant `value` (a float tensor constant, else the error says
    /// what it is), its values times `factor`.
    pub fn of(value: &Attribute, factor: f64) -> Result<Self, String> {
        Ok(ConstantRef {
            source: ConstantSource::Elements(float_constant(value)?),
            factor,
        })
    }

    /// Whether this LayerNorm scale and `beta` its shift do anything:
    /// false for a scale of ones and a shift of zeros, as
    /// `fold-layernorm-affine` leaves them (the LN tiles then skip both).
    pub fn ln_affine(&self, beta: &ConstantRef) -> bool {
        !ipuc_passes::fold_layernorm::is_identity_affine(&self.values(), &beta.values())
    }

    /// The values, row-major, decoded now.
    pub fn values(&self) -> Vec<f64> {
        let mut v = Vec::new();
        self.values_into(&mut v);
        v
    }

    /// [`Self::values`] into `out`, its memory reused (the loop's archive
    /// decodes every layer's weights in turn: fresh pages for each cost
    /// the kernel's zeroing of them).
    pub fn values_into(&self, out: &mut Vec<f64>) {
        match &self.source {
            ConstantSource::Zeros(len) => {
                out.clear();
                out.resize(*len, 0.0);
            }
            ConstantSource::Elements(elements) => {
                let floats = elements.floats_into(out);
                assert!(floats, "a ConstantRef's elements were checked to be floats");
                if self.factor != 1.0 {
                    out.iter_mut().for_each(|x| *x *= self.factor);
                }
            }
        }
    }
}

/// [`constant_operand`], not yet read.
pub fn constant_operand_ref(
    ctx: &Context,
    op: OpId,
    block: &str,
    what: &str,
    v: Value,
) -> Result<ConstantRef, Diagnostic> {
    let c = constant_of(ctx, v).ok_or_else(|| {
        Diagnostic::op_error(
            ctx,
            op,
            format!("the {block} lowering needs {what} to be an nn.constant"),
        )
    })?;
    ConstantRef::of(&c, 1.0).map_err(|e| Diagnostic::op_error(ctx, op, format!("{what}: {e}")))
}

/// The weights of product `op` (its right operand, an `nn.constant`), not
/// yet read: FP8 codes stand for `code * 2^rhs_scale`.
pub fn product_weights(
    ctx: &Context,
    op: OpId,
    block: &str,
    what: &str,
) -> Result<ConstantRef, Diagnostic> {
    let scale = 2f64.powi(i32::try_from(nn::rhs_scale(ctx, op)).unwrap_or(0));
    let c = constant_operand_ref(ctx, op, block, what, ctx.operands(op)[1])?;
    Ok(ConstantRef { factor: scale, ..c })
}

/// A product's bias (`bias`, from its epilogue chain) as matched: `n`
/// zeros without one.
pub fn bias_ref(
    ctx: &Context,
    op: OpId,
    bias: Option<&Attribute>,
    n: u32,
) -> Result<ConstantRef, Diagnostic> {
    match bias {
        Some(b) => ConstantRef::of(b, 1.0).map_err(|e| Diagnostic::op_error(ctx, op, e)),
        None => Ok(ConstantRef::zeros(n as usize)),
    }
}

/// Checks that the function whose body is `body` holds nothing but
/// `block_ops`, constants, the input's cast and the return, and that each
/// value it returns is one of `results` (a block's value), possibly
/// through views that keep its elements in order (a gather of a unit
/// axis) and a cast: the host's conversions. Returns, per returned value,
/// its index in `results` and the type the host stream carries (the
/// value before the cast). `mismatch` words the error at an op.
pub fn check_function_returns(
    ctx: &Context,
    body: ipuc_ir::BlockId,
    input: Value,
    (results, block_ops): (&[Value], &[OpId]),
    mismatch: &dyn Fn(OpId, &str) -> Diagnostic,
) -> Result<Vec<(usize, ipuc_ir::Type)>, Diagnostic> {
    let ops = ctx.block_ops_vec(body);
    let Some(ret) = ops
        .last()
        .copied()
        .filter(|&o| ctx.name_str(o) == func::RETURN)
    else {
        return Err(mismatch(
            *block_ops.last().unwrap_or(&ops[0]),
            "the function must end with a return",
        ));
    };
    let mut host_ops = Vec::new();
    let mut out = Vec::new();
    for &v in ctx.operands(ret) {
        let cast = ctx.defining_op(v).filter(|&d| ctx.name_str(d) == nn::CAST);
        let streamed = cast.map_or(v, |c| ctx.operands(c)[0]);
        let (value, views) = super::pool::strip_order_keeping_views(ctx, streamed);
        let Some(k) = results.iter().position(|&r| r == value) else {
            return Err(mismatch(
                ctx.defining_op(v).unwrap_or(ret),
                "the function returns a value that is not a block's result",
            ));
        };
        host_ops.extend(cast);
        host_ops.extend(views);
        out.push((k, ctx.value_type(streamed).clone()));
    }
    if let Some(stray) = ops.iter().copied().find(|&o| {
        ![nn::CONSTANT, func::RETURN].contains(&ctx.name_str(o))
            && !block_ops.contains(&o)
            && !host_ops.contains(&o)
            && ctx.results(o).first() != Some(&input)
    }) {
        return Err(mismatch(stray, "is not part of the block"));
    }
    Ok(out)
}

/// The product that consumes `op`'s result, directly or through an
/// `nn.cast` to `f8E4M3FNUZ` (FP8 products), with that cast.
pub fn product_after(ctx: &Context, op: OpId) -> (Option<OpId>, Option<OpId>) {
    let is_product = |u: &OpId| [nn::MATMUL, nn::LINEAR].contains(&ctx.name_str(*u));
    match only_user(ctx, op) {
        Some(c) if is_fp8_cast(ctx, c) => (Some(c), only_user(ctx, c).filter(is_product)),
        u => (None, u.filter(is_product)),
    }
}

/// The float kind of `v`'s elements, if they are floats.
pub fn element_kind(ctx: &Context, v: Value) -> Option<FloatKind> {
    ctx.value_type(v)
        .element_type()
        .and_then(|t| t.float_kind())
}

/// The `nn.cast` to `f8E4M3FNUZ` that defines `v`, if one does (what an
/// FP8 product reads its activations through).
pub fn fp8_cast_of(ctx: &Context, v: Value) -> Option<OpId> {
    ctx.defining_op(v).filter(|&c| is_fp8_cast(ctx, c))
}

/// Whether `op` is an `nn.cast` to `f8E4M3FNUZ`.
pub fn is_fp8_cast(ctx: &Context, op: OpId) -> bool {
    ctx.name_str(op) == nn::CAST
        && element_kind(ctx, ctx.results(op)[0]) == Some(FloatKind::F8E4M3FNUZ)
}
