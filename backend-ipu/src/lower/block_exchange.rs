//! The MLP block's two scheduled exchanges ([`super::block`]'s steps 2
//! and 4) as transfers for [`super::schedule`]:
//!
//! - **Exchange A**: LayerNorm's rows into fc1's input panels, one
//!   segmented transfer per LN tile and fc1 receiver group (a row block
//!   and K part, multicast to every column block).
//! - **Exchange B**: fc1's owned rows of each output group (one input
//!   panel of fc2; FP8: each pair of groups, which GELU wrote as one
//!   panel) to the fc2 tiles of that panel's K part and row block,
//!   one transfer per panel: these tiles both send and receive, and a
//!   segmented receive would collide with the receiver's own sends.
//! - The residual: x's rows from the LN tiles to the fc2 tiles that own
//!   them after fc2's reduction, one segmented transfer per LN tile and
//!   owner (a segment per output group), in A or B, whichever makes the
//!   two shorter ([`schedules`]).
//! - Each exchange also gathers the next product's weights where they are
//!   streamed in ([`super::stream`]): fc1's in A, fc2's in B. In a chain
//!   fc1's go in the link into the block instead
//!   ([`MlpPlan::fc1_gathered_before`], [`fc1_gather_before`]): there
//!   only the LN tiles receive (the previous block's result), so fc1's
//!   tiles take their weights on ports that would be idle, and exchange
//!   A, whose busiest ports are fc1's, carries its inputs alone.

use std::collections::BTreeMap;

use ipuc_ipu_arch::MachineModel;

use super::block::{placed, MlpPlan};
use super::codegen::PlacedGemm;
use super::codegen::View;
use super::ln_tiles::LnTiles;
use super::plan::GemmPlan;
use super::reduce;
use super::schedule::{schedule, Chunk, Schedule, Segment, Transfer};

/// Rows `[lo, hi)` of the block owned by the fc2 tile at K part `k` of
/// row block `i`, as rows of x (real rows only).
pub(super) fn owned_global(plan: &GemmPlan, i: u32, k: u32) -> (u32, u32) {
    let (lo, hi) = reduce::owned(k, plan.grid_k, plan.rows);
    let base = i * plan.rows;
    (base + lo, base + hi.min(plan.rows_of(i)))
}

/// The residual's (and the sum's and bias rows') view on an fc2 tile at K
/// part `k`: its owned rows of each output group, contiguous.
pub(super) fn residual_view(plan: &GemmPlan, base: u32, k: u32) -> View {
    let (lo, hi) = reduce::owned(k, plan.grid_k, plan.rows);
    View {
        base,
        group_stride: (hi - lo) * 32,
        lo,
    }
}

/// Intersection of two row ranges, if not empty.
pub(super) fn overlap((a, b): (u32, u32), (c, d): (u32, u32)) -> Option<(u32, u32)> {
    let (lo, hi) = (a.max(c), b.min(d));
    (lo < hi).then_some((lo, hi))
}

/// Exchange A: LayerNorm's rows to fc1's inputs (and fc1's streamed
/// weights, unless the link into the block gathers them).
pub fn exchange_a(plan: &MlpPlan) -> Vec<Transfer> {
    let (fc1, _) = placed(plan);
    let ln = plan.ln();
    // LayerNorm's output is f16 or FP8 codes. Either way a panel row is
    // 32 bytes (16 f16 or 32 FP8 channels).
    // Streamed weights first: the longest transfers.
    let mut out = match plan.fc1_gathered_before {
        true => Vec::new(),
        false => super::stream::transfers(&fc1),
    };
    out.extend(input_panel_transfers(&fc1, &ln));
    out
}

/// fc1's streamed weights' gather where it goes in the exchange before
/// the block ([`MlpPlan::fc1_gathered_before`]), else nothing. Its
/// sources are fc1's home pieces (private, the block's constants) and its
/// destination fc1's weight buffer, which nothing in the block writes
/// before fc1 reads it: LayerNorm's step writes the LN tiles' rows (no
/// fc1 tile is an LN tile) and the products' initial partials and bias
/// rows, and exchange A fc1's inputs, all of them live beside fc1's
/// weights while fc1 runs.
pub fn fc1_gather_before(plan: &MlpPlan) -> Vec<Transfer> {
    match plan.fc1_gathered_before {
        true => super::stream::transfers(&placed(plan).0),
        false => Vec::new(),
    }
}

