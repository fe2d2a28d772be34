//! The lowering's passes: `ipu-plan` records each product's plan on the op
//! (`ipu.plan`, a dictionary the report and later stages read, and that a
//! user may edit to force a grid), and `ipu-lower` turns a planned function
//! into an `ipu.executable` beside it in the module.
//!
//! This slice lowers functions whose body is one product of the function's
//! argument by an `nn.constant` (`nn.matmul`, or `nn.linear` with an
//! optional constant bias; f16 or f32; the argument's leading dimensions
//! are the product's rows), optionally followed by the add of a constant
//! bias row `[N]` and by `nn.gelu` (f16): the epilogue runs in place on the
//! product's tiles. Anything else is refused with one error that lists
//! every op it cannot lower yet.
//!
//! ```text
//! %w = nn.constant dense<...> : tensor<40x20xf16>
//! %y = nn.matmul %x, %w {ipu.plan = {grid = array<i64: 2, 1>, rows = 4,
//!        groups = 2, instruction = "f16v4hihov4amp", cycles = 1068, ...}}
//! ```

use ipuc_dialects::func;
use ipuc_dialects::nn;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::attributes::{AttrKind, DenseElements, Dictionary};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{Attribute, Context, Diagnostic, FloatKind, OpId, Value};

use super::codegen::{emit_gemm, Constants, Lowered};
use super::plan::{evaluate, plan_gemm, Epilogue, GemmPlan, GemmShape, Grid, Rejected};
use super::stream::Weights;
use crate::codelets::amp::AmpVariant;
use crate::codelets::gelu::GeluForm;

/// The discardable attribute holding a product's plan.
pub const PLAN_ATTR: &str = "ipu.plan";

/// The `ipu-plan` pass (its machine).
#[derive(Clone)]
pub struct PlanGemms(MachineModel);

/// The `ipu-lower` pass (its machine, and the weights a chain starts
/// from).
#[derive(Clone)]
pub struct LowerToIpu(MachineModel, Weights);

ipuc_ir::declare_pass! {
    PlanGemms => "ipu-plan" {
        summary: "Choose each nn.matmul's tile grid by search over the IPU cost model and record it as `ipu.plan`",
        options PlanOptions {
            /// Machine model (c600, bow)
            machine: String = "c600".to_string() => "machine",
        }
    }
}

ipuc_ir::declare_pass! {
    LowerToIpu => "ipu-lower" {
        summary: "Lower each function to an ipu.executable appended to the module: a chain of encoder blocks (patch embedding, attention and MLP blocks, the pooling head; identical layers one loop), one attention or MLP block, or one product by a constant with its epilogue; an imported graph needs eqsat-fuse (and convert-precision) first",
        options LowerOptions {
            /// Machine model (c600, bow)
            machine: String = "c600".to_string() => "machine",
            /// Where a chain keeps its products' weights: auto (resident where they fit, else streamed in pieces over each product's grid rows and gathered before it) or streamed (streamed from the first plan)
            weights: String = "auto".to_string() => "weights",
        }
    }
}

fn machine(name: &str) -> Result<MachineModel, String> {
    MachineModel::by_name(name).ok_or_else(|| {
        format!(
            "unknown machine '{name}' (known: {})",
            MachineModel::NAMES.join(", ")
        )
    })
}

/// `nn.add`.
pub(super) const ADD: &str = "nn.add";

/// The product ops the lowering plans.
fn is_product(ctx: &Context, op: OpId) -> bool {
    [nn::MATMUL, nn::LINEAR].contains(&ctx.name_str(op))
}

