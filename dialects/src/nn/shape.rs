//! Shape ops: `nn.reshape`, `nn.transpose`, `nn.concat`, `nn.split`,
//! `nn.slice`, `nn.gather`, `nn.squeeze`, `nn.unsqueeze`, `nn.expand`,
//! `nn.tile`, `nn.flatten`, `nn.pad` and `nn.identity`, with ONNX semantics
//! and static attributes (the importer folds ONNX's shape tensors into them).
//!
//! Every folder moves elements without arithmetic, so it works for any
//! element type; each is an index map from result elements to operand
//! elements.

use ipuc_ir::attributes::DenseElements;
use ipuc_ir::dialect::{FoldResult, OpDefinition, Traits};
use ipuc_ir::interfaces::ViewLike;
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{
    float_format, Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type,
    Value,
};

use super::custom_format::{parse_standard, print_standard};
use super::elements::{
    broadcast_source, dense_data, fold_target, from_element_bytes, rearrange, strides,
    unchanged_operand, unravel,
};
use super::support::*;

/// `nn.reshape`.
pub const RESHAPE: &str = "nn.reshape";
/// `nn.transpose`.
pub const TRANSPOSE: &str = "nn.transpose";
/// `nn.concat`.
pub const CONCAT: &str = "nn.concat";
/// `nn.split`.
pub const SPLIT: &str = "nn.split";
/// `nn.slice`.
pub const SLICE: &str = "nn.slice";
/// `nn.gather`.
pub const GATHER: &str = "nn.gather";
/// `nn.squeeze`.
pub const SQUEEZE: &str = "nn.squeeze";
/// `nn.unsqueeze`.
pub const UNSQUEEZE: &str = "nn.unsqueeze";
/// `nn.expand`.
pub const EXPAND: &str = "nn.expand";
/// `nn.tile`.
pub const TILE: &str = "nn.tile";
/// `nn.flatten`.
pub const FLATTEN: &str = "nn.flatten";
/// `nn.pad`.
pub const PAD: &str = "nn.pad";
/// `nn.identity`.
pub const IDENTITY: &str = "nn.identity";

/// The element count of `dims` (`DYNAMIC` if any dimension is); an error
/// when it does not fit in 64 bits (crafted models declare such shapes).
fn product(dims: &[i64]) -> InferResult<i64> {
    if dims.contains(&DYNAMIC) {
        return Ok(DYNAMIC);
    }
    dims.iter()
        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            shape_err!(
                "the element count of [{}] does not fit in 64 bits",
                shape_str(dims)
            )
        })
}

// ----- inference --------------------------------------------------------------

/// Resolves an ONNX `Reshape` shape against the input shape: `-1` is
/// inferred from the element count and `0` copies the input dimension
/// (unless `allowzero`).
pub fn onnx_reshape_shape(input: &[i64], target: &[i64], allowzero: bool) -> InferResult<Vec<i64>> {
    let mut out: Vec<i64> = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &d) in target.iter().enumerate() {
        match d {
            -1 if infer_at.is_some() => {
                return Err(ShapeError::invalid("reshape target has more than one -1"))
            }
            -1 => {
                infer_at = Some(i);
                out.push(1);
            }
            0 if !allowzero => out.push(*input.get(i).ok_or_else(|| {
                shape_err!("reshape target copies dimension {i}, which the input lacks")
            })?),
            d if d < 0 => return Err(shape_err!("invalid reshape target dimension {d}")),
            d => out.push(d),
        }
    }
    if let Some(i) = infer_at {
        let total = product(input)?;
        let known = product(&out)?;
        if total == DYNAMIC || known == DYNAMIC {
            out[i] = DYNAMIC;
        } else if known == 0 || total % known != 0 {
            return Err(shape_err!(
                "cannot infer -1 in reshape of [{}] to [{}]",
                shape_str(input),
                shape_str(target)
            ));
        } else {
            out[i] = total / known;
        }
    }
    Ok(out)
}

