//! The attention block's memory: the products' layouts on the tiles they
//! share with each other and with the attention (`product_layouts`:
//! private constants from the window's base, each product's buffers from
//! the top), and the attention tiles placed beside them, each form of the
//! attention searched by estimate (`best_core`).

use ipuc_ipu_arch::MachineModel;

use super::attention_block::{
    AttentionLayout, AttentionShape, CombineLayout, CoreForm, CorePlan, FormEstimate, WindowRestore,
};
use super::bias_broadcast::BiasBroadcast;
use super::block::owned_rows_bytes;
use super::codegen::{layout, TileLayout};
use super::ln_tiles::{LnRows, LnTiles};
use super::plan::{output_used, GemmPlan};
use super::stream::Weights;
use super::window::Window;
use crate::codelets::attention::{MaskPlace, OutputPlace, TileAttention};
use crate::codelets::attention_combine::AttentionCombine;
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::call_cycles;

/// Why the products do not fit beside each other as planned, and by how
/// many bytes each product's (qk's, vt's, out's) inputs, outputs and
/// reductions would have to start lower for them to fit (0: not that
/// product's doing): the planner searches those products again with that
/// much less memory ([`super::attention_block`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Short {
    /// What does not fit, for the error.
    pub(super) message: String,
    /// Bytes missing, per product.
    pub(super) missing: [u32; 3],
}

impl Short {
    fn of(message: String, missing: [u64; 3]) -> Self {
        Short {
            message,
            missing: missing.map(|m| u32::try_from(m).unwrap_or(u32::MAX)),
        }
    }
}

/// The products' layouts on tiles they share with each other and with the
/// attention (see the module doc): what is left for the attention tiles.
pub(super) struct ProductLayouts {
    qk: TileLayout,
    vt: TileLayout,
    out: TileLayout,
    /// Where the attention window starts: above every product's weights
    /// and bias blocks and at or above the chain's scratch floor
    /// ([`Window::floor`]): the window is shared scratch.
    pub(super) window_start: u32,
    /// Whether vt's input is in the shared scratch.
    vt_input_shared: bool,
    /// [`super::attention_block::AttentionLayout::restore_late`].
    restore_late: bool,
    /// vt's input's home pieces, where it streams in.
    vt_home: Option<u32>,
    /// Bytes of out's weight panels a tile reads (f16).
    out_weight_bytes: u32,
    /// The lowest byte of any product's inputs, outputs and reduction
    /// buffers.
    pub(super) transient_bottom: u32,
    /// Where the attention's window must end: where the window is
    /// restored after qk and vt ([`Self::restore_late`]), below what is
    /// live while it is: qk's and vt's results (exchange B reads them as
    /// it writes the window), out's input and its streamed weights
    /// (exchange C writes them as it reads the window); their inputs,
    /// weights and reduction buffers are dead by then. Else below every
    /// product's buffers ([`Self::transient_bottom`]).
    pub(super) window_top: u32,
    /// What exchange C writes on out's tiles, `[lo, hi)`: out's input
    /// and its gathered weights (from the lowest of out's buffers to its
    /// output, at the top of memory). A key-split tile's combined rows,
    /// which exchange C reads, stay out of it; they are written after
    /// exchanges B and D, when qk's and vt's results, the window's keys,
    /// values and Q, the scores and O are dead, so they may pass
    /// [`Self::window_top`] (but not lie over the partials they are
    /// combined from).
    pub(super) out_written: (u32, u32),
    /// Which product's buffers set [`Self::window_top`] (0 qk, 1 vt, 2
    /// out): the one to search again with less memory where no
    /// attention form fits the window.
    pub(super) window_bound: usize,
    /// Where a flash-style tile's scores and probabilities may lie, in the
    /// order tried ([`TileAttention::place`]'s `compute`): exchange B's
    /// later parts read qk's and vt's results while the tile computes, so
    /// above Y's buffers of both (to the top of memory: Y lies at the
    /// bottom of its whole element pairs, their slack above it), else
    /// below qk's and vt's bounds in [`Self::window_top`]. Not below
    /// out's: out's input and streamed weights are written only after the
    /// attention, by exchange C, when the scores and probabilities are
    /// dead.
    pub(super) flash_compute: [(u32, u32); 2],
    residual: u32,
    sum: u32,
    /// The LN tiles' tensors.
    x: u32,
    x_groups: Option<u32>,
    ln_out: u32,
    gamma: u32,
    beta: u32,
}

