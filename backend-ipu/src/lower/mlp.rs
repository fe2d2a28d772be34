//! Finding the transformer MLP block in a function and lowering it whole
//! with [`super::block`]:
//!
//! ```text
//! %x  = nn.cast %arg0 {to = f16}            (optional: a host conversion)
//! %ln = nn.layer_normalization %x, %gamma, %beta {axis = -1, epsilon = ...}
//! %h  = nn.linear %ln, %w1, %b1             (or nn.matmul + nn.add of a bias row)
//! %g  = nn.gelu %h
//! %y  = nn.linear %g, %w2, %b2              (bias optional)
//! %r  = nn.add %x, %y                       (either order)
//! %o  = nn.cast %r {to = f32}               (optional: a host conversion)
//! return %o
//! ```
//!
//! Every value f16 (`--precision fp16`), the weights and LayerNorm's scale
//! and shift `nn.constant`s. With `--precision fp8` the weights are
//! `f8E4M3FNUZ` codes with `rhs_scale`, and LayerNorm's and GELU's outputs
//! reach the products through `nn.cast {to = f8E4M3FNUZ}`: the block then
//! runs both products on the FP8 AMP ([`super::block::Fp8Domains`]). The casts at the edges are the host's: the
//! executable's streams carry f16, and `ipu-run` converts between the
//! function's f32 and the streams' f16 as it writes and reads them.
//! `ipu.plan` grids on the two products are honoured (the LN tiles stay
//! outside them).

use ipuc_dialects::nn;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, FloatKind, OpId, Type, Value};

use super::block::{emit_mlp, plan_mlp_with, Fp8Domains, MlpConstants, MlpPlan, MlpShape};
use super::block_match::{
    bias_ref, check_function_holds, constant_operand_ref, element_kind, from_only_argument,
    product_after, product_weights, the_only, ConstantRef,
};
use super::codegen::{Lowered, StepEstimates};
use super::passes::{chain, gemm_shape, only_user, rejected_lines, PLAN_ATTR};
use super::plan::Grid;
use crate::codelets::amp::AmpVariant;

/// A matched block: its ops and constants.
#[derive(Clone, Debug)]
pub struct MlpMatch {
    /// Every op of the block.
    pub ops: Vec<OpId>,
    /// The sizes.
    pub shape: MlpShape,
    /// LayerNorm, fc1 and fc2 (the products), the residual add.
    pub ln: OpId,
    /// fc1.
    pub fc1: OpId,
    /// fc2.
    pub fc2: OpId,
    /// The residual add: its result is the block's.
    pub add: OpId,
    /// The block's input (f16).
    pub input: Value,
    /// LayerNorm's and the products' constants, not yet read.
    pub constants: MlpConstantRefs,
}

/// An MLP block's constants as matched ([`ConstantRef`]s):
/// [`MlpConstantRefs::values`] reads them.
#[derive(Clone, Debug)]
pub struct MlpConstantRefs {
    /// LayerNorm's scale.
    pub gamma: ConstantRef,
    /// LayerNorm's shift.
    pub beta: ConstantRef,
    /// fc1's weights.
    pub w1: ConstantRef,
    /// fc1's bias.
    pub b1: ConstantRef,
    /// fc2's weights.
    pub w2: ConstantRef,
    /// fc2's bias.
    pub b2: ConstantRef,
}

impl MlpConstantRefs {
    /// The values, decoded now.
    pub fn values(&self) -> MlpConstants {
        let mut v = MlpConstants::default();
        self.values_into(&mut v);
        v
    }

    /// [`Self::values`] into `out`, its buffers reused.
    pub fn values_into(&self, out: &mut MlpConstants) {
        self.gamma.values_into(&mut out.gamma);
        self.beta.values_into(&mut out.beta);
        self.w1.values_into(&mut out.w1);
        self.b1.values_into(&mut out.b1);
        self.w2.values_into(&mut out.w2);
        self.b2.values_into(&mut out.b2);
    }
}

fn is_f16(ctx: &Context, v: Value) -> bool {
    element_kind(ctx, v) == Some(FloatKind::F16)
}

fn dims(ctx: &Context, v: Value) -> Vec<i64> {
    ctx.value_type(v)
        .shape()
        .map(<[i64]>::to_vec)
        .unwrap_or_default()
}

fn values(ctx: &Context, op: OpId, what: &str, v: Value) -> Result<ConstantRef, Diagnostic> {
    constant_operand_ref(ctx, op, "MLP block", what, v)
}

fn mismatch(ctx: &Context, op: OpId, msg: &str) -> Diagnostic {
    Diagnostic::op_error(
        ctx,
        op,
        format!("{msg}; the lowering takes LayerNorm, fc1 (bias, GELU), fc2, and the residual add of the LayerNorm's input as an MLP block"),
    )
}