/// The product a supported `nn.matmul` or `nn.linear` performs, with the
/// epilogue that follows it.
pub(super) fn gemm_shape(ctx: &Context, op: OpId) -> Result<GemmShape, Diagnostic> {
    let operands = ctx.operands(op);
    let types: Vec<_> = operands
        .iter()
        .map(|&v| ctx.value_type(v).clone())
        .collect();
    let dims = |i: usize| types[i].shape().map(<[i64]>::to_vec).unwrap_or_default();
    let (a, b) = (dims(0), dims(1));
    if a.len() < 2 || b.len() != 2 || a.iter().chain(&b).any(|&d| d <= 0) {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "can only lower products of a static input of rank 2 or more by a 2-D weight to the IPU yet",
        ));
    }
    let element = |i: usize| types[i].element_type().and_then(|t| t.float_kind());
    let variant = match (element(0), element(1)) {
        (Some(FloatKind::F16), Some(FloatKind::F16)) => AmpVariant::F16,
        (Some(FloatKind::F32), Some(FloatKind::F32)) => AmpVariant::F32,
        (Some(FloatKind::F8E4M3FNUZ), Some(FloatKind::F8E4M3FNUZ)) => AmpVariant::F8,
        (Some(FloatKind::F16), Some(FloatKind::F8E4M3FNUZ)) => {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                "FP8 weights with f16 activations do not lower to the IPU yet: the FP8 AMP takes FP8 on both sides (convert-precision's fp8-activations=true, the default, casts the activations)",
            ))
        }
        _ => {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "can only lower f16 x f16, f32 x f32 and (in an MLP block) f8E4M3FNUZ x f8E4M3FNUZ products to the IPU yet, not {} x {}",
                    types[0], types[1]
                ),
            ))
        }
    };
    let dim =
        |d: i64| u32::try_from(d).map_err(|_| Diagnostic::op_error(ctx, op, "dimension too large"));
    let rows: i64 = a[..a.len() - 1].iter().product();
    let chain = chain(ctx, op)?;
    if chain.epilogue.gelu.is_some() && variant == AmpVariant::F32 {
        return Err(Diagnostic::op_error(
            ctx,
            chain.last,
            "GELU after a product lowers to the IPU in f16 only yet (convert the function with --precision fp16)",
        ));
    }
    Ok(GemmShape {
        m: dim(rows)?,
        k: dim(a[a.len() - 1])?,
        n: dim(b[1])?,
        variant,
        epilogue: chain.epilogue,
    })
}

/// [`gemm_shape`] of a product lowered on its own: FP8 products lower
/// inside an MLP block only (their scales are handled by the block's
/// LayerNorm, GELU and residual add).
fn standalone_gemm_shape(ctx: &Context, op: OpId) -> Result<GemmShape, Diagnostic> {
    let shape = gemm_shape(ctx, op)?;
    if shape.variant == AmpVariant::F8 {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "FP8 products lower to the IPU inside an MLP block only yet (LayerNorm, fc1, GELU, fc2 and the residual add in one function; --extract mlp:N cuts one out)",
        ));
    }
    Ok(shape)
}

/// A product and the ops after it that the lowering runs in place.
pub(super) struct Chain {
    /// The epilogue.
    pub(super) epilogue: Epilogue,
    /// The bias row's constant, if any.
    pub(super) bias: Option<Attribute>,
    /// The op whose result is the chain's (the product without epilogue).
    pub(super) last: OpId,
}

/// The constant `value` defining `v`, if `nn.constant` defines it.
pub(super) fn constant_of(ctx: &Context, v: Value) -> Option<Attribute> {
    ctx.defining_op(v)
        .filter(|&d| ctx.name_str(d) == nn::CONSTANT)
        .and_then(|d| ctx.attr(d, "value").cloned())
}

/// The only user of `op`'s result, if it has exactly one use.
pub(super) fn only_user(ctx: &Context, op: OpId) -> Option<OpId> {
    match ctx.uses(ctx.results(op)[0]) {
        [u] => Some(u.op),
        _ => None,
    }
}