/// x's rows (on the LN tiles) to the tiles of `plan` that own them after
/// its reduction, in their residual buffer at `residual`: one transfer per
/// LN tile and owner, a segment per output group.
pub(super) fn residual_transfers(
    plan: &GemmPlan,
    residual: u32,
    ln: &LnTiles<'_>,
) -> Vec<Transfer> {
    let mut out = Vec::new();
    for i in 0..plan.grid_rows {
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                let owned = owned_global(plan, i, k);
                let view = residual_view(plan, residual, k);
                for q in 0..ln.tiles.len() {
                    let Some((a, b)) = overlap(owned, ln.rows(q)) else {
                        continue;
                    };
                    out.push(Transfer {
                        sender: ln.tiles[q],
                        chunks: (0..plan.groups_of(j))
                            .flat_map(|g| ln.x_chunks(q, (a, b), j * plan.groups + g))
                            .collect(),
                        receivers: vec![(plan.tile(i, j, k), view.at(0, a - i * plan.rows))],
                        segment: Some(Segment {
                            words: 8 * (b - a),
                            stride: view.group_stride,
                        }),
                    });
                }
            }
        }
    }
    out
}

/// LayerNorm's rows (`row_bytes` each) into the input panels of
/// `product`: each receiver group (a row block and K part, all its grid
/// columns) takes the LN tiles of its rows in turn, each LN tile sending
/// its rows of every panel of the K part in one transfer whose segments
/// (one per panel) the receivers lay out a panel apart. The groups are
/// rotated so that they ask different LN tiles at once.
pub(super) fn input_panel_transfers(product: &PlacedGemm, ln: &LnTiles<'_>) -> Vec<Transfer> {
    let p = &product.plan;
    let mut keyed = Vec::new();
    for i in 0..p.grid_rows {
        let rows = (i * p.rows, i * p.rows + p.rows_of(i));
        let sources: Vec<(usize, (u32, u32))> = (0..ln.tiles.len())
            .filter_map(|q| overlap(rows, ln.rows(q)).map(|r| (q, r)))
            .collect();
        for k in 0..p.grid_k {
            for (n, &(q, (a, b))) in sources.iter().enumerate() {
                let turn = (n + k as usize) % sources.len();
                let receivers = (0..p.grid_cols)
                    .map(|j| (p.tile(i, j, k), product.input_at(0, a - i * p.rows)))
                    .collect();
                let transfer = Transfer {
                    sender: ln.tiles[q],
                    chunks: (0..p.k_panels_of(k))
                        .flat_map(|g| ln.out_chunks(q, (a, b), k * p.k_panels + g))
                        .collect(),
                    receivers,
                    segment: Some(Segment {
                        words: 8 * (b - a),
                        stride: p.rows * 32,
                    }),
                };
                keyed.push(((turn, i, k), transfer));
            }
        }
    }
    keyed.sort_by_key(|e| e.0);
    keyed.into_iter().map(|e| e.1).collect()
}

/// LayerNorm's rows (`row_bytes` each) as the weight panels of `product`,
/// a swapped product whose output channels are the rows' tokens (its
/// weights `W[ch][t]` are row `t`'s channel `ch`, row `r` being token
/// `token(r)`: increasing, one token per row, each image's tokens
/// starting a group of 16 ([`super::attention_block::AttentionShape::padded_token`])):
/// each LN tile sends, per run of its rows within a group of 16 tokens
/// and per K part, its rows of every panel of the K part in one
/// segmented transfer (a segment per panel), multicast to every row block
/// of that column block. Token `t` of column block `j` is row `t % 16` of
/// local group `t / 16 - j groups`, panel `g` of it at `((group k_panels
/// + g) 16 + t % 16) 32`.
pub(super) fn weight_panel_transfers(
    product: &PlacedGemm,
    ln: &LnTiles<'_>,
    token: impl Fn(u32) -> u32,
) -> Vec<Transfer> {
    let p = &product.plan;
    let mut out = Vec::new();
    for q in 0..ln.tiles.len() {
        let (q_lo, q_hi) = ln.rows(q);
        let mut a = q_lo;
        while a < q_hi {
            // The run: rows whose tokens follow each other in one group.
            let t = token(a);
            let mut b = a + 1;
            while b < q_hi && token(b) == t + (b - a) && !token(b).is_multiple_of(16) {
                b += 1;
            }
            let group = t / 16;
            let j = group / p.groups;
            let local = group - j * p.groups;
            for k in 0..p.grid_k {
                let at = product.lay.weights + (local * p.k_panels * 16 + t % 16) * 32;
                out.push(Transfer {
                    sender: ln.tiles[q],
                    chunks: (0..p.k_panels_of(k))
                        .flat_map(|g| ln.out_chunks(q, (a, b), k * p.k_panels + g))
                        .collect(),
                    receivers: (0..p.grid_rows).map(|i| (p.tile(i, j, k), at)).collect(),
                    segment: Some(Segment {
                        words: 8 * (b - a),
                        stride: 16 * 32,
                    }),
                });
            }
            a = b;
        }
    }
    out
}