/// The block of `f`, if `f` has a LayerNorm (`None` otherwise: the
/// function is not a block); an error says what does not match.
pub fn match_mlp(ctx: &Context, f: OpId) -> Result<Option<MlpMatch>, Diagnostic> {
    let Some((body, ln)) = the_only(
        ctx,
        f,
        nn::LAYER_NORMALIZATION,
        "the IPU lowering handles one MLP block (one LayerNorm) per function yet",
    )?
    else {
        return Ok(None);
    };
    let input = ctx.operands(ln)[0];
    if !from_only_argument(ctx, body, input) {
        return Err(mismatch(
            ctx,
            ln,
            "LayerNorm's input is not the function's only argument (or its cast)",
        ));
    }
    let m = mlp_from(ctx, ln)?;
    check_function_holds(
        ctx,
        body,
        (m.input, ctx.results(m.add)[0], m.add),
        &m.ops,
        &|op, msg| mismatch(ctx, op, msg),
    )?;
    Ok(Some(m))
}

/// The MLP block that starts at LayerNorm `ln` (its input the block's, its
/// residual add's result the block's); an error says what does not match.
pub fn mlp_from(ctx: &Context, ln: OpId) -> Result<MlpMatch, Diagnostic> {
    let mismatch = |op: OpId, msg: &str| mismatch(ctx, op, msg);
    let input = ctx.operands(ln)[0];
    if !is_f16(ctx, input) {
        return Err(Diagnostic::op_error(
            ctx,
            ln,
            "the MLP block's input must be f16 (convert the function with --precision fp16 or fp8)",
        ));
    }
    let x_dims = dims(ctx, input);
    let axis = ctx
        .attr(ln, "axis")
        .and_then(Attribute::as_int)
        .map_or(-1, |a| a as i64);
    if x_dims.is_empty() || (axis != -1 && axis != x_dims.len() as i64 - 1) {
        return Err(mismatch(ln, "LayerNorm must normalise the last axis"));
    }
    let eps = ctx
        .attr(ln, "epsilon")
        .and_then(Attribute::as_f64)
        .unwrap_or(1e-5) as f32;
    let (cast1, fc1) = product_after(ctx, ln);
    let fc1 = fc1.ok_or_else(|| mismatch(ln, "LayerNorm's only user is not a product"))?;
    let s1 = gemm_shape(ctx, fc1)?;
    let c1 = chain(ctx, fc1)?;
    let Some(gelu) = s1.epilogue.gelu.filter(|_| s1.epilogue.bias) else {
        return Err(mismatch(fc1, "fc1 is not followed by a bias and GELU"));
    };
    let (cast2, fc2) = product_after(ctx, c1.last);
    let fc2 = fc2
        .filter(|&u| ctx.operands(u)[0] == ctx.results(cast2.unwrap_or(c1.last))[0])
        .ok_or_else(|| mismatch(c1.last, "GELU's only user is not a product"))?;
    let s2 = gemm_shape(ctx, fc2)?;
    let c2 = chain(ctx, fc2)?;
    let fp8 = match (s1.variant, s2.variant, cast1.is_some() && cast2.is_some()) {
        (AmpVariant::F16, AmpVariant::F16, _) => None,
        (AmpVariant::F8, AmpVariant::F8, true) => {
            let scale = |op: OpId| i32::try_from(nn::rhs_scale(ctx, op)).unwrap_or(i32::MAX);
            Some(Fp8Domains::from_scales(scale(fc1), scale(fc2)))
        }
        _ => {
            return Err(Diagnostic::op_error(
                ctx,
                fc1,
                format!(
                    "the MLP block lowers with both products f16 x f16, or both FP8 x FP8 with LayerNorm's and GELU's outputs cast to f8E4M3FNUZ (--precision fp16 or fp8), not {} and {}",
                    s1.variant.mnemonic(),
                    s2.variant.mnemonic()
                ),
            ))
        }
    };
    if s2.epilogue.gelu.is_some() {
        return Err(mismatch(fc2, "fc2 is followed by a GELU"));
    }
    let add = only_user(ctx, c2.last)
        .filter(|&u| ctx.name_str(u) == super::passes::ADD)
        .filter(|&u| {
            let o = ctx.operands(u);
            (o[0] == input && o[1] == ctx.results(c2.last)[0])
                || (o[1] == input && o[0] == ctx.results(c2.last)[0])
        })
        .ok_or_else(|| {
            mismatch(
                c2.last,
                "fc2's result is not added to the LayerNorm's input",
            )
        })?;
    let mut block_ops = vec![ln, fc1, fc2, add];
    block_ops.extend(cast1.into_iter().chain(cast2));
    block_ops.extend(super::passes::chain_ops(ctx, fc1, c1.last));
    block_ops.extend(super::passes::chain_ops(ctx, fc2, c2.last));
    let (m, c, h) = (s1.m, s1.k, s1.n);
    if s2.k != h || s2.n != c {
        return Err(mismatch(fc2, "fc2's shape does not invert fc1's"));
    }
    let ln_ops = ctx.operands(ln).to_vec();
    let gamma = values(ctx, ln, "LayerNorm's scale", ln_ops[1])?;
    let beta = match ln_ops.get(2) {
        Some(&b) => values(ctx, ln, "LayerNorm's shift", b)?,
        None => ConstantRef::zeros(c as usize),
    };
    let weights = |op: OpId, what: &str| product_weights(ctx, op, "MLP block", what);
    let w1 = weights(fc1, "fc1's weights")?;
    let w2 = weights(fc2, "fc2's weights")?;
    let bias = |ch: &super::passes::Chain, op: OpId, n: u32| bias_ref(ctx, op, ch.bias.as_ref(), n);
    Ok(MlpMatch {
        ops: block_ops,
        shape: MlpShape {
            m,
            c,
            h,
            eps,
            ln_affine: gamma.ln_affine(&beta),
            gelu,
            fp8,
        },
        ln,
        fc1,
        fc2,
        add,
        input,
        constants: MlpConstantRefs {
            gamma,
            beta,
            w1,
            b1: bias(&c1, fc1, h)?,
            w2,
            b2: bias(&c2, fc2, c)?,
        },
    })
}

