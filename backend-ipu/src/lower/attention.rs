//! Finding the transformer attention block in a function and lowering it
//! whole with [`super::attention_block`]:
//!
//! ```text
//! %x    = nn.cast %arg0 {to = f16}                 (optional: a host conversion)
//! %ln   = nn.layer_normalization %x, %gamma, %beta {axis = -1, epsilon = ...}
//! %qkv  = nn.linear %ln, %w_qkv, %b_qkv            (bias optional)
//! %s:3  = nn.split %qkv {axis = -1, sizes = [H d, H d, H d]}
//! %a    = nn.attention %s#0, %s#1, %s#2 {heads = H, scale = ...}
//! %o    = nn.linear %a, %w_o, %b_o                 (bias optional)
//! %r    = nn.add %x, %o                            (either order)
//! %y    = nn.cast %r {to = f32}                    (optional: a host conversion)
//! return %y
//! ```
//!
//! Every value f16 (`--precision fp16`), the weights and LayerNorm's scale
//! and shift `nn.constant`s, `%x` a static `[images, tokens, hidden]`
//! (each image attends over its own tokens). With `--precision fp8` both
//! products take FP8 on both sides: `nn.cast {to = f8E4M3FNUZ}` between
//! LayerNorm and the QKV product and between the attention and the output
//! product, the weights FP8 codes with `rhs_scale`
//! ([`super::attention_block::AttentionFp8`]). The match hands the
//! constants over as the IR holds them; [`AttentionConstants`] documents
//! their layout and [`super::attention_block`] how the tiles hold them.

use ipuc_dialects::nn;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, FloatKind, OpId, Type, Value};

use super::attention_block::{
    emit_attention, plan_attention, AttentionConstants, AttentionFp8, AttentionPlan, AttentionShape,
};
use super::block_match::{
    bias_ref, check_function_holds, constant_operand_ref, element_kind, fp8_cast_of,
    from_only_argument, product_after, product_weights, the_only, ConstantRef,
};
use super::codegen::{Lowered, StepEstimates};
use super::passes::{chain, chain_ops, gemm_shape, only_user, ADD};
use crate::codelets::amp::AmpVariant;

/// A matched block: its ops and constants.
#[derive(Clone, Debug)]
pub struct AttentionMatch {
    /// Every op of the block.
    pub ops: Vec<OpId>,
    /// The sizes.
    pub shape: AttentionShape,
    /// The LayerNorm.
    pub ln: OpId,
    /// The QKV product.
    pub qkv: OpId,
    /// The `nn.attention`.
    pub attention: OpId,
    /// The output projection.
    pub out: OpId,
    /// The residual add: its result is the block's.
    pub add: OpId,
    /// The block's input (f16).
    pub input: Value,
    /// The constants, not yet read.
    pub constants: AttentionConstantRefs,
}

/// An attention block's constants as matched ([`ConstantRef`]s):
/// [`AttentionConstantRefs::values`] reads them.
#[derive(Clone, Debug)]
pub struct AttentionConstantRefs {
    /// LayerNorm's scale.
    pub gamma: ConstantRef,
    /// LayerNorm's shift.
    pub beta: ConstantRef,
    /// The QKV weights.
    pub w_qkv: ConstantRef,
    /// The QKV bias.
    pub b_qkv: ConstantRef,
    /// The output weights.
    pub w_o: ConstantRef,
    /// The output bias.
    pub b_o: ConstantRef,
}

impl AttentionConstantRefs {
    /// The values, decoded now.
    pub fn values(&self) -> AttentionConstants {
        let mut v = AttentionConstants::default();
        self.values_into(&mut v);
        v
    }

    /// [`Self::values`] into `out`, its buffers reused.
    pub fn values_into(&self, out: &mut AttentionConstants) {
        self.gamma.values_into(&mut out.gamma);
        self.beta.values_into(&mut out.beta);
        self.w_qkv.values_into(&mut out.w_qkv);
        self.b_qkv.values_into(&mut out.b_qkv);
        self.w_o.values_into(&mut out.w_o);
        self.b_o.values_into(&mut out.b_o);
    }
}

fn values(ctx: &Context, op: OpId, what: &str, v: Value) -> Result<ConstantRef, Diagnostic> {
    constant_operand_ref(ctx, op, "attention block", what, v)
}

fn weights(ctx: &Context, op: OpId, what: &str) -> Result<ConstantRef, Diagnostic> {
    product_weights(ctx, op, "attention block", what)
}

fn is_f16(ctx: &Context, v: Value) -> bool {
    element_kind(ctx, v) == Some(FloatKind::F16)
}

/// The attention block of `f`, if `f` has an `nn.attention` (`None`
/// otherwise); an error says what does not match.
pub fn match_attention(ctx: &Context, f: OpId) -> Result<Option<AttentionMatch>, Diagnostic> {
    let Some((body, att)) = the_only(
        ctx,
        f,
        nn::ATTENTION,
        "the IPU lowering handles one attention block per function yet",
    )?
    else {
        return Ok(None);
    };
    let b = attention_from(ctx, att)?;
    if !from_only_argument(ctx, body, b.input) {
        return Err(mismatch(
            ctx,
            b.ln,
            "LayerNorm's input is not the function's only argument (or its cast)",
        ));
    }
    check_function_holds(
        ctx,
        body,
        (b.input, ctx.results(b.add)[0], b.add),
        &b.ops,
        &|op, msg| mismatch(ctx, op, msg),
    )?;
    Ok(Some(b))
}

