//! Identical layers of a chain as one body run in a loop.
//!
//! An encoder repeats one layer (an attention block, then an MLP block)
//! with other weights. The chain ([`super::chain`]) finds the longest run
//! of blocks that repeats with the same shapes ([`find_repeat`]), plans
//! and emits the *body* (one period of it) once, and runs it `count`
//! times: compile time and code are those of one layer.
//!
//! **Memory.** The body's code reads its constants (weights, bias blocks
//! and rows, LayerNorm scale and shift, vertex states, masks, zero runs)
//! at fixed addresses, the first layer's, loaded with the program. Each
//! later layer's are kept in an *archive*, one run of *slots* (one per
//! later layer) that starts in region 0 where the chain has room there
//! (whole elements below the interleaved region, above the add columns,
//! the blocks' private region 0 and [`super::chain::CODE_ROOM`] for code)
//! and goes on at the bottom of private interleaved memory, below every
//! block's (so every block's scratch stays above it). A slot may straddle
//! the regions' boundary: the address space runs on, and a copy's
//! source in region 0 lies in elements no destination shares (the
//! non-interleaved region's bank rule). The body's memory is what
//! it keeps as its own ([`super::window::Window::taken_since`]: its
//! private interleaved memory, its private region 0 and its rows of the
//! add columns); a tile's constants lie in *spans* of it ([`extents`]:
//! whole [`GRAIN`]s around them, spans closer than [`GAP`] joined), and
//! its slot holds those spans end to end ([`LoopMemory::pack`]), so a slot
//! is as large as the most constants a tile holds, not the body's memory
//! (the rows exchanges write, x's and LayerNorm's, take no slot; nor do
//! the products' vertex states, which the plans alone make, the same in
//! every layer). The
//! chain finds the spans while it plans, by building the body's second
//! layer's constants as the lowering will. Each tile copies its spans of
//! the coming layer's slot over the body's memory ([`StridedCopy`], one
//! launch per span): the weights come back, and so do zero runs and
//! padding the layer's code relies on. When depends on the tile: the
//! tiles the link back into the body writes (the body's first block's
//! input rows) copy before going round again, before that link, and so
//! does every tile the home pieces of streamed weights the link back
//! gathers from (the body's first block's, gathered in the link,
//! [`super::chain`]; each grown to whole grains of its span and copied
//! apart from the rest of it, [`copies_apart`]), so that the link sends
//! the coming layer's pieces (such a copy may not cover rows the link
//! moves: the chain says so as an error); the rest a tile copies when
//! it enters the body again, beside the first
//! block's LayerNorm, where it computes nothing else but that block's
//! broadcasts and restores (which read the constants after the copies),
//! so the copies cost the layer nothing where that LayerNorm is the
//! longer (so400m: 2.3k cycles of copies under its 9.8k). What else lies
//! in those bytes (a later block's input rows) is rewritten by the
//! exchange into that block before it reads them.
//!
//! **Code.** The body's first block starts, on a tile that copies there,
//! with
//!
//! ```text
//!     setzi $m3, loop_entered ; ld32 $m4, $m3, $mzero, 0
//!     setzi $m5, 1 ; st32 $m5, ...    # entered from now on
//!     brz $m4, .Lloop_first_entry     # the first layer is loaded
//!     call $lr, loop_copyin0_main ... # the coming layer's constants
//!     (each copy's sources advanced by one slot)
//! .Lloop_first_entry:
//! ```
//!
//! and the body's last block ends, on every tile, with
//!
//! ```text
//!     setzi $m3, loop_count ; ld32 $m4, $m3, $mzero, 0
//!     brz $m4, .Lloop_exit            # last layer done
//!     add $m4, $m4, -1 ; st32 ...     # one layer fewer
//!     call $lr, loop_copy0_main ...   # (tiles the link back writes)
//!     (each copy's sources advanced by one slot)
//!     sync [the link back to the body's first block]
//!     bri b{start}_main
//! .Lloop_exit:
//!     sync [the link to the block after the loop]
//! ```
//!
//! The counter (`loop_count`, `count - 1` at load), the entered word (0)
//! and the copies' vertex states (pointing at the first archived layer at
//! load) are words the program loads: like the rest of an executable, it
//! runs once per load.
//!
//! Differences from a compiler that streams weights (the vendor SDK,
//! the best independent compiler for this chip): the archive sits on the
//! tiles whose copy of the body reads it, as the body lays its constants
//! out, replicas included; nothing is exchanged to bring a layer in. A
//! model whose layers' constants, so laid out, do not fit beside one
//! layer's working memory (so400m at FP16) fails to plan with the
//! archive's size in the message.

use std::collections::BTreeMap;

use ipuc_dialects::ipu::{self, TensorDirection, TensorPiece};
use ipuc_ipu_arch::pipeline::supervisor_schedule;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, Location, OpId, Type};

use super::codegen::{constant_tensor, plan_made};
use crate::codelets::copy::{StridedCopy, TAG as COPY_TAG};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::launch::{VERTEX_STATE_SUFFIX, WORKERS};
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::{call_cycles, emit_call, emit_subroutine, instance_label};
use crate::emit::executable::constant_piece_bytes;

/// The unit of the copies: six workers' 8-byte words.
pub const GRAIN: u32 = 8 * WORKERS as u32;

/// A run of identical blocks: blocks `start..start + period` (the body)
/// and `count - 1` more periods like them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// The body's first block.
    pub start: usize,
    /// Blocks in the body.
    pub period: usize,
    /// Times the body runs (2 or more).
    pub count: usize,
}

impl Repeat {
    /// The first block after the loop.
    pub fn end(&self) -> usize {
        self.start + self.period * self.count
    }

