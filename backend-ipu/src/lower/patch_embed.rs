//! The vision transformer's patch embedding on the tiles: a convolution
//! whose stride is its kernel (non-overlapping `p x p` patches), reshaped
//! to tokens and plus a position table,
//!
//! ```text
//! %e = nn.conv2d %x, %w, %b {strides = [p, p]}   x [N, C, H, W], w [D, C, p, p]
//! %r = nn.reshape %e {shape = [N, D, T]}          T = (H / p) (W / p) tokens
//! %t = nn.transpose %r {perm = [0, 2, 1]}
//! %y = nn.add %t, %pos                            pos [1, T, D] (either order)
//! ```
//!
//! is `y = patches(x) W + (b + pos)`: a rearrangement and one product,
//! whose rows are the `N` images' tokens, image after image.
//!
//! - **The rearrangement is the host's.** Every patch row (`C p p`
//!   values, channel-major like the weights) is `C p` runs of `p`
//!   contiguous pixels of the image, so the host input's pieces write each
//!   run where its row lives: no tile ever moves a pixel into place. The
//!   rows enter on *row tiles* ([`LnTiles`] that run no LayerNorm,
//!   [`LN_ROWS`] rows each), padded to whole 16-channel panels with zero
//!   columns loaded with the program (so no stale NaN meets a zero
//!   weight).
//! - **Exchange A** moves the rows into the product's input panels
//!   (`input_panel_transfers`, as the blocks' LayerNorm rows move).
//! - **The product** starts from per-row initial partials `b + pos[t]`
//!   ([`PlacedGemm::emit_row_bias`]): the bias and the position table cost
//!   no cycle. Its output (16-channel runs of the rows each tile owns after
//!   its K split's reduction) is the block's.
//!
//! Supersteps: `sync`, exchange A, then the product at a fence (no sync
//! between, see the simulator's module doc), and its reduction rounds,
//! one sync each.

use super::reduce::SYNCS_PER_ROUND;
use super::stream::Weights;
use super::window::Window;
use ipuc_dialects::ipu::TensorPiece;
use ipuc_dialects::nn;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, Location, OpId, Type, Value};

use super::block::positions;
use super::block_exchange::input_panel_transfers;
use super::block_match::constant_operand;
use super::codegen::{
    emit_calls, emit_standalone, emit_zero_runs, layout, Calls, Constants, Frame, PlacedGemm,
    TileLayout, ZeroRun,
};
use super::ln_tiles::{LnOutput, LnTiles, LN_ROWS};
use super::passes::{constant_of, constant_values, only_user, ADD};
use super::plan::{plan_gemm, Epilogue, GemmPlan, GemmShape, Rejected};
use super::schedule::{schedule, Schedule};
use crate::codelets::amp::AmpVariant;
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::instance_memo::InstanceMemo;

/// A patch embedding's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PatchShape {
    /// Images (the batch), each embedded alike: image `i`'s tokens are
    /// the product's rows `i tokens ..`.
    pub images: u32,
    /// Image channels.
    pub channels: u32,
    /// Image height.
    pub height: u32,
    /// Image width.
    pub width: u32,
    /// The patch's side (the convolution's kernel and stride).
    pub patch: u32,
    /// The embedding's width (output channels), a multiple of 16.
    pub d: u32,
}

impl PatchShape {
    /// Patches across and down.
    pub fn grid(&self) -> (u32, u32) {
        (self.width / self.patch, self.height / self.patch)
    }

    /// Tokens: one per patch.
    pub fn tokens(&self) -> u32 {
        let (gw, gh) = self.grid();
        gw * gh
    }

    /// Whether some pixels are in no patch: the convolution reads whole
    /// patches from the top left, and a side that is not whole patches
    /// leaves its last pixels unread (so400m's 384 in patches of 14: 6).
    pub fn has_unread(&self) -> bool {
        !self.width.is_multiple_of(self.patch) || !self.height.is_multiple_of(self.patch)
    }

