//! What the lowering tells a profile: its steps (the granularity of its
//! estimate) with their `nn` ops, which `nn` op each codelet instance
//! computes, and the buffers it placed in tile memory with the steps they
//! live in.
//!
//! Instances are named by the lowering (`backend-ipu/src/lower/block.rs`
//! and `codegen.rs`: `ln`, `fc1`/`fc2` for a product's vertex,
//! `{fc}_red{t}_{g}` for its reduction adds, `{fc}_gelu*` for its GELU,
//! `out0_*` for the residual add and `out1_*` for fc2's bias add;
//! `attention_block.rs`: `qk`, `vt` and `out` for its products, `attn*`
//! for an attention tile's codelets (`attn{c}_*` for a flash-style
//! tile's chunk `c` after the first), `attn_combine` for the key-split
//! and flash-style forms' combination, `residual_*` for the residual add;
//! `pool_head.rs`: `sv` and `out` for its products, `pool_*` for a head
//! tile's codelets); a rename there shows up here as an `unattributed`
//! instance, which the `ipu-prof` snapshots and `tools/tests/prof.rs`
//! would catch. Buffer addresses are the blocks' layouts; their sizes
//! come from the planner's and the codelets' own size functions.

use ipuc_backend_ipu::lower::attention::{
    match_attention, plan_of_block as attention_plan, AttentionMatch,
};
use ipuc_backend_ipu::lower::attention_block::{AttentionEstimate, AttentionPlan};
use ipuc_backend_ipu::lower::block::{owned_rows_bytes, BlockEstimate, MlpPlan, LN_ROWS};
use ipuc_backend_ipu::lower::chain::{
    match_chain, plan_chain, ChainBlock, ChainMatch, ChainPlan, PlannedBlock,
};
use ipuc_backend_ipu::lower::codegen::{layout, Lowered, StepEstimates, TileLayout};
use ipuc_backend_ipu::lower::mlp::{match_mlp, plan_of_block, MlpMatch};
use ipuc_backend_ipu::lower::passes::planned_products;
use ipuc_backend_ipu::lower::plan::{reduction_rows_bytes, whole_pairs, GemmPlan};
use ipuc_backend_ipu::lower::pool::PoolMatch;
use ipuc_backend_ipu::lower::pool_head::{tokens_padded, PoolEstimate, PoolPlan};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, OpId, WalkOrder};

use super::schema::Work;

/// A step of the lowering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepInfo {
    /// Name.
    pub name: String,
    /// Its `nn` ops.
    pub ops: Vec<String>,
    /// The lowering's estimate.
    pub estimate: Option<u64>,
    /// Whether it is an exchange step (launch-free supersteps go to the
    /// next one in program order).
    pub exchange: bool,
    /// Its products' work, if it runs products.
    pub work: Option<Work>,
    /// A loop's link back into its body: a launch-free superstep goes to
    /// it only where the program goes back to an earlier step next.
    pub loops_back: bool,
}

/// A buffer the lowering placed on some tiles, live from one step to another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// Name.
    pub name: String,
    /// Tiles holding it.
    pub tiles: Vec<u32>,
    /// Address.
    pub address: u32,
    /// Bytes.
    pub size: u32,
    /// First and last step (indices into the steps) it is live in.
    pub live: (usize, usize),
    /// Which supersteps of those steps.
    pub part: Part,
}

impl Buffer {
    /// `name` on `tiles` at `address`, `size` bytes, live in every
    /// superstep of steps `live`.
    fn whole(name: &str, tiles: &[u32], address: u32, size: u64, live: (usize, usize)) -> Self {
        Buffer {
            name: name.into(),
            tiles: tiles.to_vec(),
            address,
            size: size as u32,
            live,
            part: Part::Whole,
        }
    }
}

/// Which supersteps of its steps a buffer lives in: a product's step runs
/// its vertex in its first superstep, then its K split's reduction rounds,
/// whose buffers lie over the product's input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Part {
    /// Every superstep of its steps.
    #[default]
    Whole,
    /// Until the first superstep of its last step (the vertex's input).
    UntilVertex,
    /// From the second superstep of its first step (a reduction's).
    AfterVertex,
}

/// Which `nn` op a codelet instance computes: instances whose name starts
/// with `prefix`, on `tiles` (`[first, end)`; `None`: any tile), belong to
/// step `step` and op `op`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceRule {
    /// The instance-name prefix.
    pub prefix: String,
    /// The tiles the rule covers (a block of a chain runs on its own).
    pub tiles: Option<(u32, u32)>,
    /// The step.
    pub step: usize,
    /// The `nn` op.
    pub op: String,
}

