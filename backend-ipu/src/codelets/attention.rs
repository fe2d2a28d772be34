//! One head's attention for a block of query rows on one tile:
//! `O = softmax(scale * Q K^T) V`, as two tile GEMMs around the softmax
//! over panels, with no rearrangement between them.
//!
//! 0. Where [`TileAttention::q_scale`] is not 1, Q is scaled in place
//!    first ([`ScaleF16`]): what an FP8 block's Q and K need before f16
//!    scores (their codes' domain would overflow f16).
//! 1. `S = Q K^T` ([`TileGemm`]), in the scores' element type
//!    ([`TileAttention::scores`]): f32 partials (`f16v4sisoamp`, 8 output
//!    channels per group, 32 multiply-accumulates a tile cycle) or f16
//!    (`f16v4hihov4amp`, 16 channels, 64 a cycle). Q is the input in
//!    panel order (`[ceil(d/16)][rows][16]` f16, head dimension
//!    zero-padded to whole panels); the keys are the weights: output
//!    channel `t` is key `t`, so weight panel `(j, g)` holds
//!    `K[ko j + o][16g + c]` at `[o][c]` (`ko` the channels per group;
//!    [`TileAttention::key_panels`]), 32-byte rows of K as they are.
//!    The last panel of 16 keys' launches start from initial partials
//!    ([`TileAttention::mask_block`]): 0 for the keys, a large negative
//!    score for the keys that pad it ([`MASKED`] in f32, f16's lowest
//!    in f16), so their probabilities are exactly 0; the other launches
//!    start from zero.
//! 2. `P = softmax(scale * S)` over each row ([`SoftmaxPanels`]), written
//!    as f16 input panels of the next product (16 keys per panel), and
//!    optionally each row's `(-max, sum)` (a key-split attention's tiles
//!    each see some of the keys).
//! 3. `O = P V` ([`TileGemm`], `f16v4hihov4amp`: f16 partials). The values
//!    are the weights: weight panel `(j, g)` holds `V[16g + c][16j + o]` at
//!    `[o][c]` ([`TileAttention::value_panels`]), V transposed in 16 x 16
//!    blocks.
//!
//! The supervisor runs Q's scaling (if any), the first product's launch
//! loop, calls the softmax and runs the second's. Every tensor is the
//! caller's to place ([`TileAttention::validate`] checks what the parts
//! need): Q, S, P and O each in element pairs of interleaved memory that
//! the product reading or writing it does not share with its other
//! operand, the key and value panels in interleaved memory.

use ipuc_dialects::ipu::SectionKind;
use ipuc_ipu_arch::MachineModel;

use super::amp::{AmpBlock, AmpVariant, Elem};
use super::emitter::{inst, op, Emitter};
use super::gemm::{GemmCounts, GemmSupervisorCounts, GemmWorkerCounts, TileGemm};
use super::launch::StreamCounts;
use super::program::Codelet;
use super::scale::ScaleF16;
use super::softmax_panels::{SoftmaxPanels, SoftmaxPanelsCounts};
use super::subroutine::{call_cycles, emit_call, emit_subroutine};
use super::CodeletError;

/// The f32 scores' initial partials for keys that do not exist: `exp` of
/// `scale * (MASKED - max)` is exactly 0 in f32 for any usable scale.
pub const MASKED: f64 = -1e30;

/// The f16 scores' initial partials for keys that do not exist: f16's
/// lowest finite value. `MASKED_F16 - max` is at most `-65504` (or
/// overflows to minus infinity) for any real row maximum of at least 0
/// (about that much below a negative one), and `exp` of `scale` times it
/// is 0 in f16 for any scale of at least `2^-11` (`exp(-32)`; the
/// validation asks for that).
pub const MASKED_F16: f64 = -65504.0;

/// Keys per softmax panel (the second product's input channels).
const KEY_PANEL: u32 = 16;

