//! Finding SigLIP's post-LayerNorm and attention-pooling head in a
//! function, for [`super::pool_head`], as `eqsat-fuse` and
//! `--precision fp16` leave it (`--extract head`):
//!
//! ```text
//! %y   = nn.layer_normalization %x, %gamma, %beta    (the post-LayerNorm: an output)
//! %kv  = nn.linear (views of %y), %w_kv, %b_kv       (keys and values, [c, 2c])
//! %k   = views of %kv                               (reshape, unsqueeze, transpose,
//! %v   = views of %kv                                squeeze, gather of a constant index)
//! %q   = views of nn.linear(%probe, %w_q, %b_q)      (constants only)
//! %a   = nn.attention %q, %k, %v {heads = H}         (one query row)
//! %p   = nn.gemm (views of %a), %w_o, %b_o {transB}  (or nn.linear)
//! %r   = views of %p                                (the block's result, [N, 1, c])
//! ```
//!
//! over `N` images (`%x` `[N, tokens, c]`, one query row per image). The
//! views are checked by what they do, not by their spelling: each path is
//! run on the indices of its source; the views into the key/value
//! product may reorder the post-LayerNorm's rows but keep each whole (a
//! batch in PyTorch's tokens-first layout), and the key and value
//! columns of `%w_kv` are read off the split (it must give every token of
//! every image its own row and one column of `%kv` per channel); the
//! paths around the attention's output must keep its rows' order. The
//! query is computed here, in float64, from the constants, and must be
//! the same for every image.

use ipuc_dialects::nn;
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::{Attribute, Context, Diagnostic, FloatKind, OpId, Value};

use ipuc_ipu_arch::float8::{f64_to_f8, f8_to_f64};

use super::attention_block::AttentionFp8;
use super::passes::{chain, chain_ops, constant_of, constant_values, ADD};
use super::pool_head::{PoolConstants, PoolShape};

/// A matched pooling head: its ops and constants.
#[derive(Clone, Debug)]
pub struct PoolMatch {
    /// Every op of the block.
    pub ops: Vec<OpId>,
    /// The sizes.
    pub shape: PoolShape,
    /// The post-LayerNorm (its result is the block's first output).
    pub ln: OpId,
    /// The `nn.attention`.
    pub attention: OpId,
    /// The op whose result is the pooled row.
    pub last: OpId,
    /// The block's input (f16).
    pub input: Value,
    /// The constants.
    pub constants: PoolConstants,
}

/// The ops that only move elements.
const VIEWS: [&str; 6] = [
    nn::RESHAPE,
    nn::SQUEEZE,
    nn::UNSQUEEZE,
    nn::FLATTEN,
    nn::TRANSPOSE,
    nn::GATHER,
];

fn mismatch(ctx: &Context, op: OpId, msg: &str) -> Diagnostic {
    Diagnostic::op_error(
        ctx,
        op,
        format!("{msg}; the lowering takes the post-LayerNorm, the key/value product, an nn.attention of a constant query, the output product and the views between them as a pooling head"),
    )
}

fn dims(ctx: &Context, v: Value) -> Vec<i64> {
    ctx.value_type(v)
        .shape()
        .map(<[i64]>::to_vec)
        .unwrap_or_default()
}

/// The values of `v`, an `nn.constant` or views and slices of one (the
/// weights the importer slices out of a packed projection and transposes,
/// which constant folding leaves above its size limit); the ops that
/// compute it go to `ops`.
fn values(
    ctx: &Context,
    (op, what): (OpId, &str),
    v: Value,
    ops: &mut Vec<OpId>,
) -> Result<Vec<f64>, Diagnostic> {
    let refuse = || {
        Diagnostic::op_error(
            ctx,
            op,
            format!("the pooling head lowering needs {what} to be an nn.constant, or views and slices of one"),
        )
    };
    let mut path = Vec::new();
    let mut at = v;
    let c = loop {
        if let Some(c) = constant_of(ctx, at) {
            break c;
        }
        let d = ctx.defining_op(at).ok_or_else(refuse)?;
        if !VIEWS.contains(&ctx.name_str(d)) && ctx.name_str(d) != nn::SLICE {
            return Err(refuse());
        }
        path.push(d);
        at = ctx.operands(d)[0];
    };
    path.reverse();
    let data =
        constant_values(&c).map_err(|e| Diagnostic::op_error(ctx, op, format!("{what}: {e}")))?;
    let moved = run(ctx, at, data, &path)?;
    ops.extend(path);
    Ok(moved.data)
}

