//! A block's *LN tiles*: the tiles where its input rows enter from the host
//! (or the previous block), [`LN_ROWS`] rows each, and LayerNorm runs on
//! them (one row per worker) before the block's first exchange. The MLP
//! and attention blocks place them the same way; this is their one copy of
//! the LN tiles' code, constants and input pieces.

use std::collections::BTreeMap;

use ipuc_dialects::ipu::TensorPiece;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{BlockId, Context, FloatKind, Location, Type};

use super::codegen::{replicated_constant, Calls};
use super::schedule::Chunk;
use crate::codelets::emitter::Emitter;
use crate::codelets::layernorm::{x_copy_bytes, LayerNorm, Variance, PIECE_BYTES};
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::{call_cycles, emit_call};
use crate::codelets::CodeletError;

/// Rows per LN tile: one per worker.
pub const LN_ROWS: u32 = 6;

/// A block's LN tiles and where their tensors are.
#[derive(Clone, Debug)]
pub struct LnTiles<'a> {
    /// The tiles, [`LnTiles::rows_per_tile`] rows each in order.
    pub tiles: &'a [u32],
    /// Rows per LN tile: [`LN_ROWS`], one per worker, or fewer where a
    /// block spreads its rows over more tiles to keep less private memory
    /// a tile (the streamed pooling head).
    pub rows_per_tile: u32,
    /// Rows.
    pub m: u32,
    /// Channels.
    pub c: u32,
    /// LayerNorm's epsilon.
    pub eps: f32,
    /// Whether LayerNorm applies its scale and shift
    /// ([`LayerNorm::affine`]).
    pub affine: bool,
    /// x's rows, row-major f16.
    pub x: u32,
    /// LayerNorm's output rows.
    pub ln_out: u32,
    /// gamma.
    pub gamma: u32,
    /// beta.
    pub beta: u32,
    /// What LayerNorm writes.
    pub output: LnOutput,
    /// LayerNorm's output as panels ([`LayerNorm::output_panels`], its
    /// 32-byte pieces [`LnTiles::panel_stride`] bytes apart), where the products'
    /// input or weight panels are sent from it ([`LnTiles::out_chunks`]);
    /// else rows.
    pub panels: bool,
    /// Where LayerNorm also copies x into 16-channel groups
    /// ([`LayerNorm::x_groups`], [`LnTiles::panel_stride`] bytes apart),
    /// for the residual's exchange to send a group's rows at once
    /// ([`LnTiles::x_chunks`]); `None`: x's rows are sent as they are.
    pub x_groups: Option<u32>,
}

/// What an LN tile's LayerNorm writes at [`LnTiles::ln_out`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LnOutput {
    /// f16 rows.
    F16,
    /// FP8 codes at scale `s` (an FP8 product's input).
    F8Codes(i32),
}