/// Lays out the products in `window` ([`super::window`]): private from
/// its base, on each tile what its role needs (qk's weights on qk's
/// tiles; vt's constant input, the value weights, on vt's, and vt's
/// weights, the LayerNorm rows exchange A writes, below it where the
/// window is restored beside LayerNorm; x's rows, LayerNorm's output,
/// gamma and beta on the LN tiles), then out's weights above all of them;
/// each product's inputs, outputs and reduction buffers shared scratch
/// from the top (they live at different times); out's residual and sum
/// in the add columns, the vertex states and the bias broadcasts'
/// sources below them. The attention's window goes above the private
/// memory ([`ProductLayouts::with_core`]). Where the window is restored
/// after qk and vt ([`super::attention_block::AttentionLayout::restore_late`]:
/// streamed weights), vt's weights are shared scratch right below vt's
/// input instead, and the window need only stay below what is live while
/// it is ([`ProductLayouts::window_top`]). With `weights` streamed, qk's
/// tiles keep their home pieces of its weights ([`super::stream`]) where
/// they kept its blocks, and exchange A gathers the blocks right below
/// qk's input (its reduction's buffers lie over both later).
pub(super) fn product_layouts(
    s: AttentionShape,
    [qk, vt, out]: [&GemmPlan; 3],
    machine: &MachineModel,
    window: &mut Window,
    weights: Weights,
) -> Result<ProductLayouts, Short> {
    let (l_qk, l_vt, l_out) = (
        layout(qk, machine),
        layout(vt, machine),
        layout(out, machine),
    );
    let (v_qk, v_vt, v_out) = (qk.vertex(), vt.vertex(), out.vertex());
    let private_start = window.base;
    let base = window.base.next_multiple_of(16);
    // With FP8 products the weights (and vt's input) are the FP8 AMP's
    // codes as the vertices read them.
    // vt's tiles: its weights (LayerNorm's rows), then its input, a
    // constant read by vt alone: with nothing run before, in the shared
    // scratch where the products' buffers put it (the scores lie over it
    // later), else private.
    // Where the window is restored after qk and vt (streamed weights),
    // vt's weights are shared scratch (below its input, see `vt_rows`);
    // else private.
    let restore_late = weights == Weights::Streamed;
    let vt_rows_private = if restore_late {
        0
    } else {
        v_vt.weight_bytes() as u32
    };
    // Streamed, vt's tiles keep a piece of vt's input private.
    let vt_streams = weights == Weights::Streamed && vt.grid_cols > 1;
    let shared_input = window.fresh && !vt_streams;
    let (vt_input, vt_end) = if shared_input {
        (l_vt.input, base + vt_rows_private)
    } else {
        let at = (base + vt_rows_private).next_multiple_of(16);
        let bytes = if vt_streams {
            super::attention_block::vt_input_piece(vt)
        } else {
            v_vt.input_bytes() as u32
        };
        (at, at + bytes)
    };
    // The LN tiles: gamma and beta private, LayerNorm's output at the top
    // of scratch and x's rows in the pair below (the LN tiles run nothing
    // else in the block; exchange A reads both).
    let ln = LnRows::with_output_below(base, s.c, machine.sram_end, 2 * machine.element_bytes);
    // x's copy in groups right below x's rows (LayerNorm writes it, the
    // residual's transfers in exchange B read it; the LN tiles run nothing
    // else), where it fits above private memory.
    let copies = s.fp8.is_some() && !s.ln_affine;
    let x_groups = LnTiles::x_groups_below(ln.x, s.c, copies, window.scratch_floor());
    let w_out = (base + weights.kept_bytes(qk, false))
        .max(vt_end)
        .next_multiple_of(16);
    // The bias blocks (constants, the products' initial partials) above
    // the weights, out of every buffer's way: in other element pairs than
    // the inputs and outputs, so no bank rule ties them to those.
    // Streamed, out's tiles keep their home pieces there.
    let out_kept = weights.kept_bytes(out, false);
    let bias_qk = (w_out + out_kept).next_multiple_of(16);
    let bias_out = (bias_qk + v_qk.bias_bytes() as u32).next_multiple_of(16);
    let bias_vt = (bias_out + v_out.bias_bytes() as u32).next_multiple_of(16);
    let weights_end = (bias_vt + v_vt.bias_bytes() as u32).max(ln.end);
    window.base = weights_end;
    let vt_bottom = if window.fresh || vt_streams {
        l_vt.buffers_bottom()
    } else {
        l_vt.results_bottom()
    };
    let transient_bottom = l_qk
        .buffers_bottom()
        .min(vt_bottom)
        .min(l_out.buffers_bottom())
        .min(x_groups.unwrap_or(ln.x));
    if transient_bottom < window.scratch_floor() {
        let floor = u64::from(window.scratch_floor());
        let below = |b: u32| floor.saturating_sub(u64::from(b));
        return Err(Short::of(
            format!(
                "the products do not fit beside each other: their weights, bias blocks and vt's input take {} bytes of interleaved memory (above {} bytes earlier blocks keep) and their inputs, outputs and reductions {}, against {}{}",
                weights_end - private_start,
                private_start - machine.interleaved_base,
                machine.sram_end - transient_bottom,
                machine.sram_end - machine.interleaved_base,
                window.floor_note()
            ),
            [
                below(l_qk.buffers_bottom()),
                below(vt_bottom),
                below(l_out.buffers_bottom()),
            ],
        ));
    }
    // The scratch's bottom, where the attention's window lies later.
    let bottom = window.scratch_floor().next_multiple_of(16);
    // Streamed, qk's blocks arrive right below its input, where its
    // reduction's buffers lie later (`ReductionPlace::OverInputAndWeights`).
    let qk_streams = weights.streams(qk);
    let qk_block = super::stream::block_bytes(qk, false);
    let qk_gathered = right_below(l_qk.input, qk_block);
    if qk_streams && qk_gathered < bottom {
        return Err(Short::of(
            format!(
                "qk's weights streamed in do not fit: {qk_block} bytes gathered below its input at 0x{:x}, above the scratch's bottom at 0x{bottom:x}",
                l_qk.input
            ),
            [u64::from(bottom - qk_gathered), 0, 0],
        ));
    }
    // Where they are scratch, vt's weights (the LayerNorm rows exchange A
    // writes) lie right below its input (or where its input would be, if
    // that is private), where its reduction's buffers lie later
    // (`ReductionPlace::OverInputAndWeights`).
    let vt_rows = if restore_late {
        let above = if shared_input || vt_streams {
            l_vt.input
        } else {
            l_vt.output
        };
        let at = right_below(above, v_vt.weight_bytes() as u32);
        if at < bottom {
            return Err(Short::of(
                format!(
                    "vt's weights (LayerNorm's rows) do not fit the scratch: {} bytes below its input at 0x{above:x}, above the scratch's bottom at 0x{bottom:x}",
                    v_vt.weight_bytes()
                ),
                [0, u64::from(bottom - at), 0],
            ));
        }
        at
    } else {
        base
    };
    let vt_home = vt_streams.then_some(vt_input);
    let qk_home = qk_streams.then_some(base);
    let qk_weights = if qk_streams { qk_gathered } else { base };
    // Region 0 of the out tiles: the residual and the sum in the add
    // columns (the add's loads and store each need their own bank), the
    // vertex states below.
    let span = owned_rows_bytes(out);
    let adds = window
        .adds(span, 2, machine)
        .map_err(|e| Short::of(e, [0; 3]))?;
    let [residual, sum] = adds[..] else {
        unreachable!("two columns asked for")
    };
    let states_qkvt = window.region0_beside_rows(v_qk.state_bytes().max(v_vt.state_bytes()) as u32);
    let states_out = window.region0_beside_rows(v_out.state_bytes() as u32);
    // The broadcast biases' sources: qk's rows and vt's values (FP8) in
    // one place (their tiles are disjoint), out's their own.
    let source = |p: &GemmPlan| BiasBroadcast::source_bytes(&p.vertex(), p.shape.epilogue.per_row);
    let qkvt = source(qk).max(source(vt));
    let rows_qkvt = (qkvt > 0).then(|| window.region0(qkvt));
    let rows_out = (source(out) > 0).then(|| window.region0(source(out)));
    let rows_qk = rows_qkvt.filter(|_| v_qk.bias_in_output);
    let rows_vt = rows_qkvt.filter(|_| v_vt.bias_in_output);
    let tensors_start = window.region0;
    let bounds = if restore_late {
        let out_block = if weights.streams(out) {
            super::stream::kept(v_out.weight_bytes() as u32, false)
        } else {
            0
        };
        [
            results_at_exchange(qk, &l_qk),
            results_at_exchange(vt, &l_vt),
            right_below(l_out.input, out_block),
        ]
    } else {
        [l_qk.buffers_bottom(), vt_bottom, l_out.buffers_bottom()]
    };
    // The lowest bound is the window's top; the first product with it
    // is the one a squeeze would raise it by.
    let window_top = bounds.into_iter().min().expect("three bounds");
    let results_end = [(&l_qk, &v_qk), (&l_vt, &v_vt)]
        .map(|(l, v)| l.output + output_used(v) as u32)
        .into_iter()
        .max()
        .expect("two products");
    let flash_compute = [
        (results_end, machine.sram_end),
        (window.scratch_floor(), bounds[0].min(bounds[1])),
    ];
    tracing::debug!(
        target: "ipu-lower",
        "attention window from 0x{:x}: below qk's 0x{:x}, vt's 0x{:x} and out's 0x{:x}",
        window.scratch_floor(),
        bounds[0],
        bounds[1],
        bounds[2]
    );
    let window_bound = [0, 1, 2]
        .into_iter()
        .find(|&n| bounds[n] == window_top)
        .expect("one bound is the least");
    Ok(ProductLayouts {
        qk: TileLayout {
            weights: qk_weights,
            home: qk_home,
            states: states_qkvt,
            bias: l_qk.bias.map(|_| bias_qk),
            bias_rows: rows_qk,
            tensors_start,
            ..l_qk
        },
        vt: TileLayout {
            weights: vt_rows,
            states: states_qkvt,
            input: if vt_streams { l_vt.input } else { vt_input },
            bias: l_vt.bias.map(|_| bias_vt),
            bias_rows: rows_vt,
            tensors_start,
            ..l_vt
        },
        out: TileLayout {
            weights: w_out,
            home: weights.streams(out).then_some(w_out),
            codes: None,
            states: states_out,
            bias: l_out.bias.map(|_| bias_out),
            bias_rows: rows_out,
            tensors_start,
            ..l_out
        },
        window_start: window.scratch_floor(),
        vt_input_shared: shared_input,
        restore_late,
        vt_home,
        out_weight_bytes: v_out.weight_bytes() as u32,
        transient_bottom,
        window_top,
        out_written: (bounds[2], l_out.output),
        window_bound,
        flash_compute,
        residual,
        sum,
        x: ln.x,
        x_groups,
        ln_out: ln.ln_out,
        gamma: ln.gamma,
        beta: ln.beta,
    })
}