/// `transfers` reordered so that every sender's k-th transfer comes before
/// any sender's (k+1)-th (each sender's own order kept): the greedy
/// schedule then advances all senders together instead of finishing the
/// receivers one after another.
pub(super) fn round_robin(transfers: Vec<Transfer>) -> Vec<Transfer> {
    let mut rank: BTreeMap<u32, usize> = BTreeMap::new();
    let mut keyed: Vec<(usize, usize, Transfer)> = transfers
        .into_iter()
        .enumerate()
        .map(|(n, t)| {
            let r = rank.entry(t.sender).or_default();
            *r += 1;
            (*r, n, t)
        })
        .collect();
    keyed.sort_by_key(|e| (e.0, e.1));
    keyed.into_iter().map(|e| e.2).collect()
}

/// Exchange B: fc1's owned rows of each output group to the fc2 tiles whose
/// input panel it is.
pub fn exchange_b(plan: &MlpPlan) -> Vec<Transfer> {
    let (fc1, fc2) = placed(plan);
    let (p1, p2) = (&plan.fc1, &plan.fc2);
    let mut keyed = Vec::new();
    for i in 0..p1.grid_rows {
        for j in 0..p1.grid_cols {
            for k in 0..p1.grid_k {
                let owned = owned_global(p1, i, k);
                let view = fc1.final_view(k);
                // An f16 fc2 input panel is one fc1 output group; an FP8
                // one is a pair of groups, which fc1's GELU wrote over the
                // pair's first group.
                let per_panel = if p1.shape.epilogue.f8_pairs.is_some() {
                    2
                } else {
                    1
                };
                for g in (0..p1.groups_of(j)).step_by(per_panel) {
                    let group = (j * p1.groups + g) / per_panel as u32;
                    let (k2, panel) = (group / p2.k_panels, group % p2.k_panels);
                    for i2 in 0..p2.grid_rows {
                        let block = (i2 * p2.rows, i2 * p2.rows + p2.rows_of(i2));
                        let Some((a, b)) = overlap(owned, block) else {
                            continue;
                        };
                        let receivers = (0..p2.grid_cols)
                            .map(|j2| (p2.tile(i2, j2, k2), fc2.input_at(panel, a - block.0)))
                            .collect();
                        keyed.push((
                            (panel, a - block.0, i2, k2),
                            Transfer {
                                sender: p1.tile(i, j, k),
                                chunks: vec![Chunk {
                                    address: view.at(g, a - i * p1.rows),
                                    words: (b - a) * 8,
                                }],
                                receivers,
                                segment: None,
                            },
                        ));
                    }
                }
            }
        }
    }
    keyed.sort_by_key(|e| e.0);
    // Streamed weights first: the longest transfers.
    let mut out = super::stream::transfers(&fc2);
    out.extend(keyed.into_iter().map(|e| e.1));
    out
}

/// x's rows from the LN tiles to fc2's owners, for the residual the last
/// add takes: one segmented transfer per LN tile and owner, in turn.
pub fn residual(plan: &MlpPlan) -> Vec<Transfer> {
    round_robin(residual_transfers(
        &plan.fc2,
        plan.layout.residual,
        &plan.ln(),
    ))
}

/// The exchange that carries [`residual`]'s transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResidualIn {
    /// Exchange A, after LayerNorm's rows.
    A,
    /// Exchange B, after fc1's rows.
    B,
}

/// The schedules of the block's two exchanges, and where the residual's
/// rows go: whichever makes the two shorter together (ties: A). In A
/// they share the LN tiles' ports with LayerNorm's rows and fc2's owners
/// are fc1's tiles, busy taking their input panels, so each of the LN
/// tiles' residual transfers holds up a multicast to fc1 (so400m:
/// exchange A 12,859 cycles, 8,490 without them); in B the LN tiles'
/// ports are idle and the owners take a few hundred words more (so400m:
/// B 24,233 -> 25,999, the layer 2.6k shorter; `lit-tests/lower/
/// mlp-fp8.mlir`'s small block: A 629 -> 385 but B 121 -> 503, longer).
/// Either is safe: the residual's buffer is x's from exchange A on, so
/// nothing writes it between the exchanges, and the LN tiles (after
/// every product tile, [`super::block::plan_mlp_in`]) keep x's copy
/// untouched until B.
pub fn schedules(plan: &MlpPlan, machine: &MachineModel) -> (Schedule, Schedule, ResidualIn) {
    let tiles = plan.tiles();
    let (a, b, rows) = (exchange_a(plan), exchange_b(plan), residual(plan));
    let with = |mut list: Vec<Transfer>| {
        list.extend(rows.iter().cloned());
        schedule(machine, &tiles, &list)
    };
    let (a_with, b_alone) = (with(a.clone()), schedule(machine, &tiles, &b));
    let (a_alone, b_with) = (schedule(machine, &tiles, &a), with(b));
    if a_alone.cycles + b_with.cycles < a_with.cycles + b_alone.cycles {
        (a_alone, b_with, ResidualIn::B)
    } else {
        (a_with, b_alone, ResidualIn::A)
    }
}
