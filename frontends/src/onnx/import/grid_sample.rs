//! `GridSample` (2-D and N-D), built of `nn` ops as the ONNX reference
//! computes it (`onnx/reference/ops/op_grid_sample.py`): each grid value is
//! denormalized to an input coordinate per spatial axis (rounded half to
//! even for `nearest`; moved inside by `border` or `reflection` when
//! outside), the `nearest`/`linear`/`cubic` neighbours along each axis get
//! their weights, and every combination of neighbours is one
//! `nn.gather_elements` on the flattened spatial input (indices outside read
//! zero, the edge or the reflection as `padding_mode` says), weighted and
//! summed.
//!
//! `AffineGrid` makes such grids: the constant normalized coordinates of
//! every output position (with a trailing 1) times each batch's `theta`,
//! one batched `nn.matmul`.

use ipuc_dialects::nn::{BinaryKind, CompareKind, GatherElementsOp, UnaryKind};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["GridSample", "AffineGrid"];

#[derive(Copy, Clone, PartialEq, Eq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    if node.op_type == "AffineGrid" {
        return affine_grid(&mut b).map(|v| vec![v]);
    }
    grid_sample(&mut b).map(|v| vec![v])
}

/// `v` reflected into `[lo, hi]` as the reference's `_gs_reflect`.
fn reflect(b: &mut Body<'_, '_, '_>, v: Value, lo: f64, hi: f64) -> Built {
    let (lo_c, hi_c) = (b.scalar_like(v, lo)?, b.scalar_like(v, hi)?);
    let range = b.scalar_like(v, hi - lo)?;
    let two = b.scalar_like(v, 2.0)?;
    let zero = b.scalar_like(v, 0.0)?;
    // Distance past the bound, folded by whole ranges; odd folds mirror.
    let fold = |b: &mut Body<'_, '_, '_>, dx: Value| -> Result<(Value, Value), ImportError> {
        let q = b.binary(BinaryKind::Div, dx, range)?;
        let n = b.unary(UnaryKind::Floor, q)?;
        let whole = b.binary(BinaryKind::Mul, n, range)?;
        let r = b.binary(BinaryKind::Sub, dx, whole)?;
        let parity = b.binary(BinaryKind::Mod, n, two)?;
        let even = b.compare(CompareKind::Equal, parity, zero)?;
        Ok((r, even))
    };
    let below_dx = b.binary(BinaryKind::Sub, lo_c, v)?;
    let (r, even) = fold(b, below_dx)?;
    let up = b.binary(BinaryKind::Add, lo_c, r)?;
    let down = b.binary(BinaryKind::Sub, hi_c, r)?;
    let from_below = b.select(even, up, down)?;
    let above_dx = b.binary(BinaryKind::Sub, v, hi_c)?;
    let (r, even) = fold(b, above_dx)?;
    let down = b.binary(BinaryKind::Sub, hi_c, r)?;
    let up = b.binary(BinaryKind::Add, lo_c, r)?;
    let from_above = b.select(even, down, up)?;
    let is_below = b.compare(CompareKind::Less, v, lo_c)?;
    let is_above = b.compare(CompareKind::Greater, v, hi_c)?;
    let inner = b.select(is_above, from_above, v)?;
    b.select(is_below, from_below, inner)
}

fn clamp(b: &mut Body<'_, '_, '_>, v: Value, lo: f64, hi: f64) -> Built {
    let (lo, hi) = (b.scalar_like(v, lo)?, b.scalar_like(v, hi)?);
    let v = b.binary(BinaryKind::Max, v, lo)?;
    b.binary(BinaryKind::Min, v, hi)
}