/// Where `bytes` end right below `top`, 16-byte aligned (0 if they do not
/// fit under it: the callers' bounds then fail).
fn right_below(top: u32, bytes: u32) -> u32 {
    top.saturating_sub(bytes) / 16 * 16
}

/// The lowest byte of `plan`'s results when its reduction is done (what
/// exchange B reads): Y's buffer, or the first result buffer after an odd
/// number of reduction rounds ([`super::codegen::PlacedGemm::final_view`]).
fn results_at_exchange(plan: &GemmPlan, lay: &TileLayout) -> u32 {
    match lay.reduction {
        Some([_, first, _]) if plan.grid_k.trailing_zeros() % 2 == 1 => first,
        _ => lay.output,
    }
}

impl ProductLayouts {
    /// The attention tile of `core` placed beside the products: its
    /// window (what the exchanges write, the mask, O, the statistics and
    /// the combined rows) between the weights and the products' inputs
    /// and outputs, its scores and probabilities (and the partials'
    /// receive buffer, once they are dead) over those.
    pub(super) fn core_tile(
        &self,
        s: AttentionShape,
        core: CorePlan,
        machine: &MachineModel,
    ) -> Result<(TileAttention, Option<CombineLayout>), String> {
        // A flash-style tile computes while exchange B's later parts still
        // read qk's and vt's results: its scores and probabilities stay
        // off them (but may lie over out's buffers, which are written
        // after the attention). Other tiles' lie over the products' dead
        // buffers.
        let all = [(self.window_start, machine.sram_end)];
        let compute: &[(u32, u32)] = if core.flash() {
            &self.flash_compute
        } else {
            &all
        };
        // Flash-style: two slots of O and statistics, the running
        // accumulator (chunk 0's, then every chunk's so far) and the
        // current chunk's. Keys split: O over the scores (exchange D reads
        // it and writes the partials below it; the combined rows, which
        // exchange C reads, stay in the window).
        let output = match (core.flash(), core.split()) {
            (true, _) => OutputPlace::Window { slots: 2 },
            (false, true) => OutputPlace::OverScores,
            (false, false) => OutputPlace::Window { slots: 1 },
        };
        // The mask block stays in region 0, where the program loads it
        // (`WindowRestore::mask`, laid out once the block's plan is made:
        // until then the region's first byte stands in for it).
        let mask = MaskPlace::Apart(machine.sram_base);
        let (att, placed) = TileAttention::place(
            (core.rows, s.dp(), core.keys, s.dp()),
            (
                (s.softmax_scale(), s.scores()),
                core.combines(),
                output,
                mask,
            ),
            (self.window_start, self.window_top),
            compute,
            machine,
        )?;
        // A key-split tile's combination divides by the row's sum (see
        // [`combine_of`]): its softmax skips normalising.
        // Q arrives scaled: qk's tiles multiply it
        // ([`AttentionShape::q_columns_scaled`]), once for every attention
        // tile that receives it.
        let att = TileAttention {
            normalise: !core.split() || core.flash(),
            ..att
        };
        if !core.combines() {
            return Ok((att, None));
        }
        if core.flash() {
            // Each chunk after the first folds into the accumulator in
            // place: O where the values' product wrote it, the statistics
            // after it.
            let v = att.values();
            let input = v.output_group(0);
            let stats = att.stats.expect("a combining tile has statistics");
            return Ok((
                att,
                Some(CombineLayout {
                    input,
                    part_stride: placed.slot_stride,
                    group_stride: v.group_stride(),
                    stats_offset: stats - input,
                    output: input,
                    output_stride: v.group_stride(),
                }),
            ));
        }
        let groups = s.dp() / 16;
        let n = core.owned_rows();
        let output_stride = n * 32 + 8;
        let combined = u64::from(groups * output_stride);
        // Exchange D's receive buffer over S and P, packed.
        let part_stride = (groups * n * 32 + 8 * n).next_multiple_of(8);
        let input = placed.compute_bottom.next_multiple_of(16);
        let input_end = u64::from(input) + u64::from(part_stride) * u64::from(core.key_blocks);
        // The partials arrive while the tile's own O (above them, over the
        // scores) is read.
        let partials_top = if att.o > input {
            att.o
        } else {
            machine.sram_end
        };
        // The combined rows at the window's end, or else right above the
        // partials, or else at the bottom of out's output (which out
        // writes after exchange C): clear of the partials and of what
        // exchange C writes, over S, P or O (dead by then) if need be.
        let (lo, hi) = self.out_written;
        let clear = |at: u64| {
            let end = at + combined;
            (end <= u64::from(lo) || at >= u64::from(hi))
                && (end <= u64::from(input) || at >= input_end)
                && end <= u64::from(machine.sram_end)
        };
        let beside = u64::from(placed.window_end.next_multiple_of(16));
        let above = input_end.next_multiple_of(16);
        let over_out = u64::from(hi.next_multiple_of(16));
        let output = [beside, above, over_out].into_iter().find(|&at| clear(at));
        let (Some(output), true) = (output, input_end <= u64::from(partials_top)) else {
            return Err(format!(
                "the combination's buffers do not fit: {combined} bytes of combined rows beside the window's {} (below 0x{lo:x}), above the partials or from 0x{hi:x}; {} bytes of partials at 0x{input:x} (below 0x{partials_top:x})",
                placed.window_end - self.window_start,
                input_end - u64::from(input)
            ));
        };
        let output = output as u32;
        Ok((
            att,
            Some(CombineLayout {
                input,
                part_stride,
                group_stride: 0,
                stats_offset: 0,
                output,
                output_stride,
            }),
        ))
    }