/// Result type of `nn.reshape {shape}`: the shape must be static and keep
/// the element count.
pub fn infer_reshape(x: &Type, shape: &[i64]) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    if shape.iter().any(|&d| d < 0) {
        return Err(shape_err!(
            "'shape' must be static and non-negative, but is [{}]",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let (n_in, n_out) = (product(s)?, product(shape)?);
    if n_in != DYNAMIC && n_in != n_out {
        return Err(shape_err!(
            "cannot reshape [{}] ({n_in} elements) to [{}] ({n_out} elements)",
            shape_str(s),
            shape_str(shape)
        ));
    }
    Ok(tensor(shape, e))
}

/// Checks and normalises a transpose permutation (default: reversed axes).
pub fn transpose_perm(rank: usize, perm: Option<&[i64]>) -> InferResult<Vec<usize>> {
    let Some(perm) = perm else {
        return Ok((0..rank).rev().collect());
    };
    if perm.len() != rank {
        return Err(shape_err!(
            "'perm' has {} entries, but the operand has rank {rank}",
            perm.len()
        ));
    }
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(rank);
    for &p in perm {
        if p < 0 || p as usize >= rank || seen[p as usize] {
            return Err(shape_err!(
                "'perm' {perm:?} is not a permutation of 0..{rank}"
            ));
        }
        seen[p as usize] = true;
        out.push(p as usize);
    }
    Ok(out)
}

/// Result type of `nn.transpose {perm}`: `result[i] = operand[perm[i]]`.
pub fn infer_transpose(x: &Type, perm: Option<&[i64]>) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let p = transpose_perm(s.len(), perm)?;
    let shape: Vec<i64> = p.iter().map(|&i| s[i]).collect();
    Ok(tensor(&shape, e))
}

/// Result type of `nn.concat {axis}`.
pub fn infer_concat(inputs: &[&Type], axis: i64) -> InferResult<Type> {
    let Some(first) = inputs.first() else {
        return Err(ShapeError::invalid("requires at least one operand"));
    };
    let (s0, e0) = ranked(first, "operand #0")?;
    let a = normalize_axis(axis, s0.len())?;
    let mut shape = s0.to_vec();
    for (i, t) in inputs.iter().enumerate().skip(1) {
        let (s, e) = ranked(t, &format!("operand #{i}"))?;
        if e != e0 {
            return Err(shape_err!(
                "operand #{i} has element type '{e}', but operand #0 has '{e0}'"
            ));
        }
        if s.len() != s0.len() {
            return Err(shape_err!(
                "operand #{i} has rank {}, but operand #0 has rank {}",
                s.len(),
                s0.len()
            ));
        }
        for d in 0..s.len() {
            if d == a {
                shape[d] = if shape[d] == DYNAMIC || s[d] == DYNAMIC {
                    DYNAMIC
                } else {
                    shape[d].checked_add(s[d]).ok_or_else(|| {
                        shape_err!("the concatenated axis {a} is longer than 64 bits can count")
                    })?
                };
            } else if s[d] != s0[d] && s[d] != DYNAMIC && s0[d] != DYNAMIC {
                return Err(shape_err!(
                    "operand #{i} has shape [{}], which differs from [{}] outside axis {a}",
                    shape_str(s),
                    shape_str(s0)
                ));
            }
        }
    }
    Ok(tensor(&shape, e0))
}

/// Result types of `nn.split {axis, sizes}`.
pub fn infer_split(x: &Type, axis: i64, sizes: &[i64]) -> InferResult<Vec<Type>> {
    let (s, e) = ranked(x, "operand")?;
    let a = normalize_axis(axis, s.len())?;
    if sizes.is_empty() || sizes.iter().any(|&n| n < 0) {
        return Err(shape_err!(
            "'sizes' must be non-empty and non-negative, but is {sizes:?}"
        ));
    }
    let total = sizes
        .iter()
        .try_fold(0i64, |acc, &n| acc.checked_add(n))
        .ok_or_else(|| shape_err!("'sizes' {sizes:?} sum past 64 bits"))?;
    if s[a] != DYNAMIC && total != s[a] {
        return Err(shape_err!(
            "'sizes' {sizes:?} sum to {total}, but axis {a} has size {}",
            s[a]
        ));
    }
    Ok(sizes
        .iter()
        .map(|&n| {
            let mut shape = s.to_vec();
            shape[a] = n;
            tensor(&shape, e)
        })
        .collect())
}

/// Attributes of `nn.slice` (ONNX `Slice` with constant inputs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceParams {
    /// Start per sliced axis (negative: from the end; clamped).
    pub starts: Vec<i64>,
    /// End (exclusive) per sliced axis (negative: from the end; clamped).
    pub ends: Vec<i64>,
    /// The sliced axes (default: `0..starts.len()`).
    pub axes: Option<Vec<i64>>,
    /// Steps (default: all 1; negative steps walk backwards).
    pub steps: Option<Vec<i64>>,
}

impl SliceParams {
    /// Reads the attributes of a `nn.slice` op.
    pub fn of(ctx: &Context, op: OpId) -> SliceParams {
        SliceParams {
            starts: attr_i64_list(ctx, op, "starts").unwrap_or_default(),
            ends: attr_i64_list(ctx, op, "ends").unwrap_or_default(),
            axes: attr_i64_list(ctx, op, "axes"),
            steps: attr_i64_list(ctx, op, "steps"),
        }
    }
    /// The attributes of the op.
    pub fn attributes(&self) -> Vec<(&'static str, Attribute)> {
        let mut v = vec![
            ("starts", Attribute::dense_i64_array(&self.starts)),
            ("ends", Attribute::dense_i64_array(&self.ends)),
        ];
        if let Some(a) = &self.axes {
            v.push(("axes", Attribute::dense_i64_array(a)));
        }
        if let Some(s) = &self.steps {
            v.push(("steps", Attribute::dense_i64_array(s)));
        }
        v
    }
}

/// One resolved slice dimension: elements `start, start + step, ...` (`count` of them).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SliceRange {
    /// First index.
    pub start: i64,
    /// Stride (nonzero).
    pub step: i64,
    /// Number of elements (`DYNAMIC` if the dimension is dynamic).
    pub count: i64,
}