/// The grid an `ipu.plan` attribute on `op` forces, if any.
fn forced_grid(ctx: &Context, op: OpId) -> Option<Grid> {
    let dict = ctx.attr(op, PLAN_ATTR)?.as_dictionary()?;
    match *dict.get("grid")?.as_i64_list()?.as_slice() {
        [r, c] => Some(Grid {
            rows: r as u32,
            cols: c as u32,
            k: 1,
        }),
        [r, c, k] => Some(Grid {
            rows: r as u32,
            cols: c as u32,
            k: k as u32,
        }),
        _ => None,
    }
}

/// The block's plan, honouring `ipu.plan` grids on its products.
pub fn plan_of_block(ctx: &Context, b: &MlpMatch, m: &MachineModel) -> Result<MlpPlan, Diagnostic> {
    plan_mlp_with(
        b.shape,
        m,
        (forced_grid(ctx, b.fc1), forced_grid(ctx, b.fc2)),
    )
    .map_err(|e| Diagnostic::op_error(ctx, b.ln, format!("cannot plan the MLP block: {e}")))
}

/// Lowers the matched block to an `ipu.executable` appended to
/// `module_body`.
pub fn lower_mlp(
    ctx: &mut Context,
    module_body: BlockId,
    b: &MlpMatch,
    m: &MachineModel,
) -> Result<Lowered, Diagnostic> {
    let plan = plan_of_block(ctx, b, m)?;
    let x_ty: Type = ctx.value_type(b.input).clone();
    let y_ty: Type = ctx.value_type(ctx.results(b.add)[0]).clone();
    let loc = ctx.loc(b.ln).clone();
    let lowered = emit_mlp(
        ctx,
        module_body,
        &plan,
        &b.constants.values(),
        (x_ty, y_ty),
        m,
        loc,
    )?;
    tracing::debug!(target: "ipu-lower", "MLP block: {}", lowered.estimate);
    Ok(Lowered {
        executable: lowered.executable,
        exchange_code_bytes_max: lowered.exchange_code_bytes_max,
        block_estimate: Some(StepEstimates::Mlp(lowered.estimate)),
        chain_estimates: Vec::new(),
        chain_links: Vec::new(),
        loop_copies: 0,
        loop_start_copies: 0,
    })
}

/// The plan report of a block: its products' grids, the LN tiles and the
/// estimate per step.
pub fn block_report(ctx: &Context, b: &MlpMatch, m: &MachineModel) -> Result<String, Diagnostic> {
    let plan = plan_of_block(ctx, b, m)?;
    let (a, x, residual_in) = super::block::schedules(&plan, m);
    let loc = ipuc_ir::diagnostics::location_prefix(ctx.loc(b.ln));
    // The search's own choice and rejected candidates, also when
    // `ipu.plan` forces a grid (as `ipu-plan` records its choice).
    let search = plan_mlp_with(b.shape, m, (None, None)).ok();
    let product = |name: &str, p: &super::plan::GemmPlan, i: usize| {
        let chosen = search
            .as_ref()
            .map(|s| if i == 0 { &s.fc1 } else { &s.fc2 });
        let mut out = format!("  {name}: {p}");
        match chosen {
            Some(c) if c.grid() != p.grid() => {
                out += &format!(" (forced by ipu.plan)\n    the search's choice: {c}\n");
            }
            _ => out += "\n",
        }
        if let Some(s) = &search {
            out += &rejected_lines(&s.rejected[i]);
        }
        out
    };
    Ok(format!(
        "{loc}: MLP block {}x{}x{}: LayerNorm on tiles {}..={} ({} rows each)\n{}{}{}  exchange A {}, exchange B {} (scheduled; the residual's rows in {})\n",
        b.shape.m,
        b.shape.c,
        b.shape.h,
        plan.ln_tiles.first().copied().unwrap_or(0),
        plan.ln_tiles.last().copied().unwrap_or(0),
        super::block::LN_ROWS,
        product("fc1", &plan.fc1, 0),
        product("fc2", &plan.fc2, 1),
        plan.weights_report(),
        a,
        x,
        match residual_in {
            super::block_exchange::ResidualIn::A => "A",
            super::block_exchange::ResidualIn::B => "B",
        }
    ))
}