    /// The product's rows: every image's tokens, image after image.
    pub fn rows(&self) -> u32 {
        self.images * self.tokens()
    }

    /// Values of one patch row.
    pub fn k(&self) -> u32 {
        self.channels * self.patch * self.patch
    }

    /// A row as the row tiles hold it: whole 16-channel panels.
    pub fn k_padded(&self) -> u32 {
        self.k().next_multiple_of(16)
    }
}

/// The constants, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct PatchConstants {
    /// `[k, d]`: row `c p p + y p + x` is the kernel's tap (c, y, x).
    pub w: Vec<f64>,
    /// `[tokens, d]`: the convolution's bias plus the position table.
    pub rows: Vec<f64>,
}

/// A matched patch embedding.
#[derive(Clone, Debug)]
pub struct PatchMatch {
    /// Its ops.
    pub ops: Vec<OpId>,
    /// The sizes.
    pub shape: PatchShape,
    /// The convolution.
    pub conv: OpId,
    /// The position add: its result is the block's.
    pub add: OpId,
    /// The image (f16).
    pub input: Value,
    /// The constants.
    pub constants: PatchConstants,
}

/// The patch embedding that starts at convolution `conv`; an error says
/// what does not match.
pub fn patch_from(ctx: &Context, conv: OpId) -> Result<PatchMatch, Diagnostic> {
    let mismatch = |op: OpId, msg: &str| {
        Diagnostic::op_error(
            ctx,
            op,
            format!("{msg}; the lowering takes a patch embedding: a convolution whose stride is its kernel, reshaped and transposed to tokens, plus a position table"),
        )
    };
    let conv_op = nn::Conv2dOp(conv);
    let params = conv_op.params(ctx);
    let input = ctx.operands(conv)[0];
    let shape_of = |v: Value| -> Vec<i64> {
        ctx.value_type(v)
            .shape()
            .map(<[i64]>::to_vec)
            .unwrap_or_default()
    };
    let (x, w) = (shape_of(input), shape_of(ctx.operands(conv)[1]));
    let [images, channels, height, width] = x[..] else {
        return Err(mismatch(conv, "the images must be a static [N, C, H, W]"));
    };
    if images < 1 || images > i64::from(u32::MAX) {
        return Err(mismatch(conv, "the images must be a static [N, C, H, W]"));
    }
    let [d, wc, kh, kw] = w[..] else {
        return Err(mismatch(conv, "the kernel must be [D, C, k, k]"));
    };
    let p = kh;
    if kw != p || wc != channels || params.strides != [p, p] || params.groups != 1 {
        return Err(mismatch(
            conv,
            "the kernel must be square, over every channel, with its side as its stride",
        ));
    }
    if params.pads != [0; 4] || params.dilations != [1, 1] {
        return Err(mismatch(
            conv,
            "the convolution must have no padding or dilation",
        ));
    }
    if height < p || width < p {
        return Err(mismatch(conv, "the image must hold one patch at least"));
    }
    if d % 16 != 0 {
        return Err(mismatch(
            conv,
            &format!("the embedding width {d} must be a multiple of 16"),
        ));
    }
    let shape = PatchShape {
        images: images as u32,
        channels: channels as u32,
        height: height as u32,
        width: width as u32,
        patch: p as u32,
        d: d as u32,
    };
    let t = i64::from(shape.tokens());
    let reshape = only_user(ctx, conv)
        .filter(|&r| {
            ctx.name_str(r) == nn::RESHAPE && shape_of(ctx.results(r)[0]) == [images, d, t]
        })
        .ok_or_else(|| {
            mismatch(
                conv,
                &format!("the convolution's only user is not a reshape to [{images}, {d}, {t}]"),
            )
        })?;
    let transpose = only_user(ctx, reshape)
        .filter(|&r| {
            ctx.name_str(r) == nn::TRANSPOSE
                && ctx.attr(r, "perm").and_then(Attribute::as_i64_list) == Some(vec![0, 2, 1])
        })
        .ok_or_else(|| {
            mismatch(
                reshape,
                "the reshape's only user is not a transpose [0, 2, 1]",
            )
        })?;
    let add = only_user(ctx, transpose)
        .filter(|&a| ctx.name_str(a) == ADD)
        .ok_or_else(|| mismatch(transpose, "the tokens' only user is not the position add"))?;
    let tokens = ctx.results(transpose)[0];
    let pos = *ctx
        .operands(add)
        .iter()
        .find(|&&v| v != tokens)
        .ok_or_else(|| mismatch(add, "the position add adds the tokens to themselves"))?;
    if shape_of(pos).iter().product::<i64>() != t * d
        || shape_of(ctx.results(add)[0]) != [images, t, d]
    {
        return Err(mismatch(
            add,
            &format!("the position table must be [1, {t}, {d}] (and the sum [{images}, {t}, {d}])"),
        ));
    }
    let block = "patch embedding";
    let kernel = constant_operand(ctx, conv, block, "the kernel", ctx.operands(conv)[1])?;
    let bias = match conv_op.bias(ctx) {
        Some(b) => constant_operand(ctx, conv, block, "the bias", b)?,
        None => vec![0.0; d as usize],
    };
    let (table, gather) = position_table(ctx, add, pos)?;
    // The kernel [D, K] transposed to the product's [K, D].
    let (k, du) = (shape.k() as usize, d as usize);
    let mut wt = vec![0.0; k * du];
    for (o, row) in kernel.chunks_exact(k).enumerate() {
        for (i, &v) in row.iter().enumerate() {
            wt[i * du + o] = v;
        }
    }
    let rows = table
        .chunks_exact(du)
        .flat_map(|r| r.iter().zip(&bias).map(|(p, b)| p + b))
        .collect();
    let mut ops = vec![conv, reshape, transpose];
    ops.extend(gather);
    ops.push(add);
    Ok(PatchMatch {
        ops,
        shape,
        conv,
        add,
        input,
        constants: PatchConstants { w: wt, rows },
    })
}

