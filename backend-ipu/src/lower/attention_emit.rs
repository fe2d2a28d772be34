//! The attention block's `ipu.executable` ([`emit_attention`]): every
//! tile's program, superstep by superstep as
//! [`super::attention_block`]'s module doc lists them, and the block's
//! estimate step by step ([`AttentionEstimate`]).

use std::collections::BTreeMap;

use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{BlockId, Context, Diagnostic, Location, OpId, Type};

use super::attention_block::{
    attention_tiles, vt_pad_copies, window_restores, AttentionConstants, AttentionPlan,
};
use super::attention_constants::emit_attention_constants;
use super::block::{emit_owned_adds, positions};
use super::block_exchange::residual_view;
use super::codegen::{
    emit_calls, emit_launches, emit_standalone, launch_cycles, Calls, Frame, PlacedGemm,
};
use super::plan::GemmPlan;
use super::reduce;
use super::reduce::SYNCS_PER_ROUND;
use crate::codelets::attention::TileAttention;
use crate::codelets::elementwise::BinaryOp;
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::instance_memo::InstanceMemo;
use crate::codelets::pair_cast::PairCast;
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::{call_cycles, emit_call};

/// The block's estimated cycles, step by step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AttentionEstimate {
    /// LayerNorm.
    pub layer_norm: u64,
    /// Exchange A (scheduled).
    pub exchange_a: u64,
    /// qk and vt (the slower), with their reductions.
    pub qkv: u64,
    /// Exchange B (scheduled).
    pub exchange_b: u64,
    /// The attention tiles.
    pub attention: u64,
    /// Exchange D (scheduled; 0 when materialised).
    pub exchange_d: u64,
    /// The combination of the partials (0 when materialised).
    pub combine: u64,
    /// Exchange C (scheduled).
    pub exchange_c: u64,
    /// out, its reduction and the residual add.
    pub out: u64,
    /// The syncs between the steps.
    pub sync: u64,
}

impl AttentionEstimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.layer_norm
            + self.exchange_a
            + self.qkv
            + self.exchange_b
            + self.attention
            + self.exchange_d
            + self.combine
            + self.exchange_c
            + self.out
            + self.sync
    }
}

impl std::fmt::Display for AttentionEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles (layer norm {}, exchange A {}, qkv {}, exchange B {}, attention {}, exchange D {}, combine {}, exchange C {}, out {}, sync {})",
            self.total(),
            self.layer_norm,
            self.exchange_a,
            self.qkv,
            self.exchange_b,
            self.attention,
            self.exchange_d,
            self.combine,
            self.exchange_c,
            self.out,
            self.sync
        )
    }
}

/// The lowered block.
#[derive(Clone, Debug)]
pub struct LoweredAttention {
    /// The `ipu.executable`.
    pub executable: OpId,
    /// Estimated cycles.
    pub estimate: AttentionEstimate,
    /// The most bytes of exchange code on a tile.
    pub exchange_code_bytes_max: u64,
}

