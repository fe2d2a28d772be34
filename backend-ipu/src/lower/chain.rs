//! A chain of transformer blocks in one executable: an encoder layer
//! (`--extract layer:N`: the attention block, then the MLP block), the
//! model's tail (`--extract head`: the post-LayerNorm and pooling head
//! ([`super::pool_head`]), then the head's MLP block on its one row) or any
//! sequence of such blocks, each reading the previous one's result. The
//! function returns the last block's result and any pooling head's
//! post-LayerNorm rows, in its own order (the chain's host outputs).
//!
//! The blocks share the chip in time: each is planned on every tile, as
//! it would be alone, in the memory the blocks before it leave
//! ([`super::window`]): its weights, constants and input rows in private
//! memory after theirs, its products' buffers in scratch every block
//! shares, its owned adds' rows in the add columns after theirs. Between
//! two blocks one scheduled exchange (a *link*) moves the first block's
//! result, as its output tiles hold it (16-channel runs of their owned
//! rows), into the next one's input rows on its LN tiles. Every tile runs
//! every superstep: a tile a block does not use runs its syncs. Each
//! block's code on a tile is a scope of its own (`b{k}`,
//! [`crate::codelets::scope`]), so each tile's program (entered at
//! `b0_main`) is
//!
//! ```text
//! b0_main: [block 0 or its syncs] sync [link 0] sync bri b1_main
//! b1_main: [block 1 or its syncs] ... exitz
//! ```
//!
//! Known limits, each a plan to lift: repeated layers are lowered once
//! each rather than as one body run in a loop (every layer's code and
//! weights are on the tiles at once: so400m's do not fit); a tile's
//! exchange code is reported as the sum of each block's busiest tile's.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use ipuc_dialects::ipu::{self, build, TensorPiece};
use ipuc_dialects::{func, nn};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, OpId, Type, Value};

use super::attention::{attention_from, AttentionMatch};
use super::attention_block::{emit_attention_in, plan_attention_in, AttentionPlan};
use super::block::{emit_mlp_in, plan_mlp_in, MlpPlan};
use super::block_match::{check_function_returns, from_only_argument};
use super::codegen::{append_host_tensors, Frame, Lowered, StepEstimates};
use super::mlp::{mlp_from, MlpMatch};
use super::passes::{chain, only_user};
use super::patch_embed::{emit_patch_in, patch_from, plan_patch_in, PatchMatch, PatchPlan};
use super::plan::GemmPlan;
use super::pool::{pool_attention, pool_from, PoolMatch};
use super::pool_head::{emit_pool_in, plan_pool_in, PoolPlan};
use super::schedule::{schedule, Chunk, Schedule, Transfer};
use super::window::{Window, ADDS_FULL, ADD_COLUMNS};
use crate::codelets::emitter::{inst, op, Emitter};

/// One block of a chain.
#[derive(Clone, Debug)]
pub enum ChainBlock {
    /// An attention block.
    Attention(AttentionMatch),
    /// An MLP block.
    Mlp(MlpMatch),
    /// A patch embedding (first, reading the image).
    Patch(PatchMatch),
    /// A post-LayerNorm and pooling head.
    Pool(PoolMatch),
}

impl ChainBlock {
    /// The op whose result is the block's.
    fn add(&self) -> OpId {
        match self {
            ChainBlock::Attention(b) => b.add,
            ChainBlock::Mlp(b) => b.add,
            ChainBlock::Patch(b) => b.add,
            ChainBlock::Pool(b) => b.last,
        }
    }

    /// Every op of the block.
    pub fn ops(&self) -> &[OpId] {
        match self {
            ChainBlock::Attention(b) => &b.ops,
            ChainBlock::Mlp(b) => &b.ops,
            ChainBlock::Patch(b) => &b.ops,
            ChainBlock::Pool(b) => &b.ops,
        }
    }
}

/// What a chain's host output holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainOutput {
    /// The last block's result.
    Last,
    /// The post-LayerNorm rows of the pooling head that is block `k`.
    PostLn(usize),
}

/// A matched chain: its blocks in order, the chain's input and outputs.
#[derive(Clone, Debug)]
pub struct ChainMatch {
    /// The blocks.
    pub blocks: Vec<ChainBlock>,
    /// The first block's input (f16).
    pub input: Value,
    /// The function's results in order: what each holds, and the type of
    /// its host stream.
    pub outputs: Vec<(ChainOutput, Type)>,
}