/// Everything the profile learns from the lowering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribution {
    /// Steps in program order; the last one is `sync`.
    pub steps: Vec<StepInfo>,
    /// The instance rules, longest prefix first within a block.
    pub instances: Vec<InstanceRule>,
    /// Buffers.
    pub buffers: Vec<Buffer>,
    /// Constants the program overwrites once they are read, by name
    /// prefix (`.const.PREFIX...` sections), each with the step whose
    /// vertex reads it (in the step's first superstep): their memory is
    /// another buffer's afterwards (the step's own reduction buffers may
    /// lie over it).
    pub consumed: Vec<(String, usize)>,
}

impl Attribution {
    /// The (step, `nn` op) of codelet instance `instance` on `tile`.
    pub fn classify(&self, tile: u32, instance: &str) -> Option<(usize, String)> {
        self.instances
            .iter()
            .find(|r| {
                instance.starts_with(r.prefix.as_str())
                    && r.tiles.is_none_or(|(a, b)| (a..b).contains(&tile))
            })
            .map(|r| (r.step, r.op.clone()))
    }

    /// The index of the `sync` step.
    pub fn sync_step(&self) -> usize {
        self.steps.len() - 1
    }
}

/// Rules on any tile from `(prefix, step, op)` triples.
fn rules(list: Vec<(&str, usize, String)>) -> Vec<InstanceRule> {
    list.into_iter()
        .map(|(prefix, step, op)| InstanceRule {
            prefix: prefix.into(),
            tiles: None,
            step,
            op,
        })
        .collect()
}

fn op_label(ctx: &Context, op: OpId) -> String {
    format!(
        "{} @ {}",
        ctx.name_str(op),
        ipuc_ir::diagnostics::location_prefix(ctx.loc(op))
    )
}

fn step(name: &str, ops: Vec<String>, estimate: Option<u64>, exchange: bool) -> StepInfo {
    StepInfo {
        loops_back: false,
        name: name.into(),
        ops,
        estimate,
        exchange,
        work: None,
    }
}

/// `s` with `work`.
fn with_work(s: StepInfo, work: Option<Work>) -> StepInfo {
    StepInfo { work, ..s }
}

/// `macs` at `plan`'s instruction on every tile of `machine`.
fn work_at(macs: u64, plan: &GemmPlan, machine: &MachineModel) -> Option<Work> {
    Some(Work {
        macs,
        peak_macs_per_cycle: plan.shape.variant.macs_per_tile_cycle() * u64::from(machine.tiles),
    })
}

/// Every tile of `plan`'s grid.
fn product_tiles(plan: &GemmPlan) -> Vec<u32> {
    (plan.first_tile..plan.first_tile + plan.tiles()).collect()
}

/// `plan`'s own multiply-accumulates (`m k n`) at its instruction.
fn work(plan: &GemmPlan, machine: &MachineModel) -> Option<Work> {
    let s = plan.shape;
    work_at(
        u64::from(s.m) * u64::from(s.k) * u64::from(s.n),
        plan,
        machine,
    )
}

/// The attribution of function `f` as `lowered` (from the same context,
/// before the lowering changed nothing of `f`), with the chain's plan the
/// lowering used where it hands it over (else the chain is planned again).
pub fn of_function(
    ctx: &Context,
    f: OpId,
    machine: &MachineModel,
    (lowered, chain_plan): (&Lowered, Option<&ChainPlan>),
) -> Result<Attribution, String> {
    let render = |d: ipuc_ir::Diagnostic| d.to_string();
    if let Some(chain) = match_chain(ctx, f).map_err(render)? {
        let planned;
        let plan = match chain_plan {
            Some(p) => p,
            None => {
                planned = plan_chain(ctx, &chain, machine).map_err(render)?;
                &planned
            }
        };
        return Ok(of_chain(
            ctx,
            &chain,
            plan,
            (
                &lowered.chain_estimates,
                &lowered.chain_links,
                (lowered.loop_copies, lowered.loop_start_copies),
            ),
            machine,
        ));
    }
    if let Some(b) = match_attention(ctx, f).map_err(render)? {
        let plan = attention_plan(ctx, &b, machine).map_err(render)?;
        return Ok(of_attention(
            ctx,
            &b,
            &plan,
            attention_estimate(lowered.block_estimate),
            machine,
        ));
    }
    if let Some(b) = match_mlp(ctx, f).map_err(render)? {
        let plan = plan_of_block(ctx, &b, machine).map_err(render)?;
        return Ok(of_mlp(
            ctx,
            &b,
            &plan,
            mlp_estimate(lowered.block_estimate),
            machine,
        ));
    }
    // A lone product: its vertex, reduction and epilogue are one step.
    let plans = planned_products(ctx, f, machine).map_err(render)?;
    let product = ctx
        .collect_ops(f, WalkOrder::PreOrder)
        .into_iter()
        .find(|&o| matches!(ctx.name_str(o), "nn.matmul" | "nn.linear"));
    let (Some(plan), Some(product)) = (plans.first(), product) else {
        return Err("the function has no product to profile".into());
    };
    Ok(of_product(
        op_label(ctx, product),
        plan,
        &layout(plan, machine),
        "",
        machine,
    ))
}

