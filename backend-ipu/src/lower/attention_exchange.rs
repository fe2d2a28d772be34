//! The attention block's three scheduled exchanges
//! ([`super::attention_block`]) as transfers for [`super::schedule`], and
//! the padding rows no exchange writes.
//!
//! - **A**: LayerNorm's rows into qk's input panels (one segmented
//!   transfer per LN tile, row block and K part, multicast to every column
//!   block) and into vt's weight panels (one per LN tile, block of 16
//!   tokens and K part, a segment per panel, multicast to every row block
//!   of value channels).
//! - **B**: qk's owned rows of each Q group to the attention tiles of that
//!   head and row block (every block of keys); of each K group to every
//!   attention tile of that head and block of keys, as key rows of the
//!   scores' weight panels (8 keys per panel row block, so a run is
//!   re-pointed every 8 keys); vt's owned rows (value channels) of each
//!   block of 16 tokens to every attention tile of their head and block of
//!   keys, as the value panels; x's rows from the LN tiles to the out
//!   tiles that own them after out's reduction (the residual; at FP8 from
//!   x's copy in 16-channel groups that LayerNorm wrote, a group's rows
//!   one chunk, [`super::ln_tiles::LnTiles::x_groups`]).
//! - **D** (keys split over tiles): each attention tile's partial output
//!   rows and their statistics to the tile of its head and row block that
//!   combines them.
//! - **C**: the attention's output rows of each value group (an attention
//!   tile's, or the combined rows of a key-split one; on the FP8 AMP each
//!   FP8 panel of two groups) to the out tiles whose input panel it is.

use super::attention_block::AttentionPlan;
use super::block_exchange::{
    input_panel_transfers, overlap, owned_global, residual_transfers, round_robin,
    weight_panel_transfers,
};
use super::codegen::ZeroRun;
use super::plan::GemmPlan;
use super::schedule::{Chunk, Transfer};

/// Rows `[a, b)` cut at multiples of `n`.
fn runs((a, b): (u32, u32), n: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut lo = a;
    while lo < b {
        let hi = ((lo / n + 1) * n).min(b);
        out.push((lo, hi));
        lo = hi;
    }
    out
}

/// Exchange A.
pub fn exchange_a(plan: &AttentionPlan) -> Vec<Transfer> {
    let [qk, vt, _] = plan.placed();
    let ln = plan.ln();
    let mut out = input_panel_transfers(&qk, &ln);
    // qk's weights and vt's input from their homes, where they stream in
    // (unless the exchange before the block gathers them).
    if !plan.qkv_gathered_before {
        out.extend(qkv_gathers(plan));
    }
    // vt's weight panels: LayerNorm's rows, a token per output row.
    out.extend(weight_panel_transfers(&vt, &ln, |r| {
        plan.shape.padded_token(r)
    }));
    // Senders in turn (so400m, when x's rows went here too: 65k cycles
    // in the senders' order, 59k rotated; the qk, vt and residual parts
    // rotated each alone 61-62k; each LN tile starting at a K part of its
    // own 68k).
    round_robin(out)
}

/// qk's streamed weights and vt's streamed input gathered from their
/// homes (empty where both are resident).
fn qkv_gathers(plan: &AttentionPlan) -> Vec<Transfer> {
    let [qk, _, _] = plan.placed();
    let mut out = super::stream::transfers(&qk);
    out.extend(vt_input_transfers(plan));
    out
}

/// qk's and vt's streamed gathers where they go in the exchange before
/// the block ([`AttentionPlan::qkv_gathered_before`]), else nothing, as
/// [`super::block::fc1_gather_before`] does for an MLP block. Their
/// sources are the home pieces (private, the block's constants); their
/// destinations qk's weight buffer (over the attention window, which is
/// then restored after qk and vt,
/// [`super::attention_block::AttentionLayout::restore_late`]) and vt's
/// input, which nothing in the block writes before qk and vt read them:
/// LayerNorm's step writes the LN tiles' rows, the products' initial
/// partials and vt's padding rows, and exchange A qk's inputs and vt's
/// weight panels, all of them live beside qk's weights and vt's input
/// while the products run.
pub fn qkv_gather_before(plan: &AttentionPlan) -> Vec<Transfer> {
    match plan.qkv_gathered_before {
        true => qkv_gathers(plan),
        false => Vec::new(),
    }
}