/// The epilogue of product `op`: its bias (the `nn.linear` operand or an
/// `nn.add` of a constant `[N]` or `[1, N]`), then an `nn.gelu`, each the
/// only user of what precedes it.
pub(super) fn chain(ctx: &Context, op: OpId) -> Result<Chain, Diagnostic> {
    let n = ctx
        .value_type(ctx.results(op)[0])
        .shape()
        .and_then(|s| s.last().copied())
        .unwrap_or(0);
    let mut chain = Chain {
        epilogue: Epilogue::default(),
        bias: None,
        last: op,
    };
    if let Some(&b) = ctx.operands(op).get(2) {
        chain.bias = Some(constant_of(ctx, b).ok_or_else(|| {
            Diagnostic::op_error(
                ctx,
                op,
                "the lowering needs the bias of nn.linear to be an nn.constant",
            )
        })?);
        chain.epilogue.bias = true;
    }
    let is_bias_row = |v: Value| {
        let dims = ctx
            .value_type(v)
            .shape()
            .map(<[i64]>::to_vec)
            .unwrap_or_default();
        matches!(dims.as_slice(), [d] | [1, d] if *d == n)
    };
    if let Some(add) = only_user(ctx, chain.last).filter(|&u| ctx.name_str(u) == ADD) {
        let ops = ctx.operands(add);
        let other = if ops[0] == ctx.results(chain.last)[0] {
            ops[1]
        } else {
            ops[0]
        };
        if !chain.epilogue.bias && is_bias_row(other) {
            if let Some(c) = constant_of(ctx, other) {
                chain.bias = Some(c);
                chain.epilogue.bias = true;
                chain.last = add;
            }
        }
    }
    if let Some(g) = only_user(ctx, chain.last).filter(|&u| ctx.name_str(u) == nn::GELU) {
        let form = match ctx.attr(g, "approximate").and_then(Attribute::as_str) {
            None | Some("none") => GeluForm::Erf,
            Some("tanh") => GeluForm::Tanh,
            Some(other) => {
                return Err(Diagnostic::op_error(
                    ctx,
                    g,
                    format!("unknown GELU approximation '{other}'"),
                ))
            }
        };
        chain.epilogue.gelu = Some(form);
        chain.last = g;
    }
    Ok(chain)
}

/// The `ipu.plan` dictionary of `plan`.
fn plan_attr(plan: &GemmPlan) -> Attribute {
    let e = plan.estimate;
    let int = |v: u64| Attribute::i64(v as i64);
    Attribute::dictionary(Dictionary::from_entries([
        (
            "grid".into(),
            Attribute::dense_i64_array(&if plan.grid_k > 1 {
                vec![
                    i64::from(plan.grid_rows),
                    i64::from(plan.grid_cols),
                    i64::from(plan.grid_k),
                ]
            } else {
                vec![i64::from(plan.grid_rows), i64::from(plan.grid_cols)]
            }),
        ),
        ("k_panels".into(), int(u64::from(plan.k_panels))),
        ("rows".into(), int(u64::from(plan.rows))),
        ("groups".into(), int(u64::from(plan.groups))),
        (
            "instruction".into(),
            Attribute::string(plan.shape.variant.mnemonic()),
        ),
        ("cycles".into(), int(e.total())),
        ("exchange_cycles".into(), int(e.exchange)),
        ("compute_cycles".into(), int(e.compute)),
        ("epilogue_cycles".into(), int(e.epilogue)),
        ("reduction_cycles".into(), int(e.reduction)),
        ("sync_cycles".into(), int(e.sync)),
        ("tile_bytes".into(), int(u64::from(plan.tile_bytes))),
    ]))
}

/// The plan of `op`: its `ipu.plan` grid if it has one (re-estimated),
/// else the search's choice.
fn plan_of(ctx: &Context, op: OpId, m: &MachineModel) -> Result<GemmPlan, Diagnostic> {
    let shape = standalone_gemm_shape(ctx, op)?;
    let Some(dict) = ctx.attr(op, PLAN_ATTR).and_then(Attribute::as_dictionary) else {
        return plan_gemm(shape, m)
            .map(|c| c.plan)
            .map_err(|e| Diagnostic::op_error(ctx, op, e.to_string()));
    };
    let grid = dict.get("grid").and_then(Attribute::as_i64_list);
    let (gr, gc, gk) = match grid.as_deref() {
        Some(&[gr, gc]) => (gr, gc, 1),
        Some(&[gr, gc, gk]) => (gr, gc, gk),
        _ => {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                "'ipu.plan' needs grid = array<i64: rows, columns> or array<i64: rows, columns, k_parts>",
            ))
        }
    };
    let (ng, mm, kg) = (
        i64::from(shape.n_groups()),
        i64::from(shape.m),
        i64::from(shape.k_groups()),
    );
    let tiles = gr.saturating_mul(gc).saturating_mul(gk);
    if !(1..=mm).contains(&gr)
        || !(1..=ng).contains(&gc)
        || !(1..=kg).contains(&gk)
        || tiles > i64::from(m.tiles)
    {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "'ipu.plan' grid {gr}x{gc}x{gk} is not possible: rows in 1..={mm}, columns in 1..={ng}, K parts in 1..={kg}, at most {} tiles",
                m.tiles
            ),
        ));
    }
    let grid = Grid {
        rows: gr as u32,
        cols: gc as u32,
        k: gk as u32,
    };
    evaluate(shape, grid, m)
        .map_err(|r| Diagnostic::op_error(ctx, op, format!("'ipu.plan' grid {grid}: {}", r.reason)))
}