/// A product alone (a lone product's, or a patch embedding's: the
/// instances named `tag`): its exchange, then its vertex, reduction and
/// epilogue as one step.
fn of_product(
    label: String,
    plan: &GemmPlan,
    lay: &TileLayout,
    tag: &str,
    machine: &MachineModel,
) -> Attribution {
    let est = plan.estimate;
    Attribution {
        steps: vec![
            step("exchange", vec![], Some(est.exchange), true),
            with_work(
                step(
                    "product",
                    vec![label.clone()],
                    Some(est.compute + est.rounds_exchange + est.reduction + est.epilogue),
                    false,
                ),
                work(plan, machine),
            ),
            step("sync", vec![], Some(est.sync), false),
        ],
        instances: rules(vec![(tag, 1, label)]),
        buffers: placed_buffers(plan, tag, lay, (0, 1), (1, 1)),
        consumed: Vec::new(),
    }
}

/// The attention block's steps (its estimate's: `attention_block.rs`'s
/// supersteps), instances and nn ops. The key-split form has two more
/// steps, exchange D and the combination of the partial rows. Its
/// buffers are [`attention_buffers`].
fn of_attention(
    ctx: &Context,
    b: &AttentionMatch,
    plan: &AttentionPlan,
    e: Option<AttentionEstimate>,
    machine: &MachineModel,
) -> Attribution {
    let [ln, qkv, attention, out, add] =
        [b.ln, b.qkv, b.attention, b.out, b.add].map(|o| op_label(ctx, o));
    let est = |f: fn(&AttentionEstimate) -> u64| e.as_ref().map(f);
    // The work of the heads' real dimensions (the plans pad each head to
    // whole panels): QKV, then Q K^T and P V (each image over its own
    // tokens), then out, over every image's rows.
    let sh = plan.shape;
    let (images, m, c, hd) = (
        u64::from(sh.images),
        u64::from(sh.m),
        u64::from(sh.c),
        u64::from(sh.heads) * u64::from(sh.head_dim),
    );
    let mut steps = vec![
        step("layer_norm", vec![ln.clone()], est(|e| e.layer_norm), false),
        step("exchange_a", vec![], est(|e| e.exchange_a), true),
        with_work(
            step("qkv", vec![qkv.clone()], est(|e| e.qkv), false),
            work_at(images * m * c * 3 * hd, &plan.qk, machine),
        ),
        step("exchange_b", vec![], est(|e| e.exchange_b), true),
        with_work(
            step(
                "attention",
                vec![attention.clone()],
                est(|e| e.attention),
                false,
            ),
            work_at(images * 2 * m * m * hd, &plan.out, machine),
        ),
    ];
    let mut instances = vec![
        // qk's bias rows and vt's values (FP8), broadcast into their
        // partials beside LayerNorm, where vt's tiles also zero their
        // padding rows (vt's weights in scratch).
        ("qk_bias_broadcast", 0, qkv.clone()),
        ("vt_bias_broadcast", 0, qkv.clone()),
        ("vt_pad", 0, qkv.clone()),
        ("qk", 2, qkv.clone()),
        ("vt", 2, qkv),
        // The window's constants, restored beside LayerNorm.
        ("attn_restore", 0, attention.clone()),
        ("attn", 4, attention.clone()),
        ("ln", 0, ln),
    ];
    if plan.core.split() {
        steps.push(step("exchange_d", vec![], est(|e| e.exchange_d), true));
        steps.push(step(
            "combine",
            vec![attention.clone()],
            est(|e| e.combine),
            false,
        ));
        instances.insert(2, ("attn_combine", steps.len() - 1, attention));
    }
    steps.push(step("exchange_c", vec![], est(|e| e.exchange_c), true));
    steps.push(with_work(
        step("out", vec![out.clone(), add.clone()], est(|e| e.out), false),
        work_at(images * m * hd * c, &plan.out, machine),
    ));
    let out_step = steps.len() - 1;
    instances.extend([("out", out_step, out), ("residual", out_step, add)]);
    steps.push(step("sync", vec![], est(|e| e.sync), false));
    let buffers = attention_buffers(plan, out_step);
    Attribution {
        steps,
        instances: rules(instances),
        buffers,
        // vt's input (the value weights), when it sits in the shared
        // scratch, is read by qkv; then out's input and the attention
        // tiles' tensors may lie over it.
        consumed: if plan.layout.vt_input_shared {
            vec![("vt_input".into(), 2)]
        } else {
            Vec::new()
        },
    }
}