    /// out's layout where its weights stream in: exchange C gathers them
    /// (FP8: their codes) while it reads the attention's output from the
    /// window, so they arrive above the window (`core`'s, which ends
    /// where [`window_end`] says) and below out's input, right under it:
    /// the attention's scores lie there, dead by then, and out's
    /// reduction's buffers may lie over them later (the vertex has read
    /// them by then). Unchanged where they are resident.
    fn out_gathered(
        &self,
        s: AttentionShape,
        (core, att, combine): (&CorePlan, &TileAttention, Option<&CombineLayout>),
    ) -> Result<TileLayout, Short> {
        let mut out = self.out;
        if out.home.is_none() {
            return Ok(out);
        }
        let block = super::stream::kept(self.out_weight_bytes, false);
        let floor = window_end(s, core, att, combine);
        let at = out
            .input
            .checked_sub(block)
            .map(|a| a / 16 * 16)
            .filter(|&a| a >= floor)
            .ok_or_else(|| {
                Short::of(
                    format!(
                        "out's weights streamed in do not fit: {block} bytes gathered between the window's end at 0x{floor:x} and out's input at 0x{:x}",
                        out.input
                    ),
                    [0, 0, (u64::from(floor) + u64::from(block)).saturating_sub(u64::from(out.input))],
                )
            })?;
        out.weights = at;
        Ok(out)
    }