/// Builds the block's `ipu.executable` (see the module doc), appended to
/// `block`; the host tensors get types `x_ty` and `y_ty`.
#[allow(clippy::too_many_arguments)]
pub fn emit_attention(
    ctx: &mut Context,
    block: BlockId,
    plan: &AttentionPlan,
    constants: &AttentionConstants,
    (x_ty, y_ty): (Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredAttention, Diagnostic> {
    emit_standalone(
        ctx,
        block,
        machine,
        &loc.clone(),
        [(x_ty, plan.input_pieces()), (y_ty, plan.output_pieces())],
        |ctx, frame| emit_attention_in(ctx, frame, plan, constants, machine, loc),
    )
}

/// [`emit_attention`] into `frame`'s executable, without host tensors
/// (the block's input and output are [`AttentionPlan::input_pieces`] and
/// [`AttentionPlan::output_pieces`]).
pub fn emit_attention_in(
    ctx: &mut Context,
    frame: &Frame<'_>,
    plan: &AttentionPlan,
    constants: &AttentionConstants,
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredAttention, Diagnostic> {
    let [qk, vt, out] = plan.placed();
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let tiles = plan.tiles();
    let x = plan.schedules(machine);
    let (at_qk, at_vt, at_out) = (
        positions(&plan.qk),
        positions(&plan.vt),
        positions(&plan.out),
    );
    let at_core = attention_tiles(plan);
    let ln = plan.ln();
    let ln_of = ln.index();
    let restores = window_restores(plan);
    // The most cycles a tile spends beside LayerNorm (restoring its
    // window, or where that is late zeroing vt's padding rows; the bias
    // broadcasts), restoring its window after qk and vt (late), casting
    // the attention's output to out's FP8 panels.
    let (mut restore_cycles, mut cast_cycles) = (0, 0);
    let beside_of = beside_ln_of(plan, machine).map_err(fail)?;
    let beside_ln = beside_of.values().copied().max().unwrap_or(0);
    // Streamed, qk's weights arrive in exchange A over the window: the
    // window is restored after qk and vt.
    let late_restore = plan.layout.restore_late;
    let vt_pads = vt_pad_copies(plan);
    let rounds = |p: &GemmPlan| p.grid_k.trailing_zeros();
    let qkv_rounds = rounds(&plan.qk).max(rounds(&plan.vt));
    let (exe, exe_body) = (frame.executable, frame.exe_body);
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    let mut add_cycles = 0u64;
    let mut exchange_code_bytes_max = 0;
    // The tile with the most exchange code, its bytes by exchange (A, B,
    // D, C and the products' reduction rounds), for the debug log.
    let mut busiest = (0, [0; 5]);
    let mut memo = InstanceMemo::new();
    for &t in &tiles {
        let mut e = frame.open_tile(ctx, t, &loc);
        let mut xcode = 0;
        let mut by_exchange = [0; 5];
        let mut calls = Calls::new();
        ln.emit_call(&mut e, ln_of.get(&t).copied(), &mut calls);
        let restore = restores.get(&t).map_or(&[][..], Vec::as_slice);
        let first = if !late_restore {
            emit_launches(&mut e, &mut calls, "attn_restore", restore, machine)
        } else if at_vt.contains_key(&t) {
            // vt's padding token rows zeroed where its weights are
            // scratch.
            let pads = vt_pads.get(&t).map_or(&[][..], Vec::as_slice);
            emit_launches(&mut e, &mut calls, "vt_pad", pads, machine)
        } else {
            Ok(0)
        };
        // qk's bias rows, vt's values (FP8) into their initial partials
        // (`BiasRows::Early`).
        let broadcast = if at_qk.contains_key(&t) {
            qk.emit_bias_broadcast(&mut e, &mut calls)
        } else if at_vt.contains_key(&t) {
            vt.emit_bias_broadcast(&mut e, &mut calls)
        } else {
            Ok(0)
        };
        let beside = first.map_err(fail)? + broadcast.map_err(fail)?;
        debug_assert_eq!(beside, beside_of.get(&t).copied().unwrap_or(0));
        sync(&mut e);
        // Each exchange's schedule ends a receiver's code after its last
        // word: the compute after it follows at a fence, with no sync.
        by_exchange[0] = x.a.emit(&mut e, machine, (t, "a"), Some(&mut calls));
        xcode += by_exchange[0];
        // qk and vt on their tiles, the rounds of the one with fewer
        // padded with syncs.
        let own = if let Some(&pos) = at_qk.get(&t) {
            xcode += qk
                .emit_compute(&mut e, pos, machine, &mut calls)
                .map_err(fail)?
                .1;
            rounds(&plan.qk)
        } else if let Some(&pos) = at_vt.get(&t) {
            xcode += vt
                .emit_compute(&mut e, pos, machine, &mut calls)
                .map_err(fail)?
                .1;
            rounds(&plan.vt)
        } else {
            0
        };
        (0..(qkv_rounds - own) * SYNCS_PER_ROUND).for_each(|_| sync(&mut e));
        if late_restore {
            // qk's gathered weights lay over the window:
            // restore it now.
            let c = emit_launches(&mut e, &mut calls, "attn_restore", restore, machine);
            restore_cycles = restore_cycles.max(c.map_err(fail)?);
        }
        // Exchange B and the attention: in one part, or (flash-style) a
        // part per chunk of keys, each chunk's attention after its part.
        let core_at = at_core.get(&t).copied();
        let casts = core_at.map_or_else(Vec::new, |(b, kb)| output_casts(plan, b, kb));
        // Each distinct attention tile's workers, vertex states and
        // softmax once: a flash-style tile's chunks between the first and
        // the last are the same launch (the same buffers, all keys real)
        // and run the first one's, each with its own supervisor loops.
        let mut parts: Vec<(String, TileAttention)> = Vec::new();
        let combine = core_at.and_then(|(b, kb)| plan.combine_on(b, kb));
        for (c, b) in x.b.iter().enumerate() {
            sync(&mut e);
            let bytes = b.emit(&mut e, machine, (t, &chunk_tag("b", c)), Some(&mut calls));
            by_exchange[1] += bytes;
            xcode += bytes;
            if let Some((_, kb)) = core_at {
                let att = plan.core_of(plan.core.part(kb, c as u32));
                let tag = match parts.iter().find(|(_, a)| *a == att) {
                    Some((tag, _)) => tag.clone(),
                    None => {
                        let tag = chunk_tag("attn", c);
                        calls.push((format!("{tag}_softmax"), Box::new(att.softmax())));
                        if let Some(q) = att.q_scaling() {
                            calls.push((format!("{tag}_qscale"), Box::new(q)));
                        }
                        parts.push((tag.clone(), att));
                        tag
                    }
                };
                att.emit_supervisor(&mut e, &tag).map_err(fail)?;
                // Flash-style: the chunk folded into the running output
                // (one subroutine, the same buffers every time).
                if let (Some(combine), true) = (&combine, c > 0) {
                    emit_call(&mut e, "attn_combine");
                    if c == 1 {
                        calls.push(("attn_combine".into(), Box::new(combine.clone())));
                    }
                }
            }
        }
        if core_at.is_some() && !plan.core.split() {
            let c = emit_launches(&mut e, &mut calls, "attn_cast", &casts, machine);
            cast_cycles = cast_cycles.max(c.map_err(fail)?);
        }
        if let Some(d) = &x.d {
            sync(&mut e);
            by_exchange[2] = d.emit(&mut e, machine, (t, "d"), Some(&mut calls));
            xcode += by_exchange[2];
            if let Some(combine) = combine {
                emit_call(&mut e, "attn_combine");
                calls.push(("attn_combine".into(), Box::new(combine)));
                let c = emit_launches(&mut e, &mut calls, "attn_cast", &casts, machine);
                cast_cycles = cast_cycles.max(c.map_err(fail)?);
            }
        }
        sync(&mut e);
        by_exchange[3] = x.c.emit(&mut e, machine, (t, "c"), Some(&mut calls));
        xcode += by_exchange[3];
        match at_out.get(&t) {
            Some(&(i, j, k)) => {
                let (view, rounds_bytes) = out
                    .emit_compute(&mut e, (i, j, k), machine, &mut calls)
                    .map_err(fail)?;
                xcode += rounds_bytes;
                let (lo, hi) = reduce::owned(k, plan.out.grid_k, plan.out.rows);
                let [res, sum] = [plan.layout.residual, plan.layout.sum]
                    .map(|base| residual_view(&plan.out, base, k));
                // On the FP8 AMP out's output is in its domain.
                let add = match plan.shape.fp8.and_then(|f| f.out_domain()) {
                    Some(d) => BinaryOp::ScaledAdd(-d),
                    None => BinaryOp::Add,
                };
                let firsts = emit_owned_adds(
                    &mut e,
                    &mut calls,
                    (view, (lo, hi), plan.out.groups_of(j)),
                    &[(add, view, res, sum)],
                    &|_, g| format!("residual_{g}"),
                );
                if let (Some(add), 0) = (firsts.first(), add_cycles) {
                    add_cycles = add.estimate_cycles().map_err(fail)?;
                }
            }
            None => (0..rounds(&plan.out) * SYNCS_PER_ROUND).for_each(|_| sync(&mut e)),
        }
        xcode += frame.close_tile(&mut e, t, &mut calls);
        by_exchange[4] = xcode - by_exchange[..4].iter().sum::<u64>();
        if xcode > exchange_code_bytes_max {
            busiest = (t, by_exchange);
        }
        exchange_code_bytes_max = exchange_code_bytes_max.max(xcode);
        frame.count_exchange(t, xcode);
        if at_qk.contains_key(&t) {
            qk.emit_worker_code(&mut e);
        }
        if at_vt.contains_key(&t) {
            vt.emit_worker_code(&mut e);
        }
        if at_out.contains_key(&t) {
            out.emit_worker_code(&mut e);
        }
        for (tag, att) in &parts {
            att.emit_workers(&mut e, tag);
        }
        emit_calls(&mut e, &calls, &mut memo).map_err(fail)?;
    }
    memo.finish(ctx);
    let (t, [a, b, d, c, rest]) = busiest;
    tracing::debug!(
        target: "ipu-lower",
        "attention block: the most exchange code on tile {t}, {exchange_code_bytes_max} bytes: exchange A {a}, B {b} ({} parts), D {d}, C {c}, the rest (reduction rounds, delay routine) {rest}",
        x.b.len()
    );
    emit_attention_constants(ctx, exe_body, plan, constants, &loc);
    let rounds_est = |p: &GemmPlan| p.estimate.rounds_exchange + p.estimate.reduction;
    let est = |p: &GemmPlan| p.estimate.compute + rounds_est(p);
    // Key-split: once; flash-style: once per chunk after the first.
    let combine = match plan.combine_on(0, 0) {
        Some(c) => {
            (c.estimate_cycles().map_err(fail)? + call_cycles(machine))
                * u64::from(plan.core.chunks.max(2) - 1)
        }
        None => 0,
    };
    let (attention_round, combine_round) = if plan.core.split() {
        (0, cast_cycles)
    } else {
        (cast_cycles, 0)
    };
    let estimate = AttentionEstimate {
        // The attention tiles restore their windows, or vt's zero its
        // padding rows, beside LayerNorm.
        layer_norm: ln.estimate(machine).map_err(fail)?.max(beside_ln),
        exchange_a: x.a.cycles,
        // qk and vt run side by side, superstep by superstep: the slower
        // vertex, then the slower rounds.
        qkv: plan.qk.estimate.compute.max(plan.vt.estimate.compute)
            + rounds_est(&plan.qk).max(rounds_est(&plan.vt))
            + restore_cycles,
        exchange_b: x.b_cycles(),
        attention: plan.tile_cycles().map_err(fail)? + attention_round,
        exchange_d: x.d.as_ref().map_or(0, |d| d.cycles),
        combine: combine + combine_round,
        exchange_c: x.c.cycles,
        out: est(&plan.out) + add_cycles,
        // Every superstep's sync, the reduction rounds' included.
        sync: u64::from(plan.syncs()) * u64::from(machine.sync_latency),
    };
    Ok(LoweredAttention {
        executable: exe,
        estimate,
        exchange_code_bytes_max,
    })
}

/// The tag of part `c` of exchange B or the attention: `base` for the
/// first (the only one unless flash-style), `base{c}` after it.
fn chunk_tag(base: &str, c: usize) -> String {
    if c == 0 {
        base.to_string()
    } else {
        format!("{base}{c}")
    }
}

/// With the output product on the FP8 AMP, the launches that cast the
/// attention's output to out's FP8 input panels in place on attention
/// tile `(b, kb)`, before exchange C reads them (what the IR's cast
/// before the output product does): one per pair of O's groups of 16
/// channels (materialised, flash-style) or of the combined rows'
/// (key-split), panel `q` over group `2q`
/// ([`crate::codelets::pair_cast`]; a head's odd last group with zeros).
/// O is in qk's and vt's domain `D`
/// ([`super::attention_block::AttentionFp8::domain`]), so the codes are
/// `f8(O 2^-D)`, the output's values. None where the output product is
/// f16.
pub fn output_casts(plan: &AttentionPlan, b: u32, kb: u32) -> Vec<PairCast> {
    let s = plan.shape;
    let Some(scale) = s.fp8.filter(|_| s.out_f8()).map(|f| f.domain()) else {
        return Vec::new();
    };
    let rows = match plan.layout.combine {
        None => plan.core_of(0).values().rows,
        Some(_) => match plan.combine_on(b, kb) {
            Some(combine) => combine.rows,
            None => return Vec::new(),
        },
    };
    let groups = s.dp() / 16;
    let (first, stride) = plan.output_groups();
    let group = |g: u32| first + g * stride;
    (0..groups.div_ceil(2))
        .map(|q| PairCast {
            rows,
            first: group(2 * q),
            second: (2 * q + 1 < groups).then(|| group(2 * q + 1)),
            output: group(2 * q),
            scale,
        })
        .collect()
}

/// The cycles each tile of `plan` spends beside LayerNorm (tiles with
/// none left out), as the block's estimate counts them: restoring its
/// window (or, where that is late, zeroing vt's padding rows) and
/// broadcasting qk's or vt's bias into its initial partials. The link
/// into the block is scheduled with them
/// ([`super::schedule::schedule_before`]).
pub fn beside_ln_of(
    plan: &AttentionPlan,
    machine: &MachineModel,
) -> Result<BTreeMap<u32, u64>, crate::codelets::CodeletError> {
    let [qk, vt, _] = plan.placed();
    let (at_qk, at_vt) = (positions(&plan.qk), positions(&plan.vt));
    let broadcast = |p: &PlacedGemm| p.bias_broadcast().map_or(Ok(0), |b| b.estimate_cycles());
    let (qk_broadcast, vt_broadcast) = (broadcast(&qk)?, broadcast(&vt)?);
    let mut beside: BTreeMap<u32, u64> = BTreeMap::new();
    if plan.layout.restore_late {
        for (&t, pads) in &vt_pad_copies(plan) {
            if at_vt.contains_key(&t) {
                beside.insert(t, launch_cycles(pads, machine)?);
            }
        }
    } else {
        for (&t, restore) in &window_restores(plan) {
            beside.insert(t, launch_cycles(restore, machine)?);
        }
    }
    for &t in at_qk.keys() {
        *beside.entry(t).or_default() += qk_broadcast;
    }
    for &t in at_vt.keys().filter(|t| !at_qk.contains_key(t)) {
        *beside.entry(t).or_default() += vt_broadcast;
    }
    beside.retain(|_, c| *c > 0);
    Ok(beside)
}