/// The attention block's buffers (`attention_block.rs`'s layout), live
/// over its steps: `layer_norm (0), exchange_a (1), qkv (2), exchange_b
/// (3), attention (4)`, with the keys split `exchange_d (5), combine
/// (6)`, then `exchange_c` and `out` (`out_step`); a flash-style tile's
/// chunks and its combination are all in the attention step. Sizes are the
/// codelets' own (the attention tile's of a whole block of keys).
fn attention_buffers(plan: &AttentionPlan, out_step: usize) -> Vec<Buffer> {
    let lay = &plan.layout;
    let exchange_c = out_step - 1;
    let mut out = placed_buffers(&plan.qk, "qk", &lay.qk, (1, 2), (2, 3));
    out.extend(swapped_buffers(&plan.vt, "vt", &lay.vt));
    out.extend(placed_buffers(
        &plan.out,
        "out",
        &lay.out,
        (exchange_c, out_step),
        (out_step, out_step),
    ));
    let row_bytes = LN_ROWS * plan.shape.c * 2;
    let ln = |name: &str, address: u32, size: u32| {
        Buffer::whole(name, &plan.ln_tiles, address, u64::from(size), (0, 1))
    };
    out.push(ln("layer_norm input", lay.x, row_bytes));
    out.push(ln(
        "layer_norm output",
        lay.ln_out,
        (row_bytes + 16).next_multiple_of(16),
    ));
    let core_tiles: Vec<u32> = (plan.core.first_tile
        ..plan.core.first_tile + plan.core.tiles(plan.shape.image_heads()))
        .collect();
    let att = &lay.core;
    let (scores, values) = (att.scores(), att.values());
    // O stays until the exchange after the attention reads it: D with the
    // keys split, else C.
    // A flash-style tile keeps two slots of O and statistics (the running
    // output and a chunk's); its later parts of exchange B run inside the
    // attention step.
    let o_until = if plan.core.split() { 5 } else { exchange_c };
    let o_bytes = match (&lay.combine, plan.core.flash()) {
        (Some(c), true) => 2 * u64::from(c.part_stride),
        _ => values.output_bytes(),
    };
    // With the keys split O lies over S (at the top of the memory S
    // ends, dead once the softmax has written P): within the attention
    // step the range is S's, then O's; from exchange D on it is O's.
    let meet = |a: u32, an: u64, b: u32, bn: u64| {
        u64::from(a) < u64::from(b) + bn && u64::from(b) < u64::from(a) + an
    };
    let (s_name, o_from) = if meet(att.o, o_bytes, att.s, scores.output_bytes()) {
        ("attention S (then O over it)", 5)
    } else {
        ("attention S", 4)
    };
    for (name, address, size, live) in [
        ("attention Q", att.q, scores.input_bytes(), (3, 4)),
        ("attention K", att.k, scores.weight_bytes(), (3, 4)),
        ("attention V", att.v, values.weight_bytes(), (3, 4)),
        (s_name, att.s, scores.output_bytes(), (4, 4)),
        ("attention P", att.p, values.input_bytes(), (4, 4)),
        ("attention O", att.o, o_bytes, (o_from, o_until)),
    ] {
        out.push(Buffer::whole(name, &core_tiles, address, size, live));
    }
    if let Some(c) = lay.combine.as_ref().filter(|_| plan.core.split()) {
        out.push(Buffer::whole(
            "combine partials",
            &core_tiles,
            c.input,
            u64::from(c.part_stride * plan.core.key_blocks),
            (5, 6),
        ));
    }
    let span = u64::from(owned_rows_bytes(&plan.out));
    let out_tiles = product_tiles(&plan.out);
    for (name, address, live) in [
        ("residual", lay.residual, (1, out_step)),
        ("sum", lay.sum, (out_step, out_step)),
    ] {
        out.push(Buffer::whole(name, &out_tiles, address, span, live));
    }
    out
}