/// The block that starts at LayerNorm `ln`: an attention block when the
/// LayerNorm's product feeds an `nn.split`, else an MLP block.
fn block_from(ctx: &Context, ln: OpId) -> Result<ChainBlock, Diagnostic> {
    let attention = only_user(ctx, ln)
        .filter(|&p| [nn::MATMUL, nn::LINEAR].contains(&ctx.name_str(p)))
        .and_then(|p| chain(ctx, p).ok())
        .and_then(|c| only_user(ctx, c.last))
        .filter(|&s| ctx.name_str(s) == nn::SPLIT)
        .and_then(|s| ctx.uses(ctx.results(s)[0]).first().map(|u| u.op))
        .filter(|&a| ctx.name_str(a) == nn::ATTENTION);
    match attention {
        Some(att) => {
            let b = attention_from(ctx, att)?;
            Ok(ChainBlock::Attention(b))
        }
        None if pool_attention(ctx, ln).is_some() => Ok(ChainBlock::Pool(pool_from(ctx, ln)?)),
        None => Ok(ChainBlock::Mlp(mlp_from(ctx, ln)?)),
    }
}

/// The chain of `f`, if `f` starts with a patch embedding or holds two or
/// more LayerNorms (`None` otherwise: one block or none); an error says
/// what does not match.
pub fn match_chain(ctx: &Context, f: OpId) -> Result<Option<ChainMatch>, Diagnostic> {
    let Some(body) = func::entry_block(ctx, f) else {
        return Ok(None);
    };
    let lns: Vec<OpId> = ctx
        .block_ops_vec(body)
        .into_iter()
        .filter(|&o| ctx.name_str(o) == nn::LAYER_NORMALIZATION)
        .collect();
    let patch = ctx.block_ops_vec(body).into_iter().find(|&o| {
        ctx.name_str(o) == nn::CONV2D && from_only_argument(ctx, body, ctx.operands(o)[0])
    });
    if lns.len() < 2 && patch.is_none() {
        return Ok(None);
    }
    let mismatch = |op: OpId, msg: &str| {
        Diagnostic::op_error(
            ctx,
            op,
            format!("{msg}; the lowering takes a chain of attention, MLP and pooling-head blocks, each LayerNorm reading the previous block's result"),
        )
    };
    let mut blocks = Vec::new();
    let (input, first) = match patch {
        Some(conv) => {
            let p = patch_from(ctx, conv)?;
            let input = p.input;
            let tokens = ctx.results(p.add)[0];
            let first = ctx
                .uses(tokens)
                .iter()
                .map(|u| u.op)
                .find(|&u| ctx.name_str(u) == nn::LAYER_NORMALIZATION);
            blocks.push(ChainBlock::Patch(p));
            (input, first)
        }
        None => {
            let first = lns
                .iter()
                .copied()
                .find(|&ln| from_only_argument(ctx, body, ctx.operands(ln)[0]));
            let input = first.map_or_else(|| ctx.block_args(body)[0], |ln| ctx.operands(ln)[0]);
            (input, first)
        }
    };
    if blocks.is_empty() && first.is_none() {
        // Name what comes before the first block: the ops the lowering
        // would have to handle first.
        let mut before: Vec<&str> = Vec::new();
        for o in ctx.block_ops_vec(body) {
            if o == lns[0] {
                break;
            }
            let name = ctx.name_str(o);
            if ![nn::CONSTANT, nn::CAST].contains(&name) && !before.contains(&name) {
                before.push(name);
            }
        }
        return Err(mismatch(
            lns[0],
            &format!(
                "no LayerNorm reads the function's only argument (or its cast): the first is preceded by {}, which the IPU lowering does not lower yet",
                if before.is_empty() {
                    "nothing it can name".to_string()
                } else {
                    before.join(", ")
                }
            ),
        ));
    }
    let mut ln = first;
    while let Some(at) = ln {
        let block = block_from(ctx, at)?;
        let result = ctx.results(block.add())[0];
        blocks.push(block);
        let next: Vec<OpId> = ctx
            .uses(result)
            .iter()
            .map(|u| u.op)
            .filter(|&u| ctx.name_str(u) == nn::LAYER_NORMALIZATION)
            .collect();
        ln = match next.as_slice() {
            [] => None,
            [n] => Some(*n),
            [_, n, ..] => return Err(mismatch(*n, "a block's result feeds two LayerNorms")),
        };
    }
    let last = blocks
        .last()
        .map(ChainBlock::add)
        .expect("one block at least");
    let ops: Vec<OpId> = blocks.iter().flat_map(|b| b.ops().to_vec()).collect();
    // The values the function may return: the last block's result, and
    // each pooling head's post-LayerNorm.
    let mut results = vec![(ChainOutput::Last, ctx.results(last)[0])];
    for (k, b) in blocks.iter().enumerate() {
        if let ChainBlock::Pool(p) = b {
            results.push((ChainOutput::PostLn(k), ctx.results(p.ln)[0]));
        }
    }
    let values: Vec<Value> = results.iter().map(|r| r.1).collect();
    let outputs = check_function_returns(ctx, body, input, (&values, &ops), &mismatch)?
        .into_iter()
        .map(|(k, ty)| (results[k].0, ty))
        .collect();
    Ok(Some(ChainMatch {
        blocks,
        input,
        outputs,
    }))
}