fn products(ctx: &Context, func_op: OpId) -> Vec<OpId> {
    ctx.collect_ops(func_op, ipuc_ir::WalkOrder::PreOrder)
        .into_iter()
        .filter(|&o| is_product(ctx, o))
        .collect()
}

/// Records an attention block's plan: the QKV op holds qk's plan and the
/// output op out's; the attention holds its tiles and the swapped value
/// product's plan. (The attention block's plan is the search's: editing
/// these does not force it yet.)
fn record_attention_plan(
    ctx: &mut Context,
    block: &super::attention::AttentionMatch,
    plan: &super::attention_block::AttentionPlan,
) {
    ctx.set_attr(block.qkv, PLAN_ATTR, plan_attr(&plan.qk));
    ctx.set_attr(block.out, PLAN_ATTR, plan_attr(&plan.out));
    let core = Attribute::dictionary(Dictionary::from_entries([
        ("form".into(), Attribute::string(plan.core.form())),
        (
            "tiles_per_head".into(),
            Attribute::i64(i64::from(plan.core.blocks * plan.core.key_blocks)),
        ),
        (
            "key_blocks".into(),
            Attribute::i64(i64::from(plan.core.key_blocks)),
        ),
        ("rows".into(), Attribute::i64(i64::from(plan.core.rows))),
        ("chunks".into(), Attribute::i64(i64::from(plan.core.chunks))),
        ("values".into(), plan_attr(&plan.vt)),
    ]));
    ctx.set_attr(block.attention, PLAN_ATTR, core);
}

impl DeclaredPass for PlanGemms {
    fn create(options: &PlanOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        machine(&options.machine)
            .map(PlanGemms)
            .map_err(PassCreateError::Refused)
    }

    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        _stats: &mut (),
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let m = self.0.clone();
        if let Some(chain) = super::chain::match_chain(ctx, op)? {
            let plans = super::chain::plan_chain(ctx, &chain, &m)?;
            for (block, plan) in chain.blocks.iter().zip(&plans.blocks) {
                match (block, plan) {
                    (
                        super::chain::ChainBlock::Attention(b),
                        super::chain::PlannedBlock::Attention(p),
                    ) => record_attention_plan(ctx, b, p),
                    (super::chain::ChainBlock::Mlp(b), super::chain::PlannedBlock::Mlp(p)) => {
                        ctx.set_attr(b.fc1, PLAN_ATTR, plan_attr(&p.fc1));
                        ctx.set_attr(b.fc2, PLAN_ATTR, plan_attr(&p.fc2));
                    }
                    (super::chain::ChainBlock::Patch(b), super::chain::PlannedBlock::Patch(p)) => {
                        ctx.set_attr(b.conv, PLAN_ATTR, plan_attr(&p.product))
                    }
                    // The head's products are not ops of the model (sv
                    // computes the scores without the keys): its attention
                    // holds both plans.
                    (super::chain::ChainBlock::Pool(b), super::chain::PlannedBlock::Pool(p)) => {
                        let plans = Attribute::dictionary(Dictionary::from_entries([
                            ("scores_and_values".into(), plan_attr(&p.sv)),
                            ("out".into(), plan_attr(&p.out)),
                        ]));
                        ctx.set_attr(b.attention, PLAN_ATTR, plans);
                    }
                    _ => unreachable!("plans follow the blocks"),
                }
            }
            return Ok(PreservedAnalyses::all());
        }
        if let Some(block) = super::attention::match_attention(ctx, op)? {
            let plan = super::attention::plan_of_block(ctx, &block, &m)?;
            record_attention_plan(ctx, &block, &plan);
            return Ok(PreservedAnalyses::all());
        }
        if let Some(block) = super::mlp::match_mlp(ctx, op)? {
            let plan = super::mlp::plan_of_block(ctx, &block, &m)?;
            ctx.set_attr(block.fc1, PLAN_ATTR, plan_attr(&plan.fc1));
            ctx.set_attr(block.fc2, PLAN_ATTR, plan_attr(&plan.fc2));
            return Ok(PreservedAnalyses::all());
        }
        for mm in products(ctx, op) {
            let plan = plan_of(ctx, mm, &m)?;
            tracing::debug!(target: "ipu-plan", "{plan}");
            ctx.set_attr(mm, PLAN_ATTR, plan_attr(&plan));
        }
        Ok(PreservedAnalyses::all())
    }
}