    /// The whole layout with `core`'s attention tiles (the window's
    /// constants not yet placed: [`WindowRestore`]).
    pub(super) fn with_core(
        &self,
        s: AttentionShape,
        core: CorePlan,
        machine: &MachineModel,
    ) -> Result<AttentionLayout, Short> {
        let (att, combine) = self
            .core_tile(s, core, machine)
            .map_err(|e| Short::of(e, [0; 3]))?;
        let out = self.out_gathered(s, (&core, &att, combine.as_ref()))?;
        Ok(AttentionLayout {
            vt_input_shared: self.vt_input_shared,
            restore_late: self.restore_late,
            vt_home: self.vt_home,
            qk: self.qk,
            vt: self.vt,
            out,
            residual: self.residual,
            sum: self.sum,
            core: att,
            combine,
            restore: WindowRestore {
                mask: 0,
                zeros: 0,
                zero_bytes: 0,
            },
            x: self.x,
            x_groups: self.x_groups,
            ln_out: self.ln_out,
            gamma: self.gamma,
            beta: self.beta,
        })
    }
}

/// The end of the attention tiles' window: the combined rows with the
/// keys split (Q where they lie above the partials), the chunk slot's
/// statistics flash-style (the slot after
/// the accumulator's), else the statistics or the output.
pub(super) fn window_end(
    s: AttentionShape,
    core: &CorePlan,
    att: &TileAttention,
    combine: Option<&CombineLayout>,
) -> u32 {
    let own = att
        .stats
        .map_or(att.o + att.values().output_bytes() as u32, |st| {
            st + 8 * core.rows
        });
    match combine {
        None => own,
        Some(c) if core.flash() => own + c.part_stride,
        // Key-split: the combined rows, where they lie beside the window,
        // else Q (O lies over the scores).
        Some(c) if c.output < c.input => c.output + s.dp() / 16 * c.output_stride,
        Some(_) => att.q + att.scores().input_bytes() as u32,
    }
}

