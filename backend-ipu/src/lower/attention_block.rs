//! The transformer attention block on the tiles:
//! `y = x + attention(qkv(layer_norm(x))) W_o + b_o`, f16 (or with FP8
//! products).
//!
//! **A batch of images** ([`AttentionShape::images`]) is one block: every
//! image's tokens are rows of LayerNorm, qk and out, image after image
//! ([`AttentionShape::rows`]); vt's tokens are each image's padded to
//! whole panels of 16 ([`AttentionShape::vt_tokens`]), so that an image's
//! keys start a value panel (the padding tokens' weight rows zeros, as the
//! last image's are); and the attention tiles are per (image, head)
//! ([`AttentionShape::image_heads`]), each image's queries, keys and
//! values sent to its own heads' tiles. The weights stay once.
//!
//! **Heads padded to whole panels.** Each head's dimension `d` is padded
//! to `dp`, a multiple of 16 (so400m: 72 -> 80), in the weights: head
//! `h`'s channels are `h dp .. h dp + d`, zero columns (and bias) after
//! them. Every head then starts on an AMP output group, Q and K arrive at
//! the attention tiles as whole input panels and key rows, and the padded
//! channels are exact zeros all the way to the output product, whose
//! weight rows for them are zeros too.
//!
//! **Three products and the attention tiles** ([`AttentionPlan`]), the
//! products planned by the GEMM search:
//!
//! - *qk*: `[m, c] x [c, 2 H dp]`, Q and K with their biases, Q's
//!   weights and bias times the softmax scale (the scores come out
//!   scaled, so the attention tiles' softmax skips a multiply);
//! - *vt*: `V^T = W_v^T LN(x)^T`, `[H dp, c] x [c, m]`, the product
//!   swapped: the value weights are its constant input panels and
//!   LayerNorm's rows its weights, so its output groups (16 tokens by the
//!   value channels) are the value panels the attention's second product
//!   reads, with no transpose. The value bias is folded into the output
//!   bias: the probabilities of a row sum to 1, so `P (V + 1 b_v) W_o =
//!   P V W_o + b_v W_o`; with FP8 products the attention's output is
//!   rounded to FP8 before `W_o`, so the bias must be in it: vt's initial
//!   partials hold it instead.
//! - *attention*: one tile per head, block of query rows and block of keys
//!   ([`CorePlan`], [`crate::codelets::attention::TileAttention`]). With one
//!   block of keys (*materialised*) a tile holds every key and value of its
//!   head; with several (*key-split*) each tile's softmax covers its keys
//!   and writes each row's maximum and sum, and the tiles of a row block
//!   combine their partial outputs
//!   ([`crate::codelets::attention_combine`]); *flash-style*, a tile
//!   takes its head's keys a chunk at a time (exchange B in a part per
//!   chunk, each chunk's keys and values over the last's) and folds each
//!   chunk's output into a running one (a running maximum and sum).
//!   The planner takes the form with the lowest estimate
//!   ([`FormEstimate`]; the report shows all three).
//! - *out*: `[m, H dp] x [H dp, c]` with the folded bias, then `+ x`.
//!
//! **Tiles shared in time.** qk and vt run together on disjoint tiles (2:1
//! by their multiply-accumulates) before the LN tiles; out and the
//! attention tiles each use all of those tiles, one after the other. A
//! tile's interleaved memory, from the bottom: the weights (qk's or vt's,
//! then out's), constants for the whole program (qk's and out's biases
//! are a row per output group in region 0, vt's (FP8) a value per row,
//! broadcast into their initial partials,
//! [`super::bias_broadcast`]: qk's and vt's beside LayerNorm, out's
//! before its vertex; with streamed weights vt's weights are scratch
//! right below vt's input, [`AttentionLayout::restore_late`]); the
//! attention's *window* (what exchange B writes, padding zeros, O, the
//! statistics and the combined rows), shared scratch like everything
//! above it; from the top, each product's inputs, outputs and reduction
//! buffers (live in turn), over which the attention's scores and
//! probabilities and the partials' receive buffer lie while they are
//! dead. The window's padding zeros are kept in private region 0 and
//! copied into the window by the attention tiles while the LN tiles run
//! LayerNorm ([`window_restores`]): another block's scratch may lie over
//! the window between two runs of the block (a layer loop's next layer,
//! [`super::chain_loop`]). The mask block stays in region 0 beside them:
//! the scores' product reads it there ([`WindowRestore::mask`]).
//!
//! Supersteps (every tile runs every sync; each exchange follows a sync,
//! the compute after it follows at a fence): LayerNorm on the LN tiles;
//! exchange A (LayerNorm's rows to qk's input panels and vt's weight
//! panels, and qk's weights and vt's input where they stream in, unless
//! a chain's link into the block gathered them,
//! [`AttentionPlan::qkv_gathered_before`]); qk and vt with their
//! reductions; exchange B (Q panels, key rows and value panels to the
//! attention tiles; x's rows to the out tiles that own them, from the
//! LN tiles, which compute nothing else, [`AttentionPlan::ln_tiles_apart`]);
//! the attention (flash-style: exchange B's part and
//! the attention of each chunk of keys in turn, then the combination);
//! with the keys split, exchange D (the
//! partial rows and statistics to the tiles that combine them) and the
//! combination; exchange C (the attention's output to out's input
//! panels); out, its reduction and the residual add.
//!
//! Rows and keys that pad a block to whole groups are never written by
//! an exchange: where a product would read them (vt's weight rows of the
//! padding tokens, the attention's key rows of the padding keys and query
//! rows past the last), they hold zeros, loaded with the program (vt's, in
//! private memory) or restored at the block's start (the window's), so no
//! stale word (a NaN times a zero probability) can reach a real result.
//!
//! With FP8 products ([`AttentionFp8`]) qk and vt run on the FP8 AMP:
//! LayerNorm writes FP8 codes in 32-channel panels (the same 32 bytes a
//! panel row as f16's 16 channels, so exchange A is unchanged), which are
//! qk's input panels and vt's weight panels; qk's weights and vt's input
//! are FP8 codes in the products' unscaled domain, and Q, K and V come
//! out in it. out runs on the FP8 AMP too: its input panels are 32
//! channels of one head, so its K pads each head to whole panels
//! ([`AttentionShape::out_dp`], so400m 80 -> 96 channels, zero weight
//! rows); the attention tiles cast their output in place to those FP8
//! panels, two of its 16-channel groups a panel (a head's odd last group
//! beside zeros, [`crate::codelets::pair_cast`]), and exchange C carries
//! the codes (so400m: 0.6 times f16's bytes). Its output is in its own
//! domain ([`AttentionFp8::out_domain`]), which the residual add takes back
//! (`x + out 2^-D_o`, as the MLP's fc2).
//!
//! Known limits: the exchanges are
//! scheduled greedily, and wide multicasts (K and
//! V to every row block, Q to every key block, out's input to every grid
//! column) serialise, so for so400m they dominate the block.

pub use super::attention_constants::{
    emit_attention_constants, reference, reference_rows, HeldConstants,
};
pub use super::attention_emit::{
    emit_attention, emit_attention_in, output_casts, AttentionEstimate, LoweredAttention,
};
use super::attention_layout::{best_core, combine_of, product_layouts, window_end, Short};
use super::reduce::SYNCS_PER_ROUND;
use super::squeeze::{Squeeze, MAX_SQUEEZES, SQUEEZE_STEP};
use super::window::Window;
use std::collections::BTreeMap;

use ipuc_dialects::ipu::TensorPiece;
use ipuc_ipu_arch::MachineModel;