    /// The body's last block (its code ends the loop).
    pub fn last(&self) -> usize {
        self.start + self.period - 1
    }

    /// Whether block `k` is one of the body's (its first period).
    pub fn in_body(&self, k: usize) -> bool {
        (self.start..=self.last()).contains(&k)
    }

    /// Whether block `k`'s code is emitted: blocks before the loop, the
    /// body and blocks after it (a later period runs the body's code).
    pub fn emitted(&self, k: usize) -> bool {
        k <= self.last() || k >= self.end()
    }

    /// The body block whose code runs for block `k`.
    pub fn code_of(&self, k: usize) -> usize {
        if (self.start..self.end()).contains(&k) {
            self.start + (k - self.start) % self.period
        } else {
            k
        }
    }
}

/// The longest run of a body of at most `max_period` blocks repeated
/// twice or more, by blocks covered (the shorter body on a tie, then
/// the earlier run); `keys[k]` is what block `k`'s code depends on
/// (`None`: a block that never repeats).
pub fn find_repeat<T: PartialEq>(keys: &[Option<T>], max_period: usize) -> Option<Repeat> {
    let mut best: Option<Repeat> = None;
    for period in 1..=max_period {
        for start in 0..keys.len() {
            if keys.len() < start + 2 * period {
                break;
            }
            let body = &keys[start..start + period];
            if body.iter().any(Option::is_none) {
                continue;
            }
            let mut count = 1;
            while keys.len() >= start + (count + 1) * period
                && keys[start + count * period..start + (count + 1) * period] == *body
            {
                count += 1;
            }
            let covers = |r: &Repeat| r.count * r.period;
            let found = Repeat {
                start,
                period,
                count,
            };
            if count >= 2 && best.is_none_or(|b| covers(&found) > covers(&b)) {
                best = Some(found);
            }
        }
    }
    best
}

/// Where a loop's body keeps its constants and where the later layers'
/// wait (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopMemory {
    /// The body's memory, `[lo, hi)` each, whole [`GRAIN`]s.
    pub ranges: Vec<(u32, u32)>,
    /// The archive's first byte (slot of layer 1).
    pub archive: u32,
    /// What each tile copies ([`extents`]), once packed ([`Self::pack`]).
    pub extents: Extents,
    /// Each tile's spans' offsets in a slot, in [`Self::extents`]' order.
    pub offsets: BTreeMap<u32, Vec<u32>>,
    /// Bytes of a slot (a multiple of 16): the most any tile's spans take.
    pub slot: u32,
    /// Times the body runs.
    pub count: usize,
}

impl LoopMemory {
    /// The memory of a body that keeps `ranges`, with its archive at
    /// `archive`; its slots are empty until [`Self::pack`]ed.
    pub fn new(ranges: Vec<(u32, u32)>, archive: u32, count: usize) -> Self {
        LoopMemory {
            ranges,
            archive,
            extents: Extents::new(),
            offsets: BTreeMap::new(),
            slot: 0,
            count,
        }
    }

    /// Packs each tile's spans of `extents` end to end in its slot: a
    /// slot holds a tile's constants, not an image of the body's whole
    /// memory (its buffers, the rows exchanges write, cost nothing). Each
    /// span keeps its address mod 16 in the slot, so that a copy's source
    /// and destination differ in bank parity word by word (the
    /// `ldst64pace` bank rule in interleaved memory).
    pub fn pack(&mut self, extents: Extents) {
        let mut slot = 0;
        self.offsets = extents
            .iter()
            .map(|(&tile, spans)| {
                let mut at = 0u32;
                let offsets = spans
                    .iter()
                    .map(|&(_, lo, hi)| {
                        at += (lo.wrapping_sub(at)) % 16;
                        let o = at;
                        at += hi - lo;
                        o
                    })
                    .collect();
                slot = slot.max(at);
                (tile, offsets)
            })
            .collect();
        let busiest = tracing::enabled!(target: "ipu-lower", tracing::Level::DEBUG)
            .then(|| {
                extents
                    .iter()
                    .max_by_key(|(_, spans)| spans.iter().map(|s| s.2 - s.1).sum::<u32>())
            })
            .flatten();
        if let Some((tile, spans)) = busiest {
            tracing::debug!(
                target: "ipu-lower",
                "loop archive: a slot of {slot} bytes, tile {tile}'s spans {:x?}",
                spans.iter().map(|s| (s.1, s.2)).collect::<Vec<_>>()
            );
            let mut sizes: Vec<u32> = extents
                .values()
                .map(|spans| spans.iter().map(|s| s.2 - s.1).sum())
                .collect();
            sizes.sort_unstable();
            let total: u64 = sizes.iter().map(|&b| u64::from(b)).sum();
            let at = |q: usize| sizes[(sizes.len() - 1) * q / 100];
            tracing::debug!(
                target: "ipu-lower",
                "loop archive: {total} bytes a layer on {} tiles; a tile's share: median {}, 90% {}, 99% {}, most {}",
                sizes.len(),
                at(50),
                at(90),
                at(99),
                at(100)
            );
        }
        self.extents = extents;
        self.slot = slot.next_multiple_of(16);
    }

    /// Bytes of the archive: a slot for each layer after the first.
    pub fn archive_bytes(&self) -> u32 {
        self.slot * (self.count as u32 - 1)
    }

