//! One head's attention for a block of query rows on one tile:
//! `O = softmax(scale * Q K^T) V`, as two tile GEMMs around the softmax
//! over panels, with no rearrangement between them.
//!
//! 1. `S = Q K^T` ([`TileGemm`], `f16v4sisoamp`: f16 operands, f32
//!    partials, 8 output channels per group). Q is the input in panel
//!    order (`[ceil(d/16)][rows][16]` f16, head dimension zero-padded to
//!    whole panels); the keys are the weights: output channel `t` is key
//!    `t`, so weight panel `(j, g)` holds `K[8j + o][16g + c]` at `[o][c]`
//!    ([`TileAttention::key_panels`]), 32-byte rows of K as they are.
//!    The product starts from initial partials ([`TileAttention::mask_block`]):
//!    0 for the keys, [`MASKED`] for the keys that pad the last group of
//!    16, so their probabilities are exactly 0.
//! 2. `P = softmax(scale * S)` over each row ([`SoftmaxPanels`]), written
//!    as f16 input panels of the next product (16 keys per panel).
//! 3. `O = P V` ([`TileGemm`], `f16v4hihov4amp`: f16 partials). The values
//!    are the weights: weight panel `(j, g)` holds `V[16g + c][16j + o]` at
//!    `[o][c]` ([`TileAttention::value_panels`]), V transposed in 16 x 16
//!    blocks.
//!
//! The supervisor runs the first product's launch loop, calls the softmax
//! and runs the second's. Every tensor is the caller's to place
//! ([`TileAttention::validate`] checks what the parts need): Q, S, P and
//! O each in element pairs of interleaved memory that the product reading
//! or writing it does not share with its other operand, the key and value
//! panels in interleaved memory.

use ipuc_dialects::ipu::SectionKind;
use ipuc_ipu_arch::MachineModel;

use super::amp::{AmpBlock, AmpVariant};
use super::emitter::{inst, op, Emitter};
use super::gemm::{GemmCounts, TileGemm};
use super::program::Codelet;
use super::softmax_panels::{SoftmaxPanels, SoftmaxPanelsCounts};
use super::subroutine::{call_cycles, emit_call, emit_subroutine};
use super::CodeletError;

/// The scores' initial partials for keys that do not exist: `exp` of
/// `scale * (MASKED - max)` is exactly 0 in f32 for any usable scale.
pub const MASKED: f64 = -1e30;

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
    /// Q in panel order.
    pub q: u32,
    /// The key panels ([`TileAttention::key_panels`]).
    pub k: u32,
    /// The value panels ([`TileAttention::value_panels`]).
    pub v: u32,
    /// S's buffer ([`TileGemm::output_bytes`] of [`TileAttention::scores`]).
    pub s: u32,
    /// The mask block ([`TileAttention::mask_block`]): 8 mod 16 bytes from `s`.
    pub mask: u32,
    /// P in panel order.
    pub p: u32,
    /// O's buffer; its groups are at [`TileGemm::output_group`] of
    /// [`TileAttention::values`].
    pub o: u32,
}

/// Issue counts of a launch, as emitted.
#[derive(Clone, Debug)]
pub struct TileAttentionCounts {
    /// The scores' product.
    pub scores: GemmCounts,
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

    /// The scores' product `S = Q K^T`.
    pub fn scores(&self) -> TileGemm {
        let v = AmpVariant::F16F32Partials;
        TileGemm {
            variant: v,
            rows: self.rows,
            k_groups: self.head_dim.div_ceil(v.in_channels() as u32),
            n_groups: self.key_panels_count() * KEY_PANEL / v.out_channels() as u32,
            input: self.q,
            weights: self.k,
            output: self.s,
            bias: Some(self.mask),
        }
    }

    /// The softmax from S's groups to P's panels.
    pub fn softmax(&self) -> SoftmaxPanels {
        let s = self.scores();
        SoftmaxPanels {
            rows: self.rows,
            groups: self.key_panels_count(),
            scale: self.scale,
            input: s.output_group(0),
            input_stride: s.group_stride(),
            output: self.p,
            output_stride: self.rows * 32,
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
        }
    }

    /// Where the mask block starts relative to S's buffer: past S and the
    /// AMP's read-ahead, 8 mod 16 bytes (as [`TileGemm::bias`] needs).
    pub fn mask_offset(&self) -> u32 {
        let s = self.scores();
        (s.output_bytes() as u32 + AmpBlock::READ_PAST_BYTES).next_multiple_of(16) + 8
    }