use super::attention_exchange::{exchange_a, exchange_b, exchange_c, exchange_d};
use super::block::{positions, LN_ROWS};
use super::block_exchange::residual_view;
use super::codegen::{PlacedGemm, TileLayout, ZeroRun};
use super::ln_tiles::{LnOutput, LnTiles};
use super::plan::{
    plan_gemm, BiasRows, Epilogue, GemmPlan, GemmShape, ReductionPlace, ScaledColumns,
};
use super::schedule::{schedule, schedule_joined, Joining, Schedule};
use super::stream::Weights;
use crate::codelets::amp::{AmpVariant, Elem};
use crate::codelets::attention::TileAttention;
use crate::codelets::attention_combine::AttentionCombine;
use crate::codelets::copy::StridedCopy;
use crate::codelets::program::Codelet;

/// The block's sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionShape {
    /// Images (the batch): each attends over its own tokens.
    pub images: u32,
    /// Tokens of one image.
    pub m: u32,
    /// Hidden size.
    pub c: u32,
    /// Heads.
    pub heads: u32,
    /// Head dimension (`c / heads`).
    pub head_dim: u32,
    /// LayerNorm's epsilon.
    pub eps: f32,
    /// Whether LayerNorm's scale and shift do anything (false where they
    /// are ones and zeros, folded into the QKV product by
    /// `fold-layernorm-affine`: the LN tiles skip them).
    pub ln_affine: bool,
    /// The softmax scale.
    pub scale: f32,
    /// FP8 products (`None`: f16 products).
    pub fp8: Option<AttentionFp8>,
}

/// An attention block whose products the IR states in FP8: LayerNorm's and
/// the attention's outputs cast to `f8E4M3FNUZ`, the weights FP8 codes
/// with per-tensor power-of-two scales (`rhs_scale`).
///
/// qk and vt run `f8v8hihov4amp` on FP8 codes: LayerNorm writes `f8(y)`
/// (scale 0, the IR's cast), and the QKV weights are codes in the
/// products' *domain* `D` ([`AttentionFp8::domain`], chosen as the MLP's
/// [`super::block::Fp8Domains`]): `code = w 2^D`. Q, K and V, their
/// biases (scaled by `2^D` too) and every partial are in that domain,
/// `true = unscaled 2^-D`. The attention undoes it where it costs
/// nothing: the scores `Q K^T` are `2^2D` too large, which the softmax's
/// multiply by the softmax scale takes back
/// ([`AttentionShape::softmax_scale`]; Q's codes cannot carry the softmax
/// scale, not a power of two), and the attention's output, `2^D` too
/// large, is cast to FP8 codes at scale `D` (the codes of the true
/// output's values, the IR's cast) and multiplied on the FP8 AMP by out's
/// weight codes in out's own domain ([`AttentionFp8::out_domain`]); where
/// out's product is f16 (`out_scale` `None`) its f16 weights are times
/// `2^-D` instead.
///
/// The value bias is not folded into the output bias as for f16 products
/// (the rounding of `P V + b_v` to FP8 needs it inside): vt's initial
/// partials hold it, one block per vt tile, constants in private memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionFp8 {
    /// The QKV weights' scale exponent.
    pub qkv_scale: i32,
    /// The output weights' scale exponent, if the output product is FP8
    /// too (`None`: an f16 product, whose weights stay f16 and whose input
    /// is not rounded; the pooling head's output `nn.gemm`, which
    /// `convert-precision` leaves f16).
    pub out_scale: Option<i32>,
}

impl AttentionFp8 {
    /// qk's and vt's unscaled domain `D`: their weight codes are `w 2^D`,
    /// Q, K and V come out `2^D` times their values. As the MLP's
    /// ([`super::block::Fp8Domains::from_scales`]): the largest weight
    /// code at most 15, [`super::block::FP8_WEIGHT_HEADROOM`] binades
    /// below the format's top, so that Q, K and V up to `65504 2^-D` fit
    /// the products' f16 partials.
    pub fn domain(&self) -> i32 {
        super::block::Fp8Domains::from_scales(self.qkv_scale, 0).fc1
    }

    /// out's unscaled domain `D_o` where its product is FP8: its weight
    /// codes are `w 2^D_o`, its bias and output `2^D_o` times their
    /// values (as fc2's, [`super::block::Fp8Domains::from_scales`]).
    pub fn out_domain(&self) -> Option<i32> {
        self.out_scale
            .map(|o| super::block::Fp8Domains::from_scales(self.qkv_scale, o).fc2)
    }
}

impl AttentionShape {
    /// The head dimension padded to whole panels of 16.
    pub fn dp(&self) -> u32 {
        self.head_dim.next_multiple_of(16)
    }

    /// What Q's weights and bias are multiplied by: the softmax scale
    /// for f16 products (the scores come out scaled), 1 for FP8 codes.
    pub fn q_weight_scale(&self) -> f64 {
        match self.fp8 {
            Some(_) => 1.0,
            None => f64::from(self.scale),
        }
    }

    /// What qk's weights and bias, vt's input and the value bias are
    /// multiplied by as the tiles hold them: `2^D` with FP8 products
    /// ([`AttentionFp8::domain`]), else 1.
    pub fn qkv_domain_scale(&self) -> f64 {
        self.fp8.map_or(1.0, |f| 2f64.powi(f.domain()))
    }

    /// The attention tiles' scores' element type: f16 (`f16v4hihov4amp`,
    /// twice the f32 partials' rate, and a softmax on four lanes a word).
    pub fn scores(&self) -> Elem {
        Elem::F16
    }

    /// What Q is multiplied by before the scores (on qk's tiles,
    /// [`Self::q_columns_scaled`]) and the softmax the scores by
    /// ([`TileAttention::scale`]): together the rest of the softmax scale
    /// after [`Self::q_weight_scale`] and, FP8, `2^-2D` (Q's and K's
    /// domains). f16 products fold the scale into Q's weights: (1, 1).
    /// FP8 with f32 scores: the softmax takes it all. FP8 with f16 scores:
    /// Q takes it all (`scale 2^-2D` of the held `2^D Q`, applied as an
    /// f16 mantissa and a power of two: [`crate::codelets::scale`]), so
    /// the scores are `scale Q K^T` as with f16 products and the softmax
    /// multiplies by nothing; Q is then `scale 2^-D` times its value (in
    /// f16's normal range for `|Q|` above about `2^(D-14) / scale`,
    /// subnormal below, where its terms of the scores are that small).
    pub fn score_scales(&self) -> (f32, f32) {
        match (self.fp8, self.scores()) {
            (None, _) => (1.0, 1.0),
            (Some(f), Elem::F16) => (
                (f64::from(self.scale) * 2f64.powi(-2 * f.domain())) as f32,
                1.0,
            ),
            (Some(f), _) => (
                1.0,
                (f64::from(self.scale) * 2f64.powi(-2 * f.domain())) as f32,
            ),
        }
    }

    /// qk's scaling of Q (its columns `0..hp`) by [`Self::score_scales`]'
    /// first, where that is not 1 (FP8 with f16 scores): applied on qk's
    /// tiles to the rows each owns once the K split is summed
    /// ([`Epilogue::scaled`]), not on the attention tiles, where every
    /// tile of a block of query rows would scale the same rows (a
    /// key-split form's 8: 3.0k cycles a layer there against about 1.1k
    /// on qk's tiles).
    pub fn q_columns_scaled(&self) -> Option<ScaledColumns> {
        let q = self.score_scales().0;
        (q != 1.0).then(|| ScaledColumns {
            scale_bits: q.to_bits(),
            cols: self.hp(),
        })
    }