/// The elements of a tensor constant, checked to be floats: what
/// [`constant_values`] decodes, without decoding them (the bytes are the
/// IR's, shared, not copied).
pub(super) fn float_constant(value: &Attribute) -> Result<DenseElements, String> {
    let dense = match value.kind() {
        AttrKind::DenseElements(d) => d.clone(),
        AttrKind::DenseResource { resource, ty } => {
            let blob = resource
                .blob()
                .ok_or_else(|| format!("resource '{}' has no data", resource.name()))?;
            DenseElements::new(ty.clone(), blob.data.clone(), false).map_err(|e| e.to_string())?
        }
        _ => return Err(format!("{value} is not a tensor constant")),
    };
    if dense.element_type().float_kind().is_none() {
        return Err("the weights are not floats".to_string());
    }
    Ok(dense)
}

/// The float values of a tensor constant, row-major.
pub(super) fn constant_values(value: &Attribute) -> Result<Vec<f64>, String> {
    float_constant(value)?
        .floats()
        .ok_or_else(|| "the weights are not floats".to_string())
}

/// What a function lowers to: its product, the constants' values and the
/// op whose result the function returns.
struct Lowerable {
    product: OpId,
    weights: Vec<f64>,
    bias: Option<Vec<f64>>,
    last: OpId,
}

/// The ops the lowering handles, by name.
const LOWERABLE_OPS: [&str; 8] = [
    nn::CONSTANT,
    nn::MATMUL,
    nn::LINEAR,
    ADD,
    nn::GELU,
    nn::LAYER_NORMALIZATION,
    nn::CAST,
    func::RETURN,
];

fn lowerable(ctx: &Context, f: OpId) -> Result<Lowerable, Diagnostic> {
    let body = func::entry_block(ctx, f)
        .ok_or_else(|| Diagnostic::op_error(ctx, f, "has no body to lower"))?;
    let ops = ctx.block_ops_vec(body);
    let unsupported: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&o| !LOWERABLE_OPS.contains(&ctx.name_str(o)))
        .collect();
    if let Some(&first) = unsupported.first() {
        let mut d = Diagnostic::op_error(
            ctx,
            first,
            format!(
                "cannot be lowered to the IPU yet ({} op(s) in this function cannot; the lowering handles one nn.matmul or nn.linear by an nn.constant with a bias and GELU after it, the MLP and attention blocks, and chains of blocks: a SigLIP encoder from its patch embedding to its pooling head)",
                unsupported.len()
            ),
        );
        for &o in &unsupported[1..] {
            d = d.with_note(
                ctx.loc(o).clone(),
                format!("'{}' cannot be lowered yet", ctx.name_str(o)),
            );
        }
        return Err(d);
    }
    let mms: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&o| is_product(ctx, o))
        .collect();
    let [mm] = mms.as_slice() else {
        return Err(Diagnostic::op_error(
            ctx,
            f,
            format!(
                "needs exactly one nn.matmul or nn.linear to lower, has {}",
                mms.len()
            ),
        ));
    };
    // What the product is comes first: an FP8 one is refused as such,
    // whatever feeds it.
    standalone_gemm_shape(ctx, *mm)?;
    let args = ctx.block_args(body);
    let operands = ctx.operands(*mm).to_vec();
    if args.len() != 1 || operands[0] != args[0] {
        return Err(Diagnostic::op_error(
            ctx,
            *mm,
            "the lowering needs the product's left operand to be the function's only argument",
        ));
    }
    let w = constant_of(ctx, operands[1]).ok_or_else(|| {
        Diagnostic::op_error(
            ctx,
            *mm,
            "the lowering needs the product's right operand to be an nn.constant",
        )
    })?;
    let weights = constant_values(&w).map_err(|e| Diagnostic::op_error(ctx, *mm, e))?;
    let chain = chain(ctx, *mm)?;
    let bias = chain
        .bias
        .as_ref()
        .map(constant_values)
        .transpose()
        .map_err(|e| Diagnostic::op_error(ctx, *mm, format!("the bias: {e}")))?;
    // Every other op must be a constant the chain uses.
    if let Some(&stray) = ops.iter().find(|&&o| {
        ![nn::CONSTANT, func::RETURN].contains(&ctx.name_str(o))
            && o != *mm
            && !chain_ops(ctx, *mm, chain.last).contains(&o)
    }) {
        return Err(Diagnostic::op_error(
            ctx,
            stray,
            "is not part of the product's epilogue (a bias row, then GELU), which is all the lowering runs after a product yet",
        ));
    }
    let ret = ops
        .last()
        .copied()
        .filter(|&o| ctx.name_str(o) == func::RETURN);
    if ret.is_none_or(|r| ctx.operands(r) != ctx.results(chain.last)) {
        return Err(Diagnostic::op_error(
            ctx,
            chain.last,
            "the function must return the product (after its epilogue)",
        ));
    }
    Ok(Lowerable {
        product: *mm,
        weights,
        bias,
        last: chain.last,
    })
}

