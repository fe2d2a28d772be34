//! The attention block's constants as its tiles hold them
//! ([`HeldConstants`]: heads padded, Q scaled, the value bias folded or
//! in vt's initial partials), their `constant` tensors
//! ([`emit_attention_constants`]), and the block in float64
//! ([`reference()`]), what a lowered block is checked against.

use ipuc_ipu_arch::float8::{f64_to_f8, f8_to_f64};
use ipuc_ir::{BlockId, Context, FloatKind, Location, Type};

use super::attention_block::{
    attention_tiles, vt_input_piece, AttentionConstants, AttentionPlan, AttentionShape,
};
use super::codegen::{
    constant_tensor, elem_type, replicated_constant, Constants, PlacedGemm, ZeroRun,
    ATTENTION_MASK, ZERO_RUNS,
};
use super::stream::home_pieces;
use crate::codelets::amp::Elem;

/// The products' constants as their tiles hold them (heads padded; the
/// value bias folded into the output bias for f16 products, in vt's
/// initial partials for FP8 ones: [`held_output`]). With FP8 products
/// qk's and vt's constants are in their domain (times `2^D`,
/// [`super::attention_block::AttentionFp8::domain`]) and out's in its own
/// (times `2^D_o`, [`super::attention_block::AttentionFp8::out_domain`]:
/// the attention's output is cast to FP8 codes of its values); with an
/// f16 output product out's weights are times `2^-D`, which takes the
/// attention's output back from qk's and vt's domain.
pub struct HeldConstants {
    /// qk's weights `[c, 2 hp]` (Q's times the softmax scale).
    pub w_qk: Vec<f64>,
    /// qk's bias `[2 hp]`.
    pub b_qk: Vec<f64>,
    /// vt's input: `W_v^T` padded, `[hp, c]`.
    pub w_vt: Vec<f64>,
    /// out's weights `[heads out_dp, c]` ([`AttentionShape::out_dp`]: `hp`
    /// but on the FP8 AMP; there in its domain,
    /// [`super::attention_block::AttentionFp8::out_domain`]).
    pub w_out: Vec<f64>,
    /// out's bias `[c]`: `b_o + b_v W_o` (f16), `b_o` (FP8; on the FP8
    /// AMP in out's domain).
    pub b_out: Vec<f64>,
    /// FP8: the value bias `[hp]`, padded, which vt's initial partials
    /// start every token from (f16: folded into `b_out`).
    pub b_vt: Vec<f64>,
}

impl HeldConstants {
    /// From the IR's constants.
    pub fn of(s: AttentionShape, k: &AttentionConstants) -> Self {
        let (c, hp) = (s.c as usize, s.hp() as usize);
        let mut w_qk = vec![0.0; c * 2 * hp];
        let mut b_qk = vec![0.0; 2 * hp];
        let mut w_vt = vec![0.0; hp * c];
        let domain = s.qkv_domain_scale();
        // Q times the softmax scale where its weights are f16: S comes out
        // scaled, and the attention tiles' softmax does not multiply
        // ([`AttentionShape::q_weight_scale`]).
        for (part, scale) in [s.q_weight_scale() * domain, domain]
            .into_iter()
            .enumerate()
        {
            for ch in 0..c {
                let col = part * hp + s.padded(ch);
                b_qk[col] = scale * k.b_qkv[part * c + ch];
                for r in 0..c {
                    w_qk[r * 2 * hp + col] = scale * k.w_qkv[r * 3 * c + part * c + ch];
                }
            }
        }
        for ch in 0..c {
            let row = s.padded(ch);
            for r in 0..c {
                w_vt[row * c + r] = domain * k.w_qkv[r * 3 * c + 2 * c + ch];
            }
        }
        // out's weights' rows at each head's `out_dp` channels.
        let (mut w_out, mut b_out, mut b_vt) =
            held_output(s, s.out_dp(), &k.w_o, &k.b_o, &k.b_qkv[2 * c..]);
        b_vt.iter_mut().for_each(|b| *b *= domain);
        match s.fp8.and_then(|f| f.out_domain()) {
            // out on the FP8 AMP: its input is the attention's output as
            // FP8 codes of its values, its weights and bias in its domain.
            Some(d) => {
                let scale = 2f64.powi(d);
                w_out.iter_mut().for_each(|w| *w *= scale);
                b_out.iter_mut().for_each(|b| *b *= scale);
            }
            // f16: the attention's output comes in qk's and vt's domain.
            None => w_out.iter_mut().for_each(|w| *w /= domain),
        }
        HeldConstants {
            w_qk,
            b_qk,
            w_vt,
            w_out,
            b_out,
            b_vt,
        }
    }
}

