//! The attention block's three scheduled exchanges
//! ([`super::attention_block`]) as transfers for [`super::schedule`], and
//! the padding rows no exchange writes.
//!
//! - **A**: LayerNorm's rows into qk's input panels (one segmented
//!   transfer per LN tile, row block and K part, multicast to every column
//!   block) and into vt's weight panels (one per LN tile, block of 16
//!   tokens and K part, a segment per panel, multicast to every row block
//!   of value channels); x's rows to the out tiles that own them after
//!   out's reduction.
//! - **B**: qk's owned rows of each Q group to the attention tile of that
//!   head and row block; of each K group to every attention tile of that
//!   head, as key rows of the scores' weight panels (8 keys per panel row
//!   block, so a run is re-pointed every 8 keys); vt's owned rows (value
//!   channels) of each block of 16 tokens to every attention tile of
//!   their head, as the value panels.
//! - **C**: each attention tile's output rows of each value group to the
//!   out tiles whose input panel it is.

use super::attention_block::AttentionPlan;
use super::block_exchange::{input_panel_transfers, overlap, owned_global, residual_transfers};
use super::plan::GemmPlan;
use super::schedule::{Chunk, Segment, Transfer};

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
    let pv = &plan.vt;
    let ln = plan.ln();
    let row_bytes = plan.shape.c * 2;
    let mut out = input_panel_transfers(&qk, &ln, row_bytes);
    // vt's weight panels: token t of column block j is row t % 16 of
    // local group t / 16 - j groups; panel g of K part k at
    // ((group * k_panels + g) * 16 + t % 16) * 32.
    for q in 0..ln.tiles.len() {
        let q_lo = ln.rows(q).0;
        for (a, b) in runs(ln.rows(q), 16) {
            let group = a / 16;
            let j = group / pv.groups;
            let local = group - j * pv.groups;
            for k in 0..pv.grid_k {
                let at = vt.lay.weights + (local * pv.k_panels * 16 + a % 16) * 32;
                out.push(Transfer {
                    sender: ln.tiles[q],
                    chunks: (0..pv.k_panels_of(k))
                        .flat_map(|g| {
                            (a..b).map(move |r| Chunk {
                                address: ln.ln_out
                                    + (r - q_lo) * row_bytes
                                    + (k * pv.k_panels + g) * 32,
                                words: 8,
                            })
                        })
                        .collect(),
                    receivers: (0..pv.grid_rows).map(|i| (pv.tile(i, j, k), at)).collect(),
                    segment: Some(Segment {
                        words: 8 * (b - a),
                        stride: 16 * 32,
                    }),
                });
            }
        }
    }
    out.extend(residual_transfers(&plan.out, plan.layout.residual, &ln));
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

/// Exchange B.
pub fn exchange_b(plan: &AttentionPlan) -> Vec<Transfer> {
    let [qk, vt, _] = plan.placed();
    let s = plan.shape;
    let core = plan.core;
    let att = &plan.layout.core;
    let np = s.dp() / 16;
    let q_groups = s.hp() / 16;
    let mut out = Vec::new();
    owned_groups(&plan.qk, &qk, |sender, (a, b), group, src| {
        let head = (group % q_groups) / np;
        let p = group % np;
        let src_at = |r: u32| src + (r - a) * 32;
        if group < q_groups {
            // Q panel p of the head, to the tile of each row block.
            for blk in 0..core.blocks {
                let Some((lo, hi)) = overlap((a, b), core.rows_of(blk, s.m)) else {
                    continue;
                };
                out.push(Transfer {
                    sender,
                    chunks: vec![Chunk {
                        address: src_at(lo),
                        words: 8 * (hi - lo),
                    }],
                    receivers: vec![(
                        core.tile(head, blk),
                        att.q + (p * core.rows + lo - blk * core.rows) * 32,
                    )],
                    segment: None,
                });
            }
        } else {
            // Key rows: key t, panel p at ((t / 8 * np + p) * 8 + t % 8) * 32.
            let receivers = |t: u32| -> Vec<(u32, u32)> {
                (0..core.blocks)
                    .map(|blk| {
                        (
                            core.tile(head, blk),
                            att.k + ((t / 8 * np + p) * 8 + t % 8) * 32,
                        )
                    })
                    .collect()
            };
            for (lo, hi) in runs((a, b), 8) {
                out.push(Transfer {
                    sender,
                    chunks: vec![Chunk {
                        address: src_at(lo),
                        words: 8 * (hi - lo),
                    }],
                    receivers: receivers(lo),
                    segment: None,
                });
            }
        }
    });
    // Value panels: channel r (of head r / dp, group (r % dp) / 16) of
    // token block G at ((group * key_panels + G) * 16 + r % 16) * 32.
    let kp = s.key_panels();
    owned_groups(&plan.vt, &vt, |sender, (a, b), tokens, src| {
        for (lo, hi) in runs((a, b), 16) {
            let head = lo / s.dp();
            let group = (lo % s.dp()) / 16;
            out.push(Transfer {
                sender,
                chunks: vec![Chunk {
                    address: src + (lo - a) * 32,
                    words: 8 * (hi - lo),
                }],
                receivers: (0..core.blocks)
                    .map(|blk| {
                        (
                            core.tile(head, blk),
                            att.v + ((group * kp + tokens) * 16 + lo % 16) * 32,
                        )
                    })
                    .collect(),
                segment: None,
            });
        }
    });
    out
}

/// Exchange C.
pub fn exchange_c(plan: &AttentionPlan) -> Vec<Transfer> {
    let [_, _, out_p] = plan.placed();
    let s = plan.shape;
    let core = plan.core;
    let po = &plan.out;
    let values = plan.layout.core.values();
    let np = s.dp() / 16;
    let mut out = Vec::new();
    for h in 0..s.heads {
        for blk in 0..core.blocks {
            let rows = core.rows_of(blk, s.m);
            for jd in 0..np {
                let panel = h * np + jd;
                let (k, g) = (panel / po.k_panels, panel % po.k_panels);
                for i in 0..po.grid_rows {
                    let block = (i * po.rows, i * po.rows + po.rows_of(i));
                    let Some((lo, hi)) = overlap(rows, block) else {
                        continue;
                    };
                    out.push(Transfer {
                        sender: core.tile(h, blk),
                        chunks: vec![Chunk {
                            address: values.output_group(jd) + (lo - rows.0) * 32,
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
    out
}

/// Bytes no exchange writes that a product reads: zeros loaded with the
/// program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroRun {
    /// The tile.
    pub tile: u32,
    /// Where.
    pub address: u32,
    /// How many (a multiple of 4).
    pub bytes: u32,
}

/// The padding runs (see [`super::attention_block`]'s module doc): vt's
/// weight rows of the tokens past `m` in the last group; the attention
/// tiles' key rows past `m` and query rows past the last real one.
pub fn zero_runs(plan: &AttentionPlan) -> Vec<ZeroRun> {
    let s = plan.shape;
    let pv = &plan.vt;
    let [_, vt, _] = plan.placed();
    let att = &plan.layout.core;
    let core = plan.core;
    let mut out = Vec::new();
    let tail = s.m % 16;
    if tail > 0 {
        let group = s.m / 16;
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
    let np = s.dp() / 16;
    for h in 0..s.heads {
        for blk in 0..core.blocks {
            let tile = core.tile(h, blk);
            for (lo, hi) in runs((s.m, s.key_panels() * 16), 8) {
                for p in 0..np {
                    out.push(ZeroRun {
                        tile,
                        address: att.k + ((lo / 8 * np + p) * 8 + lo % 8) * 32,
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
    out
}