/// A tensor of source indices (or values) moved by views.
#[derive(Clone, Debug, PartialEq)]
struct Moved<T> {
    shape: Vec<i64>,
    data: Vec<T>,
}

impl<T: Copy> Moved<T> {
    /// `data` as `op` (a view) moves it; an error names what it cannot
    /// follow.
    fn through(self, ctx: &Context, op: OpId) -> Result<Moved<T>, Diagnostic> {
        let out_shape = dims(ctx, ctx.results(op)[0]);
        let name = ctx.name_str(op);
        let data = if name == nn::TRANSPOSE {
            let perm: Vec<usize> = match ctx.attr(op, "perm").and_then(Attribute::as_i64_list) {
                Some(p) => p.iter().map(|&a| a as usize).collect(),
                None => (0..self.shape.len()).rev().collect(),
            };
            let strides = strides(&self.shape);
            let mut data = Vec::with_capacity(self.data.len());
            for flat in 0..self.data.len() {
                let mut rem = flat;
                let mut at = 0;
                for (n, &p) in perm.iter().enumerate() {
                    let below: usize = out_shape[n + 1..].iter().product::<i64>() as usize;
                    at += rem / below * strides[p];
                    rem %= below;
                }
                data.push(self.data[at]);
            }
            data
        } else if name == nn::GATHER {
            let index = ctx
                .operands(op)
                .get(1)
                .and_then(|&v| constant_of(ctx, v))
                .and_then(|c| match c.kind() {
                    AttrKind::DenseElements(d) if d.len() == 1 => Some(d.int_at(0) as i64),
                    _ => None,
                })
                .ok_or_else(|| {
                    mismatch(
                        ctx,
                        op,
                        "a gather in the head's views takes one constant index",
                    )
                })?;
            let rank = self.shape.len() as i64;
            let axis = ctx
                .attr(op, "axis")
                .and_then(Attribute::as_int)
                .unwrap_or(0) as i64;
            let axis = if axis < 0 { axis + rank } else { axis } as usize;
            let dim = self.shape[axis];
            let index = if index < 0 { index + dim } else { index };
            if !(0..dim).contains(&index) {
                return Err(mismatch(ctx, op, "the gather's index is out of range"));
            }
            let inner: usize = self.shape[axis + 1..].iter().product::<i64>() as usize;
            let outer: usize = self.shape[..axis].iter().product::<i64>() as usize;
            (0..outer)
                .flat_map(|o| {
                    let from = (o * dim as usize + index as usize) * inner;
                    self.data[from..from + inner].iter().copied()
                })
                .collect()
        } else if name == nn::SLICE {
            let ranges = nn::slice_ranges(&self.shape, &nn::SliceParams::of(ctx, op))
                .map_err(|e| mismatch(ctx, op, &format!("the slice does not apply: {e}")))?;
            let strides = strides(&self.shape);
            let counts: Vec<usize> = ranges.iter().map(|r| r.count.max(0) as usize).collect();
            let total: usize = counts.iter().product();
            (0..total)
                .map(|flat| {
                    let mut rem = flat;
                    let mut at = 0i64;
                    for (n, r) in ranges.iter().enumerate() {
                        let below: usize = counts[n + 1..].iter().product();
                        let i = (rem / below) as i64;
                        rem %= below;
                        at += (r.start + i * r.step) * strides[n] as i64;
                    }
                    self.data[at as usize]
                })
                .collect()
        } else if VIEWS.contains(&name) {
            self.data
        } else {
            return Err(mismatch(
                ctx,
                op,
                "this op between the head's products is not a view the lowering follows (reshape, squeeze, unsqueeze, flatten, transpose, gather)",
            ));
        };
        Ok(Moved {
            shape: out_shape,
            data,
        })
    }
}