    /// The body's ranges as `0xlo..0xhi, ...` (reports and errors).
    pub fn ranges_text(&self) -> String {
        self.ranges
            .iter()
            .map(|(lo, hi)| format!("0x{lo:x}..0x{hi:x}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The end of the body's private interleaved memory (grown to whole
    /// grains): where the blocks after the loop start theirs.
    pub fn private_end(&self, interleaved_base: u32) -> Option<u32> {
        self.ranges
            .iter()
            .filter(|r| r.0 >= interleaved_base)
            .map(|r| r.1)
            .max()
    }

    /// The range holding byte `a`.
    fn range_of(&self, a: u32) -> Option<usize> {
        self.ranges.iter().position(|&(lo, hi)| lo <= a && a < hi)
    }

    /// Where layer `layer`'s (1 or more) copy of span `n` of `tile`'s
    /// extents starts.
    fn archived(&self, layer: usize, tile: u32, n: usize) -> u32 {
        self.archive + (layer as u32 - 1) * self.slot + self.offsets[&tile][n]
    }
}

/// What a tile copies from each range: spans `[lo, hi)` in whole grains
/// from the range's start, around the body's constant bytes there; two
/// spans closer than [`GAP`] are one.
pub type Extents = BTreeMap<u32, Vec<(usize, u32, u32)>>;

/// The widest gap between two constants one copy spans: a launch of its
/// own costs about as much as copying this many bytes (about 150 cycles at
/// 8 bytes a cycle).
pub const GAP: u32 = 1024;

/// Whether constant `t` is the same in every layer a loop runs: made of
/// its block's plan alone ([`plan_made`]: vertex states, masks, zero
/// runs; every layer is built from the body's plans). Such constants
/// take no slot: the body's own stay where they are. (They are copied
/// with the rest where they lie inside a span of other constants.)
fn layer_invariant(ctx: &Context, t: OpId) -> bool {
    ctx.attr(t, "sym_name")
        .and_then(Attribute::as_str)
        .is_some_and(plan_made)
}

/// Each tile's constant pieces of `tensors` (the body's constants, as
/// emitted for one layer), by tile: (range, address, bytes).
type Placed = BTreeMap<u32, Vec<(usize, u32, Vec<u8>)>>;

fn placed(ctx: &Context, tensors: &[OpId], mem: &LoopMemory) -> Result<Placed, Diagnostic> {
    let mut out: Placed = BTreeMap::new();
    for &t in tensors {
        for (p, bytes) in constant_piece_bytes(ctx, t)? {
            let (at, end) = (p.address as u32, p.address as u32 + bytes.len() as u32);
            let j = mem
                .range_of(at)
                .filter(|&j| end <= mem.ranges[j].1)
                .ok_or_else(|| {
                    Diagnostic::op_error(
                        ctx,
                        t,
                        format!(
                            "a repeated layer's constant on tile {} at 0x{at:x}..0x{end:x} is outside the memory its loop restores ({})",
                            p.tile,
                            mem.ranges_text()
                        ),
                    )
                })?;
            out.entry(p.tile as u32).or_default().push((j, at, bytes));
        }
    }
    Ok(out)
}

/// Pieces by tile: (address, bytes).
type Pieces = BTreeMap<u32, Vec<(u32, Vec<u8>)>>;

/// Each tile's pieces of `tensors`, wherever they are.
fn placed_anywhere(ctx: &Context, tensors: &[OpId]) -> Result<Pieces, Diagnostic> {
    let mut out = Pieces::new();
    for &t in tensors {
        for (p, bytes) in constant_piece_bytes(ctx, t)? {
            out.entry(p.tile as u32)
                .or_default()
                .push((p.address as u32, bytes));
        }
    }
    Ok(out)
}

/// The extents of the body's constants `tensors` (the first layer's).
pub fn extents(ctx: &Context, tensors: &[OpId], mem: &LoopMemory) -> Result<Extents, Diagnostic> {
    let mut out = Extents::new();
    let varying: Vec<OpId> = tensors
        .iter()
        .copied()
        .filter(|&t| !layer_invariant(ctx, t))
        .collect();
    if tracing::enabled!(target: "ipu-lower", tracing::Level::DEBUG) {
        report_families(ctx, &varying)?;
    }
    for (tile, pieces) in placed(ctx, &varying, mem)? {
        // Each piece in whole grains of its range, in address order.
        let mut spans: Vec<(usize, u32, u32)> = pieces
            .iter()
            .map(|(j, at, bytes)| {
                let lo = mem.ranges[*j].0;
                let end = at + bytes.len() as u32;
                (
                    *j,
                    lo + (at - lo) / GRAIN * GRAIN,
                    lo + (end - lo).next_multiple_of(GRAIN),
                )
            })
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(usize, u32, u32)> = Vec::new();
        for (j, a, b) in spans {
            match merged.last_mut() {
                Some((mj, _, mb)) if *mj == j && a <= *mb + GAP => *mb = (*mb).max(b),
                _ => merged.push((j, a, b)),
            }
        }
        out.insert(tile, merged);
    }
    Ok(out)
}

/// Logs (debug) the bytes a layer's archive holds by constant family:
/// each constant's name without its digits (`qk_weights_col1_k0` is
/// `qk_weights_col_k`), largest first, over every tile, then those of
/// the tile that holds the most.
fn report_families(ctx: &Context, varying: &[OpId]) -> Result<(), Diagnostic> {
    let mut families: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_tile: BTreeMap<u32, BTreeMap<String, u64>> = BTreeMap::new();
    for &t in varying {
        let name = ctx
            .attr(t, "sym_name")
            .and_then(Attribute::as_str)
            .unwrap_or("?");
        let family: String = name.chars().filter(|c| !c.is_ascii_digit()).collect();
        for (p, b) in constant_piece_bytes(ctx, t)? {
            *families.entry(family.clone()).or_default() += b.len() as u64;
            *by_tile
                .entry(p.tile as u32)
                .or_default()
                .entry(family.clone())
                .or_default() += b.len() as u64;
        }
    }
    let busiest = by_tile
        .iter()
        .max_by_key(|(_, f)| f.values().sum::<u64>())
        .map(|(&tile, f)| {
            let mut f: Vec<(&String, &u64)> = f.iter().collect();
            f.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
            let list: Vec<String> = f.iter().map(|(n, b)| format!("{n} {b}")).collect();
            format!("tile {tile}: {}", list.join(", "))
        })
        .unwrap_or_default();
    tracing::debug!(target: "ipu-lower", "loop archive's busiest tile by constant family (before spans' grains and gaps): {busiest}");
    let mut sorted: Vec<(String, u64)> = families.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    tracing::debug!(
        target: "ipu-lower",
        "loop archive by constant family: {}",
        sorted
            .iter()
            .map(|(f, b)| format!("{f} {b}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// One range's slot of one layer in the loop's archive: the `constant`
/// tensor `name` (`loop_archive{layer}_{j}`), a piece per tile (its
/// extent's image) over `data`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchivedRange {
    /// The tensor's name.
    pub name: String,
    /// The pieces' bytes, end to end.
    pub data: Vec<u8>,
    /// Where each tile's piece goes.
    pub pieces: Vec<TensorPiece>,
}

impl ArchivedRange {
    /// The range as a `constant` tensor of `ctx` (not yet in a block).
    pub fn into_tensor(self, ctx: &mut Context, loc: Location) -> OpId {
        constant_tensor(
            ctx,
            &self.name,
            (Type::int(8), 1, 16),
            self.data,
            &self.pieces,
            loc,
        )
    }
}

/// Layer `layer`'s archive: the body's constants `tensors` (in `ctx`), as
/// emitted for that layer, become one [`ArchivedRange`] per range; the
/// tensors themselves are erased with their blobs.
pub fn archive_layer(
    ctx: &mut Context,
    (tensors, layer): (&[OpId], usize),
    mem: &LoopMemory,
    loc: &Location,
) -> Result<Vec<ArchivedRange>, Diagnostic> {
    let (invariant, varying): (Vec<OpId>, Vec<OpId>) =
        tensors.iter().partition(|&&t| layer_invariant(ctx, t));
    let placed = placed(ctx, &varying, mem)?;
    // Each (range, tile, span)'s image, zero where no constant is, and
    // where it goes.
    let mut images: BTreeMap<(usize, u32, u32), (u32, Vec<u8>)> = BTreeMap::new();
    for (&tile, list) in &mem.extents {
        for (n, &(j, lo, hi)) in list.iter().enumerate() {
            let at = mem.archived(layer, tile, n);
            images.insert((j, tile, lo), (at, vec![0; (hi - lo) as usize]));
        }
    }
    for (tile, pieces) in placed {
        for (j, at, bytes) in pieces {
            // The span that starts at or before the piece.
            let Some((&(_, _, lo), (_, image))) =
                images.range_mut((j, tile, 0)..=(j, tile, at)).next_back()
            else {
                return Err(Diagnostic::error(
                    loc.clone(),
                    format!("layer {layer}'s constants on tile {tile} are where the first layer has none"),
                ));
            };
            let from = (at - lo) as usize;
            match image.get_mut(from..from + bytes.len()) {
                Some(dst) => dst.copy_from_slice(&bytes),
                None => {
                    return Err(Diagnostic::error(
                        loc.clone(),
                        format!("layer {layer}'s constant on tile {tile} at 0x{at:x} reaches past the first layer's"),
                    ))
                }
            }
        }
    }
    // The same-in-every-layer constants take no span of their own, but a
    // span that covers some of their bytes copies them: its image holds
    // them.
    for (tile, pieces) in placed_anywhere(ctx, &invariant)? {
        for (at, bytes) in pieces {
            let end = at + bytes.len() as u32;
            // Outside the body's memory no span reaches it.
            let Some(j) = mem.range_of(at) else {
                continue;
            };
            for (&(_, _, lo), (_, image)) in images.range_mut((j, tile, 0)..(j, tile, end)) {
                let hi = lo + image.len() as u32;
                if hi <= at {
                    continue;
                }
                let (a, b) = (at.max(lo), end.min(hi));
                image[(a - lo) as usize..(b - lo) as usize]
                    .copy_from_slice(&bytes[(a - at) as usize..(b - at) as usize]);
            }
        }
    }
    for &t in tensors {
        if let Some(AttrKind::DenseResource { resource, .. }) =
            ctx.attr(t, "value").map(|v| v.kind().clone())
        {
            ctx.resources().remove(resource.name());
        }
        ctx.erase_op(t);
    }
    let mut ranges = Vec::new();
    for j in 0..mem.ranges.len() {
        let mut data = Vec::new();
        let mut pieces = Vec::new();
        for (&(_, tile, _), (at, image)) in images.range((j, 0, 0)..(j + 1, 0, 0)) {
            pieces.push(TensorPiece {
                tile: i64::from(tile),
                address: i64::from(*at),
                first: data.len() as i64,
                count: image.len() as i64,
            });
            data.extend_from_slice(image);
        }
        if pieces.is_empty() {
            continue;
        }
        ranges.push(ArchivedRange {
            name: format!("loop_archive{layer}_{j}"),
            data,
            pieces,
        });
    }
    Ok(ranges)
}

/// The new `constant` tensors of `exe_body`: those after its first
/// `before` ops.
pub fn constants_since(ctx: &Context, exe_body: BlockId, before: usize) -> Vec<OpId> {
    ctx.block_ops_vec(exe_body)[before..]
        .iter()
        .copied()
        .filter(|&o| {
            ctx.name_str(o) == ipu::TENSOR
                && ctx.attr(o, "direction").and_then(Attribute::as_str)
                    == Some(TensorDirection::Constant.as_str())
        })
        .collect()
}

/// Tile `tile`'s copies of the next layer's constants: one launch per
/// span, six rows of a sixth of it (one a worker), from layer 1's slot.
pub fn copies(tile: u32, mem: &LoopMemory) -> Vec<StridedCopy> {
    copies_apart(tile, mem, &[]).1
}

/// [`copies`] with the bytes of `apart` (ranges `[lo, hi)` on `tile`,
/// each grown to whole grains of its span) copied by launches of their
/// own: (those, the rest). The loop's end copies a span's home pieces
/// of streamed weights alone this way (the chain's link back gathers
/// from them), the rest of the span at the body's start.
pub fn copies_apart(
    tile: u32,
    mem: &LoopMemory,
    apart: &[(u32, u32)],
) -> (Vec<StridedCopy>, Vec<StridedCopy>) {
    let (mut them, mut rest) = (Vec::new(), Vec::new());
    let spans = mem.extents.get(&tile).map_or(&[][..], Vec::as_slice);
    for (n, &(_, lo, hi)) in spans.iter().enumerate() {
        // `[a, b)` of span `n`, from layer 1's slot.
        let copy = |a: u32, b: u32| {
            let row = (b - a) / WORKERS as u32;
            StridedCopy {
                rows: WORKERS as u32,
                row_bytes: row,
                src: mem.archived(1, tile, n) + (a - lo),
                src_stride: row,
                dst: a,
                dst_stride: row,
            }
        };
        let mut cut: Vec<(u32, u32)> = apart
            .iter()
            .filter(|&&(a, b)| a < hi && lo < b)
            .map(|&(a, b)| {
                let a = lo + (a.max(lo) - lo) / GRAIN * GRAIN;
                let b = lo + (b.min(hi) - lo).next_multiple_of(GRAIN);
                (a, b)
            })
            .collect();
        cut.sort_unstable();
        let mut at = lo;
        for (a, b) in cut {
            let a = a.max(at);
            if b <= a {
                continue;
            }
            if a > at {
                rest.push(copy(at, a));
            }
            them.push(copy(a, b));
            at = b;
        }
        if at < hi {
            rest.push(copy(at, hi));
        }
    }
    (them, rest)
}

/// The name of copy `n`'s instance at the loop's end (`loop_copy{n}`)
/// or at the body's start (`loop_copyin{n}`).
fn copy_name(at_start: bool, n: usize) -> String {
    match at_start {
        true => format!("loop_copyin{n}"),
        false => format!("loop_copy{n}"),
    }
}

/// The counter's label.
const COUNT: &str = "loop_count";

/// The label of the word that says the body has run before (0 at load).
const ENTERED: &str = "loop_entered";

/// Calls `copies` (named after `at_start`), each followed by its sources'
/// advance by `slot`; returns their estimated cycles and calls.
fn emit_copies(
    e: &mut Emitter,
    at_start: bool,
    (copies, slot): (&[StridedCopy], u32),
) -> Result<u64, crate::codelets::CodeletError> {
    let machine = MachineModel::c600();
    let mut cycles = 0;
    for (n, copy) in copies.iter().enumerate() {
        let name = copy_name(at_start, n);
        emit_call(e, &name);
        cycles += copy.estimate_cycles()? + call_cycles(&machine);
        let state = instance_label(&format!("{COPY_TAG}{VERTEX_STATE_SUFFIX}"), &name);
        e.solo(inst("setzi", [op::m(3), op::sym(state)]));
        e.solo(inst("setzi", [op::m(5), op::imm(i64::from(slot))]));
        // Word 0 of each worker's six is its source.
        for w in 0..WORKERS as i64 {
            let at = op::imm(6 * w);
            e.solo(inst("ld32", [op::m(4), op::m(3), op::mzero(), at.clone()]));
            e.solo(inst("add", [op::m(4), op::m(4), op::m(5)]));
            e.solo(inst("st32", [op::m(4), op::m(3), op::mzero(), at]));
        }
    }
    Ok(cycles)
}

/// The cycles of the supervisor code emitted since `first` as the
/// supervisor pipeline issues it (a call's refills are counted apart).
fn supervisor_cycles(e: &Emitter, first: usize) -> u64 {
    let code = &e.supervisor_code()[first..];
    supervisor_schedule(code, &MachineModel::c600())
        .issue
        .last()
        .map_or(0, |&t| t + 1)
}

/// Emits the start of the body on a tile whose copies run there (see the
/// module doc): on every entry but the first, `copies` (called, their
/// sources then advanced by `slot`), the coming layer's constants over
/// the last one's, beside the body's first block's LayerNorm (the tile
/// computes nothing else then but that block's broadcasts and restores,
/// which read the constants after them). Returns the cycles of an entry
/// that copies. Nothing where `copies` is empty.
pub fn emit_loop_start(
    e: &mut Emitter,
    (copies, slot): (&[StridedCopy], u32),
) -> Result<u64, crate::codelets::CodeletError> {
    if copies.is_empty() {
        return Ok(0);
    }
    let first_entry = ".Lloop_first_entry";
    let first = e.supervisor_code().len();
    e.solo(inst("setzi", [op::m(3), op::sym(ENTERED)]));
    e.solo(inst("ld32", [op::m(4), op::m(3), op::mzero(), op::imm(0)]));
    e.solo(inst("setzi", [op::m(5), op::imm(1)]));
    e.solo(inst("st32", [op::m(5), op::m(3), op::mzero(), op::imm(0)]));
    e.solo(inst("brz", [op::m(4), op::sym(first_entry)]));
    let cycles = emit_copies(e, true, (copies, slot))?;
    let cycles = cycles + supervisor_cycles(e, first);
    e.label(first_entry);
    Ok(cycles)
}

/// Emits what the body's start calls on a tile (the word that says the
/// body ran before, 0 at load, and the copy launches). Opens sections of
/// its own; nothing where `copies` is empty.
pub fn emit_loop_start_data(
    e: &mut Emitter,
    copies: &[StridedCopy],
) -> Result<(), crate::codelets::CodeletError> {
    if copies.is_empty() {
        return Ok(());
    }
    e.data_section(".data.loop_start");
    e.directive("align", &[op::imm(4)]);
    e.label(ENTERED);
    e.words(&[0]);
    for (n, c) in copies.iter().enumerate() {
        emit_subroutine(e, &copy_name(true, n), c)?;
    }
    Ok(())
}

/// Emits the end of the loop on a tile (see the module doc): `copies`
/// (called, their sources then advanced by `slot`: the tiles whose
/// copies cannot run at the body's start), `back` (the link back into
/// the body) and `bri` to `start`; on the last layer `out` (the link
/// out) instead, where the code goes on. Returns the bytes of exchange
/// code `back` and `out` emitted, and the cycles of a layer's turn apart
/// from its link: the copies' estimates, their calls and the supervisor
/// code around them as the supervisor pipeline issues it.
pub fn emit_loop_end(
    e: &mut Emitter,
    (copies, slot): (&[StridedCopy], u32),
    start: &str,
    back: &mut dyn FnMut(&mut Emitter) -> u64,
    out: &mut dyn FnMut(&mut Emitter) -> u64,
) -> Result<(u64, u64), crate::codelets::CodeletError> {
    let exit = ".Lloop_exit";
    let first = e.supervisor_code().len();
    e.solo(inst("setzi", [op::m(3), op::sym(COUNT)]));
    e.solo(inst("ld32", [op::m(4), op::m(3), op::mzero(), op::imm(0)]));
    e.solo(inst("brz", [op::m(4), op::sym(exit)]));
    e.solo(inst("add", [op::m(4), op::m(4), op::imm(-1)]));
    e.solo(inst("st32", [op::m(4), op::m(3), op::mzero(), op::imm(0)]));
    let cycles = emit_copies(e, false, (copies, slot))?;
    let cycles = cycles + supervisor_cycles(e, first);
    let mut bytes = back(e);
    e.solo(inst("bri", [op::sym(start)]));
    e.label(exit);
    bytes += out(e);
    Ok((bytes, cycles))
}

/// Emits what the loop's end calls on a tile: the counter (`count - 1`
/// at load) and the copy launches. Opens sections of its own.
pub fn emit_loop_data(
    e: &mut Emitter,
    count: usize,
    copies: &[StridedCopy],
) -> Result<(), crate::codelets::CodeletError> {
    e.data_section(".data.loop");
    e.directive("align", &[op::imm(4)]);
    e.label(COUNT);
    e.words(&[count as u32 - 1]);
    for (n, c) in copies.iter().enumerate() {
        emit_subroutine(e, &copy_name(false, n), c)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`archive_layer`] of layer 1's `tensors`, its ranges appended to
    /// `body` as the lowering appends them.
    fn archived(ctx: &mut Context, body: BlockId, tensors: &[OpId], mem: &LoopMemory) {
        let loc = Location::unknown();
        for range in archive_layer(ctx, (tensors, 1), mem, &loc).unwrap() {
            let t = range.into_tensor(ctx, loc.clone());
            ctx.append_op(body, t);
        }
    }

    fn keys(s: &str) -> Vec<Option<char>> {
        s.chars().map(|c| (c != '.').then_some(c)).collect()
    }

    #[test]
    fn an_encoder_repeats_its_layer() {
        // Patch embedding (never repeats), 4 layers of attention and MLP,
        // head.
        let r = find_repeat(&keys(".amamamam."), 4).unwrap();
        assert_eq!(
            r,
            Repeat {
                start: 1,
                period: 2,
                count: 4
            }
        );
        assert_eq!((r.last(), r.end()), (2, 9));
        assert!(r.emitted(0) && r.emitted(2) && !r.emitted(3) && !r.emitted(8) && r.emitted(9));
        assert_eq!((r.code_of(5), r.code_of(6), r.code_of(9)), (1, 2, 9));
    }

    #[test]
    fn the_longest_run_wins_and_the_shorter_body_on_a_tie() {
        assert_eq!(
            find_repeat(&keys("aaaa"), 4),
            Some(Repeat {
                start: 0,
                period: 1,
                count: 4
            })
        );
        // One period: no loop; blocks that never repeat break runs.
        assert_eq!(find_repeat(&keys(".am."), 4), None);
        assert_eq!(find_repeat(&keys("a.a"), 4), None);
        // Two periods of 2 cover more than three of 1; three of 1 more
        // than one of 2 (no run).
        let r = find_repeat(&keys("bbbamam"), 2).unwrap();
        assert_eq!((r.start, r.period, r.count), (3, 2, 2));
        let r = find_repeat(&keys("bbbam"), 2).unwrap();
        assert_eq!((r.start, r.period, r.count), (0, 1, 3));
        let r = find_repeat(&keys("bbamamam"), 2).unwrap();
        assert_eq!((r.start, r.period, r.count), (2, 2, 3));
    }

    #[test]
    fn packed_slots_hold_each_tiles_spans_end_to_end() {
        let mut mem = LoopMemory::new(vec![(0x80030, 0x800c0), (0x70000, 0x70030)], 0x80000, 3);
        assert_eq!(mem.archive_bytes(), 0, "nothing before packing");
        let mut ext = Extents::new();
        ext.insert(0, vec![(0, 0x80030, 0x80060)]);
        ext.insert(1, vec![(0, 0x80030, 0x80060), (1, 0x70000, 0x70030)]);
        // A span 8 mod 16: its offset keeps that.
        ext.insert(2, vec![(0, 0x80068, 0x80098)]);
        mem.pack(ext);
        assert_eq!(mem.offsets[&0], vec![0]);
        assert_eq!(mem.offsets[&1], vec![0, 48]);
        assert_eq!(mem.offsets[&2], vec![8]);
        // The busiest tile's spans: tile 1's 96 bytes, not the ranges' 192.
        assert_eq!(mem.slot, 96);
        assert_eq!(mem.archive_bytes(), 192);
        assert_eq!(mem.range_of(0x80040), Some(0));
        assert_eq!(mem.range_of(0x70030), None);
        assert_eq!(mem.archived(1, 1, 1), 0x80000 + 48);
        assert_eq!(mem.archived(2, 0, 0), 0x80000 + 96);
        // A copy's source and destination agree mod 16 (the ldst64pace
        // bank rule).
        for (tile, n, lo) in [(0u32, 0usize, 0x80030u32), (1, 1, 0x70000), (2, 0, 0x80068)] {
            assert_eq!(
                (mem.archived(2, tile, n) - lo) % 16,
                0,
                "tile {tile} span {n}"
            );
        }
    }

    /// A home piece inside a span is copied by a launch of its own, grown
    /// to whole grains of the span; the rest of the span (before and
    /// after it) by the others, from the same slot offsets, so the two
    /// lists together copy exactly what [`copies`] copies.
    #[test]
    fn pieces_apart_are_cut_out_of_their_spans_in_whole_grains() {
        let g = GRAIN;
        let mut mem = LoopMemory::new(vec![(0x80000, 0x80000 + 20 * g)], 0x90000, 3);
        let mut ext = Extents::new();
        ext.insert(0, vec![(0, 0x80000, 0x80000 + 10 * g)]);
        ext.insert(1, vec![(0, 0x80000 + 2 * g, 0x80000 + 6 * g)]);
        mem.pack(ext);
        // Tile 0: a piece from 2.5 grains to 4.25 grains in.
        let (apart, rest) = copies_apart(0, &mem, &[(0x80000 + 5 * g / 2, 0x80000 + 17 * g / 4)]);
        let range = |c: &StridedCopy| (c.dst, c.dst + c.rows * c.row_bytes, c.src);
        let base = mem.archived(1, 0, 0);
        assert_eq!(
            apart.iter().map(range).collect::<Vec<_>>(),
            vec![(0x80000 + 2 * g, 0x80000 + 5 * g, base + 2 * g)]
        );
        assert_eq!(
            rest.iter().map(range).collect::<Vec<_>>(),
            vec![
                (0x80000, 0x80000 + 2 * g, base),
                (0x80000 + 5 * g, 0x80000 + 10 * g, base + 5 * g)
            ]
        );
        for c in apart.iter().chain(&rest) {
            assert_eq!(c.rows, WORKERS as u32);
            assert_eq!(c.row_bytes % 8, 0);
            assert_eq!((c.src_stride, c.dst_stride), (c.row_bytes, c.row_bytes));
        }
        // Nothing apart: the spans' copies; a piece over a whole span
        // (tile 1) leaves nothing else; a piece outside every span nothing.
        let ranges = |cs: &[StridedCopy]| cs.iter().map(range).collect::<Vec<_>>();
        assert_eq!(
            ranges(&copies_apart(0, &mem, &[]).1),
            ranges(&copies(0, &mem))
        );
        let (apart, rest) = copies_apart(1, &mem, &[(0x80000, 0x80000 + 20 * g)]);
        assert_eq!((ranges(&apart), rest.len()), (ranges(&copies(1, &mem)), 0));
        let (apart, rest) = copies_apart(1, &mem, &[(0x80000 + 8 * g, 0x80000 + 9 * g)]);
        assert_eq!((apart.len(), ranges(&rest)), (0, ranges(&copies(1, &mem))));
    }

    /// Two constants on tile 0 closer than GAP are one span, a third
    /// farther away its own; each span whole grains of its range. A later
    /// layer's archive images each span at its slot's offset.
    #[test]
    fn spans_join_near_constants_and_the_archive_images_them() {
        use crate::lower::codegen::replicated_constant;
        use ipuc_dialects::ipu::build;
        use ipuc_ir::FloatKind;
        let mut ctx = Context::new(ipuc_dialects::registry());
        let loc = Location::unknown();
        let (_, body) = build::executable(&mut ctx, "c600", loc.clone());
        let range = (0x80000, 0x80000 + 48 * 200);
        let mut mem = LoopMemory::new(vec![range], 0x90000, 2);
        let f16 = Type::float(FloatKind::F16);
        let constant = |ctx: &mut Context, name: &str, byte: u8, at: u32| {
            let t = replicated_constant(
                ctx,
                name,
                (f16.clone(), 2, 8),
                vec![byte; 16],
                (&[0], at),
                loc.clone(),
            );
            ctx.append_op(body, t);
            t
        };
        let layer0 = [
            constant(&mut ctx, "a", 1, 0x80010),
            constant(&mut ctx, "b", 2, 0x80010 + 600),
            constant(&mut ctx, "c", 3, 0x80010 + 600 + 2000),
        ];
        let ext = extents(&ctx, &layer0, &mem).unwrap();
        let b_end = 0x80010 + 600 + 16;
        let c_at = 0x80010 + 2600;
        assert_eq!(
            ext[&0],
            vec![
                (
                    0,
                    0x80000,
                    0x80000 + (b_end - 0x80000u32).next_multiple_of(GRAIN)
                ),
                (
                    0,
                    0x80000 + (c_at - 0x80000) / GRAIN * GRAIN,
                    0x80000 + (c_at + 16 - 0x80000u32).next_multiple_of(GRAIN)
                ),
            ]
        );
        // Layer 1's constants, the same places with other bytes.
        let before = ctx.block_ops_vec(body).len();
        constant(&mut ctx, "a", 5, 0x80010);
        constant(&mut ctx, "b", 6, 0x80010 + 600);
        constant(&mut ctx, "c", 7, c_at);
        let layer1 = constants_since(&ctx, body, before);
        mem.pack(ext.clone());
        archived(&mut ctx, body, &layer1, &mem);
        let archive: Vec<OpId> = constants_since(&ctx, body, before);
        assert_eq!(archive.len(), 1, "one tensor for the range");
        let pieces = constant_piece_bytes(&ctx, archive[0]).unwrap();
        assert_eq!(pieces.len(), 2);
        let (p, bytes) = &pieces[0];
        assert_eq!(p.address, 0x90000);
        assert_eq!(&bytes[0x10..0x20], &[5; 16]);
        assert_eq!(&bytes[600 + 0x10..600 + 0x20], &[6; 16]);
        assert!(bytes[0x20..600 + 0x10].iter().all(|&b| b == 0));
        let (p, bytes) = &pieces[1];
        assert_eq!(p.address as u32, mem.archived(1, 0, 1));
        assert_eq!(p.address as u32, 0x90000 + ext[&0][0].2 - ext[&0][0].1);
        let off = (c_at - ext[&0][1].1) as usize;
        assert_eq!(&bytes[off..off + 16], &[7; 16]);
        // The layer's own tensors are gone, and their blobs.
        assert!(ctx.resources().get("a_1").is_none());
    }

    /// Vertex states are the same in every layer: alone they take no
    /// span; inside a span of other constants the archive's image holds
    /// them (the span's copy writes them back as they were).
    #[test]
    fn plan_made_constants_take_no_slot_but_spans_keep_them() {
        use crate::lower::codegen::replicated_constant;
        use ipuc_dialects::ipu::build;
        use ipuc_ir::FloatKind;
        let mut ctx = Context::new(ipuc_dialects::registry());
        let loc = Location::unknown();
        let (_, body) = build::executable(&mut ctx, "c600", loc.clone());
        let mut mem = LoopMemory::new(vec![(0x80000, 0x80000 + 48 * 200)], 0x90000, 2);
        let f16 = Type::float(FloatKind::F16);
        let constant = |ctx: &mut Context, name: &str, byte: u8, at: u32| {
            let t = replicated_constant(
                ctx,
                name,
                (f16.clone(), 2, 8),
                vec![byte; 16],
                (&[0], at),
                loc.clone(),
            );
            ctx.append_op(body, t);
            t
        };
        let layer = |ctx: &mut Context, w: u8| {
            let before = ctx.block_ops_vec(body).len();
            constant(ctx, "w", w, 0x80010);
            constant(ctx, "near_vertex_states", 9, 0x80030);
            constant(ctx, "far_vertex_states", 8, 0x80010 + 4000);
            // The attention's masks and zero runs, made of its plan too
            // (renamed with their block's index).
            constant(ctx, "b3_attn_mask0", 7, 0x80010 + 6000);
            constant(ctx, "zero_pad1", 0, 0x80010 + 8000);
            constants_since(ctx, body, before)
        };
        let layer0 = layer(&mut ctx, 1);
        let ext = extents(&ctx, &layer0, &mem).unwrap();
        assert_eq!(
            ext[&0],
            vec![(0, 0x80000, 0x80030)],
            "the weights' grain only"
        );
        mem.pack(ext);
        assert_eq!(mem.slot, 48);
        let before = ctx.block_ops_vec(body).len();
        let layer1 = layer(&mut ctx, 5);
        archived(&mut ctx, body, &layer1, &mem);
        let archive = constants_since(&ctx, body, before);
        let pieces = constant_piece_bytes(&ctx, archive[0]).unwrap();
        assert_eq!(pieces.len(), 1);
        let bytes = &pieces[0].1;
        assert_eq!(bytes.len(), 48);
        assert_eq!(&bytes[0x10..0x20], &[5; 16], "layer 1's weights");
        assert_eq!(&bytes[0x20..0x30], &[0; 16]);
        // The near states start at 0x80030, the span's end: not in it.
        let mut ext = Extents::new();
        ext.insert(0, vec![(0, 0x80000, 0x80060)]);
        mem.pack(ext);
        let before = ctx.block_ops_vec(body).len();
        let layer2 = layer(&mut ctx, 6);
        archived(&mut ctx, body, &layer2, &mem);
        let archive = constants_since(&ctx, body, before);
        let bytes = &constant_piece_bytes(&ctx, archive[0]).unwrap()[0].1;
        assert_eq!(
            &bytes[0x30..0x40],
            &[9; 16],
            "states inside a span are copied as they are"
        );
    }

    #[test]
    fn plan_made_names_are_states_masks_and_zero_runs() {
        for name in [
            "qk_vertex_states",
            "b1_fc_vertex_states",
            "attn_mask0",
            "b7_attn_mask12",
            "zero_pad3",
            "b3_attn_zeros0",
        ] {
            assert!(plan_made(name), "{name}");
        }
        for name in [
            "qk_weights_col1_k0",
            "vt_bias_values_row0",
            "vt_input_row0_k0",
            "b3_ln_gamma",
            "attn_mask_weights",
        ] {
            assert!(!plan_made(name), "{name}");
        }
    }
}