/// The output projection as the tiles hold it, for the attention block and
/// the pooling head alike: `(w_out, b_out, b_v)`, `W_o`'s rows (`[c, c]`)
/// at the heads' padded channels, `out_dp` a head
/// ([`AttentionShape::head_row`]: `[heads out_dp, c]`); its bias `b_o` (`[c]`) with
/// the value bias `b_v` (`[c]`) folded in for f16 products (`b_o + b_v
/// W_o`: the probabilities of a row sum to 1) and not for FP8 ones (the
/// attention's output is rounded to FP8 with it inside); and `b_v` at the
/// padded channels, `[hp]`.
pub fn held_output(
    s: AttentionShape,
    out_dp: u32,
    w_o: &[f64],
    b_o: &[f64],
    b_v: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (c, hp) = (s.c as usize, s.hp() as usize);
    let mut w_out = vec![0.0; (s.heads * out_dp) as usize * c];
    let mut b_out = b_o.to_vec();
    let mut b_padded = vec![0.0; hp];
    for ch in 0..c {
        let row = s.head_row(ch, out_dp);
        b_padded[s.padded(ch)] = b_v[ch];
        for o in 0..c {
            let w = w_o[ch * c + o];
            w_out[row * c + o] = w;
            if s.fp8.is_none() {
                b_out[o] += b_v[ch] * w;
            }
        }
    }
    (w_out, b_out, b_padded)
}