/// Resolves a slice against `shape` with ONNX clamping, one range per dimension.
pub fn slice_ranges(shape: &[i64], p: &SliceParams) -> InferResult<Vec<SliceRange>> {
    let n = p.starts.len();
    if p.ends.len() != n {
        return Err(shape_err!(
            "'starts' has {n} entries, but 'ends' has {}",
            p.ends.len()
        ));
    }
    let axes: Vec<i64> = p.axes.clone().unwrap_or_else(|| (0..n as i64).collect());
    let steps: Vec<i64> = p.steps.clone().unwrap_or_else(|| vec![1; n]);
    if axes.len() != n || steps.len() != n {
        return Err(shape_err!(
            "'starts', 'ends', 'axes' and 'steps' must have the same length, but have {n}, {n}, {} and {}",
            axes.len(),
            steps.len()
        ));
    }
    let axes = normalize_axes(&axes, shape.len())?;
    let mut ranges: Vec<SliceRange> = shape
        .iter()
        .map(|&d| SliceRange {
            start: 0,
            step: 1,
            count: d,
        })
        .collect();
    for i in 0..n {
        let (a, step) = (axes[i], steps[i]);
        if step == 0 {
            return Err(shape_err!("slice step for axis {a} is zero"));
        }
        let d = shape[a];
        if d == DYNAMIC {
            ranges[a] = SliceRange {
                start: p.starts[i],
                step,
                count: DYNAMIC,
            };
            continue;
        }
        let resolve = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (mut s, mut e) = (resolve(p.starts[i]), resolve(p.ends[i]));
        let count = if step > 0 {
            s = s.clamp(0, d);
            e = e.clamp(0, d);
            if e > s {
                // (e - s - 1) / step + 1 cannot overflow, whatever the step.
                (e - s - 1) / step + 1
            } else {
                0
            }
        } else {
            s = s.clamp(0, (d - 1).max(0));
            e = e.clamp(-1, d - 1);
            if s > e {
                ((s - e - 1) as u64 / step.unsigned_abs()) as i64 + 1
            } else {
                0
            }
        };
        ranges[a] = SliceRange {
            start: s,
            step,
            count,
        };
    }
    Ok(ranges)
}

/// Result type of `nn.slice`.
pub fn infer_slice(x: &Type, p: &SliceParams) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let shape: Vec<i64> = slice_ranges(s, p)?.iter().map(|r| r.count).collect();
    Ok(tensor(&shape, e))
}

/// Result type of `nn.gather {axis}`: `data[:axis] + indices.shape + data[axis+1:]`.
pub fn infer_gather(data: &Type, indices: &Type, axis: i64) -> InferResult<Type> {
    let (s, e) = ranked(data, "data")?;
    let (si, ei) = ranked(indices, "indices")?;
    if !ei.is_integer() {
        return Err(shape_err!(
            "indices must be integers, but have element type '{ei}'"
        ));
    }
    if s.is_empty() {
        return Err(ShapeError::invalid("data must have rank >= 1"));
    }
    let a = normalize_axis(axis, s.len())?;
    let mut shape = s[..a].to_vec();
    shape.extend_from_slice(si);
    shape.extend_from_slice(&s[a + 1..]);
    Ok(tensor(&shape, e))
}

/// Result type of `nn.squeeze {axes}`; without axes every static 1 is removed.
pub fn infer_squeeze(x: &Type, axes: Option<&[i64]>) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let remove: Vec<usize> = match axes {
        Some(axes) => {
            let axes = normalize_axes(axes, s.len())?;
            for &a in &axes {
                if s[a] != 1 && s[a] != DYNAMIC {
                    return Err(shape_err!("cannot squeeze axis {a} of size {}", s[a]));
                }
            }
            axes
        }
        None => (0..s.len()).filter(|&a| s[a] == 1).collect(),
    };
    let shape: Vec<i64> = (0..s.len())
        .filter(|a| !remove.contains(a))
        .map(|a| s[a])
        .collect();
    Ok(tensor(&shape, e))
}

/// Result type of `nn.unsqueeze {axes}` (axes index the result).
pub fn infer_unsqueeze(x: &Type, axes: &[i64]) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let rank = s.len() + axes.len();
    let axes = normalize_axes(axes, rank)?;
    let mut src = s.iter();
    let shape: Vec<i64> = (0..rank)
        .map(|a| {
            if axes.contains(&a) {
                1
            } else {
                *src.next().expect("rank accounts for every axis")
            }
        })
        .collect();
    Ok(tensor(&shape, e))
}

/// Result type of `nn.expand {shape}`: the broadcast of the operand shape and
/// `shape` (ONNX `Expand` broadcasts both ways).
pub fn infer_expand(x: &Type, shape: &[i64]) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    if shape.iter().any(|&d| d < 0) {
        return Err(shape_err!("'shape' must be non-negative, but is {shape:?}"));
    }
    Ok(tensor(&broadcast_shapes(s, shape)?, e))
}

