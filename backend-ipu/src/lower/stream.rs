//! Weights kept once and streamed in: an all-gather over a product's grid
//! rows.
//!
//! A product whose grid has several rows needs each column block's weights
//! (block `(j, k)`: the panels every tile `(i, j, k)` reads) on every grid
//! row. Kept there, they take `grid_rows` times their bytes of the chip,
//! and a tile's private memory holds its whole block for the whole
//! program. Streamed, each block is kept once, cut into `grid_rows`
//! pieces of [`piece_bytes`]: piece `i` lives on tile `(i, j, k)` at its
//! *home* ([`super::codegen::TileLayout::home`], private memory). In the
//! exchange before the product every tile multicasts its piece to every
//! tile of its column block (itself included), which writes it at
//! `weights + i * piece_bytes`: the pieces end to end are the block, in
//! shared scratch, where the AMP's supervisor loads them as before.
//!
//! The trade: private memory per tile shrinks from the block to one piece
//! (a loop's archive and its copies shrink with it), scratch grows by the
//! block while the product runs, and the exchange carries the block into
//! every tile: a receiver takes one word per cycle, so a block of `B`
//! bytes costs about `B / 4` cycles more exchange, which the scheduled
//! exchange's estimate counts (its transfers are scheduled with the
//! others, [`super::schedule`]). Blocks lower with their weights resident
//! where they fit, and streamed where the resident weights do not fit
//! ([`super::chain::plan_chain`]).

use ipuc_ir::{BlockId, Context, FloatKind, Location, Type};

use ipuc_dialects::ipu::TensorPiece;

use super::codegen::{constant_tensor, elem_type, PlacedGemm};
use super::exchange::MAX_SEND_WORDS;
use super::plan::GemmPlan;
use super::schedule::{Chunk, Transfer};

/// Where a block keeps its products' weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Weights {
    /// Every tile keeps its column block's weights for the whole program.
    Resident,
    /// A product with several grid rows keeps each column block's weights
    /// once, in pieces over the grid rows, and gathers them before it
    /// runs (see the module doc); one with a single grid row keeps them
    /// resident (its piece is the block).
    Streamed,
}

impl Weights {
    /// Whether `plan`'s weights are streamed in.
    pub fn streams(self, plan: &GemmPlan) -> bool {
        self == Weights::Streamed && plan.grid_rows > 1
    }

    /// The bytes of `plan`'s weights a tile keeps in private memory: its
    /// home piece where they stream in, else its whole block (as FP8
    /// codes where `codes`).
    pub fn kept_bytes(self, plan: &GemmPlan, codes: bool) -> u32 {
        if self.streams(plan) {
            piece_bytes(plan, codes)
        } else {
            block_bytes(plan, codes)
        }
    }
}

/// A plan report's words on a product whose weights stream in (as FP8
/// codes where `codes`), gathered in `exchange` ("exchange A", "the link
/// into the block").
pub fn report(plan: &GemmPlan, codes: bool, exchange: &str) -> String {
    report_pieces(
        piece_bytes(plan, codes),
        codes,
        (plan.grid_rows, "grid rows"),
        exchange,
    )
}

/// A plan report's words on a block kept in pieces of `piece` bytes (FP8
/// codes where `codes`) on each of `count` tiles (`what`: the grid's
/// axis), gathered in `exchange`.
pub fn report_pieces(
    piece: u32,
    codes: bool,
    (count, what): (u32, &str),
    exchange: &str,
) -> String {
    format!(
        "in pieces of {piece} bytes{} on each of its {count} {what}, gathered in {exchange}",
        if codes { " of FP8 codes" } else { "" },
    )
}

/// `bytes` of f16 as its tiles keep them: as they are, or where `codes`
/// as FP8 codes, a byte per element.
pub fn kept(bytes: u32, codes: bool) -> u32 {
    if codes {
        bytes / 2
    } else {
        bytes
    }
}

/// Bytes of each of `count` pieces of a block of `block` bytes, in whole
/// 16-byte lines (so each piece starts 16-byte aligned in the block).
pub fn pieces_of(block: u32, count: u32) -> u32 {
    block.div_ceil(count).next_multiple_of(16)
}

/// Bytes of a column block of `plan`'s weights as its tiles keep them:
/// the vertex's panels, or where `codes` their FP8 codes, a byte per f16
/// element ([`super::codegen::TileLayout::codes`], widened after the
/// gather).
pub fn block_bytes(plan: &GemmPlan, codes: bool) -> u32 {
    kept(plan.vertex().weight_bytes() as u32, codes)
}

/// Bytes of each piece of `plan`'s weight blocks (as FP8 codes where
/// `codes`): a block's bytes over its grid rows, in whole 16-byte lines
/// (so each piece starts 16-byte aligned in the block, as the AMP's
/// `ld128putcs` and the widening cast read it).
pub fn piece_bytes(plan: &GemmPlan, codes: bool) -> u32 {
    pieces_of(block_bytes(plan, codes), plan.grid_rows)
}

/// Piece `i`'s byte range `[lo, hi)` in a block of `block` bytes cut in
/// pieces of `piece` bytes (empty past the block's end).
pub fn piece_range(i: u32, piece: u32, block: u32) -> (u32, u32) {
    let lo = (i * piece).min(block);
    (lo, ((i + 1) * piece).min(block))
}