fn strides(shape: &[i64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as usize;
    }
    s
}

/// The view ops from `from`'s result to `to` (a value), walking back from
/// `to` through single-operand views; `None` if the walk does not reach
/// `from`.
fn views_between(ctx: &Context, from: Value, to: Value) -> Option<Vec<OpId>> {
    let mut path = Vec::new();
    let mut at = to;
    while at != from {
        let op = ctx.defining_op(at)?;
        if !VIEWS.contains(&ctx.name_str(op)) {
            return None;
        }
        path.push(op);
        at = ctx.operands(op)[0];
    }
    path.reverse();
    Some(path)
}

/// Runs `data` (shaped like `from`) through `path`.
fn run<T: Copy>(
    ctx: &Context,
    from: Value,
    data: Vec<T>,
    path: &[OpId],
) -> Result<Moved<T>, Diagnostic> {
    path.iter().try_fold(
        Moved {
            shape: dims(ctx, from),
            data,
        },
        |m, &op| m.through(ctx, op),
    )
}

/// Follows single-user views from `v` while they keep its elements in
/// order; returns them and the last value.
fn trailing_views(ctx: &Context, v: Value) -> (Vec<OpId>, Value) {
    let mut ops = Vec::new();
    let mut at = v;
    while let [u] = ctx.uses(at) {
        if !VIEWS.contains(&ctx.name_str(u.op)) || ctx.name_str(u.op) == nn::GATHER {
            break;
        }
        if !keeps_order(ctx, at, &[u.op]) {
            break;
        }
        ops.push(u.op);
        at = ctx.results(u.op)[0];
    }
    (ops, at)
}

fn count(ctx: &Context, v: Value) -> usize {
    dims(ctx, v).iter().product::<i64>().max(0) as usize
}

/// Whether `path` (views) from `from` keeps every element in place.
fn keeps_order(ctx: &Context, from: Value, path: &[OpId]) -> bool {
    let n = count(ctx, from);
    match run(ctx, from, (0..n).collect(), path) {
        Ok(moved) => moved.data.iter().copied().eq(0..n),
        Err(_) => false,
    }
}

/// For views `path` from `from` (rows of its last dimension's size) that
/// only reorder whole rows (a PyTorch attention's tokens-first layout of
/// a batch), the row of `from` each row of their result is; `None` if a
/// row is cut, changed in size or taken twice.
fn row_order(ctx: &Context, from: Value, path: &[OpId]) -> Option<Vec<usize>> {
    let (n, c) = (count(ctx, from), *dims(ctx, from).last()? as usize);
    let moved = run(ctx, from, (0..n).collect(), path).ok()?;
    if c == 0 || moved.data.len() != n || moved.shape.last() != Some(&(c as i64)) {
        return None;
    }
    let mut seen = vec![false; n / c];
    moved
        .data
        .chunks_exact(c)
        .map(|row| {
            let r = row[0] / c;
            let whole = row.iter().enumerate().all(|(i, &e)| e == r * c + i);
            (whole && !std::mem::replace(&mut seen[r], true)).then_some(r)
        })
        .collect()
}

/// `v` without the single-element-order-keeping views that produce it
/// (e.g. a gather of the only entry of a unit axis), and those views:
/// what a function may apply to a block's result before returning it.
pub(super) fn strip_order_keeping_views(ctx: &Context, v: Value) -> (Value, Vec<OpId>) {
    let mut at = v;
    let mut ops = Vec::new();
    while let Some(op) = ctx
        .defining_op(at)
        .filter(|&op| VIEWS.contains(&ctx.name_str(op)))
    {
        let from = ctx.operands(op)[0];
        if !keeps_order(ctx, from, &[op]) {
            break;
        }
        ops.push(op);
        at = from;
    }
    (at, ops)
}