/// Result type of `nn.tile {repeats}`.
pub fn infer_tile(x: &Type, repeats: &[i64]) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    if repeats.len() != s.len() {
        return Err(shape_err!(
            "'repeats' has {} entries, but the operand has rank {}",
            repeats.len(),
            s.len()
        ));
    }
    if repeats.iter().any(|&r| r < 0) {
        return Err(shape_err!(
            "'repeats' must be non-negative, but is {repeats:?}"
        ));
    }
    let shape: Vec<i64> = s
        .iter()
        .zip(repeats)
        .map(|(&d, &r)| match d {
            DYNAMIC => Some(DYNAMIC),
            d => d.checked_mul(r),
        })
        .collect::<Option<_>>()
        .ok_or_else(|| shape_err!("tiling [{}] by {repeats:?} overflows 64 bits", shape_str(s)))?;
    Ok(tensor(&shape, e))
}

/// Result type of `nn.flatten {axis}`: `[prod(d[..axis]), prod(d[axis..])]`,
/// with `axis` in `[-rank, rank]`.
pub fn infer_flatten(x: &Type, axis: i64) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let r = s.len() as i64;
    if axis < -r || axis > r {
        return Err(shape_err!(
            "axis {axis} is out of range for rank {r} (expected [{}, {r}])",
            -r
        ));
    }
    let a = if axis < 0 { axis + r } else { axis } as usize;
    Ok(tensor(&[product(&s[..a])?, product(&s[a..])?], e))
}

/// Result type of `nn.pad {pads}` (`pads = [begin_0, ..., begin_n, end_0, ...,
/// end_n]`; negative values crop).
pub fn infer_pad(x: &Type, pads: &[i64]) -> InferResult<Type> {
    let (s, e) = ranked(x, "operand")?;
    let r = s.len();
    if pads.len() != 2 * r {
        return Err(shape_err!(
            "'pads' has {} entries, but a rank-{r} operand needs {}",
            pads.len(),
            2 * r
        ));
    }
    let mut shape = Vec::with_capacity(r);
    for (i, &d) in s.iter().enumerate() {
        if d == DYNAMIC {
            shape.push(DYNAMIC);
            continue;
        }
        let n = d
            .checked_add(pads[i])
            .and_then(|n| n.checked_add(pads[i + r]))
            .ok_or_else(|| shape_err!("padding axis {i} overflows 64 bits"))?;
        if n < 0 {
            return Err(shape_err!(
                "padding axis {i} of size {d} by {} and {} leaves a negative size",
                pads[i],
                pads[i + r]
            ));
        }
        shape.push(n);
    }
    Ok(tensor(&shape, e))
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let t = value_types(ctx, ctx.operands(op));
    let list = |n: &str| attr_i64_list(ctx, op, n);
    let r = match ctx.name_str(op) {
        RESHAPE => infer_reshape(&t[0], &list("shape")?),
        TRANSPOSE => infer_transpose(&t[0], list("perm").as_deref()),
        CONCAT => infer_concat(&t.iter().collect::<Vec<_>>(), attr_i64(ctx, op, "axis", 0)),
        SPLIT => {
            return Some(infer_split(
                &t[0],
                attr_i64(ctx, op, "axis", 0),
                &list("sizes")?,
            ))
        }
        SLICE => infer_slice(&t[0], &SliceParams::of(ctx, op)),
        GATHER => infer_gather(&t[0], &t[1], attr_i64(ctx, op, "axis", 0)),
        SQUEEZE => infer_squeeze(&t[0], list("axes").as_deref()),
        UNSQUEEZE => infer_unsqueeze(&t[0], &list("axes")?),
        EXPAND => infer_expand(&t[0], &list("shape")?),
        TILE => infer_tile(&t[0], &list("repeats")?),
        FLATTEN => infer_flatten(&t[0], attr_i64(ctx, op, "axis", 1)),
        PAD => {
            let mode = attr_str(ctx, op, "mode", "constant");
            if mode != "constant" {
                Err(shape_err!(
                    "'mode' \"{mode}\" is not supported (only \"constant\")"
                ))
            } else {
                infer_pad(&t[0], &list("pads")?)
            }
        }
        IDENTITY => ranked(&t[0], "operand").map(|_| t[0].clone()),
        _ => return None,
    };
    Some(r.map(|ty| vec![ty]))
}

// ----- folding ----------------------------------------------------------------

fn const_operand(consts: &[Option<Attribute>], i: usize) -> Option<DenseElements> {
    dense_data(consts.get(i)?.as_ref()?)
}

/// Folds a single-result op whose result element `i` is operand-0 element
/// `map(i)`, or whose result is its operand when the types agree and `same`.
fn fold_mapped(
    ctx: &Context,
    op: OpId,
    consts: &[Option<Attribute>],
    same_when_types_match: bool,
    map: impl Fn(&[i64], &[i64], usize) -> usize,
) -> Option<Vec<FoldResult>> {
    if same_when_types_match {
        if let Some(same) = unchanged_operand(ctx, op) {
            return Some(same);
        }
    }
    let out = fold_target(ctx, op, 0)?;
    let d = const_operand(consts, 0)?;
    let in_shape = d.ty.shape()?.to_vec();
    let out_shape = out.shape()?.to_vec();
    let attr = rearrange(&d, &out, |i| map(&in_shape, &out_shape, i))?;
    Some(vec![FoldResult::Constant(attr)])
}