/// The all-gather of `product`'s weights: tile `(i, j, k)` sends its piece
/// from its home to `weights + i * piece_bytes` on every tile of column
/// block `(j, k)` (where they are FP8 codes, to the codes' place,
/// [`super::codegen::TileLayout::codes`]). Empty for resident weights.
pub fn transfers(product: &PlacedGemm) -> Vec<Transfer> {
    let Some(home) = product.lay.home else {
        return Vec::new();
    };
    let p = &product.plan;
    let codes = product.lay.codes.map(|c| c.at);
    let piece = piece_bytes(p, codes.is_some());
    let block = block_bytes(p, codes.is_some());
    let at = codes.unwrap_or(product.lay.weights);
    let mut out = Vec::new();
    for i in 0..p.grid_rows {
        for j in 0..p.grid_cols {
            for k in 0..p.grid_k {
                let group: Vec<u32> = (0..p.grid_rows).map(|r| p.tile(r, j, k)).collect();
                out.extend(piece_transfer(&group, i, (home, at), (piece, block)));
            }
        }
    }
    out
}

/// The multicast of piece `n` of a block (`(piece, block)` bytes) kept
/// over `group` (piece `n` on `group[n]`, at `home`) to every tile of
/// `group`, at `at` plus the piece's offset in the block; `None` for a
/// piece past the block's end.
pub fn piece_transfer(
    group: &[u32],
    n: u32,
    (home, at): (u32, u32),
    (piece, block): (u32, u32),
) -> Option<Transfer> {
    let (lo, hi) = piece_range(n, piece, block);
    (hi > lo).then(|| Transfer {
        sender: group[n as usize],
        chunks: chunks(home, (hi - lo) / 4),
        receivers: group.iter().map(|&r| (r, at + lo)).collect(),
        segment: None,
    })
}

/// The pieces of a block of `len` bytes (elements of `size` bytes) kept
/// over `group` in pieces of `piece` bytes, each at `home`: piece `n` on
/// `group[n]` (none past the block's end).
pub fn home_pieces(
    group: &[u32],
    home: u32,
    piece: u32,
    (len, size): (u32, u32),
) -> Vec<TensorPiece> {
    group
        .iter()
        .enumerate()
        .filter_map(|(n, &tile)| {
            let (lo, hi) = piece_range(n as u32, piece, len);
            (hi > lo).then(|| TensorPiece {
                tile: i64::from(tile),
                address: i64::from(home),
                first: i64::from(lo / size),
                count: i64::from((hi - lo) / size),
            })
        })
        .collect()
}

/// `words` words from `address` as chunks of at most [`MAX_SEND_WORDS`].
pub fn chunks(address: u32, words: u32) -> Vec<Chunk> {
    (0..words)
        .step_by(MAX_SEND_WORDS as usize)
        .map(|w| Chunk {
            address: address + 4 * w,
            words: (words - w).min(MAX_SEND_WORDS),
        })
        .collect()
}

/// Appends `product`'s weights as their homes keep them: one `constant`
/// tensor per column block and K part (its panels, or their FP8 codes), a
/// piece on each grid row's tile at `home`.
pub fn emit_homes(
    product: &PlacedGemm,
    ctx: &mut Context,
    exe_body: BlockId,
    weights: &[f64],
    home: u32,
    loc: &Location,
) {
    let p = &product.plan;
    let codes = product.lay.codes;
    let (ty, size) = match codes {
        Some(_) => (Type::float(FloatKind::F8E4M3FNUZ), 1),
        None => {
            let elem = p.shape.variant.input_elem();
            (elem_type(elem), elem.size())
        }
    };
    let piece = piece_bytes(p, codes.is_some());
    for j in 0..p.grid_cols {
        for k in 0..p.grid_k {
            let bytes = match codes {
                Some(c) => product.weight_codes(weights, (j, k), c.scale),
                None => product.weight_block(weights, (j, k)),
            };
            let group: Vec<u32> = (0..p.grid_rows).map(|i| p.tile(i, j, k)).collect();
            let pieces = home_pieces(&group, home, piece, (bytes.len() as u32, size as u32));
            let t = constant_tensor(
                ctx,
                &format!("{}_weights_{}", product.tag, product.suffix(j, k)),
                (ty.clone(), size, 16),
                bytes,
                &pieces,
                loc.clone(),
            );
            ctx.append_op(exe_body, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_block_once_in_whole_lines() {
        for (block, rows) in [(512u32, 1u32), (512, 7), (512, 40), (46_080, 7), (1024, 3)] {
            let piece = pieces_of(block, rows);
            let mut covered = 0;
            for i in 0..rows {
                let (lo, hi) = piece_range(i, piece, block);
                assert_eq!(lo, covered.min(block));
                assert!(lo % 16 == 0 && hi - lo <= piece);
                covered = hi;
            }
            assert_eq!(covered, block, "{block} in {rows}");
        }
    }

    #[test]
    fn long_pieces_go_in_several_sends() {
        let c = chunks(0x80000, 2 * MAX_SEND_WORDS + 3);
        assert_eq!(c.len(), 3);
        assert_eq!(c[1].address, 0x80000 + 4 * MAX_SEND_WORDS);
        assert_eq!(
            c.iter().map(|c| c.words).sum::<u32>(),
            2 * MAX_SEND_WORDS + 3
        );
    }
}