/// The block's constants (weights, bias blocks, `V^T`'s input, the
/// LayerNorm's scale and shift, the vertex states, the attention tiles'
/// masks and zero runs) as `constant` tensors appended to `exe_body`:
/// what [`super::attention_emit::emit_attention_in`] loads with the program, and what a loop over
/// identical layers archives for each later layer ([`super::chain_loop`]).
pub fn emit_attention_constants(
    ctx: &mut Context,
    exe_body: BlockId,
    plan: &AttentionPlan,
    constants: &AttentionConstants,
    loc: &Location,
) {
    let (s, core) = (plan.shape, plan.core);
    let [qk, vt, out] = plan.placed();
    let ln = plan.ln();
    let at_core = attention_tiles(plan);
    let loc = loc.clone();
    let held = HeldConstants::of(s, constants);
    qk.emit_constants(
        ctx,
        exe_body,
        Constants {
            weights: &held.w_qk,
            bias: Some(&held.b_qk),
        },
        &loc,
    );
    out.emit_constants(
        ctx,
        exe_body,
        Constants {
            weights: &held.w_out,
            bias: Some(&held.b_out),
        },
        &loc,
    );
    emit_vt_input(ctx, exe_body, plan, &vt, &held.w_vt, &loc);
    // FP8: every token's value channels start from the value bias, a
    // value per row vt's tiles splat into each output group.
    let vt_zeros = vt.emit_bias_values(ctx, exe_body, &held.b_vt, &loc);
    ln.emit_constants(ctx, exe_body, (&constants.gamma, &constants.beta), &loc);
    // The attention tiles' masks: one per block of keys (only the last
    // masks any key).
    for kb in 0..core.key_blocks {
        let att = plan.last_part(kb);
        let tiles: Vec<u32> = at_core
            .iter()
            .filter(|(_, &(_, k))| k == kb)
            .map(|(&t, _)| t)
            .collect();
        let mask = att.mask_bytes_encoded();
        let (kind, size) = match att.scores {
            Elem::F16 => (FloatKind::F16, 2),
            _ => (FloatKind::F32, 4),
        };
        let t = replicated_constant(
            ctx,
            &format!("{ATTENTION_MASK}{kb}"),
            (Type::float(kind), size, 8),
            mask,
            (&tiles, plan.layout.restore.mask),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }
    super::codegen::emit_zero_runs(
        ctx,
        exe_body,
        &[vt_private_pads(plan), vt_zeros].concat(),
        ZERO_RUNS[0],
        &loc,
    );
    // The zeros the attention tiles restore their padding runs from.
    let r = plan.layout.restore;
    let tiles: std::collections::BTreeSet<u32> = super::attention_exchange::window_zero_runs(plan)
        .iter()
        .map(|run| run.tile)
        .collect();
    let zeros: Vec<ZeroRun> = tiles
        .into_iter()
        .map(|tile| ZeroRun {
            tile,
            address: r.zeros,
            bytes: r.zero_bytes,
        })
        .collect();
    super::codegen::emit_zero_runs(ctx, exe_body, &zeros, ZERO_RUNS[1], &loc);
}

/// vt's padding token rows where vt's weights are private: zeros the
/// program loads once (else vt's tiles zero them each time,
/// [`super::attention_block::vt_pad_copies`]).
fn vt_private_pads(plan: &AttentionPlan) -> Vec<ZeroRun> {
    if plan.layout.restore_late {
        Vec::new()
    } else {
        super::attention_exchange::zero_runs(plan)
    }
}

/// vt's input panels: `W_v^T`'s rows of each grid row block and K part,
/// on every grid column.
fn emit_vt_input(
    ctx: &mut Context,
    exe_body: BlockId,
    plan: &AttentionPlan,
    vt: &PlacedGemm,
    w_vt: &[f64],
    loc: &Location,
) {
    let p = &plan.vt;
    vt.emit_states(ctx, exe_body, loc);
    let c = plan.shape.c as usize;
    // 16 f16 channels or 32 FP8 codes a panel row (FP8 products).
    let variant = p.shape.variant;
    let width = variant.in_channels();
    let elem = variant.input_elem();
    let ty = (elem_type(elem), elem.size(), 8);
    for i in 0..p.grid_rows {
        for k in 0..p.grid_k {
            let mut values = Vec::with_capacity((p.k_panels * p.rows) as usize * width);
            for g in 0..p.k_panels {
                let panel = k * p.k_panels + g;
                for r in 0..p.rows {
                    let row = (i * p.rows + r) as usize;
                    values.extend((0..width).map(|ch| {
                        let col = panel as usize * width + ch;
                        if row < plan.shape.hp() as usize && col < c {
                            w_vt[row * c + col]
                        } else {
                            0.0
                        }
                    }));
                }
            }
            let tiles: Vec<u32> = (0..p.grid_cols).map(|j| p.tile(i, j, k)).collect();
            let bytes = elem.encode(&values);
            let at = vt.lay.input;
            let name = format!("vt_input_row{i}_k{k}");
            let t = match plan.layout.vt_home {
                // Streamed: piece j of the block on tile (i, j, k).
                Some(home) => {
                    let piece = vt_input_piece(p);
                    let len = (bytes.len() as u32, ty.1 as u32);
                    let pieces = home_pieces(&tiles, home, piece, len);
                    constant_tensor(ctx, &name, ty.clone(), bytes, &pieces, loc.clone())
                }
                None => {
                    replicated_constant(ctx, &name, ty.clone(), bytes, (&tiles, at), loc.clone())
                }
            };
            ctx.append_op(exe_body, t);
        }
    }
}

/// The block in float64 (`x` `[images m, c]`, f16 values): what a
/// lowered block is checked against. Each image attends over its own
/// tokens.
pub fn reference(s: AttentionShape, x: &[f64], k: &AttentionConstants) -> Vec<f64> {
    let (m, c) = (s.m as usize, s.c as usize);
    let every: Vec<usize> = (0..m).collect();
    x.chunks_exact(m * c)
        .take(s.images as usize)
        .flat_map(|image| reference_rows(s, image, k, &every))
        .collect()
}

/// [`reference()`] of one image (`x` `[m, c]`; `s.images` is not read)
/// for rows `rows` only (every row's keys and values are still computed),
/// row after row.
pub fn reference_rows(
    s: AttentionShape,
    x: &[f64],
    k: &AttentionConstants,
    rows: &[usize],
) -> Vec<f64> {
    let (m, c, d) = (s.m as usize, s.c as usize, s.head_dim as usize);
    // FP8 products multiply LayerNorm's and the attention's outputs as
    // FP8 values (the IR's casts).
    let on_grid = |v: f64| match s.fp8 {
        Some(_) => f8_to_f64(f64_to_f8(v)),
        None => v,
    };
    let mut qkv = vec![0.0; m * 3 * c];
    for r in 0..m {
        let row = &x[r * c..(r + 1) * c];
        let mean = row.iter().sum::<f64>() / c as f64;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c as f64;
        let rstd = 1.0 / (var + f64::from(s.eps)).sqrt();
        let out = &mut qkv[r * 3 * c..(r + 1) * 3 * c];
        out.copy_from_slice(&k.b_qkv);
        for (i, (&v, w_row)) in row.iter().zip(k.w_qkv.chunks_exact(3 * c)).enumerate() {
            let ln = on_grid((v - mean) * rstd * k.gamma[i] + k.beta[i]);
            for (o, w) in out.iter_mut().zip(w_row) {
                *o += ln * w;
            }
        }
    }
    let scale = f64::from(s.scale);
    let mut y = Vec::with_capacity(rows.len() * c);
    for &r in rows {
        let mut att = vec![0.0; c];
        for h in 0..s.heads as usize {
            let q = &qkv[r * 3 * c + h * d..r * 3 * c + (h + 1) * d];
            let key = |t: usize| &qkv[t * 3 * c + c + h * d..t * 3 * c + c + (h + 1) * d];
            let sc: Vec<f64> = (0..m)
                .map(|t| scale * q.iter().zip(key(t)).map(|(a, b)| a * b).sum::<f64>())
                .collect();
            let mx = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = sc.iter().map(|v| (v - mx).exp()).collect();
            let sum: f64 = e.iter().sum();
            for (t, e) in e.iter().enumerate() {
                let v = &qkv[t * 3 * c + 2 * c + h * d..t * 3 * c + 2 * c + (h + 1) * d];
                for (o, v) in att[h * d..(h + 1) * d].iter_mut().zip(v) {
                    *o += e / sum * v;
                }
            }
        }
        let mut out: Vec<f64> = (0..c).map(|o| x[r * c + o] + k.b_o[o]).collect();
        for (i, a) in att.iter().enumerate() {
            let a = match s.fp8.and_then(|f| f.out_scale) {
                Some(_) => on_grid(*a),
                None => *a,
            };
            for (o, w) in out.iter_mut().zip(&k.w_o[i * c..(i + 1) * c]) {
                *o += a * w;
            }
        }
        y.extend(out);
    }
    y
}