/// The pooling head that starts at the post-LayerNorm `ln`; an error says
/// what does not match.
pub fn pool_from(ctx: &Context, ln: OpId) -> Result<PoolMatch, Diagnostic> {
    let input = ctx.operands(ln)[0];
    let is_f16 = |v: Value| {
        ctx.value_type(v)
            .element_type()
            .and_then(|t| t.float_kind())
            == Some(FloatKind::F16)
    };
    if !is_f16(input) {
        return Err(Diagnostic::op_error(
            ctx,
            ln,
            "the pooling head's input must be f16 (convert the function with --precision fp16)",
        ));
    }
    let x = dims(ctx, input);
    let [images, m, c] = x[..] else {
        return Err(mismatch(
            ctx,
            ln,
            "the post-LayerNorm's input must be a static [images, tokens, hidden]",
        ));
    };
    if [images, m, c]
        .iter()
        .any(|&d| d < 1 || d > i64::from(u32::MAX))
    {
        return Err(mismatch(
            ctx,
            ln,
            "the post-LayerNorm's input must be a static [images, tokens, hidden]",
        ));
    }
    let axis = ctx
        .attr(ln, "axis")
        .and_then(Attribute::as_int)
        .map_or(-1, |a| a as i64);
    if axis != -1 && axis != 2 {
        return Err(mismatch(ctx, ln, "LayerNorm must normalise the last axis"));
    }
    let eps = ctx
        .attr(ln, "epsilon")
        .and_then(Attribute::as_f64)
        .unwrap_or(1e-5) as f32;
    let y = ctx.results(ln)[0];
    let ln_ops = ctx.operands(ln).to_vec();
    let mut ops = vec![ln];
    let gamma = values(ctx, (ln, "LayerNorm's scale"), ln_ops[1], &mut ops)?;
    let beta = match ln_ops.get(2) {
        Some(&b) => values(ctx, (ln, "LayerNorm's shift"), b, &mut ops)?,
        None => vec![0.0; c as usize],
    };
    let attention = pool_attention(ctx, ln).ok_or_else(|| {
        mismatch(
            ctx,
            ln,
            "no nn.attention takes the post-LayerNorm's keys and values",
        )
    })?;
    let att = ctx.operands(attention).to_vec();
    if att.len() != 3 {
        return Err(mismatch(ctx, attention, "the attention has a mask"));
    }
    let (q_dims, k_dims) = (dims(ctx, att[0]), dims(ctx, att[1]));
    if q_dims != [images, 1, c] || k_dims != [images, m, c] || dims(ctx, att[2]) != [images, m, c] {
        return Err(mismatch(
            ctx,
            attention,
            "the attention must take one query row per image [images, 1, hidden] and every token of the image as keys and values [images, tokens, hidden]",
        ));
    }
    let heads = ctx
        .attr(attention, "heads")
        .and_then(Attribute::as_int)
        .unwrap_or(1) as i64;
    if heads < 1 || c % heads != 0 {
        return Err(mismatch(
            ctx,
            attention,
            "the heads do not divide the hidden size",
        ));
    }
    let head_dim = c / heads;
    let scale = nn::attention_scale(
        ctx.attr(attention, "scale")
            .and_then(Attribute::as_f64)
            .map(|s| s as f32),
        head_dim,
    );
    // The key/value product and the views around it.
    let kv = kv_product(ctx, y, att[1], attention)?;
    ops.push(attention);
    ops.extend(&kv.ops);
    // The product's row of each token (of each image), its rows being
    // the post-LayerNorm's rows in some order.
    let mut kv_row = vec![usize::MAX; kv.rows.len()];
    for (r, &y_row) in kv.rows.iter().enumerate() {
        kv_row[y_row] = r;
    }
    let column = |path: &[OpId], what: &str| -> Result<Vec<usize>, Diagnostic> {
        let moved = run(ctx, kv.result, (0..count(ctx, kv.result)).collect(), path)?;
        let (c, n) = (c as usize, kv.n);
        let cols: Vec<usize> = moved.data[..c].iter().map(|&i| i % n).collect();
        let ok = kv_row.len() == moved.data.len() / c
            && (0..kv_row.len())
                .all(|t| (0..c).all(|ch| moved.data[t * c + ch] == kv_row[t] * n + cols[ch]));
        if !ok {
            return Err(mismatch(
                ctx,
                attention,
                &format!("the attention's {what} are not columns of the key/value product, token by token of each image"),
            ));
        }
        Ok(cols)
    };
    let mut cols = Vec::new();
    for (operand, what) in [(att[1], "keys"), (att[2], "values")] {
        let path = views_between(ctx, kv.result, operand).ok_or_else(|| {
            mismatch(
                ctx,
                attention,
                &format!(
                    "the attention's {what} do not come from the key/value product through views"
                ),
            )
        })?;
        cols.push(column(&path, what)?);
        ops.extend(path);
    }
    let pick = |w: &[f64], cols: &[usize]| -> Vec<f64> {
        (0..c as usize)
            .flat_map(|r| cols.iter().map(move |&col| w[r * kv.n + col]))
            .collect()
    };
    let pick_bias = |cols: &[usize]| -> Vec<f64> { cols.iter().map(|&col| kv.bias[col]).collect() };
    // The query, from constants.
    let (queries, q_ops) = query_of(ctx, att[0], attention)?;
    ops.extend(q_ops);
    // Every image's query row is the same constant.
    let query = queries[..c as usize].to_vec();
    if queries.chunks_exact(c as usize).any(|q| q != query) {
        return Err(mismatch(
            ctx,
            attention,
            "the images' query rows differ (the lowering takes one constant query for every image)",
        ));
    }
    // The output projection and the views around it.
    let (out, last) = out_product(ctx, attention, c as usize)?;
    ops.extend(&out.ops);
    // `convert-precision` leaves the output `nn.gemm` f16: an FP8 head may
    // have an f16 output product.
    let fp8 = match (kv.fp8, out.fp8) {
        (None, None) => None,
        (Some(qkv_scale), out_scale) => Some(AttentionFp8 {
            qkv_scale,
            out_scale,
        }),
        (None, Some(_)) => {
            return Err(mismatch(
                ctx,
                attention,
                "the output product is FP8 but the key/value product is not",
            ))
        }
    };
    // Every view after the output projection before another block reads it.
    ops.sort_unstable();
    ops.dedup();
    Ok(PoolMatch {
        ops,
        shape: PoolShape {
            images: images as u32,
            m: m as u32,
            c: c as u32,
            heads: heads as u32,
            head_dim: head_dim as u32,
            eps,
            ln_affine: !ipuc_passes::fold_layernorm::is_identity_affine(&gamma, &beta),
            scale,
            fp8,
        },
        ln,
        attention,
        last,
        input,
        constants: PoolConstants {
            gamma,
            beta,
            query,
            w_k: pick(&kv.w, &cols[0]),
            b_k: pick_bias(&cols[0]),
            w_v: pick(&kv.w, &cols[1]),
            b_v: pick_bias(&cols[1]),
            w_o: out.w,
            b_o: out.bias,
        },
    })
}