/// The MLP block's steps (its estimate's), instances and buffers.
fn of_mlp(
    ctx: &Context,
    b: &MlpMatch,
    plan: &MlpPlan,
    e: Option<BlockEstimate>,
    machine: &MachineModel,
) -> Attribution {
    let gelu = b
        .ops
        .iter()
        .copied()
        .find(|&o| ctx.name_str(o) == "nn.gelu");
    let (ln, fc1, fc2, add) = (
        op_label(ctx, b.ln),
        op_label(ctx, b.fc1),
        op_label(ctx, b.fc2),
        op_label(ctx, b.add),
    );
    let gelu = gelu.map_or_else(|| fc1.clone(), |g| op_label(ctx, g));
    // The estimate's fc1 covers its vertex, reduction and GELU; fc2 its
    // vertex, reduction and both adds.
    let steps = vec![
        step(
            "layer_norm",
            vec![ln.clone()],
            e.map(|e| e.layer_norm),
            false,
        ),
        step("exchange_a", vec![], e.map(|e| e.exchange_a), true),
        with_work(
            step(
                "fc1",
                vec![fc1.clone(), gelu.clone()],
                e.map(|e| e.fc1),
                false,
            ),
            work(&plan.fc1, machine),
        ),
        step("exchange_b", vec![], e.map(|e| e.exchange_b), true),
        with_work(
            step(
                "fc2",
                vec![fc2.clone(), add.clone()],
                e.map(|e| e.fc2),
                false,
            ),
            work(&plan.fc2, machine),
        ),
        step("sync", vec![], e.map(|e| e.sync), false),
    ];
    let instances = rules(vec![
        ("fc1_gelu", 2, gelu),
        // fc1's bias rows, broadcast into its partials beside LayerNorm.
        ("fc1_bias_broadcast", 0, fc1.clone()),
        // fc2's bias rows, from a row per group, beside LayerNorm too.
        ("fc2_bias_broadcast", 0, fc2.clone()),
        ("fc1", 2, fc1),
        ("fc2", 4, fc2.clone()),
        ("out0", 4, add),
        ("out1", 4, fc2),
        ("ln", 0, ln),
    ]);
    Attribution {
        steps,
        instances,
        buffers: block_buffers(plan),
        consumed: Vec::new(),
    }
}

/// An MLP block's estimate, if `e` is one.
fn mlp_estimate(e: Option<StepEstimates>) -> Option<BlockEstimate> {
    match e {
        Some(StepEstimates::Mlp(e)) => Some(e),
        _ => None,
    }
}

/// An attention block's estimate, if `e` is one.
fn attention_estimate(e: Option<StepEstimates>) -> Option<AttentionEstimate> {
    match e {
        Some(StepEstimates::Attention(e)) => Some(e),
        _ => None,
    }
}

/// A pooling head's estimate, if `e` is one.
fn pool_estimate(e: Option<StepEstimates>) -> Option<PoolEstimate> {
    match e {
        Some(StepEstimates::Pool(e)) => Some(e),
        _ => None,
    }
}

/// The pooling head's steps (its estimate's: `pool_head.rs`'s
/// supersteps) and instances. Its query is a constant folded into sv's
/// input, so sv (the scores and `V^T`) and the head tiles (softmax and
/// `P V_h`) are the pooling attention's; out is the head's output
/// product (its last). Its buffers are [`pool_buffers`].
fn of_pool(
    ctx: &Context,
    b: &PoolMatch,
    plan: &PoolPlan,
    e: Option<PoolEstimate>,
    machine: &MachineModel,
) -> Attribution {
    let out = b
        .ops
        .iter()
        .rev()
        .find(|&&o| matches!(ctx.name_str(o), "nn.linear" | "nn.matmul"))
        .copied()
        .unwrap_or(b.last);
    let [ln, attention, last] = [b.ln, b.attention, out].map(|o| op_label(ctx, o));
    let est = |f: fn(&PoolEstimate) -> u64| e.as_ref().map(f);
    Attribution {
        steps: vec![
            step("layer_norm", vec![ln.clone()], est(|e| e.layer_norm), false),
            step("exchange_a", vec![], est(|e| e.exchange_a), true),
            step("sv", vec![attention.clone()], est(|e| e.sv), false),
            step("exchange_b", vec![], est(|e| e.exchange_b), true),
            step("heads", vec![attention.clone()], est(|e| e.heads), false),
            step("exchange_c", vec![], est(|e| e.exchange_c), true),
            with_work(
                step("out", vec![last.clone()], est(|e| e.out), false),
                work(&plan.out, machine),
            ),
            step("sync", vec![], est(|e| e.sync), false),
        ],
        instances: rules(vec![
            // The padding tokens' rows of sv's weights, zeroed beside
            // LayerNorm.
            ("sv_zero_tokens", 0, attention.clone()),
            ("sv", 2, attention.clone()),
            ("pool", 4, attention),
            ("out", 6, last),
            ("ln", 0, ln),
        ]),
        buffers: pool_buffers(plan, machine),
        consumed: Vec::new(),
    }
}

