//! One `nn` op on host tensors: reads the op's attributes through the
//! dialect's typed wrappers (which apply the ONNX defaults) and calls the
//! matching reference kernel. No arithmetic lives here.

use ipuc_dialects::nn::{
    self, ArgReduceOp, AttentionOp, BinaryKind, CastOp, CompareKind, ConcatOp, ConstantOp,
    Conv2dOp, CumulativeKind, CumulativeOp, GatherElementsOp, GatherOp, GeluOp, GemmOp,
    LayerNormalizationOp, PadOp, PoolKind, PoolOp, ReduceOp, ReshapeOp, SliceOp, SoftmaxOp,
    SplitOp, TileOp, TransposeOp, UnaryKind,
};
use ipuc_ir::{Context, OpId};

use super::tensors::{constant_tensor, tensor_kind};
use crate::reference::{self as k, HostTensor, KernelError, PadMode};

/// What went wrong running one op (the caller adds the op and its location).
pub(super) enum OpError {
    /// The op is not one the reference executor knows.
    Unsupported,
    /// The op is known but cannot run on these operands or attributes.
    Failed(String),
}

impl From<KernelError> for OpError {
    fn from(e: KernelError) -> OpError {
        OpError::Failed(e.to_string())
    }
}

impl From<String> for OpError {
    fn from(e: String) -> OpError {
        OpError::Failed(e)
    }
}

type OpResult = Result<Vec<HostTensor>, OpError>;

fn one(t: HostTensor) -> OpResult {
    Ok(vec![t])
}

/// An `i64` list attribute of `op`, if present.
fn i64_list(ctx: &Context, op: OpId, name: &str) -> Option<Vec<i64>> {
    ctx.attr(op, name).and_then(|a| a.as_i64_list())
}

/// An `i64` list attribute the verifier requires.
fn required_list(ctx: &Context, op: OpId, name: &str) -> Result<Vec<i64>, OpError> {
    i64_list(ctx, op, name)
        .ok_or_else(|| OpError::Failed(format!("is missing its '{name}' attribute")))
}

/// An `i64` attribute of `op`, or `default`.
fn i64_attr(ctx: &Context, op: OpId, name: &str, default: i64) -> i64 {
    ctx.attr(op, name)
        .and_then(|a| a.as_int())
        .map_or(default, |v| v as i64)
}

/// A scalar of `kind` holding `value` (pad fill values).
fn scalar(kind: ipuc_ir::numeric::ElementKind, value: f64) -> HostTensor {
    let mut data = vec![0u8; kind.byte_size()];
    ipuc_ir::numeric::storage::store_f64(kind, &mut data, 0, value, true);
    HostTensor::new(kind, vec![], data.into())
}

/// The right operand of a contraction with its FP8 tensor scale
/// (`rhs_scale = s`: the elements stand for `code * 2^s`) applied, in f32,
/// where FP8 codes times a power of two are exact.
fn scaled_rhs<'t>(
    ctx: &Context,
    op: OpId,
    rhs: &'t HostTensor,
) -> Result<std::borrow::Cow<'t, HostTensor>, OpError> {
    if ctx.attr(op, nn::RHS_SCALE).is_none() {
        return Ok(std::borrow::Cow::Borrowed(rhs));
    }
    let f32 = ipuc_ir::numeric::ElementKind::F32;
    let factor = scalar(f32, 2f64.powi(nn::rhs_scale(ctx, op) as i32));
    Ok(std::borrow::Cow::Owned(k::binary(
        BinaryKind::Mul,
        &k::cast(rhs, f32, false),
        &factor,
    )?))
}