fn fold_reshape_like(
    ctx: &Context,
    op: OpId,
    consts: &[Option<Attribute>],
) -> Option<Vec<FoldResult>> {
    fold_mapped(ctx, op, consts, true, |_, _, i| i)
}

fn fold_transpose(
    ctx: &Context,
    op: OpId,
    consts: &[Option<Attribute>],
) -> Option<Vec<FoldResult>> {
    let rank = ctx.value_type(ctx.operand(op, 0)).shape()?.len();
    let perm = transpose_perm(rank, attr_i64_list(ctx, op, "perm").as_deref()).ok()?;
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Some(vec![FoldResult::Value(ctx.operand(op, 0))]);
    }
    fold_mapped(ctx, op, consts, false, |ins, outs, i| {
        let j = unravel(i, outs);
        let st = strides(ins);
        j.iter().enumerate().map(|(d, &v)| v * st[perm[d]]).sum()
    })
}

fn fold_expand(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    fold_mapped(ctx, op, consts, true, |ins, outs, i| {
        broadcast_source(i, outs, ins, &strides(ins))
    })
}

fn fold_tile(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    fold_mapped(ctx, op, consts, true, |ins, outs, i| {
        let j = unravel(i, outs);
        let st = strides(ins);
        j.iter()
            .enumerate()
            .map(|(d, &v)| (v % ins[d].max(1) as usize) * st[d])
            .sum()
    })
}

fn fold_slice(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let p = SliceParams::of(ctx, op);
    let in_shape = ctx.value_type(ctx.operand(op, 0)).shape()?.to_vec();
    let ranges = slice_ranges(&in_shape, &p).ok()?;
    let forward = ranges.iter().all(|r| r.step > 0);
    fold_mapped(ctx, op, consts, forward, |ins, outs, i| {
        let j = unravel(i, outs);
        let st = strides(ins);
        j.iter()
            .enumerate()
            .map(|(d, &v)| (ranges[d].start + v as i64 * ranges[d].step) as usize * st[d])
            .sum()
    })
}

fn fold_gather(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    fold_target(ctx, op, 0)?;
    let d = const_operand(consts, 0)?;
    let idx = const_operand(consts, 1)?;
    gather_constant(ctx, op, &d, &idx).map(|attr| vec![FoldResult::Constant(attr)])
}

/// The result of `nn.gather` `op` on constant data `d` and indices `idx`,
/// whatever its size (canonicalize's fold caps it): `None` for an index
/// out of range (an error at run time, so the op is left alone) or a
/// shape that is not static. A lowering that must know a gather's values
/// (a position table) evaluates it through this.
pub fn gather_constant(
    ctx: &Context,
    op: OpId,
    d: &DenseElements,
    idx: &DenseElements,
) -> Option<Attribute> {
    let out = ctx.value_type(ctx.result(op, 0)).clone();
    let in_shape = d.ty.shape()?.to_vec();
    let idx_rank = idx.ty.shape()?.len();
    let a = normalize_axis(attr_i64(ctx, op, "axis", 0), in_shape.len()).ok()?;
    let dim = in_shape[a];
    // Resolve (and bounds-check) the indices first.
    let resolved: Option<Vec<usize>> = (0..idx.len())
        .map(|k| {
            let v = idx.int_at(k) as i64;
            let v = if v < 0 { v + dim } else { v };
            (0..dim).contains(&v).then_some(v as usize)
        })
        .collect();
    let resolved = resolved?;
    let out_shape = out.shape()?.to_vec();
    let st = strides(&in_shape);
    let idx_strides = strides(idx.ty.shape()?);
    rearrange(d, &out, |i| {
        let j = unravel(i, &out_shape);
        let mut src = 0;
        for (dd, &v) in j[..a].iter().enumerate() {
            src += v * st[dd];
        }
        let k: usize = j[a..a + idx_rank]
            .iter()
            .zip(&idx_strides)
            .map(|(&v, &s)| v * s)
            .sum();
        src += resolved[k] * st[a];
        for (off, &v) in j[a + idx_rank..].iter().enumerate() {
            src += v * st[a + 1 + off];
        }
        src
    })
}

fn fold_concat(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    if ctx.operands(op).len() == 1 {
        return Some(vec![FoldResult::Value(ctx.operand(op, 0))]);
    }
    let out = fold_target(ctx, op, 0)?;
    let inputs: Option<Vec<DenseElements>> = (0..consts.len())
        .map(|i| const_operand(consts, i))
        .collect();
    let inputs = inputs?;
    let out_shape = out.shape()?;
    let a = normalize_axis(attr_i64(ctx, op, "axis", 0), out_shape.len()).ok()?;
    let outer: usize = out_shape[..a].iter().map(|&d| d as usize).product();
    let inner: usize = out_shape[a + 1..].iter().map(|&d| d as usize).product();
    let size = DenseElements::element_size(out.element_type()?)?;
    let mut bytes = Vec::with_capacity(out.num_elements()? as usize * size);
    for o in 0..outer {
        for d in &inputs {
            let chunk = d.ty.shape()?[a] as usize * inner;
            for k in 0..chunk {
                bytes.extend_from_slice(d.element_bytes(o * chunk + k));
            }
        }
    }
    Some(vec![FoldResult::Constant(from_element_bytes(
        &out, bytes, size,
    )?)])
}