    /// What the attention tiles' softmax multiplies the scores by (and
    /// the combination of key blocks their maxima's differences):
    /// [`Self::score_scales`]' second.
    pub fn softmax_scale(&self) -> f32 {
        self.score_scales().1
    }

    /// qk's and vt's AMP instruction (and LayerNorm's output type, their
    /// input): FP8 with FP8 products.
    pub fn qkv_variant(&self) -> AmpVariant {
        match self.fp8 {
            Some(_) => AmpVariant::F8,
            None => AmpVariant::F16,
        }
    }

    /// Whether the attention block's output product runs on the FP8 AMP
    /// (an FP8 block whose output product is FP8: the attention tiles
    /// cast their output to FP8 panels, [`crate::codelets::pair_cast`]).
    /// The pooling head, which shares this shape, keeps its output
    /// product f16 and does not read this.
    pub fn out_f8(&self) -> bool {
        self.fp8.is_some_and(|f| f.out_scale.is_some())
    }

    /// out's input channels of one head: [`Self::dp`], or on the FP8 AMP
    /// `dp` padded to whole 32-channel panels (so400m: 80 -> 96), so that
    /// every panel is one head's (one attention tile's); the padding
    /// channels are zero codes and their weight rows zeros.
    pub fn out_dp(&self) -> u32 {
        match self.out_f8() {
            true => self.dp().next_multiple_of(32),
            false => self.dp(),
        }
    }

    /// out's input panels of one head (16 f16 or 32 FP8 channels each).
    pub fn out_panels(&self) -> u32 {
        self.out_dp() / self.out_variant().in_channels() as u32
    }

    /// out's AMP instruction.
    pub fn out_variant(&self) -> AmpVariant {
        match self.out_f8() {
            true => AmpVariant::F8,
            false => AmpVariant::F16,
        }
    }

    /// The row of channel `ch` (of `c`) where each head takes `per_head`
    /// channels: head `ch / d`'s channel `ch % d` at `per_head` a head
    /// ([`Self::dp`]: the padded channels; out's rows: [`Self::out_dp`]).
    pub fn head_row(&self, ch: usize, per_head: u32) -> usize {
        let d = self.head_dim as usize;
        ch / d * per_head as usize + ch % d
    }

    /// Padded channels of all heads.
    pub fn hp(&self) -> u32 {
        self.heads * self.dp()
    }

    /// Panels of 16 keys (of one image).
    pub fn key_panels(&self) -> u32 {
        self.m.div_ceil(16)
    }

    /// Token rows of all images, image after image: LayerNorm's, qk's
    /// and out's rows (row `r` is token `r % m` of image `r / m`).
    pub fn rows(&self) -> u32 {
        self.images * self.m
    }

    /// The attention's heads over the batch: (image, head) pairs, image
    /// after image. The attention tiles are indexed by them.
    pub fn image_heads(&self) -> u32 {
        self.images * self.heads
    }

    /// vt's tokens (its output columns): each image's padded to whole
    /// panels of 16 ([`Self::key_panels`]) so that every image's keys
    /// start a value panel, the last image's unpadded. One image: `m`.
    pub fn vt_tokens(&self) -> u32 {
        (self.images - 1) * self.key_panels() * 16 + self.m
    }

    /// Rows `[a, b)` ([`Self::rows`]) cut at the images' edges: each
    /// image's run as `(image, [lo, hi) of its own tokens)`.
    pub fn image_runs(&self, (a, b): (u32, u32)) -> Vec<(u32, (u32, u32))> {
        (a / self.m..b.div_ceil(self.m))
            .filter_map(|i| {
                let base = i * self.m;
                let (lo, hi) = (a.max(base), b.min(base + self.m));
                (lo < hi).then_some((i, (lo - base, hi - base)))
            })
            .collect()
    }

    /// The token of row `r` ([`Self::rows`]) among each image's tokens
    /// padded to whole panels of 16: vt's output column (and the pooling
    /// head's sv's, [`super::pool_head`]).
    pub fn padded_token(&self, r: u32) -> u32 {
        r / self.m * self.key_panels() * 16 + r % self.m
    }

    /// The padded channel of channel `ch` (of `c`).
    pub(super) fn padded(&self, ch: usize) -> usize {
        self.head_row(ch, self.dp())
    }
}

/// The block's constants, row-major, as the IR holds them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AttentionConstants {
    /// LayerNorm's scale `[c]`.
    pub gamma: Vec<f64>,
    /// LayerNorm's shift `[c]`.
    pub beta: Vec<f64>,
    /// The fused QKV weights `[c, 3 c]` (Q, K, V; head-major in each).
    pub w_qkv: Vec<f64>,
    /// Their bias `[3 c]`.
    pub b_qkv: Vec<f64>,
    /// The output weights `[c, c]`.
    pub w_o: Vec<f64>,
    /// Their bias `[c]`.
    pub b_o: Vec<f64>,
}

/// The attention tiles: one per head, block of query rows and block of
/// keys. With one block of keys (the *materialised* form) a tile holds
/// every score of its rows; with several (the *key-split* form) each
/// tile's softmax covers its keys alone and writes each row's maximum and
/// sum of exponentials, and the tiles of a head and row block then combine
/// their partial outputs: tile `kb` of the row block receives every
/// tile's rows [`CorePlan::owned`] by it (exchange D) and combines them
/// ([`crate::codelets::attention_combine`]). In the *flash-style* form
/// (one block of keys, several [`CorePlan::chunks`]) a tile takes its
/// head's keys a chunk at a time: exchange B in as many parts, each
/// chunk's keys and values over the last's; chunk 0's output and
/// statistics are the running accumulator, each later chunk's land in a
/// second slot and are folded into it (a running maximum and sum), with
/// no exchange D; the tile holds a chunk's keys, values, scores and
/// probabilities and two slots of output, not a block's.
///
/// The keys of a head are in *parts* of [`CorePlan::keys`]: part `p` is
/// chunk `p % chunks` of key block `p / chunks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorePlan {
    /// The first.
    pub first_tile: u32,
    /// Query rows per tile (the last block may hold fewer).
    pub rows: u32,
    /// Blocks of rows per head.
    pub blocks: u32,
    /// Blocks of keys per head (1: materialised or flash-style).
    pub key_blocks: u32,
    /// Keys per part, a multiple of 16 (the last part may hold fewer).
    pub keys: u32,
    /// Chunks of keys a tile takes in turn (more than 1: flash-style,
    /// with one block of keys).
    pub chunks: u32,
}

impl CorePlan {
    /// The tile of head `h`, row block `b`, key block `kb`.
    pub fn tile(&self, h: u32, b: u32, kb: u32) -> u32 {
        self.first_tile + (h * self.blocks + b) * self.key_blocks + kb
    }

    /// Tiles.
    pub fn tiles(&self, heads: u32) -> u32 {
        heads * self.blocks * self.key_blocks
    }

    /// Real rows `[lo, hi)` of block `b`.
    pub fn rows_of(&self, b: u32, m: u32) -> (u32, u32) {
        let lo = b * self.rows;
        (lo, (lo + self.rows).min(m))
    }

    /// Real keys `[lo, hi)` of part `p` (key block `p / chunks`, chunk
    /// `p % chunks`).
    pub fn keys_of(&self, p: u32, m: u32) -> (u32, u32) {
        let lo = p * self.keys;
        (lo, (lo + self.keys).min(m))
    }

    /// The part of chunk `c` of key block `kb`.
    pub fn part(&self, kb: u32, c: u32) -> u32 {
        kb * self.chunks + c
    }