/// The `nn.attention` that LayerNorm `ln`'s result reaches through views
/// and a product, then the views that split keys and values: the
/// pooling head's, if `ln` starts one.
pub fn pool_attention(ctx: &Context, ln: OpId) -> Option<OpId> {
    ctx.uses(ctx.results(ln)[0]).iter().find_map(|u| {
        let mut at = u.op;
        let mut products = 0;
        loop {
            let name = ctx.name_str(at);
            // An FP8 product's cast counts as a view here: the head is
            // found, and its matcher says what it does not lower.
            let fp8_cast = super::block_match::is_fp8_cast(ctx, at);
            if name == nn::LINEAR || name == nn::MATMUL {
                products += 1;
            } else if !(VIEWS.contains(&name) || fp8_cast) || products > 1 {
                return None;
            }
            match ctx.uses(ctx.results(at)[0]) {
                [u] if products == 0 || ctx.name_str(u.op) != nn::ATTENTION => at = u.op,
                // The keys and values, split by views (or read whole).
                uses if products == 1 => {
                    return uses.iter().find_map(|u| find_attention(ctx, u.op))
                }
                _ => return None,
            }
        }
    })
}

/// The attention among the users of a split's results (through views).
fn find_attention(ctx: &Context, op: OpId) -> Option<OpId> {
    if ctx.name_str(op) == nn::ATTENTION {
        return Some(op);
    }
    if !VIEWS.contains(&ctx.name_str(op)) {
        return None;
    }
    ctx.uses(ctx.results(op)[0])
        .iter()
        .find_map(|u| find_attention(ctx, u.op))
}