/// The all-gather of vt's input where it streams in
/// ([`super::attention_block::AttentionLayout::vt_home`]): tile `(i, j,
/// k)` sends its piece of input block `(i, k)` from its home to every
/// tile of grid row `i` and K part `k`, at `j` pieces into the block's
/// place, vt's input. Empty where vt's input is resident.
pub fn vt_input_transfers(plan: &AttentionPlan) -> Vec<Transfer> {
    let Some(home) = plan.layout.vt_home else {
        return Vec::new();
    };
    let pv = &plan.vt;
    let sizes = (
        super::attention_block::vt_input_piece(pv),
        super::attention_block::vt_input_block(pv),
    );
    let at = plan.layout.vt.input;
    let mut out = Vec::new();
    for i in 0..pv.grid_rows {
        for k in 0..pv.grid_k {
            let group: Vec<u32> = (0..pv.grid_cols).map(|j| pv.tile(i, j, k)).collect();
            out.extend(
                (0..pv.grid_cols)
                    .filter_map(|j| super::stream::piece_transfer(&group, j, (home, at), sizes)),
            );
        }
    }
    out
}

/// Calls `f(tile, i, k, global rows, group, source address of the first
/// row)` for every owned run of `plan`'s output groups.
fn owned_groups(
    plan: &GemmPlan,
    placed: &super::codegen::PlacedGemm,
    mut f: impl FnMut(u32, (u32, u32), u32, u32),
) {
    for i in 0..plan.grid_rows {
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                let (a, b) = owned_global(plan, i, k);
                if a >= b {
                    continue;
                }
                let view = placed.final_view(k);
                for g in 0..plan.groups_of(j) {
                    f(
                        plan.tile(i, j, k),
                        (a, b),
                        j * plan.groups + g,
                        view.at(g, a - i * plan.rows),
                    );
                }
            }
        }
    }
}

/// Exchange B: one part per chunk of keys (flash-style: each chunk's keys
/// and values go to the same buffers, part after part; the queries in
/// the first), else one.
pub fn exchange_b(plan: &AttentionPlan) -> Vec<Vec<Transfer>> {
    let [qk, vt, _] = plan.placed();
    let s = plan.shape;
    let core = plan.core;
    let att = &plan.layout.core;
    let np = s.dp() / 16;
    let q_groups = s.hp() / 16;
    let mut out: Vec<Vec<Transfer>> = vec![Vec::new(); core.chunks as usize];
    let mut queries = Vec::new();
    owned_groups(&plan.qk, &qk, |sender, rows, group, src| {
        let (head, p) = ((group % q_groups) / np, group % np);
        let src_at = |r: u32| src + (r - rows.0) * 32;
        // Each image's rows go to its own heads' tiles, as its own tokens.
        for (image, (a, b)) in s.image_runs(rows) {
            let (ih, base) = (image * s.heads + head, image * s.m);
            if group < q_groups {
                // Q panel p of the head, to every key block's tile of each
                // row block.
                for blk in 0..core.blocks {
                    let Some((lo, hi)) = overlap((a, b), core.rows_of(blk, s.m)) else {
                        continue;
                    };
                    queries.push(Transfer {
                        sender,
                        chunks: vec![Chunk {
                            address: src_at(base + lo),
                            words: 8 * (hi - lo),
                        }],
                        receivers: (0..core.key_blocks)
                            .map(|kb| {
                                (
                                    core.tile(ih, blk, kb),
                                    att.q + (p * core.rows + lo - blk * core.rows) * 32,
                                )
                            })
                            .collect(),
                        segment: None,
                    });
                }
            } else {
                // Key rows: key t (of its block), panel p at
                // `TileAttention::key_row(t, p)`, on every row block's
                // tile of its key block; runs of keys within a panel.
                for (lo, hi) in runs((a, b), att.keys_per_panel()) {
                    let (part, t) = (lo / core.keys, lo % core.keys);
                    let (kb, chunk) = (part / core.chunks, part % core.chunks);
                    out[chunk as usize].push(Transfer {
                        sender,
                        chunks: vec![Chunk {
                            address: src_at(base + lo),
                            words: 8 * (hi - lo),
                        }],
                        receivers: (0..core.blocks)
                            .map(|blk| (core.tile(ih, blk, kb), att.k + att.key_row(t, p)))
                            .collect(),
                        segment: None,
                    });
                }
            }
        }
    });
    // Value panels: channel r (of head r / dp, group (r % dp) / 16) of
    // token block G (of its key block's kp) at ((group * kp + G) * 16 + r
    // % 16) * 32.
    // vt's token groups are each image's key panels in turn
    // ([`super::attention_block::AttentionShape::vt_tokens`]).
    let kp_image = s.key_panels();
    owned_groups(&plan.vt, &vt, |sender, (a, b), vt_group, src| {
        let (image, tokens) = (vt_group / kp_image, vt_group % kp_image);
        let part = tokens * 16 / core.keys;
        let (kb, chunk) = (part / core.chunks, part % core.chunks);
        let local = tokens - part * core.keys / 16;
        let kp = plan.core_of(part).key_panels_count();
        for (lo, hi) in runs((a, b), 16) {
            let head = image * s.heads + lo / s.dp();
            let group = (lo % s.dp()) / 16;
            out[chunk as usize].push(Transfer {
                sender,
                chunks: vec![Chunk {
                    address: src + (lo - a) * 32,
                    words: 8 * (hi - lo),
                }],
                receivers: (0..core.blocks)
                    .map(|blk| {
                        (
                            core.tile(head, blk, kb),
                            att.v + ((group * kp + local) * 16 + lo % 16) * 32,
                        )
                    })
                    .collect(),
                segment: None,
            });
        }
    });
    // Every sender's k-th transfer before any one's (k+1)-th: the greedy
    // schedule then advances all senders together. The queries (multicast
    // to the tiles of one block of rows) apart from the keys and values
    // (to the tiles of one block of keys): sets that cross each other
    // leave the receivers waiting for each other (so400m: 51k cycles
    // mixed, 26k apart).
    // (The schedule joins a sender's pieces that land one after another:
    // so400m's key rows, a sender's runs of 8 keys of each panel, are
    // contiguous on the receivers, panel after panel.)
    let mut parts: Vec<Vec<Transfer>> = out.into_iter().map(round_robin).collect();
    let mut first = round_robin(queries);
    first.append(&mut parts[0]);
    // x's rows to out's tiles (the residual), from the LN tiles, which
    // compute nothing else ([`AttentionPlan::ln_tiles_apart`]): here, not
    // in exchange A, whose busiest senders the LN tiles are. In so400m's
    // block (`ipu-bench attention --precision fp8`) each LN tile sends
    // 3,456 words of x beside 3,456 of LayerNorm's rows: exchange A
    // 14,540 -> 8,693 cycles, B 19,600 -> 20,924 (in D, which the LN
    // tiles' sends would bound, 3,921 -> 5,697; in C 12,864 -> 17,563).
    assert!(
        plan.ln_tiles_apart(),
        "the planner put an LN tile among the attention block's computing tiles"
    );
    first.extend(residual_transfers(
        &plan.out,
        plan.layout.residual,
        &plan.ln(),
    ));
    parts[0] = first;
    parts
}