    /// Rows of a row block each key-block tile combines.
    pub fn owned_rows(&self) -> u32 {
        self.rows.div_ceil(self.key_blocks)
    }

    /// The rows `[lo, hi)` (of the block's `rows`) key-block tile `kb`
    /// combines: all of them when materialised.
    pub fn owned(&self, kb: u32) -> (u32, u32) {
        let n = self.owned_rows();
        ((kb * n).min(self.rows), ((kb + 1) * n).min(self.rows))
    }

    /// Whether the keys are split over tiles.
    pub fn split(&self) -> bool {
        self.key_blocks > 1
    }

    /// Whether a tile takes its keys in chunks (flash-style).
    pub fn flash(&self) -> bool {
        self.chunks > 1
    }

    /// Whether partial outputs are combined (key-split or flash-style):
    /// the softmax writes each row's statistics.
    pub fn combines(&self) -> bool {
        self.split() || self.flash()
    }

    /// The form's name.
    pub fn form(&self) -> &'static str {
        CoreForm::of(self.key_blocks, self.chunks).name()
    }
}

/// The forms of the attention tiles ([`CorePlan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreForm {
    /// One block of keys, taken whole.
    Materialised,
    /// Several blocks of keys per head over tiles, combined after
    /// exchange D.
    KeySplit,
    /// One block of keys per head, taken a chunk at a time.
    Flash,
}

impl CoreForm {
    /// Every form, in the report's order.
    pub const ALL: [CoreForm; 3] = [CoreForm::Materialised, CoreForm::KeySplit, CoreForm::Flash];

    /// The form of `(key_blocks, chunks)`.
    pub fn of(key_blocks: u32, chunks: u32) -> Self {
        match (key_blocks > 1, chunks > 1) {
            (_, true) => CoreForm::Flash,
            (true, false) => CoreForm::KeySplit,
            (false, false) => CoreForm::Materialised,
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            CoreForm::Materialised => "materialised",
            CoreForm::KeySplit => "key-split",
            CoreForm::Flash => "flash",
        }
    }
}

/// Where the block's tensors live, per kind of tile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionLayout {
    /// qk's tiles.
    pub qk: TileLayout,
    /// Whether vt's input (a constant read once) sits in the shared
    /// scratch, where the block's later buffers lie over it (the block
    /// runs first, [`super::window::Window::fresh`]), rather than private.
    pub vt_input_shared: bool,
    /// vt's tiles.
    pub vt: TileLayout,
    /// Whether the attention tiles restore their window after qk and vt
    /// rather than beside LayerNorm: with streamed weights (qk's are
    /// gathered into the scratch, right below its input, where the window
    /// may lie). vt's weights, the LayerNorm rows exchange A writes, are
    /// then shared scratch too, right below vt's input (else private),
    /// and vt's tiles zero their padding token rows beside LayerNorm
    /// ([`vt_pad_copies`]); the window need then only stay below what is
    /// live while it is ([`super::attention_layout`]'s `window_top`).
    pub restore_late: bool,
    /// Where vt's input streams in ([`vt_input_piece`]): each tile's home
    /// piece of its input block (private), gathered into vt's input in
    /// exchange A from the tiles of its grid row and K part.
    pub vt_home: Option<u32>,
    /// out's tiles.
    pub out: TileLayout,
    /// The residual rows an out tile owns (region 0).
    pub residual: u32,
    /// `out + residual` (region 0, another bank).
    pub sum: u32,
    /// The attention tiles' tensors (sizes: a whole block of keys').
    pub core: TileAttention,
    /// With the keys split: where the partials and the combined rows are.
    pub combine: Option<CombineLayout>,
    /// The window's constants in private region 0.
    pub restore: WindowRestore,
    /// x's rows on an LN tile.
    pub x: u32,
    /// x's copy in 16-channel groups below its rows on an LN tile
    /// ([`LnTiles::x_groups`]), what the residual's transfers send: FP8
    /// blocks without LayerNorm's scale and shift, where it fits.
    pub x_groups: Option<u32>,
    /// LayerNorm's output rows.
    pub ln_out: u32,
    /// gamma.
    pub gamma: u32,
    /// beta.
    pub beta: u32,
}

/// Where an attention tile keeps the constants of its attention in
/// private region 0: the mask block, which the scores' product reads
/// there, and the zeros it copies over the window's padding runs at the
/// block's start ([`window_restores`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowRestore {
    /// The mask block's values, which the scores' product reads there
    /// ([`TileAttention::mask`]).
    pub mask: u32,
    /// Zeros, as many bytes as the longest padding run.
    pub zeros: u32,
    /// That many bytes (0: no padding runs).
    pub zero_bytes: u32,
}

/// A key-split or flash-style attention tile's combination buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CombineLayout {
    /// The partials: key-split, exchange D's receive buffer, one slot
    /// per key block (written over S and P, which are dead by then);
    /// flash-style, group 0 of O's first slot in the window.
    pub input: u32,
    /// Bytes between slots.
    pub part_stride: u32,
    /// Flash-style: bytes between a partial's groups (key-split: 0,
    /// exchange D packs each partial by the rows the tile combines).
    pub group_stride: u32,
    /// Flash-style: bytes from a partial's group 0 to its statistics
    /// (key-split: 0, packed).
    pub stats_offset: u32,
    /// The combined rows, group `g` at `output + g output_stride` (beside
    /// the window's tensors: exchange C reads them while it writes out's
    /// input).
    pub output: u32,
    /// Bytes between the combined rows' groups.
    pub output_stride: u32,
}

/// The best plan of one form of the attention and its estimated cycles
/// (exchange B, the tiles, exchange D and the combination, their syncs),
/// or why the form has none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormEstimate {
    /// `materialised`, `key-split` or `flash`.
    pub form: &'static str,
    /// The tiles and the estimate, or the reason.
    pub plan: Result<(CorePlan, u64), String>,
    /// No candidate fitted the tile's memory (some were tried): more
    /// memory might give the form a plan.
    pub short_of_memory: bool,
}

impl std::fmt::Display for FormEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.plan {
            Ok((c, cycles)) if c.flash() => write!(
                f,
                "{}: {} blocks of {} query rows per head, keys in {} chunks of {}, about {cycles} cycles",
                self.form, c.blocks, c.rows, c.chunks, c.keys
            ),
            Ok((c, cycles)) => write!(
                f,
                "{}: {} blocks of {} query rows x {} blocks of {} keys per head, about {cycles} cycles",
                self.form, c.blocks, c.rows, c.key_blocks, c.keys
            ),
            Err(e) => write!(f, "{}: none ({e})", self.form),
        }
    }
}

/// The block's plan.
#[derive(Clone, Debug)]
pub struct AttentionPlan {
    /// The sizes.
    pub shape: AttentionShape,
    /// Q and K.
    pub qk: GemmPlan,
    /// `V^T`.
    pub vt: GemmPlan,
    /// The attention tiles.
    pub core: CorePlan,
    /// The output product.
    pub out: GemmPlan,
    /// The LN tiles, one per [`LN_ROWS`] rows (the chip's last tiles).
    pub ln_tiles: Vec<u32>,
    /// Memory.
    pub layout: AttentionLayout,
    /// The best plan of each form (materialised, key-split, flash), the
    /// chosen one among them.
    pub forms: Box<[FormEstimate; 3]>,
    /// Bytes of memory qk's, vt's and out's searches were run again
    /// without, where the layout found bytes missing under their buffers
    /// (zeros: the first search's grid fitted).
    pub squeezed: [u32; 3],
    /// What the block leaves of the memory it was planned in (the next
    /// block's window).
    pub next: Window,
    /// Whether qk's streamed weights and vt's streamed input are gathered
    /// in the exchange before the block (a chain's link into it,
    /// [`super::attention_exchange::qkv_gather_before`]) instead of
    /// exchange A. A chain sets it; false for a block alone.
    pub qkv_gathered_before: bool,
}