/// A product by constants: its ops (views before it included), result,
/// weights `[k, n]` and bias `[n]`.
struct Product {
    ops: Vec<OpId>,
    result: Value,
    /// The key/value product: the post-LayerNorm's row each of its rows
    /// reads (the output product: empty).
    rows: Vec<usize>,
    w: Vec<f64>,
    bias: Vec<f64>,
    n: usize,
    /// Its weights' scale exponent if its input is cast to FP8 (an FP8
    /// product, `--precision fp8`).
    fp8: Option<i32>,
}

/// `v`, or the input of the `nn.cast` to FP8 that defines it (an FP8
/// product's activations), with that cast.
fn through_fp8_cast(ctx: &Context, v: Value) -> (Value, Option<OpId>) {
    match super::block_match::fp8_cast_of(ctx, v) {
        Some(c) => (ctx.operands(c)[0], Some(c)),
        None => (v, None),
    }
}

/// Product `op`'s `rhs_scale` (0 without one).
fn scale_exponent(ctx: &Context, op: OpId) -> i32 {
    i32::try_from(nn::rhs_scale(ctx, op)).unwrap_or(0)
}

/// What product `op`'s weight values are multiplied by: `2^rhs_scale`
/// (FP8 codes), else 1.
fn weight_scale(ctx: &Context, op: OpId) -> f64 {
    2f64.powi(scale_exponent(ctx, op))
}

/// The `nn.linear`/`nn.matmul` fed by `y` through order-keeping views,
/// whose result reaches `keys`.
fn kv_product(
    ctx: &Context,
    y: Value,
    keys: Value,
    attention: OpId,
) -> Result<Product, Diagnostic> {
    let mut at = keys;
    let product = loop {
        let Some(op) = ctx.defining_op(at) else {
            break None;
        };
        let name = ctx.name_str(op);
        if name == nn::LINEAR || name == nn::MATMUL {
            break Some(op);
        }
        if !VIEWS.contains(&name) && name != ADD {
            break None;
        }
        at = ctx.operands(op)[0];
    }
    .ok_or_else(|| {
        mismatch(
            ctx,
            attention,
            "the attention's keys do not come from a product through views",
        )
    })?;
    let (lhs, cast) = through_fp8_cast(ctx, ctx.operands(product)[0]);
    let before = views_between(ctx, y, lhs).ok_or_else(|| {
        mismatch(
            ctx,
            product,
            "the key/value product does not read the post-LayerNorm through views",
        )
    })?;
    let rows = row_order(ctx, y, &before).ok_or_else(|| {
        mismatch(
            ctx,
            product,
            "the views between the post-LayerNorm and the key/value product do not keep its rows whole (each product row one row of it, each row once)",
        )
    })?;
    let ch = chain(ctx, product)?;
    if ch.epilogue.gelu.is_some() {
        return Err(mismatch(
            ctx,
            product,
            "the key/value product is followed by a GELU",
        ));
    }
    let w_dims = dims(ctx, ctx.operands(product)[1]);
    let [_, n] = w_dims[..] else {
        return Err(mismatch(ctx, product, "the key/value weights must be 2-D"));
    };
    let mut ops = before;
    ops.extend(cast);
    let scale = weight_scale(ctx, product);
    let w: Vec<f64> = values(
        ctx,
        (product, "the key/value weights"),
        ctx.operands(product)[1],
        &mut ops,
    )?
    .into_iter()
    .map(|w| w * scale)
    .collect();
    let bias = match &ch.bias {
        Some(b) => constant_values(b).map_err(|e| Diagnostic::op_error(ctx, product, e))?,
        None => vec![0.0; n as usize],
    };
    ops.extend(chain_ops(ctx, product, ch.last));
    ops.push(product);
    Ok(Product {
        ops,
        result: ctx.results(ch.last)[0],
        rows,
        w,
        bias,
        n: n as usize,
        fp8: cast.map(|_| scale_exponent(ctx, product)),
    })
}