/// The position table `pos` (`[t, d]` values, row-major) the patch
/// embedding's add `add` reads: an `nn.constant`, or an `nn.gather` of
/// constants (an export that did not fold `position_embedding(position_ids)`;
/// too large for canonicalize's folds), evaluated here by the dialect's
/// own gather ([`nn::gather_constant`]); with the gather, which the block
/// then holds.
fn position_table(
    ctx: &Context,
    add: OpId,
    pos: Value,
) -> Result<(Vec<f64>, Option<OpId>), Diagnostic> {
    let block = "patch embedding";
    let gather = ctx
        .defining_op(pos)
        .filter(|&g| ctx.name_str(g) == nn::GATHER);
    let Some(g) = gather else {
        return Ok((
            constant_operand(ctx, add, block, "the position table", pos)?,
            None,
        ));
    };
    let error = |msg: String| Diagnostic::op_error(ctx, g, msg);
    let operand = |i: usize, what: &str| {
        constant_of(ctx, ctx.operands(g)[i])
            .as_ref()
            .and_then(nn::elements::dense_data)
            .ok_or_else(|| {
                error(format!(
                    "the {block} lowering needs {what} to be an nn.constant"
                ))
            })
    };
    let table = operand(0, "the gathered position table")?;
    let indices = operand(1, "the position table's indices")?;
    let values = nn::gather_constant(ctx, g, &table, &indices).ok_or_else(|| {
        let axis = ctx.attr(g, "axis").and_then(Attribute::as_int).unwrap_or(0);
        let shape = table.ty.shape().unwrap_or_default();
        let rank = shape.len() as i128;
        let n = usize::try_from(if axis < 0 { axis + rank } else { axis })
            .ok()
            .and_then(|a| shape.get(a))
            .map_or_else(|| "its".to_string(), |n| format!("the table's {n}"));
        error(format!("a position index is outside {n} rows"))
    })?;
    let values = constant_values(&values).map_err(|e| error(format!("the position table: {e}")))?;
    Ok((values, Some(g)))
}