/// One head, one block of query rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileAttention {
    /// Query rows.
    pub rows: u32,
    /// Head dimension of Q and K (padded to whole panels of 16).
    pub head_dim: u32,
    /// Keys (padded to whole panels of 16, masked).
    pub keys: u32,
    /// Head dimension of V (padded to whole groups of 16).
    pub value_dim: u32,
    /// The softmax scale.
    pub scale: f32,
    /// The scores' element type: [`Elem::F32`] (f32 partials) or
    /// [`Elem::F16`].
    pub scores: Elem,
    /// What Q is multiplied by in place before the scores (1: nothing is
    /// done; else [`ScaleF16`]'s constant, an f16 mantissa times a power
    /// of two): f16 scores of an FP8 block, whose Q and K are in their
    /// codes' domain.
    pub q_scale: f32,
    /// Q in panel order.
    pub q: u32,
    /// The key panels ([`TileAttention::key_panels`]).
    pub k: u32,
    /// The value panels ([`TileAttention::value_panels`]).
    pub v: u32,
    /// S's buffer ([`TileGemm::output_bytes`] of [`TileAttention::scores`]).
    pub s: u32,
    /// The mask block ([`TileAttention::mask_block`]): 8 mod 16 bytes from
    /// `q` in its element pair (the scores' product loads a row of Q and
    /// a word of the block in one instruction), or in the non-interleaved
    /// region, whose elements no access to Q shares; in another element
    /// pair than `s` either way.
    pub mask: u32,
    /// P in panel order.
    pub p: u32,
    /// O's buffer; its groups are at [`TileGemm::output_group`] of
    /// [`TileAttention::values`].
    pub o: u32,
    /// Where the softmax writes each row's `(-max, sum)`
    /// ([`SoftmaxPanels::stats`]), if anywhere: what a key-split or
    /// flash-style attention's combination needs.
    pub stats: Option<u32>,
    /// Whether the last panel of keys starts from the mask block (else
    /// from zero, like the others): false only where every key is real and
    /// the mask block is another chunk's (a flash-style tile's chunks
    /// before its last).
    pub masked: bool,
    /// Whether the softmax normalises P ([`SoftmaxPanels::normalise`]):
    /// off where a combination divides each row by its sum instead (a
    /// key-split tile's; O is then `P V` with `P` the exponentials).
    pub normalise: bool,
}

/// Where [`TileAttention::place`] puts O (and a flash-style tile's
/// running output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputPlace {
    /// In the window after the mask, with the statistics: `slots` times
    /// (the running output and a chunk's where a flash-style tile takes
    /// its keys in chunks, 1 otherwise).
    Window {
        /// How many O and statistics.
        slots: u32,
    },
    /// At the top of the range S lies in, over S (dead once the softmax
    /// has written P), and the statistics right below P (the softmax
    /// writes them while it still reads S), neither in the window: for a
    /// tile whose output the exchange after it reads while nothing is
    /// written there (a key-split attention's exchange D writes the
    /// partials it gathers between them, [`Placement::compute_bottom`]
    /// up). A window too small for O beside the keys and values may hold
    /// the rest.
    OverScores,
}

/// Where [`TileAttention::place`] puts the mask block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskPlace {
    /// In the window after Q, 8 mod 16 bytes from it.
    Window,
    /// At this address in the non-interleaved region, outside the window
    /// (which then saves [`TileAttention::mask_bytes`]): where a caller
    /// keeps it loaded with the program, or a stand-in that it replaces
    /// once it has laid that region out.
    Apart(u32),
}

/// Where [`TileAttention::place`] put a tile's tensors: the end of what
/// it placed in the window and the bottom of what it placed below the top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The first byte after the window's tensors (K, V, Q, the mask
    /// unless it lies apart, O and the statistics).
    pub window_end: u32,
    /// The lowest byte of S and P.
    pub compute_bottom: u32,
    /// Bytes between O's slots (O and the statistics of one chunk of
    /// keys, [`TileAttention::place`]'s `slots`).
    pub slot_stride: u32,
}

/// Issue counts of a launch, as emitted.
#[derive(Clone, Debug)]
pub struct TileAttentionCounts {
    /// The scores' products: the unmasked groups' (if any), the masked
    /// groups'.
    pub scores: Vec<GemmCounts>,
    /// Q's scaling, if any.
    pub q_scale: Option<StreamCounts>,
    /// The softmax.
    pub softmax: SoftmaxPanelsCounts,
    /// The values' product.
    pub values: GemmCounts,
}

impl TileAttention {
    fn err(msg: String) -> CodeletError {
        CodeletError::new("attention", msg)
    }

    /// Panels of 16 keys.
    pub fn key_panels_count(&self) -> u32 {
        self.keys.div_ceil(KEY_PANEL)
    }