/// The cubic convolution weights (A = -0.75) of the four neighbours
/// `floor(x) - 1 ..= floor(x) + 2` at fraction `t`.
fn cubic_weights(b: &mut Body<'_, '_, '_>, t: Value) -> Result<Vec<Value>, ImportError> {
    let a = -0.75;
    let one = b.scalar_like(t, 1.0)?;
    let two = b.scalar_like(t, 2.0)?;
    let t1 = b.binary(BinaryKind::Add, t, one)?;
    let u = b.binary(BinaryKind::Sub, one, t)?;
    let u1 = b.binary(BinaryKind::Sub, two, t)?;
    // Outer: ((A s - 5A) s + 8A) s - 4A for s in 1..2; inner: ((A+2) s - (A+3)) s² + 1.
    let outer = |b: &mut Body<'_, '_, '_>, s: Value| -> Built {
        let c = |b: &mut Body<'_, '_, '_>, v: f64| b.scalar_like(s, v);
        let (ca, c5, c8, c4) = (c(b, a)?, c(b, 5.0 * a)?, c(b, 8.0 * a)?, c(b, 4.0 * a)?);
        let p = b.binary(BinaryKind::Mul, ca, s)?;
        let p = b.binary(BinaryKind::Sub, p, c5)?;
        let p = b.binary(BinaryKind::Mul, p, s)?;
        let p = b.binary(BinaryKind::Add, p, c8)?;
        let p = b.binary(BinaryKind::Mul, p, s)?;
        b.binary(BinaryKind::Sub, p, c4)
    };
    let inner = |b: &mut Body<'_, '_, '_>, s: Value| -> Built {
        let (c2, c3, c1) = (
            b.scalar_like(s, a + 2.0)?,
            b.scalar_like(s, a + 3.0)?,
            b.scalar_like(s, 1.0)?,
        );
        let p = b.binary(BinaryKind::Mul, c2, s)?;
        let p = b.binary(BinaryKind::Sub, p, c3)?;
        let p = b.binary(BinaryKind::Mul, p, s)?;
        let p = b.binary(BinaryKind::Mul, p, s)?;
        b.binary(BinaryKind::Add, p, c1)
    };
    Ok(vec![
        outer(b, t1)?,
        inner(b, t)?,
        inner(b, u)?,
        outer(b, u1)?,
    ])
}

