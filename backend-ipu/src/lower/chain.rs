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
//! rows), into the next one's input rows on its LN tiles; where an MLP
//! block's fc1 weights stream in, the link also gathers them
//! ([`super::block::fc1_gather_before`]: only the LN tiles receive
//! otherwise, so fc1's tiles take them on idle ports), and into an
//! attention block qk's weights and vt's input
//! ([`super::attention_exchange::qkv_gather_before`]). The link is
//! scheduled with the work each tile does after it before the next sync
//! (LayerNorm on the LN tiles, the next block's broadcasts and restores
//! beside it, [`super::schedule::schedule_before`]), so the LN tiles get
//! their rows before the product tiles their weights. Every tile runs
//! every superstep: a tile a block does not use runs its syncs. Each
//! block's code on a tile is a scope of its own (`b{k}`,
//! [`crate::codelets::scope`]), so each tile's program (entered at
//! `b0_main`) is
//!
//! ```text
//! b0_main: [block 0 or its syncs] sync [link 0] bri b1_main
//! b1_main: [block 1 or its syncs] ... exitz
//! ```
//!
//! Identical layers are one body run in a loop ([`super::chain_loop`]).
//! A tile's exchange code is every block's on it (each block's frame
//! counts its tiles', [`Frame::count_exchange`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use ipuc_dialects::ipu::{self, build, TensorPiece};
use ipuc_dialects::{func, nn};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, OpId, Type, Value};

use super::attention::{attention_from, AttentionMatch};
use super::attention_block::{
    emit_attention_constants, emit_attention_in, plan_attention_in, AttentionConstants,
    AttentionPlan, AttentionShape,
};
use super::attention_emit::beside_ln_of;
use super::attention_exchange::qkv_gather_before;
use super::block::{
    emit_mlp_constants, emit_mlp_in, fc1_gather_before, plan_mlp_in, MlpConstants, MlpPlan,
    MlpShape, Weights,
};
use super::block_exchange::round_robin;
use super::block_match::{check_function_returns, from_only_argument};
use super::chain_loop::{
    archive_layer, constants_since, copies, copies_apart, emit_loop_data, emit_loop_end,
    emit_loop_start, emit_loop_start_data, extents as extents_of, find_repeat, ArchivedRange,
    LoopMemory, Repeat, GRAIN,
};
use super::codegen::{
    append_host_tensors, emit_calls, launch_cycles, Calls, Frame, Lowered, StepEstimates,
};
use super::mlp::{mlp_from, MlpMatch};
use super::passes::{chain, only_user};
use super::patch_embed::{emit_patch_in, patch_from, plan_patch_in, PatchMatch, PatchPlan};
use super::plan::GemmPlan;
use super::pool::{pool_attention, pool_from, PoolMatch};
use super::pool_head::{emit_pool_in, plan_pool_in, PoolPlan};
use super::schedule::{schedule_within, Chunk, CodeBudget, Joining, Schedule, Transfer};
use super::window::{Columns, Window, ADD_COLUMNS};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::instance_memo::InstanceMemo;
use crate::codelets::scope::block_scope;
use crate::emit::executable::compile_threads;

/// The most bytes of exchange code `s` emits on any of `tiles` (with the
/// routines it calls, as a chain's link emits it), in a scratch context.
fn link_code(machine: &MachineModel, s: &Schedule, tiles: &[u32]) -> u64 {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let loc = ipuc_ir::Location::unknown();
    let (_, exe_body) = build::executable(&mut ctx, &machine.name, loc.clone());
    let mut most = 0;
    for &t in tiles {
        let (tile, body) = build::tile(&mut ctx, t, None, loc.clone());
        ctx.append_op(exe_body, tile);
        let mut e = Emitter::new(&mut ctx, body, loc.clone());
        e.code_section(".text.link", ipu::SectionKind::Supervisor);
        let mut calls = Calls::new();
        most = most.max(s.emit(&mut e, machine, (t, "link"), Some(&mut calls)));
    }
    most
}