/// The plan: the product, the row tiles, where the rows are.
#[derive(Clone, Debug)]
pub struct PatchPlan {
    /// The sizes.
    pub shape: PatchShape,
    /// The product `[tokens, k] x [k, d]` with per-row initial partials.
    pub product: GemmPlan,
    /// Its search's best rejected candidates.
    pub rejected: Vec<Rejected>,
    /// The row tiles, [`LN_ROWS`] patch rows each.
    pub row_tiles: Vec<u32>,
    /// Where the rows are on a row tile (`k_padded` f16 each).
    pub rows: u32,
    /// Where the host writes the pixels no patch reads (on the last row
    /// tile; each run over the last, never read), when there are any.
    pub sink: u32,
    /// What the block leaves of the memory it was planned in (the next
    /// block's window).
    pub next: Window,
    /// Where the product's tensors are on its tiles.
    pub layout: TileLayout,
}

impl PatchPlan {
    /// The row tiles as [`LnTiles`] that run no LayerNorm (their rows are
    /// the exchange's source as LayerNorm's output would be).
    pub fn row_carriers(&self) -> LnTiles<'_> {
        LnTiles {
            tiles: &self.row_tiles,
            rows_per_tile: LN_ROWS,
            m: self.shape.rows(),
            c: self.shape.k_padded(),
            eps: 0.0,
            affine: true,
            x: self.rows,
            ln_out: self.rows,
            gamma: self.rows,
            beta: self.rows,
            output: LnOutput::F16,
            panels: false,
            x_groups: None,
        }
    }

    /// The product placed on its tiles.
    pub fn placed(&self) -> PlacedGemm {
        PlacedGemm::new(&self.product, self.layout, "patch")
    }

    /// Every tile of the block, ascending.
    pub fn tiles(&self) -> Vec<u32> {
        let first = self.product.first_tile;
        let mut t: Vec<u32> = (first..first + self.product.tiles()).collect();
        t.extend(&self.row_tiles);
        t
    }

    /// The images' pieces (`[N, C, H, W]`, row-major): each run of `p`
    /// pixels of one channel and image row, at its place in its patch's
    /// row on the patch's row tile.
    pub fn input_pieces(&self) -> Vec<TensorPiece> {
        let s = self.shape;
        let (p, (gw, _)) = (s.patch, s.grid());
        let row_bytes = s.k_padded() * 2;
        let (_, gh) = s.grid();
        let sink_tile = self.row_tiles.last().copied().unwrap_or(0);
        let mut out = Vec::new();
        let unread = |first: u32, count: u32| TensorPiece {
            tile: i64::from(sink_tile),
            address: i64::from(self.sink),
            first: i64::from(first),
            count: i64::from(count),
        };
        let pixels = s.channels * s.height * s.width;
        for (i, c) in (0..s.images).flat_map(|i| (0..s.channels).map(move |c| (i, c))) {
            for y in 0..s.height {
                let row = i * pixels + (c * s.height + y) * s.width;
                if y >= gh * p {
                    out.push(unread(row, s.width));
                    continue;
                }
                for gx in 0..gw {
                    let token = i * s.tokens() + (y / p) * gw + gx;
                    let tap = c * p * p + (y % p) * p;
                    let q = (token / LN_ROWS) as usize;
                    out.push(TensorPiece {
                        tile: i64::from(self.row_tiles[q]),
                        address: i64::from(self.rows + (token % LN_ROWS) * row_bytes + tap * 2),
                        first: i64::from(row + gx * p),
                        count: i64::from(p),
                    });
                }
                if gw * p < s.width {
                    out.push(unread(row + gw * p, s.width - gw * p));
                }
            }
        }
        out
    }

    /// Where `y` is when the block ends: each product tile's owned rows of
    /// its output groups, 16 channels a piece.
    pub fn output_pieces(&self) -> Vec<TensorPiece> {
        let placed = self.placed();
        positions(&self.product)
            .into_values()
            .flat_map(|(i, j, k)| placed.output_pieces((i, j, k), placed.final_view(k)))
            .collect()
    }

    /// Syncs every tile of the block runs.
    pub fn syncs(&self) -> u32 {
        1 + SYNCS_PER_ROUND * self.product.grid_k.trailing_zeros()
    }

    /// Exchange A: the rows into the product's input panels.
    pub fn exchange(&self, machine: &MachineModel) -> Schedule {
        let rows = self.row_carriers();
        let placed = self.placed();
        // Streamed weights first: the longest transfers.
        let mut transfers = super::stream::transfers(&placed);
        transfers.extend(input_panel_transfers(&placed, &rows));
        schedule(machine, &self.tiles(), &transfers)
    }

    /// The estimate, superstep by superstep.
    pub fn estimate(&self, machine: &MachineModel) -> PatchEstimate {
        self.estimate_with(machine, &self.exchange(machine))
    }

    /// [`Self::estimate`] with [`Self::exchange`]'s schedule already made
    /// (the lowering has it; scheduling it again took a second).
    fn estimate_with(&self, machine: &MachineModel, exchange: &Schedule) -> PatchEstimate {
        let e = &self.product.estimate;
        PatchEstimate {
            exchange: exchange.cycles,
            product: e.compute + e.rounds_exchange + e.reduction + e.epilogue,
            sync: u64::from(self.syncs()) * u64::from(machine.sync_latency),
        }
    }

    /// The plan report's lines.
    pub fn report(&self, machine: &MachineModel) -> String {
        let s = self.shape;
        format!(
            "patch embedding {}{}x{}x{} patches of {}, {} tokens x {} (rows of {} padded to {}): rows on tiles {}..={}\n  product: {}\n{}  estimate: {}\n",
            match s.images {
                1 => String::new(),
                n => format!("of {n} images, each "),
            },
            s.channels,
            s.height,
            s.width,
            s.patch,
            s.tokens(),
            s.d,
            s.k(),
            s.k_padded(),
            self.row_tiles.first().copied().unwrap_or(0),
            self.row_tiles.last().copied().unwrap_or(0),
            self.product,
            if self.layout.home.is_some() {
                format!(
                    "  weights streamed in: {}\n",
                    super::stream::report(&self.product, false, "exchange A")
                )
            } else {
                String::new()
            },
            self.estimate(machine)
        )
    }
}