impl AttentionPlan {
    /// Every tile the block uses, ascending.
    pub fn tiles(&self) -> Vec<u32> {
        let mut t: Vec<u32> = self.computing().collect();
        t.extend(&self.ln_tiles);
        t
    }

    /// The tiles that compute in the block (qk's, vt's, out's, the
    /// attention's), ascending: from the first product's to the last
    /// one's.
    fn computing(&self) -> std::ops::Range<u32> {
        let first = self.qk.first_tile;
        let end = [
            self.qk.first_tile + self.qk.tiles(),
            self.vt.first_tile + self.vt.tiles(),
            self.out.first_tile + self.out.tiles(),
            self.core.first_tile + self.core.tiles(self.shape.image_heads()),
        ]
        .into_iter()
        .max()
        .unwrap_or(first);
        first..end
    }

    /// Whether no LN tile is one of the tiles that compute in the block:
    /// the planner puts the LN tiles past every product's, and exchange B
    /// relies on it, sending x's rows (the residual) from the LN tiles,
    /// which nothing touches after LayerNorm.
    pub fn ln_tiles_apart(&self) -> bool {
        let computing = self.computing();
        self.ln_tiles.iter().all(|t| !computing.contains(t))
    }

    /// The LN tiles.
    pub fn ln(&self) -> LnTiles<'_> {
        let lay = &self.layout;
        LnTiles {
            tiles: &self.ln_tiles,
            rows_per_tile: LN_ROWS,
            m: self.shape.rows(),
            c: self.shape.c,
            eps: self.shape.eps,
            affine: self.shape.ln_affine,
            x: lay.x,
            ln_out: lay.ln_out,
            gamma: lay.gamma,
            beta: lay.beta,
            output: match self.shape.fp8 {
                Some(_) => LnOutput::F8Codes(0),
                None => LnOutput::F16,
            },
            panels: true,
            x_groups: lay.x_groups,
        }
    }

    /// Where x enters: each row on its LN tile.
    pub fn input_pieces(&self) -> Vec<TensorPiece> {
        self.ln().input_pieces()
    }

    /// Where y is when the block ends: each out tile's owned rows of its
    /// output groups (the sum's buffer).
    pub fn output_pieces(&self) -> Vec<TensorPiece> {
        let [_, _, out] = self.placed();
        positions(&self.out)
            .into_values()
            .flat_map(|(i, j, k)| {
                let sum = residual_view(&self.out, self.layout.sum, k);
                out.output_pieces((i, j, k), sum)
            })
            .collect()
    }

    /// Syncs every tile of the block runs: one before each exchange (A,
    /// B, or each chunk's part of it, D where the keys are split, and C;
    /// the compute after each follows at a fence) and the reduction
    /// rounds'.
    pub fn syncs(&self) -> u32 {
        let r = |p: &GemmPlan| p.grid_k.trailing_zeros();
        3 + SYNCS_PER_ROUND * (r(&self.qk).max(r(&self.vt)) + r(&self.out))
            + u32::from(self.core.split())
            + (self.core.chunks - 1)
    }

    /// The attention tile of key part `p` (the last holds fewer keys):
    /// a flash-style chunk's output and statistics in its slot, the mask
    /// read by the last chunk alone.
    pub fn core_of(&self, p: u32) -> TileAttention {
        let (lo, hi) = self.core.keys_of(p, self.shape.m);
        let core = self.layout.core;
        let chunk = p % self.core.chunks;
        let (slot, masked) = match self.layout.combine {
            // Chunk 0 writes the accumulator, every later one the slot
            // after it.
            Some(c) if self.core.flash() => {
                (chunk.min(1) * c.part_stride, chunk + 1 == self.core.chunks)
            }
            _ => (0, true),
        };
        TileAttention {
            keys: hi - lo,
            o: core.o + slot,
            stats: core.stats.map(|st| st + slot),
            masked,
            // Q is scaled in place once, before the first chunk's scores.
            q_scale: if chunk == 0 { core.q_scale } else { 1.0 },
            ..core
        }
    }

    /// The estimated cycles of key block 0's attention tile: its chunks'
    /// (flash-style), else its one part's.
    pub fn tile_cycles(&self) -> Result<u64, crate::codelets::CodeletError> {
        (0..self.core.chunks)
            .map(|c| self.core_of(c).estimate_cycles())
            .sum()
    }

    /// Key block `kb`'s last part (the one its mask is for).
    pub fn last_part(&self, kb: u32) -> TileAttention {
        self.core_of(self.core.part(kb, self.core.chunks - 1))
    }

    /// Where an attention tile's output groups of 16 channels are when
    /// exchange C reads them, the same on every attention tile: group 0
    /// and the bytes between groups, of the combined rows (key-split,
    /// flash-style) or of O (materialised).
    pub fn output_groups(&self) -> (u32, u32) {
        match self.layout.combine {
            Some(c) => (c.output, c.output_stride),
            None => {
                let v = self.core_of(0).values();
                (v.output_group(0), v.group_stride())
            }
        }
    }

    /// The combination on key-block tile `kb` (with the keys split and
    /// rows to combine there).
    pub fn combine_on(&self, b: u32, kb: u32) -> Option<AttentionCombine> {
        let c = self.layout.combine?;
        let (lo, hi) = self.core.owned(kb);
        let (_, real) = self.core.rows_of(b, self.shape.m);
        let hi = hi.min(real - b * self.core.rows);
        (hi > lo).then(|| combine_of(self.shape, &self.core, &c, hi - lo))
    }

    /// The products placed at their layouts.
    pub fn placed(&self) -> [PlacedGemm; 3] {
        let l = &self.layout;
        [
            PlacedGemm::new(&self.qk, l.qk, "qk"),
            PlacedGemm::new(&self.vt, l.vt, "vt"),
            PlacedGemm::new(&self.out, l.out, "out"),
        ]
    }

    /// The report: each stage's tiles and estimate, both forms of the
    /// attention, the memory of a tile.
    pub fn report(&self, machine: &MachineModel) -> String {
        let s = &self.shape;
        let core = &self.core;
        let est = self
            .tile_cycles()
            .map_or_else(|e| e.to_string(), |c| c.to_string());
        let combine = match self.combine_on(0, 0).map(|c| c.estimate_cycles()) {
            Some(Ok(c)) if core.flash() => {
                format!(", each chunk after the first folded into the running output in {c} cycles")
            }
            Some(Ok(c)) => format!(", then {c} cycles to combine {} rows", core.owned_rows()),
            Some(Err(e)) => format!(", combination: {e}"),
            None => String::new(),
        };
        let x = self.schedules(machine);
        let d =
            x.d.as_ref()
                .map_or_else(String::new, |d| format!(", exchange D {d}"));
        let b = match &x.b[..] {
            [one] => one.to_string(),
            parts => format!("{} cycles in {} parts", x.b_cycles(), parts.len()),
        };
        let tiles_of = if core.flash() {
            format!(
                "{} per head: {} blocks of {} query rows, keys in {} chunks of {}, {}",
                core.blocks,
                core.blocks,
                core.rows,
                core.chunks,
                core.keys,
                core.form()
            )
        } else {
            format!(
                "{} per head: {} blocks of {} query rows x {} blocks of {} keys, {}",
                core.blocks * core.key_blocks,
                core.blocks,
                core.rows,
                core.key_blocks,
                core.keys,
                core.form()
            )
        };
        let l = &self.layout;
        let lay = &l.core;
        let window_end = window_end(*s, core, lay, l.combine.as_ref());
        let transient = [&l.qk, &l.vt, &l.out]
            .iter()
            .map(|t| t.buffers_bottom())
            .min()
            .unwrap_or(machine.sram_end);
        let fp8 = match s.fp8 {
            Some(f) => format!(
                "  FP8: qk and vt on the FP8 AMP (LayerNorm's output FP8 codes; qk's weights {} bytes a tile, vt's input {}, codes in domain 2^{}); {}; the value bias in vt's initial partials\n",
                self.qk.vertex().weight_bytes(),
                self.vt.vertex().input_bytes(),
                f.domain(),
                match f.out_domain() {
                    Some(d) => format!(
                        "out on the FP8 AMP too (its weights {} bytes a tile, codes in domain 2^{d}; heads padded to {} channels), the attention's output cast to its FP8 panels",
                        self.out.vertex().weight_bytes(),
                        s.out_dp()
                    ),
                    None => "out f16".into(),
                }
            ),
            None => String::new(),
        };
        let mut streamed = match self.layout.qk.home {
            Some(_) => format!(
                "  qk's weights streamed: {}\n",
                super::stream::report(&self.qk, self.layout.qk.codes.is_some(), "exchange A")
            ),
            None => String::new(),
        };
        if self.layout.out.home.is_some() {
            streamed += &format!(
                "  out's weights streamed: {}\n",
                super::stream::report(&self.out, self.layout.out.codes.is_some(), "exchange C")
            );
        }
        if self.layout.vt_home.is_some() {
            streamed += &format!(
                "  vt's input streamed: {}\n",
                super::stream::report_pieces(
                    vt_input_piece(&self.vt),
                    false,
                    (self.vt.grid_cols, "grid columns"),
                    "exchange A"
                )
            );
        }
        for (name, bytes) in ["qk", "vt", "out"].iter().zip(self.squeezed) {
            if bytes > 0 {
                streamed += &format!(
                    "  {name} searched again with {bytes} bytes less memory (its first grid's buffers did not fit beside the block's constants)\n"
                );
            }
        }
        format!(
            "attention block {}{}x{}, {} heads of {} (padded to {}): LayerNorm on tiles {}..={} ({} rows each)\n{fp8}{streamed}  qk: {}\n  vt: {}\n  attention: tiles {}..={} ({tiles_of}): {est} cycles per tile{combine}\n  forms: {}; {}; {}\n  out: {}\n  tile memory: weights 0x{:x}..0x{:x}, attention window 0x{:x}..0x{:x} (keys, values, Q, O{}), products' buffers 0x{:x}..0x{:x}, scores and probabilities 0x{:x}..0x{:x}\n  exchange A {}, exchange B {b}{d}, exchange C {} (scheduled)\n",
            match s.images {
                1 => String::new(),
                n => format!("of {n} images, each "),
            },
            s.m,
            s.c,
            s.heads,
            s.head_dim,
            s.dp(),
            self.ln_tiles.first().copied().unwrap_or(0),
            self.ln_tiles.last().copied().unwrap_or(0),
            LN_ROWS,
            self.qk,
            self.vt,
            core.first_tile,
            core.first_tile + core.tiles(s.image_heads()) - 1,
            self.forms[0],
            self.forms[1],
            self.forms[2],
            self.out,
            l.qk.home.unwrap_or(l.qk.weights),
            lay.k,
            lay.k,
            window_end,
            match (core.flash(), core.split()) {
                (true, _) => ", statistics, a chunk's output and statistics".to_string(),
                (false, true) => ", statistics, combined rows; O over the scores".to_string(),
                (false, false) => String::new(),
            },
            transient,
            machine.sram_end,
            lay.p,
            machine.sram_end,
            x.a,
            x.c,
        )
    }

    /// The exchanges' schedules.
    pub fn schedules(&self, machine: &MachineModel) -> AttentionSchedules {
        let tiles = self.tiles();
        AttentionSchedules {
            a: schedule(machine, &tiles, &exchange_a(self)),
            // Q, K and V arrive in pieces of a group each, a panel stride
            // apart: joined, a receiver switches once a sender.
            b: exchange_b(self)
                .iter()
                .map(|part| schedule_joined(machine, &tiles, part, Joining::Strided))
                .collect(),
            d: self
                .core
                .split()
                .then(|| schedule(machine, &tiles, &exchange_d(self))),
            c: schedule(machine, &tiles, &exchange_c(self)),
        }
    }
}