fn fold_split(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let d = const_operand(consts, 0)?;
    let in_shape = d.ty.shape()?.to_vec();
    let a = normalize_axis(attr_i64(ctx, op, "axis", 0), in_shape.len()).ok()?;
    let st = strides(&in_shape);
    let mut offset = 0usize;
    let mut results = Vec::new();
    for r in 0..ctx.results(op).len() {
        let out = fold_target(ctx, op, r)?;
        let out_shape = out.shape()?.to_vec();
        let base = offset;
        let attr = rearrange(&d, &out, |i| {
            let mut j = unravel(i, &out_shape);
            j[a] += base;
            j.iter().zip(&st).map(|(&v, &s)| v * s).sum()
        })?;
        offset += out_shape[a] as usize;
        results.push(FoldResult::Constant(attr));
    }
    Some(results)
}

fn fold_pad(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let pads = attr_i64_list(ctx, op, "pads")?;
    let x = ctx.operand(op, 0);
    if pads.iter().all(|&p| p == 0) {
        return Some(vec![FoldResult::Value(x)]);
    }
    let out = fold_target(ctx, op, 0)?;
    let d = const_operand(consts, 0)?;
    let in_shape = d.ty.shape()?.to_vec();
    let r = in_shape.len();
    let elem = out.element_type()?.clone();
    let size = DenseElements::element_size(&elem)?;
    let value = attr_f32(ctx, op, "value", 0.0) as f64;
    let mut pad_bytes = Vec::with_capacity(size);
    match elem.float_kind() {
        Some(k) => float_format::push_bytes(k, value, &mut pad_bytes),
        None => pad_bytes.extend_from_slice(
            &ipuc_ir::attributes::normalize_int(value as i128, &elem).to_le_bytes()[..size],
        ),
    }
    let out_shape = out.shape()?.to_vec();
    let st = strides(&in_shape);
    let n = out.num_elements()? as usize;
    let mut bytes = Vec::with_capacity(n * size);
    for i in 0..n {
        let j = unravel(i, &out_shape);
        let mut src = Some(0usize);
        for dd in 0..r {
            let v = j[dd] as i64 - pads[dd];
            if v < 0 || v >= in_shape[dd] {
                src = None;
                break;
            }
            src = src.map(|s| s + v as usize * st[dd]);
        }
        match src {
            Some(s) => bytes.extend_from_slice(d.element_bytes(s)),
            None => bytes.extend_from_slice(&pad_bytes),
        }
    }
    Some(vec![FoldResult::Constant(from_element_bytes(
        &out, bytes, size,
    )?)])
}

fn fold_identity(ctx: &Context, op: OpId, _: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    Some(vec![FoldResult::Value(ctx.operand(op, 0))])
}

// ----- registration -------------------------------------------------------------

/// Reshapes, squeezes, flattens and splits keep the operand's elements in
/// row-major order: their results are views of its memory.
struct View;

impl ViewLike for View {}

pub(crate) fn register(d: Dialect) -> Dialect {
    let unary = |name: &'static str, summary: &'static str| {
        nn_op(name, summary)
            .operands(&[one("operand", TENSOR)])
            .results(&[one("result", TENSOR)])
    };
    d.op(unary(RESHAPE, "Reshape to the static shape 'shape'")
        .attribute(i64_array_attr("shape", false))
        .folder(fold_reshape_like)
        .implement::<dyn ViewLike>(Box::new(View)))
        .op(unary(
            TRANSPOSE,
            "Permute dimensions: result[i] = operand[perm[i]] (default: reverse)",
        )
        .attribute(i64_array_attr("perm", true))
        .folder(fold_transpose))
        .op(nn_op(CONCAT, "Concatenate along 'axis'")
            .attribute(i64_attr("axis", false))
            .operands(&[variadic("inputs", TENSOR)])
            .results(&[one("result", TENSOR)])
            .folder(fold_concat))
        .op(OpDefinition::new(SPLIT)
            .summary("Split along 'axis' into pieces of 'sizes'")
            .traits(Traits::PURE)
            .attribute(i64_attr("axis", true))
            .attribute(i64_array_attr("sizes", false))
            .operands(&[one("operand", TENSOR)])
            .results(&[variadic("outputs", TENSOR)])
            .verifier(super::verify_op)
            .folder(fold_split)
            .implement::<dyn ViewLike>(Box::new(View))
            // Results print as function results, `(T, U)`; see `custom_format`.
            .custom_assembly_format(print_standard, parse_standard))
        .op(unary(
            SLICE,
            "Strided slice with ONNX clamping (starts, ends, axes, steps)",
        )
        .attribute(i64_array_attr("starts", false))
        .attribute(i64_array_attr("ends", false))
        .attribute(i64_array_attr("axes", true))
        .attribute(i64_array_attr("steps", true))
        .folder(fold_slice))
        .op(nn_op(
            GATHER,
            "Gather slices of 'data' along 'axis' at 'indices' (ONNX Gather)",
        )
        .attribute(i64_attr("axis", true))
        .operands(&[one("data", TENSOR), one("indices", INT_TENSOR)])
        .results(&[one("result", TENSOR)])
        .folder(fold_gather))
        .op(
            unary(SQUEEZE, "Remove size-1 dimensions ('axes', default: all)")
                .attribute(i64_array_attr("axes", true))
                .folder(fold_reshape_like)
                .implement::<dyn ViewLike>(Box::new(View)),
        )
        .op(unary(
            UNSQUEEZE,
            "Insert size-1 dimensions at 'axes' (of the result)",
        )
        .attribute(i64_array_attr("axes", false))
        .folder(fold_reshape_like)
        .implement::<dyn ViewLike>(Box::new(View)))
        .op(unary(EXPAND, "Broadcast to 'shape' (ONNX Expand)")
            .attribute(i64_array_attr("shape", false))
            .folder(fold_expand))
        .op(
            unary(TILE, "Repeat the operand 'repeats' times along each axis")
                .attribute(i64_array_attr("repeats", false))
                .folder(fold_tile),
        )
        .op(unary(FLATTEN, "Flatten to 2-D around 'axis' (default 1)")
            .attribute(i64_attr("axis", true))
            .folder(fold_reshape_like)
            .implement::<dyn ViewLike>(Box::new(View)))
        .op(
            unary(PAD, "Pad with a constant (pads = [begins..., ends...])")
                .attribute(i64_array_attr("pads", false))
                .attribute(string_attr("mode", true))
                .attribute(f32_attr("value", true))
                .folder(fold_pad),
        )
        .op(unary(IDENTITY, "The operand, unchanged")
            .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .folder(fold_identity)
            .implement::<dyn ViewLike>(Box::new(View)))
}