/// A planned block.
#[derive(Clone, Debug)]
pub enum PlannedBlock {
    /// An attention block's plan.
    Attention(AttentionPlan),
    /// An MLP block's plan.
    Mlp(MlpPlan),
    /// A patch embedding's plan.
    Patch(PatchPlan),
    /// A pooling head's plan.
    Pool(PoolPlan),
}

impl PlannedBlock {
    fn input_pieces(&self) -> Vec<TensorPiece> {
        match self {
            PlannedBlock::Attention(p) => p.input_pieces(),
            PlannedBlock::Mlp(p) => p.input_pieces(),
            PlannedBlock::Patch(p) => p.input_pieces(),
            PlannedBlock::Pool(p) => p.input_pieces(),
        }
    }

    fn output_pieces(&self) -> Vec<TensorPiece> {
        match self {
            PlannedBlock::Attention(p) => p.output_pieces(),
            PlannedBlock::Mlp(p) => p.output_pieces(),
            PlannedBlock::Patch(p) => p.output_pieces(),
            PlannedBlock::Pool(p) => p.output_pieces(),
        }
    }

    fn syncs(&self) -> u32 {
        match self {
            PlannedBlock::Attention(p) => p.syncs(),
            PlannedBlock::Mlp(p) => p.syncs(),
            PlannedBlock::Patch(p) => p.syncs(),
            PlannedBlock::Pool(p) => p.syncs(),
        }
    }

    /// The block's products, in op order.
    pub fn products(&self) -> Vec<GemmPlan> {
        match self {
            PlannedBlock::Attention(p) => vec![p.qk.clone(), p.vt.clone(), p.out.clone()],
            PlannedBlock::Mlp(p) => vec![p.fc1.clone(), p.fc2.clone()],
            PlannedBlock::Patch(p) => vec![p.product.clone()],
            PlannedBlock::Pool(p) => vec![p.sv.clone(), p.out.clone()],
        }
    }

    /// The width of the rows the block reads (a link into it moves rows
    /// of this many channels).
    fn width(&self) -> i64 {
        i64::from(match self {
            PlannedBlock::Attention(p) => p.shape.c,
            PlannedBlock::Mlp(p) => p.shape.c,
            PlannedBlock::Patch(p) => p.shape.k_padded(),
            PlannedBlock::Pool(p) => p.shape.c,
        })
    }

    /// What the block leaves of the memory it was planned in.
    pub fn next(&self) -> Window {
        match self {
            PlannedBlock::Attention(p) => p.next,
            PlannedBlock::Mlp(p) => p.next,
            PlannedBlock::Patch(p) => p.next,
            PlannedBlock::Pool(p) => p.next,
        }
    }

    /// Every tile of the block.
    pub fn tiles(&self) -> Vec<u32> {
        match self {
            PlannedBlock::Attention(p) => p.tiles(),
            PlannedBlock::Mlp(p) => p.tiles(),
            PlannedBlock::Patch(p) => p.tiles(),
            PlannedBlock::Pool(p) => p.tiles(),
        }
    }

    /// The plan report's lines.
    pub fn report(&self, machine: &MachineModel) -> String {
        match self {
            PlannedBlock::Attention(p) => p.report(machine),
            PlannedBlock::Patch(p) => p.report(machine),
            PlannedBlock::Pool(p) => p.report(machine),
            PlannedBlock::Mlp(p) => format!(
                "MLP block {}x{}x{}: LayerNorm on tiles {}..={}\n  fc1: {}\n  fc2: {}\n",
                p.shape.m,
                p.shape.c,
                p.shape.h,
                p.ln_tiles.first().copied().unwrap_or(0),
                p.ln_tiles.last().copied().unwrap_or(0),
                p.fc1,
                p.fc2
            ),
        }
    }
}