fn mismatch(ctx: &Context, op: OpId, msg: &str) -> Diagnostic {
    Diagnostic::op_error(
        ctx,
        op,
        format!("{msg}; the lowering takes LayerNorm, the fused QKV product (split in three), nn.attention, the output product and the residual add of the LayerNorm's input as an attention block"),
    )
}

/// The attention block around `att` (from its LayerNorm to its residual
/// add); an error says what does not match.
pub fn attention_from(ctx: &Context, att: OpId) -> Result<AttentionMatch, Diagnostic> {
    let mismatch = |op: OpId, msg: &str| mismatch(ctx, op, msg);
    let operands = ctx.operands(att).to_vec();
    if operands.len() != 3 {
        return Err(mismatch(att, "the attention has a mask"));
    }
    let split = ctx
        .defining_op(operands[0])
        .filter(|&s| ctx.name_str(s) == nn::SPLIT)
        .filter(|&s| {
            let r = ctx.results(s);
            r.len() == 3 && operands == r
        })
        .ok_or_else(|| {
            mismatch(
                att,
                "the attention's query, key and value are not the three parts of one nn.split, in order",
            )
        })?;
    let qkv = ctx
        .defining_op(ctx.operands(split)[0])
        .filter(|&p| [nn::MATMUL, nn::LINEAR].contains(&ctx.name_str(p)))
        .ok_or_else(|| mismatch(split, "the split's input is not a product"))?;
    // FP8 products read LayerNorm's output through a cast.
    let cast_ln = fp8_cast_of(ctx, ctx.operands(qkv)[0]);
    let qkv_chain = chain(ctx, qkv)?;
    if qkv_chain.last != qkv && qkv_chain.epilogue.gelu.is_some() {
        return Err(mismatch(qkv, "the QKV product is followed by a GELU"));
    }
    if only_user(ctx, qkv_chain.last) != Some(split) {
        return Err(mismatch(
            qkv,
            "the QKV product's only user must be the split",
        ));
    }
    let ln_user = cast_ln.unwrap_or(qkv);
    let ln = ctx
        .defining_op(ctx.operands(ln_user)[0])
        .filter(|&l| ctx.name_str(l) == nn::LAYER_NORMALIZATION)
        .ok_or_else(|| mismatch(qkv, "the QKV product's input is not a LayerNorm"))?;
    if only_user(ctx, ln) != Some(ln_user)
        || cast_ln.is_some_and(|c| only_user(ctx, c) != Some(qkv))
    {
        return Err(mismatch(
            ln,
            "the LayerNorm's only user must be the QKV product (or its cast to FP8, whose only user it is)",
        ));
    }
    let input = ctx.operands(ln)[0];
    if !is_f16(ctx, input) {
        return Err(Diagnostic::op_error(
            ctx,
            ln,
            "the attention block's input must be f16 (convert the function with --precision fp16 or fp8)",
        ));
    }
    let x_dims: Vec<i64> = ctx
        .value_type(input)
        .shape()
        .map(<[i64]>::to_vec)
        .unwrap_or_default();
    if x_dims.len() != 3 || x_dims.iter().any(|&d| d < 1 || d > i64::from(u32::MAX)) {
        return Err(mismatch(
            ln,
            "the block's input must be a static [images, tokens, hidden]",
        ));
    }
    let axis = ctx
        .attr(ln, "axis")
        .and_then(Attribute::as_int)
        .map_or(-1, |a| a as i64);
    if axis != -1 && axis != 2 {
        return Err(mismatch(ln, "LayerNorm must normalise the last axis"));
    }
    let eps = ctx
        .attr(ln, "epsilon")
        .and_then(Attribute::as_f64)
        .unwrap_or(1e-5) as f32;
    let (cast_o, out) = product_after(ctx, att);
    let out = out.ok_or_else(|| {
        mismatch(
            att,
            "the attention's only user is not a product (or a cast to FP8 whose only user is one)",
        )
    })?;
    let out_chain = chain(ctx, out)?;
    if out_chain.epilogue.gelu.is_some() {
        return Err(mismatch(out, "the output product is followed by a GELU"));
    }
    let add = only_user(ctx, out_chain.last)
        .filter(|&u| ctx.name_str(u) == ADD)
        .filter(|&u| {
            let o = ctx.operands(u);
            let r = ctx.results(out_chain.last)[0];
            (o[0] == input && o[1] == r) || (o[1] == input && o[0] == r)
        })
        .ok_or_else(|| {
            mismatch(
                out_chain.last,
                "the output product's result is not added to the LayerNorm's input",
            )
        })?;
    let (s1, s2) = (gemm_shape(ctx, qkv)?, gemm_shape(ctx, out)?);
    let scale_of = |op: OpId| i32::try_from(nn::rhs_scale(ctx, op)).unwrap_or(i32::MAX);
    let fp8 = match (s1.variant, s2.variant, cast_ln.is_some() && cast_o.is_some()) {
        (AmpVariant::F16, AmpVariant::F16, _) => None,
        (AmpVariant::F8, AmpVariant::F8, true) => Some(AttentionFp8 {
            qkv_scale: scale_of(qkv),
            out_scale: Some(scale_of(out)),
        }),
        _ => {
            return Err(Diagnostic::op_error(
                ctx,
                qkv,
                format!(
                    "the attention block lowers with both products f16 x f16, or both FP8 x FP8 with LayerNorm's and the attention's outputs cast to f8E4M3FNUZ (--precision fp16 or fp8), not {} and {}",
                    s1.variant.mnemonic(),
                    s2.variant.mnemonic()
                ),
            ))
        }
    };
    let heads = ctx
        .attr(att, "heads")
        .and_then(Attribute::as_int)
        .unwrap_or(0) as u32;
    let (m, c) = (x_dims[1] as u32, x_dims[2] as u32);
    if s1.k != c || s1.n != 3 * c || s2.k != c || s2.n != c || heads == 0 || c % heads != 0 {
        return Err(mismatch(
            att,
            "the products must map the hidden size C to 3 C (QKV) and C to C (output), with C divisible by the heads",
        ));
    }
    let head_dim = c / heads;
    let scale = nn::attention_scale(
        ctx.attr(att, "scale")
            .and_then(Attribute::as_f64)
            .map(|s| s as f32),
        i64::from(head_dim),
    );
    let mut block_ops = vec![ln, qkv, split, att, out, add];
    block_ops.extend(cast_ln.into_iter().chain(cast_o));
    block_ops.extend(chain_ops(ctx, qkv, qkv_chain.last));
    block_ops.extend(chain_ops(ctx, out, out_chain.last));
    let ln_ops = ctx.operands(ln).to_vec();
    let gamma = values(ctx, ln, "LayerNorm's scale", ln_ops[1])?;
    let beta = match ln_ops.get(2) {
        Some(&b) => values(ctx, ln, "LayerNorm's shift", b)?,
        None => ConstantRef::zeros(c as usize),
    };
    let bias = |ch: &super::passes::Chain, op: OpId, n: u32| bias_ref(ctx, op, ch.bias.as_ref(), n);
    Ok(AttentionMatch {
        ops: block_ops,
        shape: AttentionShape {
            images: x_dims[0] as u32,
            m,
            c,
            heads,
            head_dim,
            eps,
            ln_affine: gamma.ln_affine(&beta),
            scale,
            fp8,
        },
        ln,
        qkv,
        attention: att,
        out,
        add,
        input,
        constants: AttentionConstantRefs {
            gamma,
            beta,
            w_qkv: weights(ctx, qkv, "the QKV weights")?,
            b_qkv: bias(&qkv_chain, qkv, 3 * c)?,
            w_o: weights(ctx, out, "the output weights")?,
            b_o: bias(&out_chain, out, c)?,
        },
    })
}