/// The block's estimated cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PatchEstimate {
    /// Exchange A.
    pub exchange: u64,
    /// The product and its K split's rounds.
    pub product: u64,
    /// The syncs.
    pub sync: u64,
}

impl PatchEstimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.exchange + self.product + self.sync
    }
}

impl std::fmt::Display for PatchEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles (exchange {}, product {}, sync {})",
            self.total(),
            self.exchange,
            self.product,
            self.sync
        )
    }
}

/// Plans the block on the `count` tiles from `first`: the row tiles last,
/// the product searched over the others, its weights kept as `weights`
/// says.
pub fn plan_patch_in(
    shape: PatchShape,
    whole: &MachineModel,
    (first, count): (u32, u32),
    mut window: Window,
    weights: Weights,
) -> Result<PatchPlan, String> {
    if shape.d == 0 || shape.tokens() == 0 || shape.k() == 0 {
        return Err("the patch embedding has an empty dimension".into());
    }
    let m = shape.rows();
    let n_rows = m.div_ceil(LN_ROWS);
    let Some(gemm_tiles) = count.checked_sub(n_rows).filter(|&t| t > 0) else {
        return Err(format!(
            "{m} patch rows need {n_rows} row tiles and the product tiles of its own: the block has {count}"
        ));
    };
    // The search sees the interleaved memory earlier blocks left.
    let products = MachineModel {
        tiles: gemm_tiles,
        interleaved_base: window.base,
        ..whole.clone()
    };
    let gemm = GemmShape {
        m,
        k: shape.k(),
        n: shape.d,
        variant: AmpVariant::F16,
        epilogue: Epilogue {
            bias: true,
            ..Epilogue::default()
        },
    };
    let choice = plan_gemm(gemm, &products).map_err(|e| format!("the product: {e}"))?;
    let row_bytes = shape.k_padded() * 2;
    let product = choice.plan.placed_at(first);
    // Private memory: the weights and the bias block (the initial
    // partials) on the product's tiles, the pixel rows the host writes on
    // the row tiles (other tiles, from the same base); the product's
    // buffers are shared scratch.
    // Streamed in (`super::stream`), the weights keep their home pieces
    // there and are gathered below the product's buffers.
    let v = product.vertex();
    let mut lay = layout(&product, whole);
    let base = window.base.next_multiple_of(16);
    let rows = base;
    let streams = weights.streams(&product);
    let kept = weights.kept_bytes(&product, false);
    lay.weights = base;
    lay.bias = v.bias.map(|_| (base + kept).next_multiple_of(16));
    let product_end = lay.bias.map_or(base + kept, |b| b + v.bias_bytes() as u32);
    // The pixels no patch reads land after the rows, one run over the
    // last: an image row at most.
    let sink = (rows + LN_ROWS * row_bytes).next_multiple_of(8);
    let sink_bytes = if shape.has_unread() {
        shape.width * 2
    } else {
        0
    };
    let private_end = product_end.max(sink + sink_bytes);
    let mut shared_bottom = lay.buffers_bottom();
    if streams {
        lay.home = Some(base);
        lay.weights = shared_bottom.saturating_sub(v.weight_bytes() as u32) & !15;
        shared_bottom = lay.weights;
    }
    window.base = private_end;
    if window.scratch_floor() > shared_bottom {
        return Err(format!(
            "the patch embedding does not fit a tile's interleaved memory: its weights{} and bias block take {} bytes, {LN_ROWS} pixel rows {} (above {} bytes earlier blocks keep), its product's buffers{} {}, against {}{}",
            if streams { "' home pieces" } else { "" },
            product_end - base,
            LN_ROWS * row_bytes,
            base - whole.interleaved_base,
            if streams { " and gathered weights" } else { "" },
            whole.sram_end - shared_bottom,
            whole.sram_end - whole.interleaved_base,
            window.floor_note()
        ));
    }
    window.use_scratch(shared_bottom);
    lay.states = window.region0_beside_rows(v.state_bytes() as u32);
    lay.tensors_start = window.region0;
    Ok(PatchPlan {
        shape,
        layout: lay,
        product,
        rejected: choice.rejected,
        row_tiles: (first + gemm_tiles..first + count).collect(),
        rows,
        sink,
        next: window.after_block(),
    })
}