/// Exchange D (keys split): each attention tile's rows of every value
/// group and their statistics to the tile of its head and row block that
/// combines them, into the slot of its key block. An all-to-all among the
/// key blocks of a head's row block: in round `r` key block `kb` sends to
/// owner `(kb + r) mod key_blocks` (`round_robin` keeps each sender's
/// order), so no two senders of a round share a receiver (in owner order
/// every sender's first transfer went to owner 0, which took them one
/// after another: so400m's exchange D in 10 key blocks 28,583 -> 8,077
/// cycles estimated).
pub fn exchange_d(plan: &AttentionPlan) -> Vec<Transfer> {
    let s = plan.shape;
    let core = plan.core;
    let (Some(c), Some(stats)) = (plan.layout.combine, plan.layout.core.stats) else {
        return Vec::new();
    };
    let groups = s.dp() / 16;
    let kbs = core.key_blocks;
    let mut out = Vec::new();
    for h in 0..s.image_heads() {
        for blk in 0..core.blocks {
            for (kb, r) in (0..kbs).flat_map(|kb| (0..kbs).map(move |r| (kb, r))) {
                let owner = (kb + r) % kbs;
                let Some(combine) = plan.combine_on(blk, owner) else {
                    continue;
                };
                let (lo, n) = (core.owned(owner).0, combine.rows);
                // O's groups are where the last launch of the tile's key
                // panels wrote them (the last block may hold fewer;
                // key-split tiles take their block in one part).
                let values = plan.core_of(core.part(kb, 0)).values();
                let mut chunks: Vec<Chunk> = (0..groups)
                    .map(|g| Chunk {
                        address: values.output_group(g) + lo * 32,
                        words: 8 * n,
                    })
                    .collect();
                chunks.push(Chunk {
                    address: stats + lo * 8,
                    words: 2 * n,
                });
                out.push(Transfer {
                    sender: core.tile(h, blk, kb),
                    chunks,
                    receivers: vec![(core.tile(h, blk, owner), c.input + kb * c.part_stride)],
                    segment: None,
                });
            }
        }
    }
    round_robin(out)
}