    /// The scores' product `S = Q K^T` over every key, without the mask
    /// (its layout: output groups, weights; [`TileAttention::score_parts`]
    /// are the launches).
    pub fn scores(&self) -> TileGemm {
        let v = self.score_variant();
        TileGemm {
            variant: v,
            rows: self.rows,
            k_groups: self.head_dim.div_ceil(v.in_channels() as u32),
            n_groups: self.key_panels_count() * KEY_PANEL / v.out_channels() as u32,
            input: self.q,
            weights: self.k,
            output: self.s,
            bias: None,
            bias_in_output: false,
        }
    }

    /// Keys per weight panel of the scores' product (its output
    /// channels: 8 with f32 scores, 16 with f16), whose rows of K are
    /// consecutive in memory.
    pub fn keys_per_panel(&self) -> u32 {
        self.score_variant().out_channels() as u32
    }

    /// Where key `t`'s row of head-dimension panel `p` (16 values, 32
    /// bytes) lies from [`TileAttention::k`]: weight panel `(t / ko, p)`
    /// (`ko` = [`TileAttention::keys_per_panel`]), row `t % ko`.
    pub fn key_row(&self, t: u32, p: u32) -> u32 {
        let (ko, np) = (self.keys_per_panel(), self.head_dim.div_ceil(16));
        ((t / ko * np + p) * ko + t % ko) * 32
    }

    /// The scores' AMP instruction.
    pub fn score_variant(&self) -> AmpVariant {
        match self.scores {
            Elem::F16 => AmpVariant::F16,
            _ => AmpVariant::F16F32Partials,
        }
    }

    /// Q's scaling, where [`TileAttention::q_scale`] is not 1.
    pub fn q_scaling(&self) -> Option<ScaleF16> {
        (self.q_scale != 1.0).then(|| ScaleF16 {
            len: self.rows * self.head_dim.next_multiple_of(KEY_PANEL),
            at: self.q,
            scale: self.q_scale,
        })
    }

    /// Output groups of S the mask covers: the last panel of 16 keys,
    /// where every padding key is (none where [`TileAttention::masked`] is
    /// false).
    fn masked_groups(&self) -> u32 {
        if self.masked {
            KEY_PANEL / self.score_variant().out_channels() as u32
        } else {
            0
        }
    }

    /// Bytes between the masked groups' initial partials: a group's rows
    /// and a word, whole 16 bytes (each starts 8 mod 16 bytes from Q, whose
    /// element pair it shares: the AMP loads both in one instruction).
    fn mask_stride(&self) -> u32 {
        (self.rows * 32 + 8).next_multiple_of(16)
    }

    /// The scores' launches: the groups before the last key panel (if
    /// any) from zero, then each of the last panel's groups from its part
    /// of the mask.
    pub fn score_parts(&self) -> Vec<TileGemm> {
        let all = self.scores();
        let masked = self.masked_groups();
        let head = all.n_groups - masked;
        let mut parts = Vec::new();
        if head > 0 {
            parts.push(TileGemm {
                n_groups: head,
                ..all.clone()
            });
        }
        for j in 0..masked {
            parts.push(TileGemm {
                n_groups: 1,
                output: all.output + (head + j) * all.group_stride(),
                weights: all.weights
                    + (head + j) * all.k_groups * all.variant.weight_bytes() as u32,
                bias: Some(self.mask + j * self.mask_stride()),
                ..all.clone()
            });
        }
        parts
    }

    /// Bytes of the vertex states of the tile's launches: the scores'
    /// parts' and the values'.
    pub fn state_bytes(&self) -> u64 {
        self.score_parts()
            .iter()
            .map(TileGemm::state_bytes)
            .sum::<u64>()
            + self.values().state_bytes()
    }

    /// The softmax from S's groups to P's panels.
    pub fn softmax(&self) -> SoftmaxPanels {
        let s = self.scores();
        SoftmaxPanels {
            rows: self.rows,
            groups: self.key_panels_count(),
            scale: self.scale,
            scores: self.scores,
            input: s.output_group(0),
            input_stride: s.group_stride(),
            output: self.p,
            output_stride: self.rows * 32,
            stats: self.stats,
            normalise: self.normalise,
        }
    }

    /// The values' product `O = P V`.
    pub fn values(&self) -> TileGemm {
        let v = AmpVariant::F16;
        TileGemm {
            variant: v,
            rows: self.rows,
            k_groups: self.key_panels_count(),
            n_groups: self.value_dim.div_ceil(v.out_channels() as u32),
            input: self.p,
            weights: self.v,
            output: self.o,
            bias: None,
            bias_in_output: false,
        }
    }