/// The best attention tiles of one form on the `gemm` tiles from
/// `first`, by estimate: for each number of key parts (`forced`, as
/// `(key blocks, chunks)`, if given), the most row blocks the tiles hold
/// (and at most 255 rows a tile, the softmax's stride limit). Key-split
/// tiles hold a block of keys each; a flash-style tile takes every key of
/// its head in chunks whose last ends on a panel count of the others'
/// parity (so every chunk's output groups, and the combination's
/// partials, lie alike in their slots).
pub(super) fn best_core(
    s: AttentionShape,
    products: &ProductLayouts,
    gemm: u32,
    first: u32,
    form: CoreForm,
    forced: Option<(u32, u32)>,
    machine: &MachineModel,
) -> FormEstimate {
    let panels = s.key_panels();
    let of_form = |(kb, c): (u32, u32)| CoreForm::of(kb, c) == form && (kb == 1 || c == 1);
    let candidates: Vec<u32> = match (forced, form) {
        (Some(f), _) if of_form(f) => vec![f.0.max(f.1)],
        (Some(_), _) => Vec::new(),
        (None, CoreForm::Materialised) => vec![1],
        (None, _) => (2..=panels).collect(),
    };
    let mut best: Option<(CorePlan, u64)> = None;
    let mut refused: Option<String> = None;
    let mut why = if forced.is_some_and(|f| !of_form(f)) {
        "not the forced form".to_string()
    } else {
        format!("{panels} panels of keys do not split")
    };
    for n in candidates {
        let per = panels.div_ceil(n);
        let parts = panels.div_ceil(per);
        let (key_blocks, chunks) = match form {
            CoreForm::Flash => (1, parts),
            _ => (parts, 1),
        };
        if CoreForm::of(key_blocks, chunks) != form {
            continue;
        }
        if forced.is_some_and(|f| f != (key_blocks, chunks)) {
            why = format!(
                "{panels} panels of keys in {n} parts of whole panels make {parts} parts of {per}"
            );
            continue;
        }
        if form == CoreForm::Flash && (panels - (parts - 1) * per) % 2 != per % 2 {
            why = format!(
                "{parts} chunks of {per} panels of keys leave a last chunk of another parity"
            );
            continue;
        }
        let most = gemm / (s.image_heads() * key_blocks);
        if most == 0 {
            why = format!(
                "{} heads x {key_blocks} blocks of keys need more than the {gemm} tiles",
                s.image_heads()
            );
            continue;
        }
        let rows = s.m.div_ceil(most.min(s.m));
        if rows > 255 {
            why = format!("{rows} query rows a tile, more than 255");
            continue;
        }
        let core = CorePlan {
            first_tile: first,
            rows,
            blocks: s.m.div_ceil(rows),
            key_blocks,
            keys: per * 16,
            chunks,
        };
        // The flash form's chunks trade cycles for code: the fastest
        // whose states fit. (A forced form is taken whatever its code.)
        // The tile is placed once for both.
        let estimate = products
            .core_tile(s, core, machine)
            .and_then(|(att, combine)| {
                if forced.is_none() && core.flash() {
                    core_states(s, &core, att)?;
                }
                core_estimate(s, &core, (att, combine), machine)
            });
        match estimate {
            Ok(cycles) => {
                if best.is_none_or(|(_, b)| cycles < b) {
                    best = Some((core, cycles));
                }
            }
            Err(e) => {
                tracing::debug!(key_blocks, chunks, rows, "attention tiles refused: {e}");
                // The first candidate that did not fit says most: later
                // ones (more parts of keys, more rows a tile) fail for
                // their own reasons.
                refused.get_or_insert(e);
            }
        }
    }
    FormEstimate {
        form: form.name(),
        short_of_memory: best.is_none() && refused.is_some(),
        plan: best.ok_or_else(|| refused.unwrap_or(why)),
    }
}