/// A swapped product's buffers (the attention block's vt, the pooling
/// head's sv), live over `exchange_a (1)` to `exchange_b (3)`: its input
/// is a constant (the value weights), and exchange A writes LayerNorm's
/// rows into its weights.
fn swapped_buffers(plan: &GemmPlan, tag: &str, lay: &TileLayout) -> Vec<Buffer> {
    placed_buffers(plan, tag, lay, (1, 2), (2, 3))
        .into_iter()
        .map(|b| {
            if b.name == format!("{tag} input") {
                Buffer {
                    name: format!("{tag} weights (LayerNorm rows)"),
                    address: lay.weights,
                    size: plan.vertex().weight_bytes() as u32,
                    ..b
                }
            } else {
                b
            }
        })
        .collect()
}

/// The pooling head's buffers (`pool_head.rs`'s layout), live over its
/// steps `layer_norm (0), exchange_a (1), sv (2), exchange_b (3), heads
/// (4), exchange_c (5), out (6)`; LayerNorm's rows are the block's first
/// output and stay to the end.
fn pool_buffers(plan: &PoolPlan, machine: &MachineModel) -> Vec<Buffer> {
    let lay = &plan.layout;
    let mut out = swapped_buffers(&plan.sv, "sv", &lay.sv);
    // sv's streamed input, gathered in exchange A into scratch.
    if lay.sv_input_home.is_some() {
        out.push(Buffer {
            part: Part::UntilVertex,
            ..Buffer::whole(
                "sv input (gathered)",
                &product_tiles(&plan.sv),
                lay.sv.input,
                whole_pairs(plan.sv.vertex().input_bytes(), machine),
                (1, 2),
            )
        });
    }
    out.extend(placed_buffers(&plan.out, "out", &lay.out, (5, 6), (6, 6)));
    let row_bytes = plan.ln_rows * plan.shape.c * 2;
    for (name, address, live) in [
        ("layer_norm input", lay.x, (0, 1)),
        ("layer_norm output", lay.ln_out, (0, 6)),
    ] {
        out.push(Buffer::whole(
            name,
            &plan.ln_tiles,
            address,
            u64::from(row_bytes),
            live,
        ));
    }
    let heads: Vec<u32> = plan.head_tiles().collect();
    let head = &lay.head;
    let v = &head.values;
    for (name, address, size, live) in [
        (
            "head scores and P",
            head.scores(),
            u64::from(tokens_padded(plan.shape)) * 2,
            (3, 4),
        ),
        ("head V", v.input, v.input_bytes(), (3, 4)),
        (
            "head statistics",
            head.stats,
            8 * u64::from(head.rows),
            (4, 4),
        ),
        ("head (P V)^T", v.output, v.output_bytes(), (4, 4)),
        ("head O", head.output, 32 * u64::from(v.rows), (4, 5)),
    ] {
        out.push(Buffer::whole(name, &heads, address, size, live));
    }
    out
}