fn grid_sample(b: &mut Body<'_, '_, '_>) -> Built {
    let (x, grid) = (b.input(0)?, b.input(1)?);
    let (xs, gs) = (b.shape(x), b.shape(grid));
    let nd = xs.len().saturating_sub(2);
    if nd == 0 || gs.len() != nd + 2 || gs[nd + 1] != nd as i64 || gs[0] != xs[0] {
        return Err(b.error(format!(
            "input {xs:?} and grid {gs:?} do not match ([N, C, spatial...] and [N, out..., {nd}])"
        )));
    }
    let (n, c) = (xs[0], xs[1]);
    let dims = &xs[2..];
    let spatial: i64 = dims.iter().product();
    let out: i64 = gs[1..nd + 1].iter().product();
    let align = b.node.int_attr("align_corners", 0)? != 0;
    let mode = match b.node.string_attr("mode", "linear")? {
        "linear" | "bilinear" => 1,
        "nearest" => 0,
        "cubic" | "bicubic" => 2,
        other => return Err(b.error(format!("`mode` \"{other}\" is not supported"))),
    };
    let padding = match b.node.string_attr("padding_mode", "zeros")? {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => return Err(b.error(format!("`padding_mode` \"{other}\" is not supported"))),
    };
    let elem = b.element(grid)?;
    let i64t = Type::i64();
    // Per spatial axis: the neighbours (index, weight), as [N, 1, out].
    let mut per_axis: Vec<Vec<(Value, Option<Value>)>> = Vec::new();
    for (i, &d) in dims.iter().enumerate() {
        let last = nd as i64 + 1;
        let comp = b.slice(grid, last, (nd - 1 - i) as i64, (nd - i) as i64)?;
        let g = b.reshape(comp, &[n, 1, out])?;
        let one = b.scalar_like(g, 1.0)?;
        let gp = b.binary(BinaryKind::Add, g, one)?;
        let df = d as f64;
        let mut v = if align {
            let s = b.scalar_like(g, (df - 1.0) / 2.0)?;
            b.binary(BinaryKind::Mul, gp, s)?
        } else {
            let s = b.scalar_like(g, df)?;
            let p = b.binary(BinaryKind::Mul, gp, s)?;
            let p = b.binary(BinaryKind::Sub, p, one)?;
            let half = b.scalar_like(g, 0.5)?;
            b.binary(BinaryKind::Mul, p, half)?
        };
        if mode == 0 {
            v = b.unary(UnaryKind::Round, v)?;
        }
        let (lo, hi) = if align {
            (0.0, df - 1.0)
        } else {
            (-0.5, df - 0.5)
        };
        v = match padding {
            Padding::Zeros => v,
            Padding::Border => {
                let (lo_c, hi_c) = (b.scalar_like(v, lo)?, b.scalar_like(v, hi)?);
                let below = b.compare(CompareKind::Less, v, lo_c)?;
                let above = b.compare(CompareKind::Greater, v, hi_c)?;
                let out_of = b.binary(BinaryKind::Or, below, above)?;
                let clamped = clamp(b, v, 0.0, df - 1.0)?;
                b.select(out_of, clamped, v)?
            }
            Padding::Reflection => reflect(b, v, lo, hi)?,
        };
        let base = b.unary(UnaryKind::Floor, v)?;
        let t = b.binary(BinaryKind::Sub, v, base)?;
        let neighbours = match mode {
            0 => vec![(v, None)],
            1 => {
                let w0 = b.binary(BinaryKind::Sub, one, t)?;
                let next = b.binary(BinaryKind::Add, base, one)?;
                vec![(base, Some(w0)), (next, Some(t))]
            }
            _ => {
                let weights = cubic_weights(b, t)?;
                let mut list = Vec::new();
                for (k, w) in weights.into_iter().enumerate() {
                    let off = b.scalar_like(base, k as f64 - 1.0)?;
                    list.push((b.binary(BinaryKind::Add, base, off)?, Some(w)));
                }
                list
            }
        };
        // The integer index each neighbour reads, after padding.
        let mut resolved = Vec::new();
        for (pos, w) in neighbours {
            let (idx, valid) = match padding {
                Padding::Zeros => {
                    let (lo_c, hi_c) = (b.scalar_like(pos, 0.0)?, b.scalar_like(pos, df - 1.0)?);
                    let ge = b.compare(CompareKind::GreaterEqual, pos, lo_c)?;
                    let le = b.compare(CompareKind::LessEqual, pos, hi_c)?;
                    let valid = b.binary(BinaryKind::And, ge, le)?;
                    (clamp(b, pos, 0.0, df - 1.0)?, Some(valid))
                }
                Padding::Border => (clamp(b, pos, 0.0, df - 1.0)?, None),
                Padding::Reflection => (reflect(b, pos, lo, hi)?, None),
            };
            let idx = b.cast(idx, &i64t)?;
            // A reflected coordinate can still sit in [-0.5, 0) or (d - 1, d - 0.5].
            let idx = clamp_int(b, idx, d)?;
            let w = match (w, valid) {
                (w, None) => w,
                (Some(w), Some(valid)) => {
                    let zero = b.scalar_like(w, 0.0)?;
                    Some(b.select(valid, w, zero)?)
                }
                (None, Some(valid)) => {
                    let (one, zero) = (
                        b.constant(&[], &elem, &[1.0])?,
                        b.constant(&[], &elem, &[0.0])?,
                    );
                    Some(b.select(valid, one, zero)?)
                }
            };
            resolved.push((idx, w));
        }
        per_axis.push(resolved);
    }
    let table = b.reshape(x, &[n, c, spatial])?;
    let mut strides = vec![1i64; nd];
    for i in (0..nd.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1];
    }
    // Every combination of one neighbour per axis.
    let combos: usize = per_axis.iter().map(Vec::len).product();
    let mut sum: Option<Value> = None;
    for k in 0..combos {
        let mut rest = k;
        let mut flat: Option<Value> = None;
        let mut weight: Option<Value> = None;
        for (i, list) in per_axis.iter().enumerate().rev() {
            let (idx, w) = list[rest % list.len()];
            rest /= list.len();
            let stride = b.constant(&[], &i64t, &[strides[i] as f64])?;
            let part = b.binary(BinaryKind::Mul, idx, stride)?;
            flat = Some(match flat {
                None => part,
                Some(f) => b.binary(BinaryKind::Add, f, part)?,
            });
            weight = match (weight, w) {
                (None, w) => w,
                (Some(a), None) => Some(a),
                (Some(a), Some(w)) => Some(b.binary(BinaryKind::Mul, a, w)?),
            };
        }
        let flat = b.expand(flat.expect("at least one axis"), &[n, c, out])?;
        let state = GatherElementsOp::build(b.imp.ctx, table, flat, 2, Importer::loc(b.node));
        let mut term = b.imp.emit1(b.node, state)?;
        if let Some(w) = weight {
            let w = b.cast(w, &b.element(term)?)?;
            term = b.binary(BinaryKind::Mul, term, w)?;
        }
        sum = Some(match sum {
            None => term,
            Some(s) => b.binary(BinaryKind::Add, s, term)?,
        });
    }
    let mut shape = vec![n, c];
    shape.extend_from_slice(&gs[1..nd + 1]);
    b.reshape(sum.expect("at least one neighbour"), &shape)
}