// ----- typed wrappers --------------------------------------------------------------

macro_rules! single_operand {
    ($t:ident) => {
        impl $t {
            /// The operand.
            pub fn input(self, ctx: &Context) -> Value {
                ctx.operand(self.0, 0)
            }
        }
    };
}

op_wrapper!(
    /// `nn.reshape {shape}`.
    ReshapeOp,
    RESHAPE
);
single_operand!(ReshapeOp);
impl ReshapeOp {
    /// The result shape.
    pub fn shape(self, ctx: &Context) -> Vec<i64> {
        attr_i64_list(ctx, self.0, "shape").unwrap_or_default()
    }
}
inferred_builder!(ReshapeOp {
    /// A state reshaping `x` to the static `shape`.
    build(x; shape: &[i64] => Attribute::dense_i64_array) = infer_reshape(x, shape)
});

op_wrapper!(
    /// `nn.transpose {perm}`.
    TransposeOp,
    TRANSPOSE
);
single_operand!(TransposeOp);
impl TransposeOp {
    /// The permutation (resolved default).
    pub fn perm(self, ctx: &Context) -> Vec<usize> {
        let rank = rank_of(ctx, self.input(ctx));
        transpose_perm(rank, attr_i64_list(ctx, self.0, "perm").as_deref()).unwrap_or_default()
    }
}
inferred_builder!(TransposeOp {
    /// A state transposing `x` by `perm`.
    build(x; perm: &[i64] => Attribute::dense_i64_array) = infer_transpose(x, Some(perm))
});

op_wrapper!(
    /// `nn.concat {axis}`.
    ConcatOp,
    CONCAT
);
impl ConcatOp {
    /// The inputs.
    pub fn inputs(self, ctx: &Context) -> Vec<Value> {
        ctx.operands(self.0).to_vec()
    }
    /// The concatenation axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.result(ctx), 0)
    }
    /// A state concatenating `inputs` along `axis`.
    pub fn build(
        ctx: &Context,
        inputs: &[Value],
        axis: i64,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let tys = value_types(ctx, inputs);
        let ty = infer_concat(&tys.iter().collect::<Vec<_>>(), axis);
        build_inferred(
            ctx,
            CONCAT,
            inputs,
            ty,
            vec![("axis", Attribute::i64(axis))],
            loc,
        )
    }
}

op_wrapper!(
    /// `nn.split {axis, sizes}`.
    SplitOp,
    SPLIT
);
single_operand!(SplitOp);
impl SplitOp {
    /// The split axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.input(ctx), 0)
    }
    /// The piece sizes.
    pub fn sizes(self, ctx: &Context) -> Vec<i64> {
        attr_i64_list(ctx, self.0, "sizes").unwrap_or_default()
    }
    /// The pieces.
    pub fn outputs(self, ctx: &Context) -> Vec<Value> {
        ctx.results(self.0).to_vec()
    }
    /// A state splitting `x` along `axis` into `sizes`.
    pub fn build(
        ctx: &Context,
        x: Value,
        axis: i64,
        sizes: &[i64],
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let tys = infer_split(ctx.value_type(x), axis, sizes).map_err(|m| m.at(SPLIT, &loc))?;
        let attrs = vec![
            ("axis", Attribute::i64(axis)),
            ("sizes", Attribute::dense_i64_array(sizes)),
        ];
        Ok(make_state(ctx, SPLIT, &[x], tys, attrs, loc))
    }
}