/// The ops from the product (exclusive) to `last` (inclusive), following
/// the only users.
pub(super) fn chain_ops(ctx: &Context, product: OpId, last: OpId) -> Vec<OpId> {
    let mut out = Vec::new();
    let mut at = product;
    while at != last {
        match only_user(ctx, at) {
            Some(u) => {
                out.push(u);
                at = u;
            }
            None => break,
        }
    }
    out
}

/// The plans the lowering uses for `f`'s products, in op order.
pub fn planned_products(
    ctx: &Context,
    f: OpId,
    m: &MachineModel,
) -> Result<Vec<GemmPlan>, Diagnostic> {
    if let Some(chain) = super::chain::match_chain(ctx, f)? {
        let plans = super::chain::plan_chain(ctx, &chain, m)?;
        return Ok(plans
            .blocks
            .into_iter()
            .flat_map(|p| p.products())
            .collect());
    }
    if let Some(block) = super::attention::match_attention(ctx, f)? {
        let plan = super::attention::plan_of_block(ctx, &block, m)?;
        return Ok(vec![plan.qk, plan.vt, plan.out]);
    }
    if let Some(block) = super::mlp::match_mlp(ctx, f)? {
        let plan = super::mlp::plan_of_block(ctx, &block, m)?;
        return Ok(vec![plan.fc1, plan.fc2]);
    }
    products(ctx, f)
        .into_iter()
        .map(|mm| plan_of(ctx, mm, m))
        .collect()
}

/// The plan report of `f`: for each `nn.matmul`, the plan the lowering
/// uses (the search's choice, or the grid its `ipu.plan` forces) with its
/// estimate, then the best rejected candidates and why they lost.
pub fn plan_report(ctx: &Context, f: OpId, m: &MachineModel) -> Result<String, Diagnostic> {
    if let Some(chain) = super::chain::match_chain(ctx, f)? {
        return super::chain::chain_report(ctx, &chain, m);
    }
    if let Some(block) = super::attention::match_attention(ctx, f)? {
        return super::attention::attention_report(ctx, &block, m);
    }
    if let Some(block) = super::mlp::match_mlp(ctx, f)? {
        return super::mlp::block_report(ctx, &block, m);
    }
    let mut out = String::new();
    for mm in products(ctx, f) {
        let shape = standalone_gemm_shape(ctx, mm)?;
        let search =
            plan_gemm(shape, m).map_err(|e| Diagnostic::op_error(ctx, mm, e.to_string()))?;
        let used = plan_of(ctx, mm, m)?;
        let loc = ipuc_ir::diagnostics::location_prefix(ctx.loc(mm));
        let forced = ctx.attr(mm, PLAN_ATTR).is_some() && used != search.plan;
        out += &format!(
            "{loc}: {}: {used}{}\n",
            ctx.name_str(mm),
            if forced { " (forced by ipu.plan)" } else { "" }
        );
        if forced {
            out += &format!("  the search's choice: {}\n", search.plan);
        }
        out += &rejected_lines(&search.rejected);
    }
    Ok(out)
}

/// The report's lines for a search's rejected candidates: grid, estimate
/// where it fits, and why it lost.
pub fn rejected_lines(rejected: &[Rejected]) -> String {
    rejected
        .iter()
        .map(|r| {
            let estimate = r.estimate.map_or(String::new(), |e| format!("{e}: "));
            format!("  rejected grid {}: {estimate}{}\n", r.grid, r.reason)
        })
        .collect()
}