/// The most bytes of vertex states a flash-style attention tile's
/// launches may take (72 bytes a launch,
/// [`crate::codelets::gemm::STATE_BYTES_PER_LAUNCH`]: the scores' and the
/// values' of each distinct chunk the tile runs): its chunks are a free
/// choice that trades cycles (fewer, longer chunks) for code (each chunk
/// a launch a block of 16 keys), and the planner takes the fastest that
/// fits. Its code, exchange code and every other block's code share the
/// chain's
/// [`super::chain::CODE_ROOM`]: on the whole so400m at FP8, when it still
/// planned flash-style, the flash form in 6 chunks of 128 keys took 31,680
/// bytes of states (its three distinct chunks) and the busiest tiles'
/// programs 108,892 bytes; in 16 chunks of 48, 10,080 and every tile
/// fitted. (It now plans key-split, its tiles' output over their scores:
/// 12 blocks of 64 keys, at most 33,020 bytes of code on a tile.) A
/// budget, measured, not derived: the planner does not yet estimate a
/// form's whole code.
pub const ATTENTION_STATES_ROOM: u64 = 10 * 1024;

/// Refuses `core` where its tile's launches' vertex states take more than
/// [`ATTENTION_STATES_ROOM`]: a flash-style tile runs up to three distinct
/// parts (the first chunk, the middle ones, the last). Returns the bytes.
fn core_states(s: AttentionShape, core: &CorePlan, att: TileAttention) -> Result<u64, String> {
    // The first chunk and the middle ones (all keys real), the last (the
    // rest of the keys, masked), as the lowering emits them.
    let last = last_chunk(s, core, att).state_bytes();
    let whole = middle_chunk(att).state_bytes();
    let bytes = match core.chunks {
        0 | 1 => att.state_bytes(),
        2 => whole + last,
        _ => 2 * whole + last,
    };
    tracing::debug!(target: "ipu-lower", chunks = core.chunks, keys = core.keys, bytes, "attention tile's vertex states");
    if bytes > ATTENTION_STATES_ROOM {
        return Err(format!(
            "its launches' vertex states take {bytes} bytes a tile ({} chunks of {} keys), more than the {ATTENTION_STATES_ROOM} an attention tile may keep beside the chain's other code",
            core.chunks, core.keys
        ));
    }
    Ok(bytes)
}