/// Runs `op` on `args` (its operand values, in order).
pub(super) fn execute(ctx: &Context, op: OpId, args: &[&HostTensor]) -> OpResult {
    let name = ctx.name_str(op);
    if let Some(kind) = BinaryKind::from_name(name) {
        let binary = match kind {
            BinaryKind::Mod => k::BinaryOp::modulo(nn::BinaryOp(op).fmod(ctx)),
            kind => kind.into(),
        };
        return one(k::binary(binary, args[0], args[1])?);
    }
    if let Some(kind) = CompareKind::from_name(name) {
        return one(k::binary(kind, args[0], args[1])?);
    }
    if let Some(kind) = UnaryKind::from_name(name) {
        return one(k::unary(kind, args[0])?);
    }
    if let Some(r) = ReduceOp::cast(ctx, op) {
        // The wrapper resolves absent axes to every axis.
        let axes: Vec<i64> = r.axes(ctx).into_iter().map(|a| a as i64).collect();
        if axes.is_empty() {
            // A rank-0 operand: nothing to reduce.
            return one(args[0].clone());
        }
        return one(k::reduce(
            args[0],
            r.kind(ctx),
            Some(&axes),
            r.keepdims(ctx),
            false,
        )?);
    }
    match name {
        nn::CONSTANT => one(constant_tensor(&ConstantOp(op).value(ctx))?),
        nn::WHERE => one(k::where_(args[0], args[1], args[2])?),
        nn::CAST => {
            let cast = CastOp(op);
            let to = tensor_kind(ctx.value_type(ctx.result(op, 0)))?;
            one(k::cast_rounding(
                args[0],
                to,
                cast.saturate(ctx),
                cast.e8m0_rounding(ctx),
            ))
        }
        nn::BITCAST => {
            let to = tensor_kind(ctx.value_type(ctx.result(op, 0)))?;
            one(k::bitcast(args[0], to)?)
        }
        nn::MATMUL => one(k::matmul(args[0], &*scaled_rhs(ctx, op, args[1])?)?),
        nn::GEMM => {
            let params = GemmOp(op).params(ctx);
            one(k::gemm(args[0], args[1], args.get(2).copied(), params)?)
        }
        nn::LINEAR => one(k::linear(
            args[0],
            &*scaled_rhs(ctx, op, args[1])?,
            args.get(2).copied(),
        )?),
        nn::CONV2D => {
            let params = Conv2dOp(op).params(ctx);
            one(k::conv2d(args[0], args[1], args.get(2).copied(), &params)?)
        }
        nn::RESHAPE => {
            // `nn.reshape` holds the final static shape: 0 means 0 (allowzero).
            one(k::reshape(args[0], &ReshapeOp(op).shape(ctx), true)?)
        }
        nn::TRANSPOSE => {
            let perm: Vec<i64> = TransposeOp(op)
                .perm(ctx)
                .into_iter()
                .map(|a| a as i64)
                .collect();
            one(k::transpose(args[0], Some(&perm))?)
        }
        nn::CONCAT => one(k::concat(args, ConcatOp(op).axis(ctx) as i64)?),
        nn::SPLIT => {
            let split = SplitOp(op);
            Ok(k::split(
                args[0],
                split.axis(ctx) as i64,
                Some(&split.sizes(ctx)),
                None,
            )?)
        }
        nn::SLICE => {
            let p = SliceOp(op).params(ctx);
            one(k::slice(
                args[0],
                &p.starts,
                &p.ends,
                p.axes.as_deref(),
                p.steps.as_deref(),
            )?)
        }
        nn::GATHER => one(k::gather(args[0], args[1], GatherOp(op).axis(ctx) as i64)?),
        nn::GATHER_ELEMENTS => one(k::gather_elements(
            args[0],
            args[1],
            GatherElementsOp(op).axis(ctx) as i64,
        )?),
        n if CumulativeKind::from_name(n).is_some() => {
            let c = CumulativeOp(op);
            one(k::cumulative(
                args[0],
                c.kind(ctx) == CumulativeKind::Prod,
                c.params(ctx),
            )?)
        }
        n if nn::ArgKind::from_name(n).is_some() => {
            let a = ArgReduceOp(op);
            one(k::arg_reduce(
                args[0],
                a.kind(ctx) == nn::ArgKind::Max,
                a.axis(ctx) as i64,
                a.keepdims(ctx),
                a.select_last_index(ctx),
            )?)
        }
        n if PoolKind::from_name(n).is_some() => {
            let pool = PoolOp(op);
            one(k::pool(args[0], pool.kind(ctx), &pool.params(ctx))?)
        }
        nn::SQUEEZE => one(k::squeeze(args[0], i64_list(ctx, op, "axes").as_deref())?),
        nn::UNSQUEEZE => one(k::unsqueeze(args[0], &required_list(ctx, op, "axes")?)?),
        nn::EXPAND => one(k::expand(args[0], &required_list(ctx, op, "shape")?)?),
        nn::TILE => one(k::tile(args[0], &TileOp(op).repeats(ctx))?),
        nn::FLATTEN => one(k::flatten(args[0], i64_attr(ctx, op, "axis", 1))?),
        nn::PAD => {
            let pad = PadOp(op);
            let fill = scalar(args[0].kind, f64::from(pad.value(ctx)));
            one(k::pad(
                args[0],
                &pad.pads(ctx),
                PadMode::Constant,
                Some(&fill),
                None,
            )?)
        }
        nn::IDENTITY => one(args[0].clone()),
        nn::SOFTMAX => one(k::softmax(args[0], SoftmaxOp(op).axis(ctx) as i64)?),
        nn::LAYER_NORMALIZATION => {
            let ln = LayerNormalizationOp(op);
            let out = k::layer_normalization(
                args[0],
                args[1],
                args.get(2).copied(),
                ln.axis(ctx) as i64,
                ln.epsilon(ctx),
            )?;
            one(out.y)
        }
        nn::GELU => {
            let gelu = k::UnaryOp::Gelu(GeluOp(op).approximate(ctx));
            one(k::unary(gelu, args[0])?)
        }
        nn::ATTENTION => {
            let attn = AttentionOp(op);
            let heads = usize::try_from(attn.heads(ctx))
                .map_err(|_| format!("'heads' must be positive, but is {}", attn.heads(ctx)))?;
            one(k::attention(
                args[0],
                args[1],
                args[2],
                args.get(3).copied(),
                heads,
                attn.scale(ctx),
            )?)
        }
        _ => Err(OpError::Unsupported),
    }
}