    /// The tile for `rows` query rows, head dimension `head_dim`, `keys`
    /// keys and value dimension `value_dim`, its tensors packed in the
    /// tile's interleaved memory: the key and value panels from the
    /// bottom; from the top, S (with its mask) and O in element pairs of
    /// their own, Q and P in others (each product's input and output in
    /// different pairs). An error gives the sizes when they do not fit.
    pub fn packed(
        (rows, head_dim, keys, value_dim): (u32, u32, u32, u32),
        scale: f32,
        machine: &MachineModel,
    ) -> Result<Self, String> {
        let pair = u64::from(2 * machine.element_bytes);
        let mut att = TileAttention {
            rows,
            head_dim,
            keys,
            value_dim,
            scale,
            q: 0,
            k: machine.interleaved_base,
            v: 0,
            s: 0,
            mask: 0,
            p: 0,
            o: 0,
        };
        att.v = (att.k + att.scores().weight_bytes() as u32).next_multiple_of(16);
        let weights_end = u64::from(att.v) + att.values().weight_bytes();
        let past = u64::from(AmpBlock::READ_PAST_BYTES);
        let after = |at: u64, bytes: u64| (at + bytes + past).next_multiple_of(16);
        // Offsets within each group of pairs.
        let mask = u64::from(att.mask_offset());
        let o = after(mask, att.scores().bias_bytes());
        let y = (o + att.values().output_bytes() + past).next_multiple_of(pair);
        let p = after(0, att.scores().input_bytes());
        let x = (p + att.values().input_bytes() + past).next_multiple_of(pair);
        let top = u64::from(machine.sram_end);
        match top
            .checked_sub(y)
            .and_then(|t| t.checked_sub(x))
            .filter(|&b| b >= weights_end)
        {
            Some(x0) => {
                let y0 = top - y;
                att.q = x0 as u32;
                att.p = (x0 + p) as u32;
                att.s = y0 as u32;
                att.mask = (y0 + mask) as u32;
                att.o = (y0 + o) as u32;
                att.validate().map_err(|e| e.to_string())?;
                Ok(att)
            }
            None => Err(format!(
                "an attention tile does not fit: one head's keys and values take {} bytes, {rows} query rows' Q, scores, probabilities and output {}, against {} bytes of interleaved memory (the keys are not split over tiles yet)",
                weights_end - u64::from(machine.interleaved_base),
                x + y,
                machine.sram_end - machine.interleaved_base
            )),
        }
    }

    /// Checks the parameters: each part's own checks, and the mask block
    /// where the scores' product needs it.
    pub fn validate(&self) -> Result<(), CodeletError> {
        if self.rows == 0 || self.head_dim == 0 || self.keys == 0 || self.value_dim == 0 {
            return Err(Self::err(format!(
                "needs positive sizes, got {} rows, head dimension {}, {} keys, value dimension {}",
                self.rows, self.head_dim, self.keys, self.value_dim
            )));
        }
        if self.mask % 16 != self.s.wrapping_add(8) % 16 {
            return Err(Self::err(format!(
                "the mask block at 0x{:x} must start 8 mod 16 bytes from S at 0x{:x}",
                self.mask, self.s
            )));
        }
        self.scores().validate()?;
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

    /// The mask block's f32 values: 0 for every key, [`MASKED`] for the
    /// padding keys, each group's row repeated for every query row.
    pub fn mask_block(&self) -> Vec<f64> {
        let s = self.scores();
        let b: Vec<f64> = (0..s.n_groups * s.variant.out_channels() as u32)
            .map(|t| if t < self.keys { 0.0 } else { MASKED })
            .collect();
        s.bias_block(&b)
    }

    /// Float64 reference: `O` row-major `[rows, value_dim]` from Q
    /// `[rows, head_dim]`, K `[keys, head_dim]` and V `[keys, value_dim]`.
    pub fn reference(&self, q: &[f64], k: &[f64], v: &[f64]) -> Vec<f64> {
        let (d, t, dv) = (
            self.head_dim as usize,
            self.keys as usize,
            self.value_dim as usize,
        );
        let scale = f64::from(self.scale);
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

    /// `main`: the scores' launch loop, a call of the softmax, the values'
    /// launch loop; then both products' workers and vertex states and the
    /// softmax subroutine.
    fn emit(&self, e: &mut Emitter) -> Result<TileAttentionCounts, CodeletError> {
        self.validate()?;
        let (scores, softmax, values) = (self.scores(), self.softmax(), self.values());
        e.code_section(".text.attention_supervisor", SectionKind::Supervisor);
        e.function("main");
        let s_sup = scores.emit_supervisor(e, "attn_s")?;
        emit_call(e, "attn_softmax");
        let v_sup = values.emit_supervisor(e, "attn_pv")?;
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        let s_work = scores.emit_workers(e, "attn_s");
        let v_work = values.emit_workers(e, "attn_pv");
        let softmax_counts = emit_subroutine(e, "attn_softmax", &softmax)?;
        Ok(TileAttentionCounts {
            scores: GemmCounts {
                supervisor: s_sup,
                workers: s_work,
            },
            softmax: softmax_counts,
            values: GemmCounts {
                supervisor: v_sup,
                workers: v_work,
            },
        })
    }

    fn cycles(&self, c: &TileAttentionCounts) -> u64 {
        let machine = MachineModel::c600();
        c.scores.cycles(&self.scores(), &machine)
            + call_cycles(&machine)
            + self.softmax().cycles(&c.softmax)
            + c.values.cycles(&self.values(), &machine)
            + 1
    }
}