op_wrapper!(
    /// `nn.slice {starts, ends, axes, steps}`.
    SliceOp,
    SLICE
);
single_operand!(SliceOp);
impl SliceOp {
    /// The attributes.
    pub fn params(self, ctx: &Context) -> SliceParams {
        SliceParams::of(ctx, self.0)
    }
    /// The resolved ranges, one per dimension (of a verified op).
    pub fn ranges(self, ctx: &Context) -> Vec<SliceRange> {
        let shape = ctx
            .value_type(self.input(ctx))
            .shape()
            .unwrap_or(&[])
            .to_vec();
        slice_ranges(&shape, &self.params(ctx)).unwrap_or_default()
    }
    /// A state slicing `x`.
    pub fn build(
        ctx: &Context,
        x: Value,
        params: &SliceParams,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_slice(ctx.value_type(x), params);
        build_inferred(ctx, SLICE, &[x], ty, params.attributes(), loc)
    }
}

op_wrapper!(
    /// `nn.gather(data, indices) {axis}`.
    GatherOp,
    GATHER
);
operand_accessors!(GatherOp {
    /// The gathered tensor.
    data = 0,
    /// The integer indices (negative count from the end).
    indices = 1,
});

impl GatherOp {
    /// The gather axis (normalised).
    pub fn axis(self, ctx: &Context) -> usize {
        axis_attr(ctx, self.0, self.data(ctx), 0)
    }
}
inferred_builder!(GatherOp {
    /// A state gathering `data[indices]` along `axis`.
    build(data, indices; axis: i64 => Attribute::i64) = infer_gather(data, indices, axis)
});

op_wrapper!(
    /// `nn.squeeze {axes}`.
    SqueezeOp,
    SQUEEZE
);
single_operand!(SqueezeOp);
impl SqueezeOp {
    /// A state squeezing `axes` (all size-1 axes when `None`).
    pub fn build(
        ctx: &Context,
        x: Value,
        axes: Option<&[i64]>,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_squeeze(ctx.value_type(x), axes);
        let attrs = axes
            .map(|a| ("axes", Attribute::dense_i64_array(a)))
            .into_iter()
            .collect();
        build_inferred(ctx, SQUEEZE, &[x], ty, attrs, loc)
    }
}

op_wrapper!(
    /// `nn.unsqueeze {axes}`.
    UnsqueezeOp,
    UNSQUEEZE
);
single_operand!(UnsqueezeOp);
inferred_builder!(UnsqueezeOp {
    /// A state inserting size-1 axes at `axes` (of the result).
    build(x; axes: &[i64] => Attribute::dense_i64_array) = infer_unsqueeze(x, axes)
});

op_wrapper!(
    /// `nn.expand {shape}`.
    ExpandOp,
    EXPAND
);
single_operand!(ExpandOp);
inferred_builder!(ExpandOp {
    /// A state broadcasting `x` with `shape`.
    build(x; shape: &[i64] => Attribute::dense_i64_array) = infer_expand(x, shape)
});

op_wrapper!(
    /// `nn.tile {repeats}`.
    TileOp,
    TILE
);
single_operand!(TileOp);
impl TileOp {
    /// The repeat counts.
    pub fn repeats(self, ctx: &Context) -> Vec<i64> {
        attr_i64_list(ctx, self.0, "repeats").unwrap_or_default()
    }
}
inferred_builder!(TileOp {
    /// A state tiling `x`.
    build(x; repeats: &[i64] => Attribute::dense_i64_array) = infer_tile(x, repeats)
});

op_wrapper!(
    /// `nn.flatten {axis}`.
    FlattenOp,
    FLATTEN
);
single_operand!(FlattenOp);
inferred_builder!(FlattenOp {
    /// A state flattening `x` around `axis`.
    build(x; axis: i64 => Attribute::i64) = infer_flatten(x, axis)
});

op_wrapper!(
    /// `nn.pad {pads, mode = "constant", value}`.
    PadOp,
    PAD
);
single_operand!(PadOp);
impl PadOp {
    /// `[begin_0, ..., begin_n, end_0, ..., end_n]`.
    pub fn pads(self, ctx: &Context) -> Vec<i64> {
        attr_i64_list(ctx, self.0, "pads").unwrap_or_default()
    }
    /// The fill value (default 0).
    pub fn value(self, ctx: &Context) -> f32 {
        attr_f32(ctx, self.0, "value", 0.0)
    }
    /// A state padding `x` with `value`.
    pub fn build(
        ctx: &Context,
        x: Value,
        pads: &[i64],
        value: f32,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_pad(ctx.value_type(x), pads);
        let mut attrs = vec![("pads", Attribute::dense_i64_array(pads))];
        if value != 0.0 {
            attrs.push(("value", f32_attribute(value)));
        }
        build_inferred(ctx, PAD, &[x], ty, attrs, loc)
    }
}

op_wrapper!(
    /// `nn.identity`.
    IdentityOp,
    IDENTITY
);
single_operand!(IdentityOp);
impl IdentityOp {
    /// A state copying `x`.
    pub fn build(ctx: &Context, x: Value, loc: Location) -> Result<OperationState, Diagnostic> {
        let ty = ctx.value_type(x).clone();
        Ok(make_state(ctx, IDENTITY, &[x], vec![ty], vec![], loc))
    }
}