/// `att` (a tile's part of all `core.keys` keys) as `core`'s last part
/// holds it: the rest of the keys (and, after other chunks, Q already
/// scaled).
fn last_chunk(s: AttentionShape, core: &CorePlan, att: TileAttention) -> TileAttention {
    let (lo, _) = core.keys_of(core.chunks - 1, s.m);
    TileAttention {
        keys: s.m.min(lo + core.keys) - lo,
        q_scale: if core.chunks > 1 { 1.0 } else { att.q_scale },
        ..att
    }
}

/// `att` as a flash-style tile's chunks after the first and before the
/// last hold it: every key real, Q already scaled.
fn middle_chunk(att: TileAttention) -> TileAttention {
    TileAttention {
        masked: false,
        q_scale: 1.0,
        ..att
    }
}

/// The attention's estimated cycles with `core` (what the search
/// compares): exchange B at the exchange's bytes per cycle into the
/// busiest tile, the tile's codelets, and with the keys split exchange D
/// (out of and into the busiest tile), the combination and one more
/// sync (each exchange's; the compute after it follows at a fence).
pub(super) fn core_estimate(
    s: AttentionShape,
    core: &CorePlan,
    (att, combine): (TileAttention, Option<CombineLayout>),
    machine: &MachineModel,
) -> Result<u64, String> {
    let bpc = u64::from(machine.exchange_bytes_per_cycle);
    let dp = u64::from(s.dp());
    let parts = u64::from(core.chunks);
    let received = u64::from(core.rows) * dp * 2 + parts * u64::from(core.keys) * dp * 4;
    let est = |a: TileAttention| a.estimate_cycles().map_err(|e| e.to_string());
    // A flash-style tile's chunks before the last start from zero; the
    // last holds the rest of the keys.
    let last = last_chunk(s, core, att);
    let compute = if core.flash() {
        // The first chunk scales Q; the middle ones start from zero.
        let first = TileAttention {
            masked: false,
            ..att
        };
        est(first)?
            + (parts - 2) * est(middle_chunk(att))?
            + est(last)?
            + (parts - 1) * u64::from(machine.sync_latency)
    } else {
        est(att)?
    };
    let mut cycles = received / bpc + compute;
    if let Some(c) = combine {
        let n = u64::from(core.owned_rows());
        let combine = combine_of(s, core, &c, n as u32)
            .estimate_cycles()
            .map_err(|e| e.to_string())?;
        // Flash-style: once per chunk after the first, with its call.
        cycles += if core.flash() {
            (parts - 1) * (combine + call_cycles(machine))
        } else {
            combine
        };
        if core.split() {
            let row = dp * 2 + 8;
            let kb = u64::from(core.key_blocks);
            let moved = (n * (kb - 1) * row).max(u64::from(core.rows) * row);
            cycles += moved / bpc + u64::from(machine.sync_latency);
        }
    }
    Ok(cycles)
}

/// The combination of `rows` owned rows on a key-split attention tile
/// (one partial per key block), or a flash-style tile's running one (a
/// chunk folded into the accumulator, which takes the combined
/// statistics too).
pub(super) fn combine_of(
    s: AttentionShape,
    core: &CorePlan,
    c: &CombineLayout,
    rows: u32,
) -> AttentionCombine {
    let groups = s.dp() / 16;
    // Exchange D packs each partial by the rows the tile combines (the
    // last row block's may be fewer than a block's share).
    let (group_stride, stats_offset) = if core.flash() {
        (c.group_stride, c.stats_offset)
    } else {
        (rows * 32, groups * rows * 32)
    };
    AttentionCombine {
        rows,
        // Flash-style: the accumulator and one chunk.
        parts: if core.flash() { 2 } else { core.key_blocks },
        groups,
        scale: s.softmax_scale(),
        input: c.input,
        part_stride: c.part_stride,
        group_stride,
        stats_offset,
        output: c.output,
        output_stride: c.output_stride,
        stats_output: core.flash().then_some(c.input + c.stats_offset),
        // Key-split tiles leave P unnormalised (the combination weights
        // each block's output anyway); a flash-style tile's running
        // output stays normalised.
        normalised: core.flash(),
    }
}