/// The query `[c]`: a constant, or a product of constants with its bias,
/// through views; with the ops that compute it.
fn query_of(ctx: &Context, q: Value, attention: OpId) -> Result<(Vec<f64>, Vec<OpId>), Diagnostic> {
    let refuse = || {
        mismatch(
            ctx,
            attention,
            "the attention's query is not a constant, or a product of constants, through views",
        )
    };
    let mut at = q;
    let mut path = Vec::new();
    let source = loop {
        let op = ctx.defining_op(at).ok_or_else(refuse)?;
        let name = ctx.name_str(op);
        if name == nn::CONSTANT || name == nn::LINEAR || name == nn::MATMUL || name == ADD {
            break op;
        }
        if !VIEWS.contains(&name) {
            return Err(refuse());
        }
        path.push(op);
        at = ctx.operands(op)[0];
    };
    path.reverse();
    // A bias add after the product.
    let (product, bias) = if ctx.name_str(source) == ADD {
        let o = ctx.operands(source).to_vec();
        let p = o.iter().find_map(|&v| {
            ctx.defining_op(v)
                .filter(|&d| [nn::LINEAR, nn::MATMUL].contains(&ctx.name_str(d)))
        });
        let b = o.iter().find_map(|&v| constant_of(ctx, v));
        match (p, b) {
            (Some(p), Some(b)) => (
                p,
                Some(constant_values(&b).map_err(|e| Diagnostic::op_error(ctx, source, e))?),
            ),
            _ => return Err(refuse()),
        }
    } else {
        (source, None)
    };
    let mut ops = Vec::new();
    let computed = if ctx.name_str(product) == nn::CONSTANT {
        values(
            ctx,
            (product, "the query"),
            ctx.results(product)[0],
            &mut ops,
        )?
    } else {
        let o = ctx.operands(product).to_vec();
        // An FP8 product multiplies the probe's FP8 values by its
        // weights' (codes times their scale).
        let (probe, cast) = through_fp8_cast(ctx, o[0]);
        let mut a = values(ctx, (product, "the probe"), probe, &mut ops)?;
        if cast.is_some() {
            a.iter_mut().for_each(|v| *v = f8_to_f64(f64_to_f8(*v)));
        }
        ops.extend(cast);
        let scale = weight_scale(ctx, product);
        let w: Vec<f64> = values(ctx, (product, "the query weights"), o[1], &mut ops)?
            .into_iter()
            .map(|w| w * scale)
            .collect();
        let n = *dims(ctx, o[1]).last().unwrap_or(&0) as usize;
        let k = a
            .len()
            .checked_div(count(ctx, ctx.results(product)[0]) / n.max(1))
            .unwrap_or(0);
        let mut out = vec![0.0; count(ctx, ctx.results(product)[0])];
        for (row, dst) in out.chunks_exact_mut(n.max(1)).enumerate() {
            for (i, av) in a[row * k..(row + 1) * k].iter().enumerate() {
                dst.iter_mut()
                    .zip(&w[i * n..(i + 1) * n])
                    .for_each(|(d, w)| *d += av * w);
            }
        }
        let linear_bias = match ctx.operands(product).get(2) {
            Some(&b) => Some(values(ctx, (product, "the query bias"), b, &mut ops)?),
            None => None,
        };
        for b in [linear_bias, bias].into_iter().flatten() {
            for row in out.chunks_exact_mut(n.max(1)) {
                row.iter_mut().zip(&b).for_each(|(o, b)| *o += b);
            }
        }
        out
    };
    let from = ctx.results(source)[0];
    let moved = run(ctx, from, computed, &path)?;
    ops.extend(path);
    if ctx.name_str(product) != nn::CONSTANT {
        ops.push(product);
    }
    if source != product {
        ops.push(source);
    }
    Ok((moved.data, ops))
}