impl LnTiles<'_> {
    /// Rows `[lo, hi)` of LN tile `q`.
    pub fn rows(&self, q: usize) -> (u32, u32) {
        let lo = q as u32 * self.rows_per_tile;
        (lo, (lo + self.rows_per_tile).min(self.m))
    }

    /// Bytes between the panels of LayerNorm's output on an LN tile,
    /// where it writes them as panels: a piece for each of the tile's
    /// rows.
    pub fn panel_stride(&self) -> u32 {
        self.rows_per_tile * PIECE_BYTES
    }

    /// The LayerNorm of an LN tile holding `rows` rows.
    pub fn layer_norm(&self, rows: u32) -> LayerNorm {
        LayerNorm {
            rows,
            cols: self.c,
            eps: self.eps,
            affine: self.affine,
            input: self.x,
            gamma: self.gamma,
            beta: self.beta,
            output: self.ln_out,
            output_f8_scale: match self.output {
                LnOutput::F8Codes(s) => Some(s),
                LnOutput::F16 => None,
            },
            variance: Variance::for_output(matches!(self.output, LnOutput::F8Codes(_))),
            output_panels: self.panels.then_some(self.panel_stride()),
            x_groups: self.x_groups.map(|at| (at, self.panel_stride())),
        }
    }

    /// Bytes of these LN tiles' copy of x in groups
    /// ([`LnTiles::x_copy_bytes_for`]).
    pub fn x_copy_bytes_for_tile(&self) -> u32 {
        Self::x_copy_bytes_for(self.c, self.rows_per_tile)
    }

    /// Bytes of an LN tile's copy of x in groups ([`LnTiles::x_groups`])
    /// of `c` channels, `rows_per_tile` rows, groups a
    /// [`LnTiles::panel_stride`] apart.
    pub fn x_copy_bytes_for(c: u32, rows_per_tile: u32) -> u32 {
        x_copy_bytes(c, rows_per_tile, rows_per_tile * PIECE_BYTES)
    }

    /// Where a block's LN tiles copy x in groups ([`LnTiles::x_groups`]):
    /// right below x's rows at `x` (scratch the LN tiles use for nothing
    /// else: they run no product), if the block `copies` (FP8 output
    /// without scale and shift: the apply pass that copies for free) and
    /// the copy of `c` channels stays at or above `floor` (private
    /// memory); else `None`, and x's rows are sent as they are.
    pub fn x_groups_below(x: u32, c: u32, copies: bool, floor: u32) -> Option<u32> {
        (copies && c.is_multiple_of(16))
            .then(|| x.saturating_sub(Self::x_copy_bytes_for(c, LN_ROWS)) & !15)
            .filter(|&at| at >= floor)
    }

    /// The chunks of LayerNorm's output that hold rows `[a, b)` of LN tile
    /// `q` in 32-byte piece `piece` (an input panel of 16 f16 values or
    /// 32 FP8 codes), in row order: one chunk where the output is panels,
    /// one a row where it is rows.
    pub fn out_chunks(&self, q: usize, (a, b): (u32, u32), piece: u32) -> Vec<Chunk> {
        let q_lo = self.rows(q).0;
        if self.panels {
            vec![Chunk {
                address: self.ln_out + piece * self.panel_stride() + (a - q_lo) * PIECE_BYTES,
                words: 8 * (b - a),
            }]
        } else {
            let row_bytes = self.c * self.layer_norm(0).output_elem_bytes();
            self.row_chunks(q, (self.ln_out, row_bytes), (a, b), piece)
        }
    }

    /// The chunks of x (rows of f16) that hold rows `[a, b)` of LN tile
    /// `q` in 32-byte piece `piece` (16 channels): from x's copy in
    /// groups, one chunk; from its rows, one a row.
    pub fn x_chunks(&self, q: usize, (a, b): (u32, u32), piece: u32) -> Vec<Chunk> {
        match self.x_groups {
            Some(at) => {
                let q_lo = self.rows(q).0;
                vec![Chunk {
                    address: at + piece * self.panel_stride() + (a - q_lo) * PIECE_BYTES,
                    words: 8 * (b - a),
                }]
            }
            None => self.row_chunks(q, (self.x, self.c * 2), (a, b), piece),
        }
    }

    /// Piece `piece` of rows `[a, b)` of LN tile `q` in rows of `row_bytes`
    /// from `base`: a chunk a row.
    fn row_chunks(
        &self,
        q: usize,
        (base, row_bytes): (u32, u32),
        (a, b): (u32, u32),
        piece: u32,
    ) -> Vec<Chunk> {
        let q_lo = self.rows(q).0;
        (a..b)
            .map(|r| Chunk {
                address: base + (r - q_lo) * row_bytes + piece * PIECE_BYTES,
                words: 8,
            })
            .collect()
    }

    /// Where x enters: each row on its LN tile.
    pub fn input_pieces(&self) -> Vec<TensorPiece> {
        let mut pieces = Vec::new();
        for (q, &t) in self.tiles.iter().enumerate() {
            let (lo, hi) = self.rows(q);
            for r in lo..hi {
                pieces.push(TensorPiece {
                    tile: i64::from(t),
                    address: i64::from(self.x + (r - lo) * self.c * 2),
                    first: i64::from(r) * i64::from(self.c),
                    count: i64::from(self.c),
                });
            }
        }
        pieces
    }

    /// Tile → its index among the LN tiles.
    pub fn index(&self) -> BTreeMap<u32, usize> {
        self.tiles
            .iter()
            .enumerate()
            .map(|(q, &t)| (t, q))
            .collect()
    }

    /// On LN tile `q` (of [`LnTiles::index`]), calls its LayerNorm (a
    /// subroutine `ln` added to `calls`).
    pub fn emit_call(&self, e: &mut Emitter, q: Option<usize>, calls: &mut Calls) {
        if let Some(q) = q {
            let (lo, hi) = self.rows(q);
            emit_call(e, "ln");
            calls.push(("ln".into(), Box::new(self.layer_norm(hi - lo))));
        }
    }

    /// gamma and beta on every LN tile; nothing where they are ones and
    /// zeros ([`LnTiles::affine`] off): LayerNorm does not read them, so
    /// the program loads none and a layer loop archives none.
    pub fn emit_constants(
        &self,
        ctx: &mut Context,
        exe_body: BlockId,
        (gamma, beta): (&[f64], &[f64]),
        loc: &Location,
    ) {
        if !self.affine {
            return;
        }
        let half = Type::float(FloatKind::F16);
        for (name, values, at) in [
            ("ln_gamma", gamma, self.gamma),
            ("ln_beta", beta, self.beta),
        ] {
            let t = replicated_constant(
                ctx,
                name,
                (half.clone(), 2, 8),
                super::block::encode_f16(values),
                (self.tiles, at),
                loc.clone(),
            );
            ctx.append_op(exe_body, t);
        }
    }

    /// Estimated cycles of the busiest LN tile, its call included.
    pub fn estimate(&self, machine: &MachineModel) -> Result<u64, CodeletError> {
        let rows = self.rows_per_tile.min(self.m);
        Ok(self.layer_norm(rows).estimate_cycles()? + call_cycles(machine))
    }
}