/// Where the attention's output rows of (image, head) `h` are when
/// exchange C starts: (tile, real rows `[lo, hi)` of the image's tokens,
/// address of out's input panel `q`'s row `lo`: group `q`'s, or on the
/// FP8 AMP group `2q`'s, over which the panel is cast,
/// [`super::attention_emit::output_casts`]).
fn output_sources(plan: &AttentionPlan, h: u32) -> Vec<(u32, (u32, u32), Vec<u32>)> {
    let s = plan.shape;
    let core = plan.core;
    let per_panel = match s.out_f8() {
        true => 2,
        false => 1,
    };
    let (first, stride) = plan.output_groups();
    let at: Vec<u32> = (0..s.out_panels())
        .map(|q| first + q * per_panel * stride)
        .collect();
    let mut out = Vec::new();
    for blk in 0..core.blocks {
        let rows = core.rows_of(blk, s.m);
        match plan.layout.combine {
            None => out.push((core.tile(h, blk, 0), rows, at.clone())),
            Some(_) => {
                for kb in 0..core.key_blocks {
                    let Some(combine) = plan.combine_on(blk, kb) else {
                        continue;
                    };
                    let lo = rows.0 + core.owned(kb).0;
                    out.push((core.tile(h, blk, kb), (lo, lo + combine.rows), at.clone()));
                }
            }
        }
    }
    out
}

/// Exchange C.
pub fn exchange_c(plan: &AttentionPlan) -> Vec<Transfer> {
    let [_, _, out_p] = plan.placed();
    let s = plan.shape;
    let po = &plan.out;
    let np = s.out_panels();
    // out's weights from their homes, where they stream in.
    let mut out = super::stream::transfers(&out_p);
    for ih in 0..s.image_heads() {
        let (h, base) = (ih % s.heads, ih / s.heads * s.m);
        for (sender, local, at) in output_sources(plan, ih) {
            // The image's rows among out's.
            let rows = (base + local.0, base + local.1);
            for jd in 0..np {
                let panel = h * np + jd;
                let (k, g) = (panel / po.k_panels, panel % po.k_panels);
                for i in 0..po.grid_rows {
                    let block = (i * po.rows, i * po.rows + po.rows_of(i));
                    let Some((lo, hi)) = overlap(rows, block) else {
                        continue;
                    };
                    out.push(Transfer {
                        sender,
                        chunks: vec![Chunk {
                            address: at[jd as usize] + (lo - rows.0) * 32,
                            words: 8 * (hi - lo),
                        }],
                        receivers: (0..po.grid_cols)
                            .map(|j| (po.tile(i, j, k), out_p.input_at(g, lo - block.0)))
                            .collect(),
                        segment: None,
                    });
                }
            }
        }
    }
    round_robin(out)
}

/// The padding runs in private memory (see [`super::attention_block`]'s
/// module doc): vt's weight rows of the tokens past `m` in each image's
/// last group, which the program loads as zeros.
pub fn zero_runs(plan: &AttentionPlan) -> Vec<ZeroRun> {
    let s = plan.shape;
    let pv = &plan.vt;
    let [_, vt, _] = plan.placed();
    let mut out = Vec::new();
    let tail = s.m % 16;
    // Each image's last group of tokens.
    for image in (0..s.images).filter(|_| tail > 0) {
        let group = image * s.key_panels() + s.m / 16;
        let j = group / pv.groups;
        let local = group - j * pv.groups;
        for i in 0..pv.grid_rows {
            for k in 0..pv.grid_k {
                for g in 0..pv.k_panels {
                    out.push(ZeroRun {
                        tile: pv.tile(i, j, k),
                        address: vt.lay.weights + ((local * pv.k_panels + g) * 16 + tail) * 32,
                        bytes: (16 - tail) * 32,
                    });
                }
            }
        }
    }
    out
}

/// The padding runs in the attention window (shared scratch), which the
/// attention tiles zero at the block's start
/// ([`super::attention_block::window_restores`]): the key rows past `m`
/// (in the last block of keys) and the query rows past the last real one.
pub fn window_zero_runs(plan: &AttentionPlan) -> Vec<ZeroRun> {
    let s = plan.shape;
    let att = &plan.layout.core;
    let core = plan.core;
    let mut out = Vec::new();
    let np = s.dp() / 16;
    for h in 0..s.image_heads() {
        for blk in 0..core.blocks {
            for kb in 0..core.key_blocks {
                let tile = core.tile(h, blk, kb);
                let last = plan.last_part(kb);
                let keys = last.keys;
                for (lo, hi) in runs((keys, last.key_panels_count() * 16), att.keys_per_panel()) {
                    for p in 0..np {
                        out.push(ZeroRun {
                            tile,
                            address: att.k + att.key_row(lo, p),
                            bytes: (hi - lo) * 32,
                        });
                    }
                }
                let (lo, hi) = core.rows_of(blk, s.m);
                if hi - lo < core.rows {
                    for p in 0..np {
                        out.push(ZeroRun {
                            tile,
                            address: att.q + (p * core.rows + hi - lo) * 32,
                            bytes: (core.rows - (hi - lo)) * 32,
                        });
                    }
                }
            }
        }
    }
    out
}