/// A chain: each block's attribution on its own tiles, its steps in
/// program order with a `link` exchange step between two blocks (its
/// estimate the link's scheduled cycles, from `links`), one `sync` step
/// for all (its estimate the blocks' syncs and one per link).
/// `estimates` holds each block's estimate where the lowering gave one.
fn of_chain(
    ctx: &Context,
    chain: &ChainMatch,
    plan: &ChainPlan,
    (estimates, links, (loop_copies, start_copies)): (&[Option<StepEstimates>], &[u64], (u64, u64)),
    machine: &MachineModel,
) -> Attribution {
    let mut out = Attribution {
        steps: Vec::new(),
        instances: Vec::new(),
        buffers: Vec::new(),
        consumed: Vec::new(),
    };
    let repeat = plan.repeat.as_ref().map(|(r, _)| *r);
    let link_sync = u64::from(machine.sync_latency);
    // Block k's steps, instances and buffers as it is alone.
    let sub_of = |k: usize| -> Attribution {
        let estimate = estimates.get(k).copied().flatten();
        match (&chain.blocks[k], &plan.blocks[k]) {
            (ChainBlock::Mlp(b), PlannedBlock::Mlp(p)) => {
                of_mlp(ctx, b, p, mlp_estimate(estimate), machine)
            }
            (ChainBlock::Patch(b), PlannedBlock::Patch(p)) => {
                // A lone product's steps, with the patch embedding's own
                // estimate (its exchange is scheduled).
                let mut a = of_product(
                    op_label(ctx, b.conv),
                    &p.product,
                    &p.layout,
                    "patch",
                    machine,
                );
                let e = p.estimate(machine);
                for (s, cycles) in a.steps.iter_mut().zip([e.exchange, e.product, e.sync]) {
                    s.estimate = Some(cycles);
                }
                // The pixel rows on the row tiles, where the host writes
                // them, until the exchange moves them.
                a.buffers.push(Buffer::whole(
                    "patch rows",
                    &p.row_tiles,
                    p.rows,
                    u64::from(LN_ROWS * p.shape.k_padded() * 2),
                    (0, 0),
                ));
                // The product's K is padded to whole panels: count the
                // convolution's own.
                let sh = p.shape;
                a.steps[1].work = work_at(
                    u64::from(sh.rows()) * u64::from(sh.k()) * u64::from(sh.d),
                    &p.product,
                    machine,
                );
                a
            }
            (ChainBlock::Attention(b), PlannedBlock::Attention(p)) => {
                of_attention(ctx, b, p, attention_estimate(estimate), machine)
            }
            (ChainBlock::Pool(b), PlannedBlock::Pool(p)) => {
                of_pool(ctx, b, p, pool_estimate(estimate), machine)
            }
            // plan_chain plans each block as its own kind.
            _ => unreachable!("plans follow the blocks"),
        }
    };
    let mut sync = Some(0);
    for k in 0..chain.blocks.len() {
        // A later period of a loop runs the body's code: its steps count
        // every period.
        if repeat.is_some_and(|r| !r.emitted(k)) {
            continue;
        }
        let times = repeat
            .filter(|r| r.in_body(k))
            .map_or(1, |r| r.count as u64);
        if k > 0 {
            // A link is one scheduled exchange between two syncs (into a
            // loop's first block once, its later blocks once a period).
            let crossings = repeat
                .filter(|r| r.in_body(k) && k > r.start)
                .map_or(1, |r| r.count as u64);
            let link = links.get(k - 1).copied().map(|c| c * crossings);
            out.steps
                .push(step(&format!("link{}", k - 1), vec![], link, true));
            sync = sync.zip(link).map(|(s, _)| s + link_sync * crossings);
        }
        let mut sub = sub_of(k);
        // A loop's body step covers its ops in every period.
        if let Some(r) = repeat.filter(|r| r.in_body(k)) {
            for i in 1..r.count {
                let later = sub_of(k + i * r.period);
                for (s, l) in sub.steps.iter_mut().zip(later.steps) {
                    s.ops.extend(l.ops);
                }
            }
        }
        let offset = out.steps.len();
        let own = sub.steps.len() - 1;
        // A loop's first block: on every entry but the first, most tiles
        // copy the coming layer's constants during its first superstep
        // (the copies' instances); the step takes the longer.
        let entered = repeat.filter(|r| r.start == k).map(|r| {
            out.instances.push(InstanceRule {
                prefix: format!("b{k}_loop_copyin"),
                tiles: None,
                step: offset,
                op: String::new(),
            });
            (r.count - 1) as u64
        });
        for (n, s) in sub.steps[..own].iter().enumerate() {
            let again = |e: u64| match (n, entered) {
                (0, Some(times)) => times * start_copies.saturating_sub(e),
                _ => 0,
            };
            out.steps.push(StepInfo {
                name: format!("b{k} {}", s.name),
                estimate: s.estimate.map(|e| e * times + again(e)),
                work: s.work.map(|w| Work {
                    macs: w.macs * times,
                    ..w
                }),
                ..s.clone()
            });
        }
        sync = sync
            .zip(sub.steps[own].estimate)
            .map(|(a, b)| a + b * times);
        if let Some(r) = repeat.filter(|r| r.last() == k) {
            // The loop's end: on the tiles the link back writes (where any
            // holds constants) each later layer's constants copied in (the
            // copies' instances), then the link back into the body.
            let back = (r.count - 1) as u64;
            if loop_copies > 0 {
                out.instances.push(InstanceRule {
                    prefix: format!("b{k}_loop_copy"),
                    tiles: None,
                    step: out.steps.len(),
                    op: String::new(),
                });
                out.steps.push(step(
                    &format!("b{k} loop copies"),
                    vec![],
                    Some(loop_copies * back),
                    false,
                ));
            }
            let link = links.get(k).copied().map(|c| c * back);
            out.steps.push(StepInfo {
                loops_back: true,
                ..step(&format!("link{k} (back)"), vec![], link, true)
            });
            sync = sync.zip(link).map(|(s, _)| s + link_sync * back);
        }
        out.consumed.extend(
            sub.consumed
                .iter()
                .map(|(prefix, last)| (format!("b{k}_{prefix}"), last + offset)),
        );
        // The blocks share the tiles: the chain puts each block's code in
        // scope `b{k}` (its instances' names start `b{k}_`) and prefixes
        // its constants (the vertex states that name a product's
        // instances among them) alike.
        out.instances
            .extend(sub.instances.iter().map(|r| InstanceRule {
                prefix: format!("b{k}_{}", r.prefix),
                tiles: None,
                step: r.step + offset,
                op: r.op.clone(),
            }));
        out.buffers.extend(sub.buffers.into_iter().map(|b| Buffer {
            name: format!("b{k} {}", b.name),
            live: (b.live.0 + offset, b.live.1 + offset),
            ..b
        }));
    }
    out.steps.push(step("sync", vec![], sync, false));
    out
}