/// Integer index `idx` clamped into `0..d`.
fn clamp_int(b: &mut Body<'_, '_, '_>, idx: Value, d: i64) -> Built {
    let i64t = Type::i64();
    let lo = b.constant(&[], &i64t, &[0.0])?;
    let hi = b.constant(&[], &i64t, &[(d - 1) as f64])?;
    let v = b.binary(BinaryKind::Max, idx, lo)?;
    b.binary(BinaryKind::Min, v, hi)
}

/// `AffineGrid(theta [N, nd, nd + 1], size [N, C, spatial...])`: the grid
/// `[N, spatial..., nd]` of `theta` applied to the normalized coordinates.
fn affine_grid(b: &mut Body<'_, '_, '_>) -> Built {
    let theta = b.input(0)?;
    let size = b.imp.const_ints(b.node, 1, "output size")?;
    let ts = b.shape(theta);
    let nd = size.len().saturating_sub(2);
    if !matches!(nd, 2 | 3) || ts != [size[0], nd as i64, nd as i64 + 1] {
        return Err(b.error(format!(
            "theta {ts:?} does not fit the size {size:?} (2-D or 3-D)"
        )));
    }
    let align = b.node.int_attr("align_corners", 0)? != 0;
    let dims = &size[2..];
    let coordinate = |i: i64, d: i64| -> f64 {
        if align {
            if d == 1 {
                0.0
            } else {
                -1.0 + 2.0 * i as f64 / (d - 1) as f64
            }
        } else {
            (2 * i + 1) as f64 / d as f64 - 1.0
        }
    };
    let count: i64 = dims.iter().product();
    // Row-major over the spatial dims; columns x (last dim), y, [z], 1.
    let mut base = Vec::with_capacity((count as usize) * (nd + 1));
    for flat in 0..count {
        let mut rest = flat;
        let mut coords = vec![0i64; nd];
        for k in (0..nd).rev() {
            coords[k] = rest % dims[k];
            rest /= dims[k];
        }
        for k in (0..nd).rev() {
            base.push(coordinate(coords[k], dims[k]));
        }
        base.push(1.0);
    }
    let elem = b.element(theta)?;
    let base = b.constant(&[1, count, nd as i64 + 1], &elem, &base)?;
    let theta_t = b.transpose(theta, &[0, 2, 1])?;
    let grid = b.matmul(base, theta_t)?;
    let mut shape = vec![size[0]];
    shape.extend_from_slice(dims);
    shape.push(nd as i64);
    b.reshape(grid, &shape)
}