    /// Bytes of the mask block (what a masked tile reads: the window
    /// keeps them whether or not this chunk does).
    pub fn mask_bytes(&self) -> u64 {
        let groups = KEY_PANEL / self.score_variant().out_channels() as u32;
        u64::from(groups * self.mask_stride())
    }

    /// The tile for `rows` query rows, head dimension `head_dim`, `keys`
    /// keys and value dimension `value_dim`, its tensors packed in the
    /// tile's interleaved memory ([`TileAttention::place`] over all of it).
    pub fn packed(
        (rows, head_dim, keys, value_dim): (u32, u32, u32, u32),
        (scale, scores): (f32, Elem),
        machine: &MachineModel,
    ) -> Result<Self, String> {
        Self::place(
            (rows, head_dim, keys, value_dim),
            (
                (scale, scores),
                false,
                OutputPlace::Window { slots: 1 },
                MaskPlace::Window,
            ),
            (machine.interleaved_base, machine.sram_end),
            &[(machine.interleaved_base, machine.sram_end)],
            machine,
        )
        .map(|(att, _)| att)
    }

    /// The tile for the given sizes (the softmax scale and the scores'
    /// element type; `stats`: with the softmax's statistics; `output`: where O goes, [`OutputPlace`]; `mask`: where
    /// the mask block goes, [`MaskPlace`]), placed in interleaved memory:
    /// in the window `[window.0, window.1)` what the exchanges write and
    /// the combination reads (the key and value panels, Q, the mask, O
    /// and the statistics), from its bottom; S and
    /// P, which live only while the tile computes, right below the top of
    /// the first range of `compute` (`[lo, hi)`: memory nothing else uses
    /// then) that holds them above the window's element pairs. With
    /// several slots S and P may instead take the window's bottom, its
    /// tensors starting at the next element pair. O over the scores
    /// ([`OutputPlace::OverScores`]) lies at the top of that range, over
    /// S, and P below O's element pairs. Each product's input and output
    /// are in different element pairs either way (the key and value
    /// panels, which the supervisor alone loads, may share them). An
    /// error gives the sizes when they do not fit.
    pub fn place(
        (rows, head_dim, keys, value_dim): (u32, u32, u32, u32),
        ((scale, scores), stats, output, mask_place): ((f32, Elem), bool, OutputPlace, MaskPlace),
        window: (u32, u32),
        compute: &[(u32, u32)],
        machine: &MachineModel,
    ) -> Result<(Self, Placement), String> {
        let pair = u64::from(2 * machine.element_bytes);
        let past = u64::from(AmpBlock::READ_PAST_BYTES);
        let mut att = TileAttention {
            rows,
            head_dim,
            keys,
            value_dim,
            scale,
            scores,
            q_scale: 1.0,
            q: 0,
            k: 0,
            v: 0,
            s: 0,
            mask: 0,
            p: 0,
            o: 0,
            stats: None,
            masked: true,
            normalise: true,
        };
        let after = |at: u64, bytes: u64, align: u64| (at + bytes + past).next_multiple_of(align);
        let slots = match output {
            OutputPlace::Window { slots } => slots,
            OutputPlace::OverScores => 0,
        };
        let o_bytes = att.values().output_bytes();
        // The window's tensors from `base`: K, V, Q, the mask, then the
        // slots of O and the statistics (the statistics alone where O
        // lies over the scores); (their addresses, the end).
        let contents = |base: u64| {
            let k = base.next_multiple_of(16);
            let v = after(k, att.scores().weight_bytes(), 16);
            let q = after(v, att.values().weight_bytes(), 16);
            let (mask, o) = match mask_place {
                MaskPlace::Window => {
                    let mask = after(q, att.scores().input_bytes(), 16) + 8;
                    (mask, after(mask, att.mask_bytes(), 16))
                }
                MaskPlace::Apart(at) => (u64::from(at), after(q, att.scores().input_bytes(), 16)),
            };
            let (st, slot_end) = match output {
                OutputPlace::Window { .. } => {
                    let st = after(o, o_bytes, 8);
                    (st, st + if stats { u64::from(rows) * 8 } else { 0 })
                }
                OutputPlace::OverScores => (o, o),
            };
            let slot_stride = (slot_end - o).next_multiple_of(16);
            let end = match slots {
                0 | 1 => slot_end,
                n => o + slot_stride * u64::from(n - 1) + (slot_end - o),
            };
            ([k, v, q, mask, o, st, slot_stride], end)
        };
        let s_bytes = att.scores().output_bytes() + past;
        let p_bytes = att.values().input_bytes() + past;
        let fits_window = |end: u64| end <= u64::from(window.1);
        // S and P at the top of a `compute` range (their own element
        // pairs), the window's tensors below P's pair. O over the scores
        // at the range's top: S in pairs above the window's (Q's and the
        // mask's), P below O's pairs and above the window (the pair it
        // may share with the window's top holds none of its product's
        // operands).
        let above = compute.iter().find_map(|&(lo, hi)| {
            let (mut at, end) = contents(u64::from(window.0));
            let hi = u64::from(hi);
            let s = hi.checked_sub(s_bytes)? / 16 * 16;
            let p = match output {
                OutputPlace::Window { .. } => {
                    let p = s.checked_sub(p_bytes)? / 16 * 16;
                    (p / pair * pair >= end).then_some(p)?
                }
                OutputPlace::OverScores => {
                    let o = hi.checked_sub(o_bytes + past)? / 16 * 16;
                    let p = s.min(o / pair * pair).checked_sub(p_bytes)? / 16 * 16;
                    let st = p - if stats { u64::from(rows) * 8 } else { 0 };
                    (at[4], at[5]) = (o, st);
                    (s / pair * pair >= end && st >= end).then_some(p)?
                }
            };
            (p >= u64::from(lo) && fits_window(end)).then_some((at, end, s, p))
        });
        // Where no range holds them, a flash-style tile may take S and P
        // at the window's bottom instead, its tensors from the next
        // element pair up: the window then only has to cross a pair's
        // boundary.
        let below = || {
            let s = u64::from(window.0).next_multiple_of(16);
            let p = after(s, s_bytes - past, 16);
            let (at, end) = contents((p + p_bytes).next_multiple_of(pair));
            (slots > 1 && fits_window(end)).then_some((at, end, s, p))
        };
        let Some(([k, v, q, mask, o, st, slot_stride], window_end, s, p)) = above.or_else(below)
        else {
            let (at, end) = contents(u64::from(window.0));
            let (k, q) = (at[0], at[2]);
            let chunks = match output {
                OutputPlace::Window { slots } if slots > 1 => {
                    format!(" ({slots} chunks' output and statistics)")
                }
                OutputPlace::Window { .. } => String::new(),
                OutputPlace::OverScores => {
                    format!(" (its output's {o_bytes} bytes over the scores, its statistics below the probabilities)")
                }
            };
            let compute_top = compute.first().map_or(window.1, |&(_, hi)| hi);
            let mask = match mask_place {
                MaskPlace::Window => "mask, ",
                MaskPlace::Apart(_) => "",
            };
            return Err(format!(
                "an attention tile does not fit: its keys and values take {} bytes, {rows} query rows' Q, {mask}output and statistics {}{chunks}, against a window of {} bytes; their scores and probabilities {} (in whole element pairs) above it, below 0x{compute_top:x}",
                q - k,
                end - q,
                u64::from(window.1 - window.0),
                (s_bytes + p_bytes).div_ceil(pair) * pair,
            ));
        };
        att.k = k as u32;
        att.v = v as u32;
        att.q = q as u32;
        att.mask = mask as u32;
        att.o = o as u32;
        att.stats = stats.then_some(st as u32);
        att.s = s as u32;
        att.p = p as u32;
        att.validate(machine).map_err(|e| e.to_string())?;
        Ok((
            att,
            Placement {
                window_end: window_end as u32,
                compute_bottom: p as u32,
                slot_stride: slot_stride as u32,
            },
        ))
    }