fn placed_buffers(
    plan: &GemmPlan,
    tag: &str,
    lay: &TileLayout,
    input_live: (usize, usize),
    output_live: (usize, usize),
) -> Vec<Buffer> {
    let v = plan.vertex();
    let tiles = product_tiles(plan);
    let name = |n: &str| {
        if tag.is_empty() {
            n.to_string()
        } else {
            format!("{tag} {n}")
        }
    };
    let buffer = |n: &str, address: u32, size: u64, live| {
        Buffer::whole(&name(n), &tiles, address, size, live)
    };
    let mut out = vec![
        // X and Y: the bytes the vertex reads and writes (the element
        // pairs around them may hold what the vertex does not touch).
        Buffer {
            part: Part::UntilVertex,
            ..buffer("input", lay.input, v.input_bytes(), input_live)
        },
        buffer("output", lay.output, v.output_bytes(), output_live),
    ];
    if lay.home.is_some() {
        // Streamed weights, gathered with the input, read by the vertex.
        out.push(Buffer {
            part: Part::UntilVertex,
            ..buffer("weights", lay.weights, v.weight_bytes(), input_live)
        });
    }
    if let Some(r) = lay.reduction {
        // The receive and first result buffers: the rows a round keeps
        // (they share element pairs, `plan::reduction_buffer`).
        let size = reduction_rows_bytes(&v, plan.grid_k);
        // The second result buffer is Y's own (already listed).
        for (i, a) in r.iter().enumerate().filter(|&(_, &a)| a != lay.output) {
            out.push(Buffer {
                part: Part::AfterVertex,
                ..buffer(
                    &format!("reduction {i}"),
                    *a,
                    size,
                    (output_live.0, output_live.0),
                )
            });
        }
    }
    out
}

/// The MLP block's buffers (`block.rs`'s module doc: the outputs at the
/// top, fc1's then fc2's, the streamed weights below them, the inputs
/// below both, the reduction buffers over the inputs), live over the steps
/// `layer_norm (0), exchange_a (1), fc1 (2), exchange_b (3), fc2 (4)`.
fn block_buffers(plan: &MlpPlan) -> Vec<Buffer> {
    let lay = &plan.layout;
    let mut out = placed_buffers(&plan.fc1, "fc1", &lay.fc1, (1, 2), (2, 3));
    out.extend(placed_buffers(&plan.fc2, "fc2", &lay.fc2, (3, 4), (4, 4)));
    let ln_out = plan.shape.ln_out_bytes();
    out.push(Buffer::whole(
        "layer_norm output",
        &plan.ln_tiles,
        lay.ln_out,
        u64::from(ln_out),
        (0, 1),
    ));
    let span = u64::from(owned_rows_bytes(&plan.fc2));
    let fc2_tiles = product_tiles(&plan.fc2);
    // fc2's bias rows: written beside LayerNorm, read by the residual add.
    for (name, address, live) in [
        ("residual", lay.residual, (1, 4)),
        ("sum", lay.sum, (4, 4)),
        ("fc2 bias rows", lay.bias, (0, 4)),
    ] {
        out.push(Buffer::whole(name, &fc2_tiles, address, span, live));
    }
    out
}