/// Plans each block of `chain` on the whole chip, one after another in
/// memory ([`super::window`]): each block's private memory after the
/// previous ones', the shared scratch and the add columns in common. The
/// columns start one element wide and widen while a block's rows do not
/// fit them.
pub fn plan_chain(
    ctx: &Context,
    chain: &ChainMatch,
    machine: &MachineModel,
) -> Result<Vec<PlannedBlock>, Diagnostic> {
    let bank = machine.element_bytes;
    let most = (machine.interleaved_base - machine.sram_base) / bank / ADD_COLUMNS;
    let mut stride = bank;
    loop {
        match plan_blocks(chain, machine, stride) {
            Ok(plans) => return Ok(plans),
            Err((_, e, _)) if e.starts_with(ADDS_FULL) && stride / bank < most => stride += bank,
            Err((k, e, kept)) => {
                let (at, what) = match &chain.blocks[k] {
                    ChainBlock::Attention(a) => (a.attention, "attention block"),
                    ChainBlock::Mlp(m) => (m.ln, "MLP block"),
                    ChainBlock::Pool(p) => (p.attention, "pooling head"),
                    ChainBlock::Patch(p) => (p.conv, "patch embedding"),
                };
                return Err(Diagnostic::op_error(
                    ctx,
                    at,
                    format!(
                        "cannot plan the {what} (block {k} of the chain's {}): {e} (the blocks share the chip's tiles one after another; each keeps its weights and inputs in memory of its own: blocks 0..{k} keep {kept} of every tile's {} bytes of interleaved memory)",
                        chain.blocks.len(),
                        machine.sram_end - machine.interleaved_base
                    ),
                ));
            }
        }
    }
}

/// The chain's blocks planned in turn with add columns of `stride` bytes;
/// the first failure's block, message and the private bytes the blocks
/// before it keep.
fn plan_blocks(
    chain: &ChainMatch,
    machine: &MachineModel,
    stride: u32,
) -> Result<Vec<PlannedBlock>, (usize, String, u32)> {
    let range = (0, machine.tiles);
    let mut window = Window::shared(machine, stride);
    let mut plans = Vec::with_capacity(chain.blocks.len());
    for (k, b) in chain.blocks.iter().enumerate() {
        let planned = match b {
            ChainBlock::Attention(a) => {
                plan_attention_in(a.shape, machine, range, window).map(PlannedBlock::Attention)
            }
            ChainBlock::Mlp(m) => {
                plan_mlp_in(m.shape, machine, (None, None), range, window).map(PlannedBlock::Mlp)
            }
            ChainBlock::Pool(p) => {
                plan_pool_in(p.shape, machine, range, window).map(PlannedBlock::Pool)
            }
            ChainBlock::Patch(p) => {
                plan_patch_in(p.shape, machine, range, window).map(PlannedBlock::Patch)
            }
        }
        .map_err(|e| (k, e, window.base - machine.interleaved_base))?;
        window = planned.next();
        plans.push(planned);
    }
    Ok(plans)
}

/// The link from `from`'s output to `to`'s input rows (`c` channels):
/// one transfer per run of an output tile.
pub fn link(from: &[TensorPiece], to: &[TensorPiece], c: i64) -> Vec<Transfer> {
    let rows: std::collections::BTreeMap<i64, &TensorPiece> =
        to.iter().map(|p| (p.first / c, p)).collect();
    from.iter()
        .map(|p| {
            let row = rows[&(p.first / c)];
            Transfer {
                sender: p.tile as u32,
                chunks: vec![Chunk {
                    address: p.address as u32,
                    words: (p.count * 2 / 4) as u32,
                }],
                receivers: vec![(
                    row.tile as u32,
                    (row.address + (p.first - row.first) * 2) as u32,
                )],
                segment: None,
            }
        })
        .collect()
}

/// Checks that no tile receives a link's words where it sends some of
/// them from: the blocks' inputs are private and their results in the
/// add columns or shared scratch, so this holds by construction; a layout
/// that breaks it is a bug caught here, before the simulator reads stale
/// words.
fn check_link(transfers: &[Transfer]) -> Result<(), String> {
    let mut sent: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
    for t in transfers {
        for c in &t.chunks {
            sent.entry(t.sender)
                .or_default()
                .push((c.address, c.address + 4 * c.words));
        }
    }
    for t in transfers {
        let bytes: u32 = t.chunks.iter().map(|c| 4 * c.words).sum();
        for &(tile, at) in &t.receivers {
            if let Some(&(a, b)) = sent
                .get(&tile)
                .and_then(|s| s.iter().find(|&&(a, b)| at < b && a < at + bytes))
            {
                return Err(format!(
                    "tile {tile} receives 0x{at:x}..0x{:x} over 0x{a:x}..0x{b:x}, which it sends",
                    at + bytes
                ));
            }
        }
    }
    Ok(())
}