/// Estimated cycles of LayerNorm on an LN tile of [`LN_ROWS`] rows of `c`
/// channels (FP8 or f16 output): how long a product tile's gather in a
/// chain's link into the block may take beside it without lengthening
/// the link (the plan search charges a streamed product's gather beyond
/// them, [`super::plan::Epilogue::gathered_weights`]).
pub fn beside_layer_norm_cycles(c: u32, fp8: bool) -> Result<u32, CodeletError> {
    let ln = LayerNorm {
        rows: LN_ROWS,
        cols: c,
        eps: 1e-6,
        affine: false,
        input: 0x80000,
        gamma: 0,
        beta: 0,
        output: 0xa0000,
        output_f8_scale: fp8.then_some(0),
        variance: Variance::for_output(fp8),
        output_panels: None,
        x_groups: None,
    };
    Ok(ln.estimate_cycles()? as u32)
}

/// Where an LN tile keeps its tensors ([`super::window`]): x's
/// [`LN_ROWS`] rows of `c` f16 values, LayerNorm's output rows, gamma and
/// beta; and the end of the private ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LnRows {
    /// x's rows.
    pub x: u32,
    /// LayerNorm's output rows.
    pub ln_out: u32,
    /// gamma.
    pub gamma: u32,
    /// beta.
    pub beta: u32,
    /// The first byte after them.
    pub end: u32,
}

impl LnRows {
    /// gamma and beta of `c` channels private from `base`; LayerNorm's
    /// output rows in scratch right below `top`, and x's rows in scratch
    /// right below the element pair (`pair` bytes) of the output's first
    /// byte (LayerNorm reads one and writes the other; they share no
    /// pair). The link before the block writes x's rows after the block
    /// before it ran, and the block's exchange reads both before anything
    /// else on the LN tiles uses the scratch. `end` is the private part's
    /// end; x's rows are the lowest scratch.
    pub fn with_output_below(base: u32, c: u32, top: u32, pair: u32) -> Self {
        let row_bytes = c * 2;
        let ln_out = (top - LN_ROWS * row_bytes - 16) & !15;
        let x = (ln_out / pair * pair - LN_ROWS * row_bytes - 16) & !15;
        let gamma = base.next_multiple_of(16);
        let beta = gamma + row_bytes.next_multiple_of(8);
        LnRows {
            x,
            ln_out,
            gamma,
            beta,
            end: beta + row_bytes.next_multiple_of(8),
        }
    }

    /// `rows` rows of `c` channels from `base`.
    pub fn at(base: u32, c: u32, rows: u32) -> Self {
        let row_bytes = c * 2;
        let x = base;
        let ln_out = (x + rows * row_bytes + 16).next_multiple_of(16);
        let gamma = (ln_out + rows * row_bytes + 16).next_multiple_of(16);
        let beta = gamma + row_bytes.next_multiple_of(8);
        LnRows {
            x,
            ln_out,
            gamma,
            beta,
            end: beta + row_bytes.next_multiple_of(8),
        }
    }
}

/// LayerNorm of one row in float64, `(x - mean) / sqrt(var + eps) * gamma
/// + beta`: what the blocks' references compute for their LN tiles.
pub fn layer_norm_reference(row: &[f64], gamma: &[f64], beta: &[f64], eps: f32) -> Vec<f64> {
    let c = row.len() as f64;
    let mean = row.iter().sum::<f64>() / c;
    let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c;
    let rstd = 1.0 / (var + f64::from(eps)).sqrt();
    row.iter()
        .zip(gamma.iter().zip(beta))
        .map(|(v, (g, b))| (v - mean) * rstd * g + b)
        .collect()
}