/// The byte ranges `[lo, hi)` each tile sends in `transfers`, by tile.
fn sent_ranges(transfers: &[Transfer]) -> BTreeMap<u32, Vec<(u32, u32)>> {
    let mut out: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
    for t in transfers {
        out.entry(t.sender).or_default().extend(
            t.chunks
                .iter()
                .map(|c| (c.address, c.address + 4 * c.words)),
        );
    }
    out
}

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

    /// What the block's code depends on, for a block a loop may repeat
    /// (`None`: one that never repeats).
    fn key(&self) -> Option<BlockKey> {
        match self {
            ChainBlock::Attention(b) => Some(BlockKey::Attention(b.shape)),
            ChainBlock::Mlp(b) => Some(BlockKey::Mlp(b.shape)),
            ChainBlock::Patch(_) | ChainBlock::Pool(_) => None,
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

/// The shape of a block a loop may repeat: two blocks of one key run the
/// same code on other constants.
#[derive(Clone, Copy, Debug, PartialEq)]
enum BlockKey {
    Attention(AttentionShape),
    Mlp(MlpShape),
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
    let attention = super::block_match::product_after(ctx, ln)
        .1
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
    Attention(Box<AttentionPlan>),
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

    /// The streamed weights the block gathers in the link into it
    /// (fc1's, [`fc1_gather_before`]; qk's and vt's,
    /// [`qkv_gather_before`]), sent from their home pieces.
    fn gather_before(&self) -> Vec<Transfer> {
        match self {
            PlannedBlock::Mlp(p) => fc1_gather_before(p),
            PlannedBlock::Attention(p) => qkv_gather_before(p),
            PlannedBlock::Patch(_) | PlannedBlock::Pool(_) => Vec::new(),
        }
    }

    /// The work each tile of the block does right after the link into
    /// it, at a fence, before the block's first sync: LayerNorm on its
    /// LN tiles, and what the block runs beside it (bias broadcasts,
    /// window restores, zeroed rows). The link is scheduled with them as
    /// its tails ([`schedule_before`]). A patch embedding has none.
    fn link_tails(
        &self,
        machine: &MachineModel,
    ) -> Result<BTreeMap<u32, u64>, crate::codelets::CodeletError> {
        let (ln, mut tails) = match self {
            PlannedBlock::Attention(p) => (p.ln(), beside_ln_of(p, machine)?),
            PlannedBlock::Mlp(p) => (p.ln(), p.beside_ln(machine)?),
            PlannedBlock::Pool(p) => {
                let mut beside = BTreeMap::new();
                for (t, fills) in p.sv_zero_tokens() {
                    beside.insert(t, launch_cycles(&fills, machine)?);
                }
                (p.ln(), beside)
            }
            PlannedBlock::Patch(_) => return Ok(BTreeMap::new()),
        };
        let cycles = ln.estimate(machine)?;
        for &t in ln.tiles {
            *tails.entry(t).or_default() += cycles;
        }
        Ok(tails)
    }

    /// The block's LN tiles (none for the patch embedding).
    pub fn ln_tiles(&self) -> &[u32] {
        match self {
            PlannedBlock::Attention(p) => &p.ln_tiles,
            PlannedBlock::Mlp(p) => &p.ln_tiles,
            PlannedBlock::Pool(p) => &p.ln_tiles,
            PlannedBlock::Patch(_) => &[],
        }
    }

    /// The plan report's lines.
    pub fn report(&self, machine: &MachineModel) -> String {
        match self {
            PlannedBlock::Attention(p) => p.report(machine),
            PlannedBlock::Patch(p) => p.report(machine),
            PlannedBlock::Pool(p) => p.report(machine),
            PlannedBlock::Mlp(p) => format!(
                "MLP block {}x{}x{}: LayerNorm on tiles {}..={}\n  fc1: {}\n  fc2: {}\n{}",
                p.shape.m,
                p.shape.c,
                p.shape.h,
                p.ln_tiles.first().copied().unwrap_or(0),
                p.ln_tiles.last().copied().unwrap_or(0),
                p.fc1,
                p.fc2,
                p.weights_report()
            ),
        }
    }
}

/// A planned chain: a plan for every block, and the loop that runs its
/// repeated layers, if any ([`super::chain_loop`]).
#[derive(Clone, Debug)]
pub struct ChainPlan {
    /// Each block's plan (a later period of a loop's body: a copy of the
    /// body's).
    pub blocks: Vec<PlannedBlock>,
    /// The repeated blocks and where their constants are.
    pub repeat: Option<(Repeat, LoopMemory)>,
    /// The end of every block's private interleaved memory (the archive
    /// included).
    pub private_end: u32,
    /// The lowest byte any block's scratch uses.
    pub scratch_low: u32,
    /// Bytes of private region 0 the blocks keep, below the add columns.
    pub region0: u32,
}

/// The longest body a loop repeats, in blocks.
const MAX_PERIOD: usize = 4;

/// Plans each block of `chain` on the whole chip, one after another in
/// memory ([`super::window`]): each block's private memory after the
/// previous ones', the shared scratch and the add columns in common. The
/// columns start one element wide and widen while a block's rows do not
/// fit them. Identical layers are planned once, as the body of a loop
/// whose later layers' constants wait in an archive below every block's
/// memory ([`super::chain_loop`]), sized by planning again until it holds
/// them; once sized, the chain measures the private region 0 its blocks
/// keep and starts the archive in what region 0 has left above
/// [`CODE_ROOM`]. Every block's scratch stays above every block's private memory
/// (planning again with [`Window::floor`] where a first plan put it
/// lower). The weights stay resident where they fit; where a block does
/// not plan with them, the chain plans again with the MLP blocks', the
/// patch embedding's and the attention blocks' weights (qk's, out's and
/// vt's input) and the pooling head's sv input streamed in ([`super::stream`]).
pub fn plan_chain(
    ctx: &Context,
    chain: &ChainMatch,
    machine: &MachineModel,
) -> Result<ChainPlan, Diagnostic> {
    plan_chain_with(ctx, chain, machine, Weights::Resident)
}

/// [`plan_chain`] starting from `weights`: [`Weights::Resident`] streams
/// them only where the resident plan fails; [`Weights::Streamed`] streams
/// them from the first plan (`ipu-lower{weights=streamed}`, `ipu-run
/// --stream-weights`: what a model too large for resident weights runs,
/// on a model small enough to compare).
pub fn plan_chain_with(
    ctx: &Context,
    chain: &ChainMatch,
    machine: &MachineModel,
    first: Weights,
) -> Result<ChainPlan, Diagnostic> {
    let bank = machine.element_bytes;
    let keys: Vec<Option<BlockKey>> = chain.blocks.iter().map(ChainBlock::key).collect();
    let repeat = find_repeat(&keys, MAX_PERIOD);
    let mut columns = Columns::chain(machine);
    let mut archive: u32 = 0;
    let mut sizings = 0;
    let mut floor = machine.interleaved_base;
    let mut floors = 0;
    let mut weights = first;
    let streamable = !chain.blocks.is_empty();
    // Where the resident plan stopped: block, reason, kept bytes, archive.
    let mut resident_failure: Option<(usize, String, u32, u32)> = None;
    // The private region 0 the blocks keep, measured once an archive is
    // sized: what is left of region 0 for the archive follows from it.
    let mut region0: Option<u32> = None;
    // What the chain needs besides its archive, for the weights and add
    // columns it was measured with: the archive's region-0 share and the
    // error of a chain that does not fit both read it.
    let mut measured: Option<((Weights, Columns), Option<Measured>)> = None;
    let mut measure = |weights: Weights, columns: Columns| match measured {
        Some((key, m)) if key == (weights, columns) => m,
        _ => {
            let m = measure_without_archive(chain, machine, (repeat, columns), weights);
            measured = Some(((weights, columns), m));
            m
        }
    };
    loop {
        let kept0 = region0.map_or(0, |r0| {
            region0_room(machine, columns.stride, r0).min(archive.next_multiple_of(bank))
        });
        match plan_blocks(
            chain,
            machine,
            columns,
            (repeat, Some(archive), kept0),
            (floor, weights),
        ) {
            Ok(plan)
                if kept0 > region0_room(machine, columns.stride, plan.region0) && sizings < 8 =>
            {
                // The blocks took more region 0 than measured: the
                // archive's share of it shrinks. (Past the retries the plan
                // stands with less room for code than CODE_ROOM; the
                // executable's overlap check reports code that outgrows it.)
                region0 = Some(plan.region0);
                sizings += 1;
            }
            Ok(plan) => return Ok(plan),
            Err(Failure::Floor(end)) if floors < 4 => {
                tracing::debug!(
                    target: "ipu-lower",
                    "a block's scratch reaches below the chain's private end 0x{end:x}: planning again above it"
                );
                floor = end;
                floors += 1;
            }
            Err(Failure::Floor(end)) => {
                return Err(Diagnostic::op_error(
                    ctx,
                    chain.blocks[0].add(),
                    format!(
                        "cannot keep the blocks' scratch above their constants: planned with its scratch above 0x{floor:x}, the chain's private memory ends at 0x{end:x}"
                    ),
                ));
            }
            Err(Failure::Block(_, e, _)) if columns.after_full(&e, machine).is_some() => {
                columns = columns
                    .after_full(&e, machine)
                    .expect("checked by the guard")
            }
            Err(Failure::Archive(bytes)) if sizings < 4 => {
                archive = bytes;
                sizings += 1;
                if region0.is_none() {
                    region0 = measure(weights, columns).map(|m| m.region0);
                }
            }
            Err(Failure::Archive(bytes)) => {
                let r = repeat.expect("an archive is a loop's");
                return Err(Diagnostic::op_error(
                    ctx,
                    chain.blocks[r.start].add(),
                    format!(
                        "cannot size the archive of the {} repeated layers: with {archive} bytes set aside the body's plan needs {bytes}",
                        r.count
                    ),
                ));
            }
            Err(Failure::Block(k, e, kept)) if weights == Weights::Resident && streamable => {
                tracing::debug!(
                    target: "ipu-lower",
                    "block {k} does not plan with every weight resident ({e}): planning again with the weights streamed in (the MLP blocks', the patch embedding's, the attention blocks' qk and out weights and value weights, the pooling head's sv input)"
                );
                resident_failure = Some((k, e, kept, archive));
                weights = Weights::Streamed;
                (columns, archive, sizings, floor, floors, region0) = (
                    Columns::chain(machine),
                    0,
                    0,
                    machine.interleaved_base,
                    0,
                    None,
                );
            }
            Err(Failure::Block(k, e, kept)) => {
                tracing::debug!(
                    target: "ipu-lower",
                    "block {k} does not plan with the weights {weights:?} and an archive of {archive} bytes: {e}"
                );
                // Streaming the weights got no further (and the body
                // planned no archive): the resident plan's reason is the
                // chain's.
                let (k, e, kept, archive, weights) = match resident_failure.take() {
                    Some((k0, e0, kept0, archive0)) if k0 >= k && archive == 0 => {
                        (k0, e0, kept0, archive0, Weights::Resident)
                    }
                    _ => (k, e, kept, archive, weights),
                };
                let (at, what) = match &chain.blocks[k] {
                    ChainBlock::Attention(a) => (a.attention, "attention block"),
                    ChainBlock::Mlp(m) => (m.ln, "MLP block"),
                    ChainBlock::Pool(p) => (p.attention, "pooling head"),
                    ChainBlock::Patch(p) => (p.conv, "patch embedding"),
                };
                let archived = match repeat {
                    Some(r) if archive > kept0 => format!(
                        ", {} of them the archive of the constants of the {} layers a loop repeats after its first{}",
                        archive - kept0,
                        r.count - 1,
                        if kept0 > 0 {
                            format!(" (another {kept0} at the top of region 0)")
                        } else {
                            String::new()
                        }
                    ),
                    _ => String::new(),
                };
                let streamed = if weights == Weights::Streamed {
                    "; planned again with the weights streamed in (the MLP blocks', the patch embedding's, the attention blocks' qk and out weights and value weights, the pooling head's sv input), as here, after the resident weights did not fit"
                } else {
                    ""
                };
                let block = format!(
                    "cannot plan the {what} (block {k} of the chain's {}): {e} (the blocks share the chip's tiles one after another; each keeps its weights and inputs in memory of its own: blocks 0..{k} keep {kept} of every tile's {} bytes of interleaved memory{archived}{streamed})",
                    chain.blocks.len(),
                    machine.sram_end - machine.interleaved_base
                );
                // With an archive set aside, the whole budget: what the
                // chain needs besides the archive, measured by planning
                // it as if the archive took nothing.
                let message = match repeat.filter(|_| archive > 0) {
                    Some(r) => match measure(weights, columns) {
                        Some(m) => archive_budget(r, (archive, kept0), &m, machine, &block),
                        None => block,
                    },
                    None => block,
                };
                return Err(Diagnostic::op_error(ctx, at, message));
            }
        }
    }
}

/// What a chain with a loop needs besides its archive: planned as if the
/// archive took no memory.
#[derive(Clone, Copy)]
struct Measured {
    /// The blocks' private interleaved memory, bytes a tile.
    private: u32,
    /// The blocks' scratch as planned so (they take what memory they
    /// find), bytes a tile.
    scratch: u32,
    /// The archive's size with these plans, bytes a tile.
    archive: u32,
    /// A slot's bytes.
    slot: u32,
    /// The blocks' private region 0, bytes a tile.
    region0: u32,
}

/// Plans `chain` (its loop `repeat`, add columns `columns` to
/// start from) with its weights as `weights` as if the loop's archive
/// took no memory (widening the add columns and raising the scratch floor
/// as [`plan_chain`] does): what it needs besides the archive. `None`
/// where it does not plan even so.
fn measure_without_archive(
    chain: &ChainMatch,
    machine: &MachineModel,
    (repeat, mut columns): (Option<Repeat>, Columns),
    weights: Weights,
) -> Option<Measured> {
    let bank = machine.element_bytes;
    let most = (machine.interleaved_base - machine.sram_base) / bank / ADD_COLUMNS;
    let mut floor = machine.interleaved_base;
    for _ in 0..2 * most as usize + 24 {
        match plan_blocks(chain, machine, columns, (repeat, None, 0), (floor, weights)) {
            Ok(plan) => {
                let (_, mem) = plan.repeat.as_ref()?;
                return Some(Measured {
                    private: plan.private_end - machine.interleaved_base,
                    scratch: machine.sram_end - plan.scratch_low,
                    archive: mem.archive_bytes(),
                    slot: mem.slot,
                    region0: plan.region0,
                });
            }
            Err(Failure::Floor(end)) if end > floor => floor = end,
            Err(Failure::Block(_, e, _)) if columns.after_full(&e, machine).is_some() => {
                columns = columns
                    .after_full(&e, machine)
                    .expect("checked by the guard")
            }
            Err(_) => return None,
        }
    }
    None
}

/// The error of a chain whose loop's archive (`archive` bytes a tile set
/// aside, up to `kept0` of them at the top of region 0) leaves its blocks
/// too little memory: the archive, the blocks' private memory and scratch
/// (`m`), and how much they exceed a tile's interleaved memory; `block`
/// (the first block that did not plan) after. The scratch is what the
/// blocks' plans took with the archive's memory free, not the least they
/// need.
fn archive_budget(
    r: Repeat,
    (archive, kept0): (u32, u32),
    m: &Measured,
    machine: &MachineModel,
    block: &str,
) -> String {
    let total = machine.sram_end - machine.interleaved_base;
    let archive = archive.max(m.archive);
    let in_region0 = archive.min(kept0);
    let fixed = archive - in_region0 + m.private;
    let region0 = if in_region0 > 0 {
        format!(
            ", {in_region0} of them at the top of region 0 (what the code's {} bytes, the add columns and {} bytes of the blocks' private region 0 leave)",
            CODE_ROOM, m.region0
        )
    } else {
        String::new()
    };
    let over = |bytes: u32| {
        if bytes > total {
            format!(", {} too many", bytes - total)
        } else {
            String::new()
        }
    };
    format!(
        "the model does not fit a tile's {total} bytes of interleaved memory: the archive of the constants of the {} layers a loop repeats after its first takes {archive} bytes a tile ({} slots of {}, the share of a layer on the tile that holds the most{region0}), and the blocks keep {} bytes of private memory a tile: {fixed} bytes of interleaved memory{} before any block's scratch (planned without the archive, the blocks' scratch uses {} bytes, what they found free; the smallest plans need less). Where it stops: {block}",
        r.count - 1,
        r.count - 1,
        m.slot,
        m.private,
        over(fixed),
        m.scratch,
    )
}

/// Bytes of region 0 a chain leaves its code (every block's, on the tile
/// with the most) when a loop's archive takes the top of region 0. One
/// so400m layer's code, exchange code included, is under 29 KiB on every
/// tile; the patch embedding's and the pooling head's come on top. The
/// executable's check that no constant overlaps a code section catches a
/// program whose code outgrows it.
pub const CODE_ROOM: u32 = 64 * 1024;

/// Region 0 a chain with add columns of `stride` bytes and `private`
/// bytes of private region 0 leaves above [`CODE_ROOM`] for a loop's
/// archive: whole elements below the interleaved region.
fn region0_room(machine: &MachineModel, stride: u32, private: u32) -> u32 {
    let below = machine.interleaved_base - ADD_COLUMNS * stride - private;
    let free = below.saturating_sub(machine.sram_base + CODE_ROOM);
    free / machine.element_bytes * machine.element_bytes
}

/// Why [`plan_blocks`] failed.
enum Failure {
    /// Block `k` did not plan: the message and the private bytes the
    /// blocks before it keep.
    Block(usize, String, u32),
    /// The loop's archive needs this many bytes, more than were set aside.
    Archive(u32),
    /// Some block's scratch reaches below the end of the chain's private
    /// memory (this address), where a later block's constants lie: plan
    /// again with the scratch kept above it ([`Window::floor`]).
    Floor(u32),
}

/// The chain's blocks planned in turn with add columns `columns`,
/// `repeat`'s body once with `archive` bytes set aside for its later
/// layers' constants (`None`: as if they took no memory, to measure what
/// the chain needs besides them; the plan is not one to lower), up to
/// `kept0` of them at the top of region 0 (whole elements, the columns
/// below them) and the rest at the bottom of interleaved memory, every
/// block's scratch above `floor`.
fn plan_blocks(
    chain: &ChainMatch,
    machine: &MachineModel,
    columns: Columns,
    (repeat, archive, kept0): (Option<Repeat>, Option<u32>, u32),
    (floor, weights): (u32, Weights),
) -> Result<ChainPlan, Failure> {
    let range = (0, machine.tiles);
    let mut window = Window::shared_below(machine, columns, kept0);
    window.floor = floor;
    let start = window;
    // One run of slots across the regions' boundary: the copies read
    // their sources at one stride a layer.
    let bytes = archive.unwrap_or(0);
    let in_region0 = bytes.min(kept0);
    let archive_at = machine.interleaved_base - in_region0;
    window.private(bytes - in_region0);
    let mut plans: Vec<PlannedBlock> = Vec::with_capacity(chain.blocks.len());
    let mut body_start = window;
    let mut memory = None;
    let kept = |w: &Window| w.base - machine.interleaved_base;
    for (k, b) in chain.blocks.iter().enumerate() {
        if let Some(r) = repeat {
            if !r.emitted(k) {
                plans.push(plans[r.code_of(k)].clone());
                continue;
            }
            if k == r.start {
                // The body runs again after itself: nothing in the
                // scratch is as the program loaded it.
                window = window.after_block();
                body_start = window;
            }
        }
        let planned = match b {
            ChainBlock::Attention(a) => plan_attention_in(a.shape, machine, range, window, weights)
                .map(|mut p| {
                    // A block before it: qk's and vt's streamed weights
                    // come in the link into it, where their tiles receive
                    // nothing else.
                    p.qkv_gathered_before = k > 0;
                    PlannedBlock::Attention(Box::new(p))
                }),
            ChainBlock::Mlp(m) => {
                plan_mlp_in(m.shape, machine, (None, None), range, window, weights).map(|mut p| {
                    // A block before it: fc1's streamed weights come in
                    // the link into it, where fc1's tiles receive nothing
                    // else.
                    p.fc1_gathered_before = k > 0 && weights.streams(&p.fc1);
                    PlannedBlock::Mlp(p)
                })
            }
            ChainBlock::Pool(p) => {
                // The earlier blocks' LN tiles send the residual: the
                // most exchange code a tile has, where the head tiles'
                // should not add to it.
                let busy: BTreeSet<u32> = plans
                    .iter()
                    .flat_map(PlannedBlock::ln_tiles)
                    .copied()
                    .collect();
                plan_pool_in(p.shape, machine, range, window, (weights, &busy))
                    .map(PlannedBlock::Pool)
            }
            ChainBlock::Patch(p) => {
                plan_patch_in(p.shape, machine, range, window, weights).map(PlannedBlock::Patch)
            }
        }
        .map_err(|e| Failure::Block(k, e, kept(&window)))?;
        let before = window;
        window = planned.next();
        tracing::debug!(
            target: "ipu-lower",
            "block {k} planned: private memory {} bytes from 0x{:x}, private region 0 {} bytes, scratch from 0x{:x}",
            window.base - before.base,
            before.base,
            window.region0_taken_since(&before),
            window.scratch_low
        );
        plans.push(planned);
        if let Some(r) = repeat.filter(|r| k == r.last()) {
            let ranges = window
                .taken_since(&body_start, GRAIN)
                .map_err(|e| Failure::Block(k, e, kept(&body_start)))?;
            // The archive sized before the blocks after the loop plan
            // (a failure there then counts it).
            let mut mem = LoopMemory::new(ranges, archive_at, r.count);
            mem.pack(body_extents(chain, &plans, r, &mem)?);
            if archive.is_some_and(|a| mem.archive_bytes() > a) {
                return Err(Failure::Archive(mem.archive_bytes()));
            }
            memory = Some((r, mem));
        }
    }
    if window.scratch_low < window.base {
        return Err(Failure::Floor(window.base));
    }
    Ok(ChainPlan {
        blocks: plans,
        repeat: memory,
        private_end: window.base,
        scratch_low: window.scratch_low,
        region0: start.region0 - window.region0,
    })
}

/// What each tile of the loop `r`'s body (planned as `plans`) copies
/// at the loop's end ([`super::chain_loop::extents`]), found by building
/// the constants of its second layer as the lowering builds them, in a
/// context of their own.
fn body_extents(
    chain: &ChainMatch,
    plans: &[PlannedBlock],
    r: Repeat,
    mem: &LoopMemory,
) -> Result<super::chain_loop::Extents, Failure> {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let loc = ipuc_ir::Location::unknown();
    let (_, exe_body) = build::executable(&mut ctx, "scratch", loc.clone());
    let mut values = (AttentionConstants::default(), MlpConstants::default());
    let scratch = (&mut values.0, &mut values.1);
    emit_layer_constants(&mut ctx, exe_body, chain, plans, (r, 1), scratch, &loc);
    let tensors = constants_since(&ctx, exe_body, 0);
    extents_of(&ctx, &tensors, mem).map_err(|d| Failure::Block(r.last(), d.message, 0))
}

/// Appends layer `layer`'s constants of the loop `r`'s body (blocks
/// `r.start..=r.last()` planned as `plans`, with the constants of the
/// `layer`-th period's blocks).
fn emit_layer_constants(
    ctx: &mut Context,
    exe_body: BlockId,
    chain: &ChainMatch,
    plans: &[PlannedBlock],
    (r, layer): (Repeat, usize),
    (attention, mlp): (&mut AttentionConstants, &mut MlpConstants),
    loc: &ipuc_ir::Location,
) {
    for (b, planned) in plans.iter().enumerate().take(r.last() + 1).skip(r.start) {
        let k = b + layer * r.period;
        match (planned, &chain.blocks[k]) {
            (PlannedBlock::Attention(p), ChainBlock::Attention(a)) => {
                a.constants.values_into(attention);
                emit_attention_constants(ctx, exe_body, p, attention, loc)
            }
            (PlannedBlock::Mlp(p), ChainBlock::Mlp(m)) => {
                m.constants.values_into(mlp);
                emit_mlp_constants(ctx, exe_body, p, mlp, loc)
            }
            _ => unreachable!("a loop repeats attention and MLP blocks"),
        }
    }
}

/// Logs (`ipu-lower` debug) the tile with the most exchange code and each
/// block's share of it, the link after the block included, and (trace)
/// every tile's the same way, a line a tile; `per_block` holds each
/// emitted block's index and every tile's count before it.
fn log_busiest_exchange(
    total: &BTreeMap<u32, u64>,
    per_block: &[(usize, BTreeMap<u32, u64>)],
    plans: &[PlannedBlock],
) {
    if !tracing::enabled!(target: "ipu-lower", tracing::Level::DEBUG) {
        return;
    }
    let shares = |tile: u32, bytes: u64| -> String {
        let at = |m: &BTreeMap<u32, u64>| m.get(&tile).copied().unwrap_or(0);
        let shares: Vec<String> = per_block
            .iter()
            .enumerate()
            .map(|(n, (k, before))| {
                let after = per_block.get(n + 1).map_or(bytes, |(_, m)| at(m));
                let kind = match &plans[*k] {
                    PlannedBlock::Attention(_) => "attention",
                    PlannedBlock::Mlp(_) => "mlp",
                    PlannedBlock::Patch(_) => "patch",
                    PlannedBlock::Pool(_) => "pool",
                };
                format!("block {k} ({kind}) {}", after - at(before))
            })
            .collect();
        shares.join(", ")
    };
    if tracing::enabled!(target: "ipu-lower", tracing::Level::TRACE) {
        for (&tile, &bytes) in total {
            tracing::trace!(
                target: "ipu-lower",
                "exchange code of tile {tile}: {bytes} bytes: {}",
                shares(tile, bytes)
            );
        }
    }
    let Some((&tile, &most)) = total.iter().max_by_key(|&(t, b)| (b, std::cmp::Reverse(t))) else {
        return;
    };
    tracing::debug!(
        target: "ipu-lower",
        "the most exchange code, {most} bytes, is tile {tile}'s: {}",
        shares(tile, most)
    );
}

/// The link from `from`'s output to `to`'s input rows (`c` channels): one
/// transfer per sender and run of destination words on one receiver (a
/// sender's pieces of one row, each output group a chunk of its own,
/// arrive as one run of the row), the senders taking turns
/// (`round_robin`) so that the greedy schedule keeps them all busy.
pub fn link(from: &[TensorPiece], to: &[TensorPiece], c: i64) -> Vec<Transfer> {
    let rows: std::collections::BTreeMap<i64, &TensorPiece> =
        to.iter().map(|p| (p.first / c, p)).collect();
    // (sender, receiver, destination, source chunk), by destination.
    let mut pieces: Vec<(u32, u32, u32, Chunk)> = from
        .iter()
        .map(|p| {
            let row = rows[&(p.first / c)];
            (
                p.tile as u32,
                row.tile as u32,
                (row.address + (p.first - row.first) * 2) as u32,
                Chunk {
                    address: p.address as u32,
                    words: (p.count * 2 / 4) as u32,
                },
            )
        })
        .collect();
    pieces.sort_by_key(|&(s, r, d, _)| (s, r, d));
    let mut out: Vec<Transfer> = Vec::new();
    for (sender, receiver, dst, chunk) in pieces {
        if let Some(t) = out.last_mut() {
            let (r, at) = t.receivers[0];
            if t.sender == sender && r == receiver && at + 4 * t.words() == dst {
                t.chunks.push(chunk);
                continue;
            }
        }
        out.push(Transfer {
            sender,
            chunks: vec![chunk],
            receivers: vec![(receiver, dst)],
            segment: None,
        });
    }
    round_robin(out)
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

/// Lowers the chain, planned by [`plan_chain`], to one `ipu.executable`
/// appended to `module_body` (a caller that also reports the plan,
/// [`chain_report_of`], plans the chain once for both).
///
/// A loop's archive (`archive_layers`: its later layers' constants, pure
/// work from the plan and the weights) is built on a thread of its own
/// while this one emits the blocks' code (with [`compile_threads`] 1, on
/// this one first); its tensors go first in the executable either way, so
/// the output does not depend on the thread count.
pub fn lower_chain_planned(
    ctx: &mut Context,
    module_body: BlockId,
    chain: &ChainMatch,
    plan: &ChainPlan,
    machine: &MachineModel,
) -> Result<Lowered, Diagnostic> {
    let last = chain.blocks.last().expect("a chain has blocks");
    let loc = ctx.loc(last.add()).clone();
    std::thread::scope(|scope| {
        let archive = plan.repeat.as_ref().map(|(r, mem)| {
            let loc = loc.clone();
            let work = move || archive_layers(chain, plan, (*r, mem), &loc);
            match compile_threads() {
                1 => Archive::Built(work()),
                _ => Archive::Building(scope.spawn(work)),
            }
        });
        emit_chain(ctx, module_body, chain, plan, machine, (archive, loc))
    })
}

/// The loop's archive, built or being built.
enum Archive<'scope> {
    Built(Result<Vec<ArchivedRange>, Diagnostic>),
    Building(std::thread::ScopedJoinHandle<'scope, Result<Vec<ArchivedRange>, Diagnostic>>),
}

impl Archive<'_> {
    /// The archive's ranges, once built.
    fn ranges(self) -> Result<Vec<ArchivedRange>, Diagnostic> {
        match self {
            Archive::Built(ranges) => ranges,
            Archive::Building(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }
}

/// [`lower_chain_planned`]'s emission, `archive` the loop's archive (if the
/// chain has a loop), `loc` the chain's last block's location.
fn emit_chain(
    ctx: &mut Context,
    module_body: BlockId,
    chain: &ChainMatch,
    plan: &ChainPlan,
    machine: &MachineModel,
    (archive, loc): (Option<Archive<'_>>, ipuc_ir::Location),
) -> Result<Lowered, Diagnostic> {
    let plans = &plan.blocks;
    let repeat = plan.repeat.as_ref().map(|(r, _)| *r);
    let emitted = |k: usize| repeat.is_none_or(|r| r.emitted(k));
    let every: Vec<u32> = plans
        .iter()
        .flat_map(PlannedBlock::tiles)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // The link after block k, for each block whose code is emitted, and
    // out of the loop: the one after its last period.
    let mut linked: Vec<usize> = (0..plans.len().saturating_sub(1))
        .filter(|&k| emitted(k))
        .collect();
    if let Some(r) = repeat.filter(|r| r.end() < plans.len()) {
        linked.push(r.end() - 1);
    }
    // Each link's transfers: what the next block gathers before it, and
    // the rows.
    let link_parts: BTreeMap<usize, (Vec<Transfer>, Vec<Transfer>)> = linked
        .iter()
        .map(|&k| {
            let (from, to) = (&plans[k], &plans[k + 1]);
            let rows = link(&from.output_pieces(), &to.input_pieces(), to.width());
            (k, (to.gather_before(), rows))
        })
        .collect();
    // The loop: its later layers' constants archived, and each tile's
    // copies of them: at the loop's end on the tiles the link back into
    // the body writes (its first block's input rows), at the body's start
    // on every other (`chain_loop`'s module doc); but the home pieces the
    // link back gathers from are copied at the loop's end on every tile
    // (apart from the rest of their spans), so that the link sends the
    // coming layer's.
    let looped = match &plan.repeat {
        Some((r, mem)) => {
            let written: BTreeSet<u32> = plans[r.start]
                .input_pieces()
                .iter()
                .filter_map(|p| u32::try_from(p.tile).ok())
                .collect();
            let (gathers, rows) = &link_parts[&r.last()];
            let (gathered, moved) = (sent_ranges(gathers), sent_ranges(rows));
            let (mut at_end, mut at_start) = (BTreeMap::new(), BTreeMap::new());
            for &t in &every {
                if written.contains(&t) {
                    at_end.insert(t, copies(t, mem));
                    at_start.insert(t, Vec::new());
                    continue;
                }
                let home = gathered.get(&t).map_or(&[][..], Vec::as_slice);
                let (end, start) = copies_apart(t, mem, home);
                let rows = moved.get(&t).map_or(&[][..], Vec::as_slice);
                for c in &end {
                    let (lo, hi) = (c.dst, c.dst + c.rows * c.row_bytes);
                    if rows.iter().any(|&(a, b)| a < hi && lo < b) {
                        return Err(Diagnostic::op_error(
                            ctx,
                            chain.blocks[r.start].add(),
                            format!(
                                "tile {t}'s constants at 0x{lo:x}..0x{hi:x} hold a home piece of streamed weights and rows the link back into the loop's body moves: the coming layer's copy before the link would overwrite the rows"
                            ),
                        ));
                    }
                }
                at_end.insert(t, end);
                at_start.insert(t, start);
            }
            Some((*r, mem, (at_start, at_end)))
        }
        None => None,
    };
    let mut links: BTreeMap<usize, Schedule> = BTreeMap::new();
    for (&k, (gathers, rows)) in &link_parts {
        let to = &plans[k + 1];
        // What the next block gathers before it (the longest transfers
        // first), then the rows.
        let mut transfers = gathers.clone();
        transfers.extend(rows.iter().cloned());
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
        let _time =
            tracing::info_span!(target: "ipu-lower", "schedule a link", after = k).entered();
        let fail = |e: crate::codelets::CodeletError| {
            Diagnostic::op_error(ctx, chain.blocks[k + 1].add(), e.to_string())
        };
        let mut tails = to.link_tails(machine).map_err(fail)?;
        // Into the loop's body again: a tile's copies at the body's start
        // run beside its first block's LayerNorm too.
        if let Some((_, _, (at_start, _))) = looped.as_ref().filter(|(r, _, _)| k == r.last()) {
            for (&t, copies) in at_start.iter().filter(|(_, c)| !c.is_empty()) {
                *tails.entry(t).or_default() += launch_cycles(copies, machine).map_err(fail)?;
            }
        }
        // The LN tiles take the link's rows in many short transfers: the
        // tiles with the most exchange code. A link in the loop gives
        // them no more than the critical order; one the program runs
        // once (into the loop, out of it, or with no loop) the least
        // any try does, as its cycles count once (so400m: the budgets
        // cost 38k of 8.5M cycles and keep 468 bytes off the busiest LN
        // tile's exchange code, 16,708 -> 16,240).
        let code = |s: &Schedule| link_code(machine, s, to.ln_tiles());
        // (A link after a block of the body runs every turn: inside the
        // body, or back into it.)
        let once = repeat.is_none_or(|r| !r.in_body(k));
        let budget = match once {
            true => CodeBudget::Least,
            false => CodeBudget::Critical,
        };
        links.insert(
            k,
            schedule_within(
                machine,
                &every,
                &transfers,
                Joining::Contiguous,
                &tails,
                Some((&code, budget)),
            ),
        );
    }
    let syncs: Vec<u32> = plans.iter().map(PlannedBlock::syncs).collect();
    let (executable, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(module_body, executable);
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    // Link `k` after a sync; the next block's first launch follows at a
    // fence (the schedule ends a receiver's code after its last word).
    // Its delays call the tile's delay routine, added to `calls`.
    let emit_link = |k: usize, e: &mut Emitter, t: u32, calls: &RefCell<Calls>| -> u64 {
        links.get(&k).map_or(0, |l| {
            sync(e);
            let tag = format!("link{k}");
            l.emit(e, machine, (t, &tag), Some(&mut calls.borrow_mut()))
        })
    };
    // The body's start on its busiest tile, and the first error there.
    let start_copies: RefCell<(u64, Option<String>)> = RefCell::new((0, None));
    // The loop's end on its busiest tile, and the first error there.
    let loop_copies: RefCell<(u64, Option<String>)> = RefCell::new((0, None));
    // What a tile runs after block `k`: the link to the next block, or at
    // the loop's end the copies and the link back or out.
    let after = |k: usize, e: &mut Emitter, t: u32, calls: &mut Calls| -> u64 {
        let added = RefCell::new(std::mem::take(calls));
        let bytes = match &looped {
            Some((r, mem, (_, copies))) if k == r.last() => {
                let end = emit_loop_end(
                    e,
                    (&copies[&t], mem.slot),
                    &format!("{}_main", block_scope(r.start)),
                    &mut |e| emit_link(k, e, t, &added),
                    &mut |e| emit_link(r.end() - 1, e, t, &added),
                );
                // The copies' cycles where a tile copies here (elsewhere
                // the counter's few issues end the body's last superstep).
                let mut most = loop_copies.borrow_mut();
                match end {
                    Ok((bytes, cycles)) => {
                        if !copies[&t].is_empty() {
                            most.0 = most.0.max(cycles);
                        }
                        bytes
                    }
                    Err(err) => {
                        most.1.get_or_insert(err.to_string());
                        0
                    }
                }
            }
            _ => emit_link(k, e, t, &added),
        };
        *calls = added.into_inner();
        bytes
    };
    let bodies: RefCell<BTreeMap<u32, BlockId>> = RefCell::new(BTreeMap::new());
    // Each tile's exchange code, every block's on it.
    let exchange_code: RefCell<BTreeMap<u32, u64>> = RefCell::new(BTreeMap::new());
    let mut chain_estimates = vec![None; plans.len()];
    let mut body_constants = Vec::new();
    // Each emitted block's exchange code per tile, for the log (which
    // blocks make the busiest tile's).
    let mut per_block: Vec<(usize, BTreeMap<u32, u64>)> = Vec::new();
    for (k, plan) in plans.iter().enumerate().filter(|&(k, _)| emitted(k)) {
        let _time = tracing::info_span!(target: "ipu-lower", "emit a block", block = k).entered();
        per_block.push((k, exchange_code.borrow().clone()));
        let before: BTreeSet<OpId> = ctx.block_ops_vec(exe_body).into_iter().collect();
        let exe_ops_before = before.len();
        // Each tile's ops so far: what block k adds goes into its scope.
        let ops_before: BTreeMap<u32, usize> = bodies
            .borrow()
            .iter()
            .map(|(&t, &b)| (t, ctx.block_ops_vec(b).len()))
            .collect();
        let next_block = match repeat {
            Some(r) if k == r.last() => r.end(),
            _ => k + 1,
        };
        let next = (next_block < plans.len()).then(|| format!("{}_main", block_scope(next_block)));
        let after_k = |e: &mut Emitter, t: u32, calls: &mut Calls| after(k, e, t, calls);
        let before_k = |e: &mut Emitter, t: u32| {
            if let Some((r, mem, (copies, _))) = looped.as_ref().filter(|(r, _, _)| k == r.start) {
                debug_assert!(r.in_body(k));
                let mut most = start_copies.borrow_mut();
                match emit_loop_start(e, (&copies[&t], mem.slot)) {
                    Ok(cycles) => most.0 = most.0.max(cycles),
                    Err(err) => {
                        most.1.get_or_insert(err.to_string());
                    }
                }
            }
        };
        let frame = Frame {
            executable,
            exe_body,
            after: &after_k,
            before: &before_k,
            tiles: Some(&bodies),
            next: next.as_deref(),
            exchange: Some(&exchange_code),
        };
        match (plan, &chain.blocks[k]) {
            (PlannedBlock::Attention(p), ChainBlock::Attention(b)) => {
                let lowered =
                    emit_attention_in(ctx, &frame, p, &b.constants.values(), machine, loc.clone())?;
                chain_estimates[k] = Some(StepEstimates::Attention(lowered.estimate));
            }
            (PlannedBlock::Mlp(p), ChainBlock::Mlp(b)) => {
                let lowered =
                    emit_mlp_in(ctx, &frame, p, &b.constants.values(), machine, loc.clone())?;
                chain_estimates[k] = Some(StepEstimates::Mlp(lowered.estimate));
            }
            (PlannedBlock::Patch(p), ChainBlock::Patch(b)) => {
                emit_patch_in(ctx, &frame, p, &b.constants, machine, loc.clone())?;
            }
            (PlannedBlock::Pool(p), ChainBlock::Pool(b)) => {
                let lowered = emit_pool_in(ctx, &frame, p, &b.constants, machine, loc.clone())?;
                chain_estimates[k] = Some(StepEstimates::Pool(lowered.estimate));
            }
            _ => unreachable!("plans follow the blocks"),
        };
        // The tiles the block does not use run its syncs and the link.
        let own: BTreeSet<u32> = plan.tiles().into_iter().collect();
        let mut memo = InstanceMemo::new();
        for &t in every.iter().filter(|t| !own.contains(t)) {
            let mut e = frame.open_tile(ctx, t, &loc);
            (0..syncs[k]).for_each(|_| sync(&mut e));
            let mut calls = Calls::new();
            let link = frame.close_tile(&mut e, t, &mut calls);
            frame.count_exchange(t, link);
            emit_calls(&mut e, &calls, &mut memo)
                .map_err(|err| Diagnostic::error(loc.clone(), err.to_string()))?;
        }
        memo.finish(ctx);
        if let Some((r, mem, (start_copies, copies))) = &looped {
            if r.in_body(k) {
                body_constants.extend(constants_since(ctx, exe_body, exe_ops_before));
            }
            if k == r.start {
                for (&t, &body) in bodies.borrow().iter() {
                    let mut e = Emitter::new(ctx, body, loc.clone());
                    emit_loop_start_data(&mut e, &start_copies[&t])
                        .map_err(|err| Diagnostic::error(loc.clone(), err.to_string()))?;
                }
            }
            if k == r.last() {
                // The first layer's constants are where the archive's
                // copies put the later layers'.
                let first = extents_of(ctx, &body_constants, mem)?;
                if first != mem.extents {
                    return Err(Diagnostic::error(
                        loc.clone(),
                        "internal: the repeated layers' constants are not where the first layer's are",
                    ));
                }
                for (&t, &body) in bodies.borrow().iter() {
                    let mut e = Emitter::new(ctx, body, loc.clone());
                    emit_loop_data(&mut e, r.count, &copies[&t])
                        .map_err(|err| Diagnostic::error(loc.clone(), err.to_string()))?;
                }
            }
        }
        // Each block's labels and sections in a scope of its own: the
        // blocks share each tile's namespace.
        for (&t, &body) in bodies.borrow().iter() {
            let first = ops_before.get(&t).copied().unwrap_or(0);
            let mut e = Emitter::new(ctx, body, loc.clone());
            e.scope_since(first, &block_scope(k));
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
                ctx.set_attr(
                    o,
                    "sym_name",
                    Attribute::string(&format!("{}_{name}", block_scope(k))),
                );
            }
        }
    }
    let (loop_copies, loop_error) = loop_copies.into_inner();
    let (body_start_copies, start_error) = start_copies.into_inner();
    if let Some(err) = loop_error.or(start_error) {
        return Err(Diagnostic::error(loc.clone(), err));
    }
    // A later period of the loop runs the body's code: its estimates.
    if let Some(r) = repeat {
        for k in (0..plans.len()).filter(|&k| !emitted(k)) {
            chain_estimates[k] = chain_estimates[r.code_of(k)];
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
    // The link after each block: a later period's is the body's (the
    // last period's, the link out of the loop).
    let chain_links = (0..plans.len().saturating_sub(1))
        .map(|k| {
            let at = match repeat {
                Some(r) if k + 1 == r.end() => k,
                Some(r) => r.code_of(k),
                None => k,
            };
            links.get(&at).map_or(0, |l| l.cycles)
        })
        .collect();
    let exchange_code = exchange_code.into_inner();
    log_busiest_exchange(&exchange_code, &per_block, plans);
    let exchange_code_bytes_max = exchange_code.into_values().max().unwrap_or(0);
    // The archive's tensors first in the executable, in layer order.
    if let Some(archive) = archive {
        let mut after: Option<OpId> = None;
        for range in archive.ranges()? {
            let t = range.into_tensor(ctx, loc.clone());
            match after {
                Some(a) => ctx.insert_op_after(a, t),
                None => match ctx.block_ops_vec(exe_body).first() {
                    Some(&first) => ctx.insert_op_before(first, t),
                    None => ctx.append_op(exe_body, t),
                },
            }
            after = Some(t);
        }
    }
    Ok(Lowered {
        executable,
        exchange_code_bytes_max,
        block_estimate: None,
        chain_estimates,
        chain_links,
        loop_copies,
        loop_start_copies: body_start_copies,
    })
}

/// The archive of `r`'s later layers ([`super::chain_loop`]): each layer's
/// body constants, built as the body builds its own (in a scratch context
/// of their own, so that this can run beside the blocks' emission),
/// become its slot (packed as `mem` says), layer after layer.
fn archive_layers(
    chain: &ChainMatch,
    plan: &ChainPlan,
    (r, mem): (Repeat, &LoopMemory),
    loc: &ipuc_ir::Location,
) -> Result<Vec<ArchivedRange>, Diagnostic> {
    let _time =
        tracing::info_span!(target: "ipu-lower", "archive the later layers' constants").entered();
    let mut ctx = Context::new(ipuc_dialects::registry());
    let (_, exe_body) = build::executable(&mut ctx, "scratch", loc.clone());
    // The decoded constants' buffers, reused layer after layer.
    let mut values = (AttentionConstants::default(), MlpConstants::default());
    let mut ranges = Vec::new();
    for layer in 1..r.count {
        let before = ctx.block_ops_vec(exe_body).len();
        let scratch = (&mut values.0, &mut values.1);
        emit_layer_constants(
            &mut ctx,
            exe_body,
            chain,
            &plan.blocks,
            (r, layer),
            scratch,
            loc,
        );
        let tensors = constants_since(&ctx, exe_body, before);
        ranges.extend(archive_layer(&mut ctx, (&tensors, layer), mem, loc)?);
    }
    Ok(ranges)
}

/// The plan report of a chain: each block's.
pub fn chain_report(
    ctx: &Context,
    chain: &ChainMatch,
    machine: &MachineModel,
) -> Result<String, Diagnostic> {
    let plan = plan_chain(ctx, chain, machine)?;
    chain_report_of(ctx, chain, &plan, machine)
}

/// [`chain_report`] of a plan already made.
pub fn chain_report_of(
    ctx: &Context,
    chain: &ChainMatch,
    plan: &ChainPlan,
    machine: &MachineModel,
) -> Result<String, Diagnostic> {
    let plans = &plan.blocks;
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
    if let Some((r, mem)) = &plan.repeat {
        // The archive starts in region 0 where it has room there.
        base = (mem.archive + mem.archive_bytes()).max(machine.interleaved_base);
        out += &format!(
            "loop: blocks {}..={} run {} times (blocks {}..={} are later periods of them); the later layers' constants wait in an archive at 0x{:x}..0x{base:x}: {} slot(s) of {} bytes, each copied over {}\n",
            r.start,
            r.last(),
            r.count,
            r.last() + 1,
            r.end() - 1,
            mem.archive,
            r.count - 1,
            mem.slot,
            mem.ranges_text()
        );
    }
    for (k, p) in plans.iter().enumerate() {
        if plan.repeat.as_ref().is_some_and(|(r, _)| !r.emitted(k)) {
            continue;
        }
        // After a loop: past the body's memory grown to whole grains.
        if let Some((_, mem)) = plan.repeat.as_ref().filter(|(r, _)| r.end() == k) {
            base = base.max(mem.private_end(machine.interleaved_base).unwrap_or(base));
        }
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

    /// The archive's share of region 0: whole elements below the
    /// interleaved region that the add columns, the blocks' private region
    /// 0 and [`CODE_ROOM`] leave; none where they leave less than one.
    #[test]
    fn the_archive_takes_what_region_0_leaves_in_whole_elements() {
        let m = MachineModel::c600();
        let region0 = m.interleaved_base - m.sram_base;
        let stride = m.element_bytes;
        // 208 KiB: 48 KiB of columns, 64 KiB of code, 40,000 bytes of
        // states: 58,304 bytes left, three whole elements.
        assert_eq!(region0_room(&m, stride, 40_000), 3 * m.element_bytes);
        // Wider columns leave less.
        assert_eq!(region0_room(&m, 2 * stride, 40_000), 0);
        // Nothing left (or less than nothing): no share.
        let full = region0 - ADD_COLUMNS * stride - CODE_ROOM;
        assert_eq!(region0_room(&m, stride, full), 0);
        assert_eq!(region0_room(&m, stride, full + 4096), 0);
        assert_eq!(
            region0_room(&m, stride, full - m.element_bytes),
            m.element_bytes
        );
    }

    /// A loop whose archive leaves too little memory says how large the
    /// archive is, how much private memory the blocks keep, by how much
    /// the two alone exceed a tile, and then where planning stopped
    /// (so400m's FP8 numbers).
    #[test]
    fn an_archive_that_does_not_fit_gives_the_budget() {
        let m = MachineModel::c600();
        let r = Repeat {
            start: 1,
            period: 2,
            count: 27,
        };
        let measured = Measured {
            private: 106_432,
            scratch: 319_552,
            archive: 331_968,
            slot: 12_768,
            region0: 53_880,
        };
        let e = archive_budget(
            r,
            (331_968, 0),
            &measured,
            &m,
            "cannot plan the patch embedding",
        );
        for part in [
            "a tile's 425984 bytes of interleaved memory",
            "26 layers a loop repeats after its first takes 331968 bytes a tile (26 slots of 12768",
            "106432 bytes of private memory a tile: 438400 bytes of interleaved memory, 12416 too many before any block's scratch",
            "the blocks' scratch uses 319552 bytes",
            "Where it stops: cannot plan the patch embedding",
        ] {
            assert!(e.contains(part), "{part:?} in {e}");
        }
        // Archive and private memory that fit: no excess claimed.
        let small = Measured {
            private: 10_000,
            archive: 20_000,
            ..measured
        };
        let e = archive_budget(r, (20_000, 0), &small, &m, "x");
        assert!(
            e.contains("30000 bytes of interleaved memory before any block's scratch"),
            "{e}"
        );
        assert!(!e.contains("too many"), "{e}");
        assert!(!e.contains("region 0"), "{e}");
        // Part of the archive at the top of region 0: only the rest
        // counts against interleaved memory.
        let e = archive_budget(r, (331_968, 65_536), &measured, &m, "x");
        for part in [
            "65536 of them at the top of region 0",
            "53880 bytes of the blocks' private region 0",
            "372864 bytes of interleaved memory before",
        ] {
            assert!(e.contains(part), "{part:?} in {e}");
        }
    }

    fn transfer(sender: u32, address: u32, receiver: (u32, u32)) -> Transfer {
        Transfer {
            sender,
            chunks: vec![Chunk { address, words: 4 }],
            receivers: vec![receiver],
            segment: None,
        }
    }

    /// A sender's pieces of one row (an output group each, apart in its
    /// memory) arrive as one transfer of chunks; the senders take turns.
    #[test]
    fn a_links_pieces_of_one_row_go_as_one_transfer() {
        let piece = |tile: i64, address: i64, first: i64| TensorPiece {
            tile,
            address,
            first,
            count: 16,
        };
        // Rows of 64 channels: row 0 on tile 9, row 1 on tile 10.
        let to = [piece(9, 0x80000, 0), piece(10, 0x80000, 64)];
        let to = to.map(|p| TensorPiece { count: 64, ..p });
        // Tile 1 holds groups 0 and 1 of rows 0 and 1 (group-major, as a
        // product's view keeps them); tile 2 groups 2 and 3 of row 0.
        let from = [
            piece(1, 0x90000, 0),
            piece(1, 0x90040, 64),
            piece(1, 0x91000, 16),
            piece(1, 0x91040, 80),
            piece(2, 0x90000, 32),
            piece(2, 0x91000, 48),
        ];
        let t = link(&from, &to, 64);
        let summary: Vec<(u32, Vec<u32>, (u32, u32))> = t
            .iter()
            .map(|t| {
                (
                    t.sender,
                    t.chunks.iter().map(|c| c.address).collect(),
                    t.receivers[0],
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (1, vec![0x90000, 0x91000], (9, 0x80000)),
                (2, vec![0x90000, 0x91000], (9, 0x80040)),
                (1, vec![0x90040, 0x91040], (10, 0x80000)),
            ]
        );
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