    /// Emits the supervisor's part into the open supervisor section: a
    /// call of Q's scaling if any (subroutine `{tag}_qscale`, which the
    /// caller emits: [`TileAttention::q_scaling`]), the scores' launch
    /// loops, a call of the softmax (subroutine `{tag}_softmax`, which the
    /// caller emits: [`TileAttention::softmax`]) and the values' launch
    /// loop. [`TileAttention::emit_workers`] emits
    /// what they run.
    pub fn emit_supervisor(
        &self,
        e: &mut Emitter,
        tag: &str,
    ) -> Result<(Vec<GemmSupervisorCounts>, GemmSupervisorCounts), CodeletError> {
        if self.q_scaling().is_some() {
            emit_call(e, &format!("{tag}_qscale"));
        }
        let mut scores = Vec::new();
        for (i, part) in self.score_parts().iter().enumerate() {
            scores.push(part.emit_supervisor(e, &format!("{tag}_s{i}"))?);
        }
        emit_call(e, &format!("{tag}_softmax"));
        let values = self.values().emit_supervisor(e, &format!("{tag}_pv"))?;
        Ok((scores, values))
    }

    /// Emits the products' workers and vertex states.
    pub fn emit_workers(
        &self,
        e: &mut Emitter,
        tag: &str,
    ) -> (Vec<GemmWorkerCounts>, GemmWorkerCounts) {
        let scores = self
            .score_parts()
            .iter()
            .enumerate()
            .map(|(i, part)| part.emit_workers(e, &format!("{tag}_s{i}")))
            .collect();
        (scores, self.values().emit_workers(e, &format!("{tag}_pv")))
    }