/// Lowers `f` (a `func.func` of `module`'s body) to an `ipu.executable`
/// appended to that body, planning its product if it has no `ipu.plan`:
/// what `ipu-lower` does per function, for drivers such as `ipu-run
/// --device sim`.
pub fn lower_function(
    ctx: &mut Context,
    module_body: ipuc_ir::BlockId,
    f: OpId,
    m: &MachineModel,
) -> Result<Lowered, Diagnostic> {
    lower_function_reporting(ctx, module_body, f, (m, Weights::Resident), None)
        .map(|(lowered, _)| lowered)
}

/// [`lower_function`], handing `report` (where given) the plan report
/// ([`plan_report`]) once the plan is made and before the lowering emits
/// anything (so a lowering that then fails still shows its plan); a chain
/// of blocks is planned once for both, and its plan comes back with the
/// lowering (a profile's attribution reads it). A chain plans from
/// `weights` ([`super::chain::plan_chain_with`]); a block or product
/// alone keeps its weights resident.
pub fn lower_function_reporting(
    ctx: &mut Context,
    module_body: ipuc_ir::BlockId,
    f: OpId,
    (m, weights): (&MachineModel, Weights),
    report: Option<&mut dyn FnMut(String)>,
) -> Result<(Lowered, Option<super::chain::ChainPlan>), Diagnostic> {
    if let Some(chain) = super::chain::match_chain(ctx, f)? {
        let plan = {
            let _time = tracing::info_span!(target: "ipu-lower", "plan the chain").entered();
            super::chain::plan_chain_with(ctx, &chain, m, weights)?
        };
        if let Some(report) = report {
            report(super::chain::chain_report_of(ctx, &chain, &plan, m)?);
        }
        let lowered = super::chain::lower_chain_planned(ctx, module_body, &chain, &plan, m)?;
        tracing::debug!(target: "ipu-lower", "the context holds {} ops", ctx.num_ops());
        return Ok((lowered, Some(plan)));
    }
    if weights == Weights::Streamed {
        return Err(Diagnostic::op_error(
            ctx,
            f,
            "streamed weights (`weights=streamed`, `--stream-weights`) apply to a chain of blocks (a whole encoder, `--extract layer:N` or `head`); this function lowers as one block or product, whose weights stay resident: drop the option",
        ));
    }
    if let Some(report) = report {
        report(plan_report(ctx, f, m)?);
    }
    if let Some(block) = super::attention::match_attention(ctx, f)? {
        return Ok((
            super::attention::lower_attention(ctx, module_body, &block, m)?,
            None,
        ));
    }
    if let Some(block) = super::mlp::match_mlp(ctx, f)? {
        return Ok((super::mlp::lower_mlp(ctx, module_body, &block, m)?, None));
    }
    let l = lowerable(ctx, f)?;
    let plan = plan_of(ctx, l.product, m)?;
    let x_ty = ctx.value_type(ctx.operands(l.product)[0]).clone();
    let y_ty = ctx.value_type(ctx.results(l.last)[0]).clone();
    let loc = ctx.loc(l.product).clone();
    let constants = Constants {
        weights: &l.weights,
        bias: l.bias.as_deref(),
    };
    let lowered = emit_gemm(ctx, module_body, &plan, constants, (x_ty, y_ty), m, loc)?;
    Ok((lowered, None))
}

impl DeclaredPass for LowerToIpu {
    fn create(options: &LowerOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        let weights = match options.weights.as_str() {
            "auto" => Weights::Resident,
            "streamed" => Weights::Streamed,
            other => {
                return Err(PassCreateError::Refused(format!(
                    "unknown weights placement '{other}' (known: auto, streamed)"
                )))
            }
        };
        machine(&options.machine)
            .map(|m| LowerToIpu(m, weights))
            .map_err(PassCreateError::Refused)
    }

    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        _stats: &mut (),
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let (m, weights) = (self.0.clone(), self.1);
        let Some(block) = ctx.regions(op).first().and_then(|&r| ctx.entry_block(r)) else {
            return Ok(PreservedAnalyses::all());
        };
        let funcs: Vec<OpId> = ctx
            .block_ops_vec(block)
            .into_iter()
            .filter(|&o| ctx.name_str(o) == func::FUNC)
            .collect();
        for f in funcs {
            lower_function_reporting(ctx, block, f, (&m, weights), None)?;
        }
        Ok(PreservedAnalyses::none())
    }
}