/// Lowers the chain to one `ipu.executable` appended to `module_body`.
pub fn lower_chain(
    ctx: &mut Context,
    module_body: BlockId,
    chain: &ChainMatch,
    machine: &MachineModel,
) -> Result<Lowered, Diagnostic> {
    let plans = plan_chain(ctx, chain, machine)?;
    let every: Vec<u32> = plans
        .iter()
        .flat_map(PlannedBlock::tiles)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut links: Vec<Schedule> = Vec::with_capacity(plans.len());
    for (k, w) in plans.windows(2).enumerate() {
        let transfers = link(&w[0].output_pieces(), &w[1].input_pieces(), w[1].width());
        check_link(&transfers).map_err(|e| {
            Diagnostic::op_error(
                ctx,
                chain.blocks[k + 1].add(),
                format!(
                    "the exchange into block {} would overwrite what it moves: {e}",
                    k + 1
                ),
            )
        })?;
        links.push(schedule(machine, &every, &transfers));
    }
    let syncs: Vec<u32> = plans.iter().map(PlannedBlock::syncs).collect();
    let last = chain.blocks.last().expect("a chain has blocks");
    let loc = ctx.loc(last.add()).clone();
    let (executable, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(module_body, executable);
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    // What a tile runs after block `k`: the link to the next block
    // between two syncs.
    let after = |k: usize, e: &mut Emitter, t: u32| -> u64 {
        links.get(k).map_or(0, |l| {
            sync(e);
            let bytes = l.emit(e, machine, t, &format!("link{k}"));
            sync(e);
            bytes
        })
    };
    let bodies: RefCell<BTreeMap<u32, BlockId>> = RefCell::new(BTreeMap::new());
    let mut exchange_code_bytes_max = 0;
    let mut chain_estimates = vec![None; plans.len()];
    for (k, plan) in plans.iter().enumerate() {
        let before: BTreeSet<OpId> = ctx.block_ops_vec(exe_body).into_iter().collect();
        // Each tile's ops so far: what block k adds goes into its scope.
        let ops_before: BTreeMap<u32, usize> = bodies
            .borrow()
            .iter()
            .map(|(&t, &b)| (t, ctx.block_ops_vec(b).len()))
            .collect();
        let next = (k + 1 < plans.len()).then(|| format!("b{}_main", k + 1));
        let after_k = |e: &mut Emitter, t: u32| after(k, e, t);
        let frame = Frame {
            executable,
            exe_body,
            after: &after_k,
            tiles: Some(&bodies),
            next: next.as_deref(),
        };
        let mut bytes = match (plan, &chain.blocks[k]) {
            (PlannedBlock::Attention(p), ChainBlock::Attention(b)) => {
                let lowered =
                    emit_attention_in(ctx, &frame, p, &b.constants, machine, loc.clone())?;
                chain_estimates[k] = Some(StepEstimates::Attention(lowered.estimate));
                lowered.exchange_code_bytes_max
            }
            (PlannedBlock::Mlp(p), ChainBlock::Mlp(b)) => {
                let lowered = emit_mlp_in(ctx, &frame, p, &b.constants, machine, loc.clone())?;
                chain_estimates[k] = Some(StepEstimates::Mlp(lowered.estimate));
                lowered.exchange_code_bytes_max
            }
            (PlannedBlock::Patch(p), ChainBlock::Patch(b)) => {
                emit_patch_in(ctx, &frame, p, &b.constants, machine, loc.clone())?
                    .exchange_code_bytes_max
            }
            (PlannedBlock::Pool(p), ChainBlock::Pool(b)) => {
                let lowered = emit_pool_in(ctx, &frame, p, &b.constants, machine, loc.clone())?;
                chain_estimates[k] = Some(StepEstimates::Pool(lowered.estimate));
                lowered.exchange_code_bytes_max
            }
            _ => unreachable!("plans follow the blocks"),
        };
        // The tiles the block does not use run its syncs and the link.
        let own: BTreeSet<u32> = plan.tiles().into_iter().collect();
        for &t in every.iter().filter(|t| !own.contains(t)) {
            let mut e = frame.open_tile(ctx, t, &loc);
            (0..syncs[k]).for_each(|_| sync(&mut e));
            bytes = bytes.max(frame.close_tile(&mut e, t));
        }
        // A tile's exchange code is every block's on it: count each
        // block's busiest tile (a bound).
        exchange_code_bytes_max += bytes;
        // Each block's labels and sections in a scope of its own: the
        // blocks share each tile's namespace.
        for (&t, &body) in bodies.borrow().iter() {
            let first = ops_before.get(&t).copied().unwrap_or(0);
            let mut e = Emitter::new(ctx, body, loc.clone());
            e.scope_since(first, &format!("b{k}"));
        }
        // Each block names its constants alone: prefix them with the
        // block's index.
        for o in ctx.block_ops_vec(exe_body) {
            if !before.contains(&o) && ctx.name_str(o) == ipu::TENSOR {
                let name = ctx
                    .attr(o, "sym_name")
                    .and_then(Attribute::as_str)
                    .unwrap_or_default()
                    .to_string();
                ctx.set_attr(o, "sym_name", Attribute::string(&format!("b{k}_{name}")));
            }
        }
    }
    // Every tile enters at the first block's program.
    for &body in bodies.borrow().values() {
        if let Some(tile) = ctx.block_parent_op(body) {
            ctx.set_attr(tile, "entry", Attribute::symbol_ref("b0_main"));
        }
    }
    let x_ty: Type = ctx.value_type(chain.input).clone();
    let input = plans[0].input_pieces();
    let outputs = chain
        .outputs
        .iter()
        .map(|(what, ty)| {
            let pieces = match (what, &plans[..]) {
                (ChainOutput::PostLn(k), plans) => match &plans[*k] {
                    PlannedBlock::Pool(p) => p.ln_output_pieces(),
                    _ => unreachable!("post-LayerNorm outputs are pooling heads'"),
                },
                (ChainOutput::Last, [.., last]) => last.output_pieces(),
                (ChainOutput::Last, []) => unreachable!("a chain has blocks"),
            };
            (ty.clone(), pieces)
        })
        .collect();
    append_host_tensors(ctx, exe_body, (vec![(x_ty, input)], outputs), &loc);
    Ok(Lowered {
        executable,
        exchange_code_bytes_max,
        block_estimate: None,
        chain_estimates,
        chain_links: links.iter().map(|l| l.cycles).collect(),
    })
}

/// The plan report of a chain: each block's.
pub fn chain_report(
    ctx: &Context,
    chain: &ChainMatch,
    machine: &MachineModel,
) -> Result<String, Diagnostic> {
    let plans = plan_chain(ctx, chain, machine)?;
    let loc = chain
        .blocks
        .first()
        .map(|b| ipuc_ir::diagnostics::location_prefix(ctx.loc(b.add())))
        .unwrap_or_default();
    let last = plans.last().map(PlannedBlock::next);
    let mut out = format!(
        "{loc}: a chain of {} blocks sharing the chip in time: private memory 0x{:x}..0x{:x} per tile, add columns of {} bytes\n",
        plans.len(),
        machine.interleaved_base,
        last.map_or(machine.interleaved_base, |w| w.base),
        last.map_or(0, |w| w.adds_stride),
    );
    let mut base = machine.interleaved_base;
    for (k, p) in plans.iter().enumerate() {
        let next = p.next().base;
        out += &format!(
            "block {k}: private memory 0x{base:x}..0x{next:x} ({} bytes) {}",
            next - base,
            p.report(machine)
        );
        base = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(sender: u32, address: u32, receiver: (u32, u32)) -> Transfer {
        Transfer {
            sender,
            chunks: vec![Chunk { address, words: 4 }],
            receivers: vec![receiver],
            segment: None,
        }
    }

    #[test]
    fn a_link_may_not_receive_over_what_it_sends() {
        // Tile 1 sends 0x1000..0x1010 and tile 2 sends to it at 0x1008.
        let clash = [
            transfer(1, 0x1000, (2, 0x2000)),
            transfer(2, 0x3000, (1, 0x1008)),
        ];
        let e = check_link(&clash).unwrap_err();
        assert!(
            e.contains("tile 1 receives 0x1008..0x1018 over 0x1000..0x1010"),
            "{e}"
        );
        // Right after what it sends is fine.
        let apart = [
            transfer(1, 0x1000, (2, 0x2000)),
            transfer(2, 0x3000, (1, 0x1010)),
        ];
        check_link(&apart).unwrap();
    }
}