    /// Checks the parameters: each part's own checks, and the mask block
    /// where the scores' product needs it ([`TileAttention::mask`]: on
    /// `machine`, 8 mod 16 bytes from Q, or in the non-interleaved
    /// region).
    pub fn validate(&self, machine: &MachineModel) -> Result<(), CodeletError> {
        if self.rows == 0 || self.head_dim == 0 || self.keys == 0 || self.value_dim == 0 {
            return Err(Self::err(format!(
                "needs positive sizes, got {} rows, head dimension {}, {} keys, value dimension {}",
                self.rows, self.head_dim, self.keys, self.value_dim
            )));
        }
        // What the scores' product reads of the block, its read past the
        // end included.
        let end = u64::from(self.mask) + self.mask_bytes() + u64::from(AmpBlock::READ_PAST_BYTES);
        let apart = self.mask >= machine.sram_base
            && end <= u64::from(machine.interleaved_base)
            && self.mask.is_multiple_of(8);
        if self.masked && !apart && self.mask % 16 != self.q.wrapping_add(8) % 16 {
            return Err(Self::err(format!(
                "the mask block at 0x{:x} must start 8 mod 16 bytes from Q at 0x{:x}, or lie 8-byte aligned in the non-interleaved region, {} bytes read past its end included (0x{:x}..0x{:x})",
                self.mask, self.q, AmpBlock::READ_PAST_BYTES, machine.sram_base, machine.interleaved_base
            )));
        }
        if self.scores != Elem::F32 && self.scores != Elem::F16 {
            return Err(Self::err(format!(
                "the scores must be f32 or f16, got {:?}",
                self.scores
            )));
        }
        // f16 scores: a masked key's `exp(scale (MASKED_F16 - m))` must
        // come out 0 in f16 (`exp(-32)` is).
        if self.scores == Elem::F16 && self.masked && self.scale < 2f32.powi(-11) {
            return Err(Self::err(format!(
                "with f16 scores the softmax scale must be at least 2^-11 (masked keys' probabilities must round to 0), got {}; fold more of it into Q (q_scale)",
                self.scale
            )));
        }
        if let Some(q) = self.q_scaling() {
            q.validate()?;
        }
        for part in self.score_parts() {
            part.validate()?;
        }
        self.softmax().validate()?;
        self.values().validate()
    }

    /// The key panels from `k`, row-major `[keys, head_dim]` (any element
    /// type: the caller encodes them), zero-padded.
    pub fn key_panels<T: Copy>(&self, k: &[T], zero: T) -> Vec<T> {
        // S = Q K^T: the weights W[d][t] = K[t][d].
        let (d, t) = (self.head_dim as usize, self.keys as usize);
        let w: Vec<T> = (0..d * t).map(|i| k[(i % t) * d + i / t]).collect();
        self.scores().weight_panels(&w, d, t, zero)
    }

    /// The value panels from `v`, row-major `[keys, value_dim]`, zero-padded.
    pub fn value_panels<T: Copy>(&self, v: &[T], zero: T) -> Vec<T> {
        self.values()
            .weight_panels(v, self.keys as usize, self.value_dim as usize, zero)
    }