/// The output projection after `attention` (an `nn.gemm` without
/// transposed input, or an `nn.linear`), through order-keeping views, and
/// the order-keeping views after it: the op whose result is the block's.
fn out_product(ctx: &Context, attention: OpId, c: usize) -> Result<(Product, OpId), Diagnostic> {
    let a = ctx.results(attention)[0];
    let (before, at) = trailing_views(ctx, a);
    // An FP8 product reads the attention's output through a cast.
    let cast = match ctx.uses(at) {
        [u] if super::block_match::is_fp8_cast(ctx, u.op) => Some(u.op),
        _ => None,
    };
    let at = cast.map_or(at, |c| ctx.results(c)[0]);
    let product = match ctx.uses(at) {
        [u] if [nn::GEMM, nn::LINEAR, nn::MATMUL].contains(&ctx.name_str(u.op)) => u.op,
        _ => {
            return Err(mismatch(
                ctx,
                attention,
                "the attention's only user (after views) is not the output product",
            ))
        }
    };
    let o = ctx.operands(product).to_vec();
    let mut ops = before;
    let (w, bias, last) = if ctx.name_str(product) == nn::GEMM {
        let p = nn::GemmParams::of(ctx, product);
        if p.trans_a || p.alpha != 1.0 || p.beta != 1.0 {
            return Err(mismatch(
                ctx,
                product,
                "the output gemm must be plain (no transposed input, alpha and beta 1)",
            ));
        }
        let b = values(ctx, (product, "the output weights"), o[1], &mut ops)?;
        let w: Vec<f64> = if p.trans_b {
            (0..c * c).map(|i| b[(i % c) * c + i / c]).collect()
        } else {
            b
        };
        let bias = match o.get(2) {
            Some(&v) if count(ctx, v) == c => {
                values(ctx, (product, "the output bias"), v, &mut ops)?
            }
            Some(_) => return Err(mismatch(ctx, product, "the output bias must be [hidden]")),
            None => vec![0.0; c],
        };
        (w, bias, product)
    } else {
        let ch = chain(ctx, product)?;
        if ch.epilogue.gelu.is_some() {
            return Err(mismatch(
                ctx,
                product,
                "the output product is followed by a GELU",
            ));
        }
        let scale = weight_scale(ctx, product);
        let w = values(ctx, (product, "the output weights"), o[1], &mut ops)?
            .into_iter()
            .map(|w| w * scale)
            .collect();
        let bias = match &ch.bias {
            Some(b) => constant_values(b).map_err(|e| Diagnostic::op_error(ctx, product, e))?,
            None => vec![0.0; c],
        };
        (w, bias, ch.last)
    };
    if w.len() != c * c {
        return Err(mismatch(
            ctx,
            product,
            "the output weights must be [hidden, hidden]",
        ));
    }
    let (after, result) = trailing_views(ctx, ctx.results(last)[0]);
    ops.extend(chain_ops(ctx, product, last));
    ops.push(product);
    ops.extend(&after);
    ops.extend(cast);
    let last = ctx.defining_op(result).unwrap_or(last);
    Ok((
        Product {
            ops,
            result,
            rows: Vec::new(),
            w,
            bias,
            n: c,
            fp8: cast.map(|_| scale_exponent(ctx, product)),
        },
        last,
    ))
}