/// The block's plan.
pub fn plan_of_block(
    ctx: &Context,
    b: &AttentionMatch,
    m: &MachineModel,
) -> Result<AttentionPlan, Diagnostic> {
    plan_attention(b.shape, m).map_err(|e| {
        Diagnostic::op_error(
            ctx,
            b.attention,
            format!("cannot plan the attention block: {e}"),
        )
    })
}

/// Lowers the matched block to an `ipu.executable` appended to
/// `module_body`.
pub fn lower_attention(
    ctx: &mut Context,
    module_body: BlockId,
    b: &AttentionMatch,
    m: &MachineModel,
) -> Result<Lowered, Diagnostic> {
    let plan = plan_of_block(ctx, b, m)?;
    let x_ty: Type = ctx.value_type(b.input).clone();
    let y_ty: Type = ctx.value_type(ctx.results(b.add)[0]).clone();
    let loc = ctx.loc(b.attention).clone();
    let lowered = emit_attention(
        ctx,
        module_body,
        &plan,
        &b.constants.values(),
        (x_ty, y_ty),
        m,
        loc,
    )?;
    tracing::debug!(target: "ipu-lower", "attention block: {}", lowered.estimate);
    Ok(Lowered {
        executable: lowered.executable,
        exchange_code_bytes_max: lowered.exchange_code_bytes_max,
        block_estimate: Some(StepEstimates::Attention(lowered.estimate)),
        chain_estimates: Vec::new(),
        chain_links: Vec::new(),
        loop_copies: 0,
        loop_start_copies: 0,
    })
}

/// The plan report of a block: the products, the attention tiles and the
/// estimate per step.
pub fn attention_report(
    ctx: &Context,
    b: &AttentionMatch,
    m: &MachineModel,
) -> Result<String, Diagnostic> {
    let plan = plan_of_block(ctx, b, m)?;
    let loc = ipuc_ir::diagnostics::location_prefix(ctx.loc(b.attention));
    Ok(format!("{loc}: {}", plan.report(m)))
}