/// The block's scheduled exchanges.
pub struct AttentionSchedules {
    /// LayerNorm's rows to the products.
    pub a: Schedule,
    /// Q, K and V to the attention tiles: one part per chunk of keys
    /// (flash-style), else one.
    pub b: Vec<Schedule>,
    /// With the keys split, the partials to the tiles that combine them.
    pub d: Option<Schedule>,
    /// The attention's output to out's input panels.
    pub c: Schedule,
}

impl AttentionSchedules {
    /// Exchange B's cycles, every part's.
    pub fn b_cycles(&self) -> u64 {
        self.b.iter().map(|b| b.cycles).sum()
    }
}

/// A product planned by the search on `tiles` tiles from `first`.
fn plan_on(
    name: &str,
    shape: GemmShape,
    machine: &MachineModel,
    first: u32,
    tiles: u32,
) -> Result<GemmPlan, String> {
    let part = MachineModel {
        tiles: tiles.max(1),
        ..machine.clone()
    };
    plan_gemm(shape, &part)
        .map(|c| c.plan.placed_at(first))
        .map_err(|e| format!("{name} (on {tiles} tiles from tile {first}): {e}"))
}

/// Plans the block (see the module doc): the products over the tiles
/// before the LN tiles, the attention's form and tiles by estimate.
pub fn plan_attention(
    shape: AttentionShape,
    machine: &MachineModel,
) -> Result<AttentionPlan, String> {
    plan_attention_with(shape, machine, (0, machine.tiles), None)
}

/// [`plan_attention`] on the `count` tiles from `first`, in the memory
/// `window` leaves (a block of a program of several, [`super::window`]).
///
/// With `weights` streamed, qk's and out's weights are kept in pieces
/// over their grid rows ([`super::stream`]) and vt's input in pieces over
/// its grid columns ([`vt_input_piece`]), gathered in exchange A (out's
/// in exchange C).
pub fn plan_attention_in(
    shape: AttentionShape,
    whole: &MachineModel,
    range: (u32, u32),
    window: Window,
    weights: Weights,
) -> Result<AttentionPlan, String> {
    plan_attention_window(shape, whole, range, None, (window, weights))
}

/// [`plan_attention`] on the `count` tiles from `first` with the blocks
/// of keys per head forced where given (1: the materialised form).
pub fn plan_attention_with(
    shape: AttentionShape,
    whole: &MachineModel,
    range: (u32, u32),
    key_blocks: Option<u32>,
) -> Result<AttentionPlan, String> {
    plan_attention_forced(shape, whole, range, key_blocks.map(|n| (n, 1)))
}