    /// The mask block's values (the initial partials of the last panel of
    /// keys' scores, in the scores' element type): 0 for its keys,
    /// [`MASKED`] (f32) or [`MASKED_F16`] for the padding keys, each
    /// group's row repeated for every query row.
    pub fn mask_block(&self) -> Vec<f64> {
        let first = (self.key_panels_count() - 1) * KEY_PANEL;
        let ko = self.score_variant().out_channels() as u32;
        let masked = match self.scores {
            Elem::F16 => MASKED_F16,
            _ => MASKED,
        };
        let parts = self.score_parts();
        let mut out = Vec::new();
        for (j, part) in parts[parts.len() - self.masked_groups() as usize..]
            .iter()
            .enumerate()
        {
            let lo = first + j as u32 * ko;
            let b: Vec<f64> = (lo..lo + ko)
                .map(|t| if t < self.keys { 0.0 } else { masked })
                .collect();
            out.extend(part.bias_block(&b));
            out.resize(
                out.len()
                    .next_multiple_of(self.mask_stride() as usize / self.scores.size()),
                0.0,
            );
        }
        out
    }

    /// The mask block's bytes ([`TileAttention::mask_block`] encoded in the
    /// scores' element type).
    pub fn mask_bytes_encoded(&self) -> Vec<u8> {
        self.scores.encode(&self.mask_block())
    }

    /// Float64 reference: `O` row-major `[rows, value_dim]` from Q
    /// `[rows, head_dim]`, K `[keys, head_dim]` and V `[keys, value_dim]`.
    pub fn reference(&self, q: &[f64], k: &[f64], v: &[f64]) -> Vec<f64> {
        let (d, t, dv) = (
            self.head_dim as usize,
            self.keys as usize,
            self.value_dim as usize,
        );
        // Q's scaling multiplies by the f16 constant.
        let q_scale = self.q_scaling().map_or(1.0, |q| {
            let (m, p) = q.factors();
            m.to_f64() * p.to_f64()
        });
        let scale = f64::from(self.scale) * q_scale;
        let mut out = Vec::with_capacity(self.rows as usize * dv);
        for qr in q.chunks_exact(d) {
            let s: Vec<f64> = k
                .chunks_exact(d)
                .map(|kr| scale * qr.iter().zip(kr).map(|(a, b)| a * b).sum::<f64>())
                .collect();
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
            let sum: f64 = e.iter().sum();
            out.extend((0..dv).map(|c| (0..t).map(|j| e[j] / sum * v[j * dv + c]).sum::<f64>()));
        }
        out
    }
}

impl Codelet for TileAttention {
    type Counts = TileAttentionCounts;

    /// `main`: the scores' launch loops, a call of the softmax, the
    /// values' launch loop; then the products' workers and vertex states
    /// and the softmax subroutine.
    fn emit(&self, e: &mut Emitter) -> Result<TileAttentionCounts, CodeletError> {
        self.validate(e.machine())?;
        e.code_section(".text.attention_supervisor", SectionKind::Supervisor);
        e.function("main");
        let (s_sup, v_sup) = self.emit_supervisor(e, "attn")?;
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        let (s_work, v_work) = self.emit_workers(e, "attn");
        let q_scale = match self.q_scaling() {
            Some(q) => Some(emit_subroutine(e, "attn_qscale", &q)?),
            None => None,
        };
        let softmax_counts = emit_subroutine(e, "attn_softmax", &self.softmax())?;
        Ok(TileAttentionCounts {
            scores: s_sup
                .into_iter()
                .zip(s_work)
                .map(|(supervisor, workers)| GemmCounts {
                    supervisor,
                    workers,
                })
                .collect(),
            q_scale,
            softmax: softmax_counts,
            values: GemmCounts {
                supervisor: v_sup,
                workers: v_work,
            },
        })
    }

    fn cycles(&self, c: &TileAttentionCounts) -> u64 {
        let machine = MachineModel::c600();
        let scores: u64 = c
            .scores
            .iter()
            .zip(self.score_parts())
            .map(|(counts, part)| counts.cycles(&part, &machine))
            .sum();
        let q_scale = match (self.q_scaling(), &c.q_scale) {
            (Some(q), Some(counts)) => call_cycles(&machine) + q.cycles(counts),
            _ => 0,
        };
        q_scale
            + scores
            + call_cycles(&machine)
            + self.softmax().cycles(&c.softmax)
            + c.values.cycles(&self.values(), &machine)
            + 1
    }
}