/// What [`emit_patch_in`] reports.
#[derive(Clone, Copy, Debug)]
pub struct LoweredPatch {
    /// The `ipu.executable` it was emitted into.
    pub executable: OpId,
    /// The estimate.
    pub estimate: PatchEstimate,
    /// The most bytes of exchange code on a tile.
    pub exchange_code_bytes_max: u64,
}

/// The block as an executable of its own appended to `block`: host tensor
/// `input0` (the image, of type `x_ty`) and `output0` (the tokens, `y_ty`).
pub fn emit_patch(
    ctx: &mut Context,
    block: BlockId,
    plan: &PatchPlan,
    constants: &PatchConstants,
    (x_ty, y_ty): (Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredPatch, Diagnostic> {
    emit_standalone(
        ctx,
        block,
        machine,
        &loc.clone(),
        [(x_ty, plan.input_pieces()), (y_ty, plan.output_pieces())],
        |ctx, frame| emit_patch_in(ctx, frame, plan, constants, machine, loc),
    )
}

/// Emits the block's tile programs into `frame`'s executable (see the
/// module doc); its input and output are [`PatchPlan::input_pieces`] and
/// [`PatchPlan::output_pieces`].
pub fn emit_patch_in(
    ctx: &mut Context,
    frame: &Frame<'_>,
    plan: &PatchPlan,
    constants: &PatchConstants,
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredPatch, Diagnostic> {
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let placed = plan.placed();
    let exchange = plan.exchange(machine);
    let at = positions(&plan.product);
    let rounds = plan.product.grid_k.trailing_zeros();
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    let mut exchange_code_bytes_max = 0;
    let mut memo = InstanceMemo::new();
    for t in plan.tiles() {
        let mut e = frame.open_tile(ctx, t, &loc);
        let mut xcode = 0;
        let mut calls = Calls::new();
        // The product follows its exchange at a fence.
        sync(&mut e);
        xcode += exchange.emit(&mut e, machine, (t, "a"), Some(&mut calls));
        match at.get(&t) {
            Some(&pos) => {
                xcode += placed
                    .emit_compute(&mut e, pos, machine, &mut calls)
                    .map_err(fail)?
                    .1;
            }
            None => (0..rounds * SYNCS_PER_ROUND).for_each(|_| sync(&mut e)),
        }
        xcode += frame.close_tile(&mut e, t, &mut calls);
        exchange_code_bytes_max = exchange_code_bytes_max.max(xcode);
        frame.count_exchange(t, xcode);
        if at.contains_key(&t) {
            placed.emit_worker_code(&mut e);
        }
        emit_calls(&mut e, &calls, &mut memo).map_err(fail)?;
    }
    memo.finish(ctx);
    placed.emit_constants(
        ctx,
        frame.exe_body,
        Constants {
            weights: &constants.w,
            bias: None,
        },
        &loc,
    );
    // Every image's rows start from the same bias and position table.
    let rows = constants.rows.repeat(plan.shape.images as usize);
    placed.emit_row_bias(ctx, frame.exe_body, &rows, &loc);
    emit_padding(ctx, frame, plan, &loc);
    Ok(LoweredPatch {
        executable: frame.executable,
        estimate: plan.estimate_with(machine, &exchange),
        exchange_code_bytes_max,
    })
}

/// Zeros in the rows' padding columns (the last panel the exchange sends
/// of each row), loaded with the program: one constant per distinct run,
/// on the tiles that need it.
fn emit_padding(ctx: &mut Context, frame: &Frame<'_>, plan: &PatchPlan, loc: &Location) {
    let s = plan.shape;
    let row_bytes = s.k_padded() * 2;
    let pad = (s.k_padded() - s.k()) * 2;
    if pad == 0 {
        return;
    }
    let mut runs = Vec::new();
    for (q, &tile) in plan.row_tiles.iter().enumerate() {
        let (lo, hi) = plan.row_carriers().rows(q);
        runs.extend((0..hi - lo).map(|r| ZeroRun {
            tile,
            address: plan.rows + r * row_bytes + s.k() * 2,
            bytes: pad,
        }));
    }
    emit_zero_runs(ctx, frame.exe_body, &runs, "patch_zero", loc);
}

/// The block in float64 for tokens `rows` of one image `x` (`[C, H, W]`,
/// f16 values; `shape.images` is not read): what a lowered block is
/// checked against.
pub fn reference_rows(
    shape: PatchShape,
    x: &[f64],
    k: &PatchConstants,
    rows: &[usize],
) -> Vec<f64> {
    let (p, d) = (shape.patch as usize, shape.d as usize);
    let (gw, _) = shape.grid();
    let (h, w) = (shape.height as usize, shape.width as usize);
    let mut out = Vec::with_capacity(rows.len() * d);
    for &t in rows {
        let (py, px) = (t / gw as usize * p, t % gw as usize * p);
        let mut y = k.rows[t * d..(t + 1) * d].to_vec();
        for c in 0..shape.channels as usize {
            for dy in 0..p {
                for dx in 0..p {
                    let v = x[(c * h + py + dy) * w + px + dx];
                    let tap = (c * p + dy) * p + dx;
                    for (o, wv) in y.iter_mut().zip(&k.w[tap * d..(tap + 1) * d]) {
                        *o += v * wv;
                    }
                }
            }
        }
        out.extend(y);
    }
    out
}