/// [`plan_attention`] on the `count` tiles from `first` with the blocks
/// of keys per head and the chunks a tile takes them in forced where
/// given: `(1, 1)` the materialised form, `(n, 1)` key-split, `(1, n)`
/// flash-style.
pub fn plan_attention_forced(
    shape: AttentionShape,
    whole: &MachineModel,
    range: (u32, u32),
    forced: Option<(u32, u32)>,
) -> Result<AttentionPlan, String> {
    plan_attention_window(
        shape,
        whole,
        range,
        forced,
        (Window::alone(whole), Weights::Resident),
    )
}

fn plan_attention_window(
    shape: AttentionShape,
    whole: &MachineModel,
    (first, count): (u32, u32),
    forced: Option<(u32, u32)>,
    (mut window, weights): (Window, Weights),
) -> Result<AttentionPlan, String> {
    // The products' search sees the interleaved memory earlier blocks
    // left.
    let machine = &MachineModel {
        tiles: count,
        interleaved_base: window.base,
        ..whole.clone()
    };
    let s = shape;
    if s.images == 0 || s.m == 0 || s.c == 0 || s.heads == 0 {
        return Err("the block has an empty dimension".into());
    }
    if !s.c.is_multiple_of(16) {
        return Err(format!(
            "the hidden size {} is not a multiple of 16, which the attention block lowering needs yet (the products' input panels come whole from LayerNorm's rows)",
            s.c
        ));
    }
    if s.fp8.is_some() && !s.c.is_multiple_of(32) {
        return Err(format!(
            "the hidden size {} is not a multiple of 32, which FP8 products need yet (LayerNorm writes qk's and vt's FP8 input in whole 32-channel panels); lower the block with --precision fp16",
            s.c
        ));
    }
    let n_ln = s.rows().div_ceil(LN_ROWS);
    let Some(gemm) = machine.tiles.checked_sub(n_ln).filter(|&t| t >= 2) else {
        return Err(format!(
            "{} rows need {n_ln} LayerNorm tiles and the products at least two: the machine has {}",
            s.rows(),
            machine.tiles
        ));
    };
    // qk and vt run together on disjoint tiles, in proportion to their
    // multiply-accumulates (2:1); out and the attention share all of
    // them, one after the other.
    let qk_tiles = (2 * gemm / 3).max(1);
    let qkv = s.qkv_variant();
    // qk's and out's biases are rows the tiles broadcast (no blocks in
    // memory), qk's beside LayerNorm (its tiles are idle), out's before
    // its vertex (its buffers are the attention's until then); vt's (FP8)
    // is a value per row, splat into every output group beside LayerNorm
    // too.
    // Alone on their tiles, the products' reduction buffers lie over
    // their inputs ([`super::codegen::layout`]); streamed, qk's weights
    // are gathered right below its input, and they lie over those too.
    let with_bias = |when, reduction| Epilogue {
        bias: true,
        bias_rows: Some(when),
        reduction,
        ..Epilogue::default()
    };
    // So do vt's weights, the LayerNorm rows, which are scratch then.
    let gathered_reduction = match weights {
        Weights::Streamed => ReductionPlace::OverInputAndWeights,
        Weights::Resident => ReductionPlace::OverInput,
    };
    let qk_shape = GemmShape {
        m: s.rows(),
        k: s.c,
        n: 2 * s.hp(),
        variant: qkv,
        epilogue: Epilogue {
            scaled: s.q_columns_scaled(),
            // Streamed, a chain gathers qk's weights in the link into the
            // block, beside LayerNorm
            // ([`AttentionPlan::qkv_gathered_before`]).
            gathered_weights: match weights {
                Weights::Streamed => Some(
                    super::ln_tiles::beside_layer_norm_cycles(s.c, s.fp8.is_some())
                        .map_err(|e| e.to_string())?,
                ),
                Weights::Resident => None,
            },
            ..with_bias(BiasRows::Early, gathered_reduction)
        },
    };
    let vt_shape = GemmShape {
        m: s.hp(),
        k: s.c,
        n: s.vt_tokens(),
        variant: qkv,
        // FP8: the value bias in vt's initial partials (see
        // `HeldConstants`), a value per row of V^T splat into every output
        // group beside LayerNorm.
        epilogue: Epilogue {
            bias: s.fp8.is_some(),
            bias_rows: s.fp8.map(|_| BiasRows::Early),
            per_row: true,
            reduction: gathered_reduction,
            ..Epilogue::default()
        },
    };
    let out_shape = GemmShape {
        m: s.rows(),
        k: s.heads * s.out_dp(),
        n: s.c,
        variant: s.out_variant(),
        epilogue: Epilogue {
            // Streamed, out's weights are gathered in exchange C, but
            // the search is not charged for it: charged, it picks 7x24x8
            // for so400m (79k cycles fewer over the model), whose link into
            // the MLP block takes an LN tile past the 16 KB of exchange
            // code (16,700 bytes).
            gathered_weights: None,
            ..with_bias(BiasRows::BeforeVertex, ReductionPlace::OverInput)
        },
    };
    let ln_tiles: Vec<u32> = (first + gemm..first + machine.tiles).collect();
    // The search fits each product alone in the memory earlier blocks
    // left; the block also keeps its own constants and (streamed)
    // gathers weights in the scratch. Where the layout finds
    // bytes missing under a product's buffers, that product is searched
    // again with that much less memory, and at least twice as much more
    // each time that product is short again (its buffers are whole element
    // pairs: a little less memory can leave the search's choice as it
    // was), as the MLP block does. A squeeze that leaves a product no grid
    // is halved back toward the last that had one (`Squeeze`). The plan
    // keeps each product's squeeze (`AttentionPlan::squeezed`), which
    // the report states.
    let start = window;
    let mut squeeze = [Squeeze::default(); 3];
    let mut short: Option<String> = None;
    let mut tries = 0;
    let (qk, vt, out, products, layout, forms, chosen) = loop {
        let squeezed = |n: usize| MachineModel {
            interleaved_base: start.base + squeeze[n].bytes,
            ..machine.clone()
        };
        let searched = [
            plan_on("qk", qk_shape, &squeezed(0), first, qk_tiles),
            plan_on(
                "vt",
                vt_shape,
                &squeezed(1),
                first + qk_tiles,
                gemm - qk_tiles,
            ),
            plan_on("out", out_shape, &squeezed(2), first, gemm),
        ];
        let [Ok(qk), Ok(vt), Ok(out)] = searched.clone() else {
            let failed = searched.iter().map(Result::is_err).collect::<Vec<_>>();
            let e = searched
                .into_iter()
                .find_map(Result::err)
                .expect("one search failed");
            // After a squeeze, a search that finds nothing is searched
            // again with less taken away; if that cannot be, the layout's
            // reason stands as the block's.
            let Some(layout_error) = short.take() else {
                return Err(e);
            };
            let backed = tries < MAX_SQUEEZES
                && squeeze
                    .iter_mut()
                    .zip(&failed)
                    .filter(|(_, &f)| f)
                    .all(|(sq, _)| sq.back_off());
            if !backed {
                tracing::debug!(
                    target: "ipu-lower",
                    "attention block: no plan after the squeeze ({e}); the layout's reason stands"
                );
                return Err(layout_error);
            }
            tracing::debug!(
                target: "ipu-lower",
                "attention block: no plan after the squeeze ({e}): searching again with {:?} bytes less memory",
                squeeze.map(|s| s.bytes)
            );
            tries += 1;
            short = Some(layout_error);
            continue;
        };
        for sq in &mut squeeze {
            sq.found();
        }
        window = start;
        let laid = product_layouts(s, [&qk, &vt, &out], whole, &mut window, weights).and_then(
            |products| {
                let forms = CoreForm::ALL
                    .map(|form| best_core(s, &products, gemm, first, form, forced, machine));
                let chosen = forms
                    .iter()
                    .filter_map(|f| f.plan.as_ref().ok())
                    .min_by_key(|(_, cycles)| *cycles)
                    .map(|&(c, _)| c)
                    .ok_or_else(|| {
                        // Where a form's tiles were short of memory, the
                        // product whose buffers bound the window is
                        // searched again with less memory (the window
                        // grows if its buffers move up).
                        let mut missing = [0; 3];
                        if forms.iter().any(|f| f.short_of_memory) {
                            missing[products.window_bound] = SQUEEZE_STEP;
                        }
                        Short {
                            message: format!(
                                "no attention form fits: {}; {}; {}",
                                forms[0], forms[1], forms[2]
                            ),
                            missing,
                        }
                    })?;
                let layout = products.with_core(s, chosen, machine)?;
                Ok((products, layout, forms, chosen))
            },
        );
        match laid {
            Ok((products, layout, forms, chosen)) => {
                break (qk, vt, out, products, layout, forms, chosen)
            }
            Err(e)
                if e.missing.iter().any(|&m| m > 0)
                    && tries < MAX_SQUEEZES
                    && squeeze
                        .iter_mut()
                        .zip(&e.missing)
                        .filter(|(_, &m)| m > 0)
                        .all(|(sq, &m)| sq.grow(m, machine.sram_end - start.base)) =>
            {
                tracing::debug!(
                    target: "ipu-lower",
                    "attention block short of {:?} bytes (qk, vt, out): searching those products again with {:?} bytes less memory",
                    e.missing,
                    squeeze.map(|s| s.bytes)
                );
                tries += 1;
                short = Some(e.message);
            }
            Err(e) => return Err(e.message),
        }
    };
    window.use_scratch(products.window_start.min(products.transient_bottom));
    let mut plan = AttentionPlan {
        shape,
        qk,
        vt,
        core: chosen,
        out,
        ln_tiles,
        layout,
        forms: Box::new(forms),
        squeezed: squeeze.map(|sq| sq.bytes),
        next: window,
        qkv_gathered_before: false,
    };
    // The window's constants, kept in private region 0 (the zeros also
    // vt's padding rows', where they are scratch).
    let vt_pads = if plan.layout.restore_late {
        super::attention_exchange::zero_runs(&plan)
    } else {
        Vec::new()
    };
    let zero_bytes = super::attention_exchange::window_zero_runs(&plan)
        .iter()
        .chain(&vt_pads)
        .map(|r| r.bytes)
        .max()
        .unwrap_or(0);
    // The scores' product reads its initial partials up to
    // `READ_PAST_BYTES` past the block: those stay in the allocation, not
    // in the interleaved region above the columns (where a word in Q's
    // bank parity would be a bank conflict).
    let mask = window.region0_beside_rows(
        plan.layout.core.mask_bytes() as u32 + crate::codelets::amp::AmpBlock::READ_PAST_BYTES,
    );
    let zeros = window.region0_beside_rows(zero_bytes);
    plan.layout.restore = WindowRestore {
        mask,
        zeros,
        zero_bytes,
    };
    // The scores' product reads the mask block where the program loads
    // it (the window left it out, `MaskPlace::Apart`): in region 0 no
    // access to Q shares its element.
    plan.layout.core.mask = mask;
    plan.layout
        .core
        .validate(machine)
        .map_err(|e| e.to_string())?;
    for t in [
        &mut plan.layout.qk,
        &mut plan.layout.vt,
        &mut plan.layout.out,
    ] {
        t.tensors_start = window.region0;
    }
    plan.next = window.after_block();
    Ok(plan)
}

/// The copies an attention tile runs at the block's start, while the LN
/// tiles run LayerNorm: zeros over the window's padding runs
/// ([`super::attention_exchange::window_zero_runs`]), runs of one length
/// a fixed stride apart in one launch. Keyed by tile. (The mask block
/// needs no copy: the scores' product reads it in region 0,
/// [`WindowRestore::mask`].)
pub fn window_restores(plan: &AttentionPlan) -> BTreeMap<u32, Vec<StridedCopy>> {
    let mut out: BTreeMap<u32, Vec<StridedCopy>> = BTreeMap::new();
    zero_copies(
        &mut out,
        &super::attention_exchange::window_zero_runs(plan),
        plan.layout.restore.zeros,
    );
    out
}

/// Appends to `out` the copies of zeros from `zeros` over `runs`, by
/// tile: runs of one length a fixed stride apart in one launch.
fn zero_copies(out: &mut BTreeMap<u32, Vec<StridedCopy>>, runs: &[ZeroRun], zeros: u32) {
    for run in runs {
        let copies = out.entry(run.tile).or_default();
        match copies.last_mut() {
            // The next run of the last launch: the same length, the same
            // stride.
            Some(c)
                if c.src == zeros
                    && c.row_bytes == run.bytes
                    && run.address > c.dst
                    && (c.rows == 1 || run.address == c.dst + c.rows * c.dst_stride) =>
            {
                if c.rows == 1 {
                    c.dst_stride = run.address - c.dst;
                }
                c.rows += 1;
            }
            _ => copies.push(StridedCopy {
                rows: 1,
                row_bytes: run.bytes,
                src: zeros,
                src_stride: 0,
                dst: run.address,
                dst_stride: 0,
            }),
        }
    }
}

/// Where vt's weights are shared scratch
/// ([`AttentionLayout::restore_late`]), the copies a vt tile runs beside
/// LayerNorm to zero its padding token rows (the last output group's rows
/// past `m`, [`super::attention_exchange::zero_runs`], which no exchange
/// writes: a NaN left there by another block times a zero probability is
/// NaN), from the window's zeros in region 0. Keyed by tile; empty where
/// vt's weights are private (the program loads the zeros once).
pub fn vt_pad_copies(plan: &AttentionPlan) -> BTreeMap<u32, Vec<StridedCopy>> {
    let mut out = BTreeMap::new();
    if plan.layout.restore_late {
        zero_copies(
            &mut out,
            &super::attention_exchange::zero_runs(plan),
            plan.layout.restore.zeros,
        );
    }
    out
}

/// One attention tile's tensors for `rows` query rows over all the keys,
/// alone on a tile (the materialised form's tile without the products).
pub fn core_tile(
    s: AttentionShape,
    rows: u32,
    machine: &MachineModel,
) -> Result<TileAttention, String> {
    TileAttention::packed((rows, s.dp(), s.m, s.dp()), (s.scale, s.scores()), machine)
}

/// Bytes of each piece of a vt input block where it streams in
/// ([`AttentionLayout::vt_home`]): the block (the constant input panels
/// of a grid row and K part, which every tile of the grid row and K part
/// reads) over vt's grid columns, in whole 16-byte lines.
pub fn vt_input_piece(vt: &GemmPlan) -> u32 {
    super::stream::pieces_of(vt_input_block(vt), vt.grid_cols)
}

/// Bytes of a vt input block (FP8 products: of codes, the FP8 AMP's
/// input).
pub fn vt_input_block(vt: &GemmPlan) -> u32 {
    vt.vertex().input_bytes() as u32
}

/// Each attention tile's (row block, key block).
pub(super) fn attention_tiles(plan: &AttentionPlan) -> BTreeMap<u32, (u32, u32)> {
    let core = plan.core;
    let mut at_core = BTreeMap::new();
    for h in 0..plan.shape.image_heads() {
        for b in 0..core.blocks {
            for kb in 0..core.key_blocks {
                at_core.insert(core.tile(h, b, kb), (b, kb));
            }
        }
    }
    at_core
}
