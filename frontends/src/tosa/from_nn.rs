//! `nn` into TOSA, for `ipu-opt --emit=tosa`: every `nn` op of a function is
//! rewritten in place into TOSA ops in upstream's generic form (unregistered
//! in ipuc), which upstream MLIR then verifies and prints.
//!
//! What TOSA asks that `nn` leaves implicit:
//! - elementwise operands have equal ranks (broadcasting only along unit
//!   dimensions): lower-rank operands are reshaped with leading ones;
//! - `tosa.matmul` is batched 3-D with equal batches: a right operand
//!   without batch dimensions takes the left's batch into its rows
//!   (`[1, B·M, K]`, `[1, K, N]`); otherwise operands are broadcast
//!   (`tosa.tile`) and flattened to `[B, M, K]`, `[B, K, N]`;
//! - convolutions are NHWC: transposes go around them;
//! - ops TOSA lacks are decomposed: softmax, layer normalization, GELU,
//!   reduce_mean, division (`x * 1/y`), sqrt (`1/rsqrt`).
//!
//! Ops that have no TOSA form (see [`super::coverage`]) are all reported in
//! one error, each with its location, before anything changes.

use ipuc_dialects::nn::{self, elements, BinaryKind, CompareKind, ReduceKind, UnaryKind};
use ipuc_ir::attributes::DenseArrayValues;
use ipuc_ir::types::TypeKind;
use ipuc_ir::{AttrKind, Attribute, Context, Diagnostic, OpId, Type, Value, WalkOrder};

use super::coverage::is_writable;
use super::{replace_op, tensor_parts, unsupported_ops, Builder};

/// Rewrites every `nn` op under `root` into TOSA; returns how many were
/// rewritten. The context must allow unregistered ops (TOSA's).
pub fn convert_nn_to_tosa(ctx: &mut Context, root: OpId) -> Result<usize, Diagnostic> {
    let ops: Vec<OpId> = ctx
        .collect_ops(root, WalkOrder::PreOrder)
        .into_iter()
        .filter(|&op| ctx.name_str(op).starts_with("nn."))
        .collect();
    let unsupported: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&op| !is_writable(ctx.name_str(op)) || unsupported_form(ctx, op).is_some())
        .collect();
    if let Some(d) = unsupported_ops(
        ctx,
        &unsupported,
        |n, s, kinds| format!("cannot write as TOSA: {n} op{s} without a TOSA form ({kinds})"),
        |op| unsupported_form(ctx, op).unwrap_or_else(|| "has no TOSA form".into()),
    ) {
        return Err(d);
    }
    for &op in &ops {
        replace_op(ctx, op, convert_op)?;
    }
    Ok(ops.len())
}

/// Why a writable op kind cannot be written in this instance, if it cannot.
fn unsupported_form(ctx: &Context, op: OpId) -> Option<String> {
    let static_types = ctx
        .operands(op)
        .iter()
        .chain(ctx.results(op))
        .all(|&v| ctx.value_type(v).has_static_shape());
    if !static_types {
        return Some("has a dynamically shaped operand or result".into());
    }
    match ctx.name_str(op) {
        nn::CAST => {
            let from = ctx.value_type(ctx.operand(op, 0)).element_type()?;
            let to = ctx.value_type(ctx.result(op, 0)).element_type()?;
            (from.is_float() && to.is_integer() && !to.is_integer_of_width(1))
                .then(|| "casts float to integer by truncation; tosa.cast rounds to nearest".into())
        }
        nn::SLICE => {
            let p = nn::SliceParams::of(ctx, op);
            p.steps
                .is_some_and(|s| s.iter().any(|&s| s != 1))
                .then(|| "has steps other than 1; tosa.slice has none".into())
        }
        nn::CONV2D => {
            let p = nn::Conv2dParams::of(ctx, op).ok()?;
            let channels = ctx.value_type(ctx.operand(op, 0)).shape()?[1];
            (p.groups != 1 && p.groups != channels)
                .then(|| "is a grouped convolution that is neither plain nor depthwise".into())
        }
        nn::MAX_POOL | nn::AVERAGE_POOL => super::pool::unsupported(ctx, op),
        n if nn::ArgKind::from_name(n).is_some() => {
            let a = nn::ArgReduceOp(op);
            (a.kind(ctx) != nn::ArgKind::Max || a.select_last_index(ctx)).then(|| {
                "is an argmin or picks the last of equal elements; tosa.argmax picks the first largest"
                    .into()
            })
        }
        "nn.div" => {
            let elem = ctx.value_type(ctx.result(op, 0)).element_type()?;
            (!elem.is_float() && !elem.is_integer_of_width(32))
                .then(|| "divides integers other than i32; tosa.intdiv takes i32".into())
        }
        _ => None,
    }
}

/// `!tosa.shape<rank>`.
fn shape_type(rank: usize) -> Type {
    Type::new(TypeKind::Dialect {
        dialect: "tosa".into(),
        mnemonic: Some("shape".into()),
        body: rank.to_string().into(),
    })
}

fn i32_attr(v: i64) -> Attribute {
    Attribute::integer(v as i128, Type::i32())
}

fn i32_array(values: &[i64]) -> Attribute {
    Attribute::new(AttrKind::DenseArray {
        element: Type::i32(),
        values: DenseArrayValues::Int(values.to_vec()),
    })
}

fn tensor_ty(shape: &[i64], elem: &Type) -> Type {
    Type::tensor(shape, elem.clone())
}

impl Builder<'_> {
    /// `tosa.const_shape` of `dims`.
    pub(super) fn shape_value(&mut self, dims: &[i64]) -> Result<Value, Diagnostic> {
        let ty = Type::tensor(&[dims.len() as i64], Type::index());
        let values = elements::from_ints(&ty, &dims.iter().map(|&d| d as i128).collect::<Vec<_>>())
            .ok_or_else(|| self.error("cannot build a shape constant"))?;
        Ok(self.generic(
            "tosa.const_shape",
            &[],
            shape_type(dims.len()),
            vec![("values", values)],
        ))
    }

    /// `tosa.const` of `values` (a `dense` or `dense_resource` attribute).
    fn tosa_const(&mut self, values: Attribute) -> Result<Value, Diagnostic> {
        let ty = nn::infer_constant(&values).map_err(|m| self.error(m))?;
        Ok(self.generic("tosa.const", &[], ty, vec![("values", values)]))
    }

    /// A constant of `shape` filled with `value`.
    pub(super) fn splat(
        &mut self,
        shape: &[i64],
        elem: &Type,
        value: f64,
    ) -> Result<Value, Diagnostic> {
        let ty = tensor_ty(shape, elem);
        let n = shape.iter().product::<i64>() as usize;
        let attr = if elem.is_float() {
            elements::from_floats(&ty, &vec![value; n])
        } else {
            elements::from_ints(&ty, &vec![value as i128; n])
        }
        .ok_or_else(|| self.error(format!("cannot make a constant of '{elem}'")))?;
        self.tosa_const(attr)
    }

    /// A constant of rank `rank` (all dimensions one) holding `value`.
    fn scalar_of_rank(
        &mut self,
        rank: usize,
        elem: &Type,
        value: f64,
    ) -> Result<Value, Diagnostic> {
        self.splat(&vec![1; rank], elem, value)
    }

    /// The zero point operand of element type `elem`.
    pub(super) fn zero_point(&mut self, elem: &Type) -> Result<Value, Diagnostic> {
        self.splat(&[1], elem, 0.0)
    }

    fn reshape(&mut self, v: Value, shape: &[i64]) -> Result<Value, Diagnostic> {
        let (s, elem) = self.shape(v)?;
        if s == shape {
            return Ok(v);
        }
        let sv = self.shape_value(shape)?;
        Ok(self.generic("tosa.reshape", &[v, sv], tensor_ty(shape, &elem), vec![]))
    }

    /// `v` reshaped to `rank` with leading unit dimensions.
    fn with_rank(&mut self, v: Value, rank: usize) -> Result<Value, Diagnostic> {
        let (s, _) = self.shape(v)?;
        if s.len() >= rank {
            return Ok(v);
        }
        let mut shape = vec![1; rank - s.len()];
        shape.extend(&s);
        self.reshape(v, &shape)
    }

    pub(super) fn transpose(&mut self, v: Value, perm: &[i64]) -> Result<Value, Diagnostic> {
        let (s, elem) = self.shape(v)?;
        let shape: Vec<i64> = perm.iter().map(|&p| s[p as usize]).collect();
        Ok(self.generic(
            "tosa.transpose",
            &[v],
            tensor_ty(&shape, &elem),
            vec![("perms", i32_array(perm))],
        ))
    }

    fn unary(&mut self, name: &str, v: Value) -> Result<Value, Diagnostic> {
        let ty = self.ctx.value_type(v).clone();
        Ok(self.generic(name, &[v], ty, vec![]))
    }

    /// An elementwise binary op with rank alignment; `elem` overrides the
    /// result element type (comparisons).
    fn binary(
        &mut self,
        name: &str,
        a: Value,
        b: Value,
        elem: Option<&Type>,
    ) -> Result<Value, Diagnostic> {
        let (sa, ea) = self.shape(a)?;
        let (sb, _) = self.shape(b)?;
        let rank = sa.len().max(sb.len());
        let a = self.with_rank(a, rank)?;
        let b = self.with_rank(b, rank)?;
        let (sa, _) = self.shape(a)?;
        let (sb, _) = self.shape(b)?;
        let shape = nn::broadcast_shapes(&sa, &sb).map_err(|m| self.error(m))?;
        let ty = tensor_ty(&shape, elem.unwrap_or(&ea));
        let mut operands = vec![a, b];
        if name == "tosa.mul" {
            operands.push(self.splat(&[1], &Type::int(8), 0.0)?);
        }
        Ok(self.generic(name, &operands, ty, vec![]))
    }

    /// `reduce_{sum,max}` along `axis`, keeping it.
    fn reduce(&mut self, name: &str, v: Value, axis: usize) -> Result<Value, Diagnostic> {
        let (mut s, elem) = self.shape(v)?;
        s[axis] = 1;
        Ok(self.generic(
            name,
            &[v],
            tensor_ty(&s, &elem),
            vec![("axis", i32_attr(axis as i64))],
        ))
    }

    /// `x * 1/n` for a float tensor.
    fn scale(&mut self, v: Value, factor: f64) -> Result<Value, Diagnostic> {
        let (s, elem) = self.shape(v)?;
        let c = self.scalar_of_rank(s.len(), &elem, factor)?;
        self.binary("tosa.mul", v, c, None)
    }

    /// Mean over `axes` (kept), as sums times `1/count`.
    fn mean(&mut self, v: Value, axes: &[usize]) -> Result<Value, Diagnostic> {
        let (s, _) = self.shape(v)?;
        let count: i64 = axes.iter().map(|&a| s[a]).product();
        let mut r = v;
        for &a in axes {
            r = self.reduce("tosa.reduce_sum", r, a)?;
        }
        self.scale(r, 1.0 / count as f64)
    }

    /// `tosa.tile` of `v` to `shape` (same rank; `v`'s dims are 1 or equal).
    fn broadcast_to(&mut self, v: Value, shape: &[i64]) -> Result<Value, Diagnostic> {
        let v = self.with_rank(v, shape.len())?;
        let (s, elem) = self.shape(v)?;
        if s == shape {
            return Ok(v);
        }
        let multiples: Vec<i64> = s
            .iter()
            .zip(shape)
            .map(|(&a, &b)| if a == b { 1 } else { b })
            .collect();
        let m = self.shape_value(&multiples)?;
        Ok(self.generic("tosa.tile", &[v, m], tensor_ty(shape, &elem), vec![]))
    }

    /// `tosa.matmul` of `[B, M, K]` by `[B, K, N]`.
    fn matmul3(&mut self, a: Value, b: Value) -> Result<Value, Diagnostic> {
        let (sa, ea) = self.shape(a)?;
        let (sb, eb) = self.shape(b)?;
        let za = self.zero_point(&ea)?;
        let zb = self.zero_point(&eb)?;
        Ok(self.generic(
            "tosa.matmul",
            &[a, b, za, zb],
            tensor_ty(&[sa[0], sa[1], sb[2]], &ea),
            vec![],
        ))
    }
}

/// The replacement values of `op`'s results.
fn convert_op(b: &mut Builder, op: OpId) -> Result<Vec<Value>, Diagnostic> {
    let name = b.ctx.name_str(op).to_string();
    let operands = b.ctx.operands(op).to_vec();
    let result_ty = b.ctx.value_type(b.ctx.result(op, 0)).clone();
    let (out_shape, out_elem) = tensor_parts(&result_ty)
        .ok_or_else(|| b.error("results must be statically shaped tensors"))?;
    let x = operands.first().copied();
    let x0 = || x.expect("verified nn ops have operands");
    let v = match name.as_str() {
        nn::CONSTANT => {
            let value = b
                .ctx
                .attr(op, "value")
                .cloned()
                .ok_or_else(|| b.error("nn.constant without a value"))?;
            b.tosa_const(value)?
        }
        n if BinaryKind::from_name(n).is_some() => {
            let (l, r) = (operands[0], operands[1]);
            match BinaryKind::from_name(n).expect("checked") {
                BinaryKind::Add => b.binary("tosa.add", l, r, None)?,
                BinaryKind::Sub => b.binary("tosa.sub", l, r, None)?,
                BinaryKind::Mul => b.binary("tosa.mul", l, r, None)?,
                BinaryKind::Pow => b.binary("tosa.pow", l, r, None)?,
                BinaryKind::Max => b.binary("tosa.maximum", l, r, None)?,
                BinaryKind::Min => b.binary("tosa.minimum", l, r, None)?,
                BinaryKind::Div if out_elem.is_float() => {
                    let inv = b.unary("tosa.reciprocal", r)?;
                    b.binary("tosa.mul", l, inv, None)?
                }
                BinaryKind::Div => b.binary("tosa.intdiv", l, r, None)?,
                // Not in the coverage list, so refused before any rewrite.
                k @ (BinaryKind::Mod
                | BinaryKind::And
                | BinaryKind::Or
                | BinaryKind::Xor
                | BinaryKind::BitAnd
                | BinaryKind::BitOr
                | BinaryKind::BitXor
                | BinaryKind::ShiftLeft
                | BinaryKind::ShiftRight) => {
                    return Err(b.error(format!("{} has no TOSA form", k.name())))
                }
            }
        }
        n if CompareKind::from_name(n).is_some() => {
            let (l, r) = (operands[0], operands[1]);
            let i1 = Type::i1();
            match CompareKind::from_name(n).expect("checked") {
                CompareKind::Equal => b.binary("tosa.equal", l, r, Some(&i1))?,
                CompareKind::Greater => b.binary("tosa.greater", l, r, Some(&i1))?,
                CompareKind::Less => b.binary("tosa.greater", r, l, Some(&i1))?,
                k @ (CompareKind::LessEqual | CompareKind::GreaterEqual) => {
                    return Err(b.error(format!("{} has no TOSA form", k.name())))
                }
            }
        }
        n if UnaryKind::from_name(n).is_some() => {
            let v = x0();
            match UnaryKind::from_name(n).expect("checked") {
                UnaryKind::Sqrt => {
                    let r = b.unary("tosa.rsqrt", v)?;
                    b.unary("tosa.reciprocal", r)?
                }
                UnaryKind::Reciprocal => b.unary("tosa.reciprocal", v)?,
                UnaryKind::Exp => b.unary("tosa.exp", v)?,
                UnaryKind::Log => b.unary("tosa.log", v)?,
                UnaryKind::Tanh => b.unary("tosa.tanh", v)?,
                UnaryKind::Erf => b.unary("tosa.erf", v)?,
                UnaryKind::Abs => b.unary("tosa.abs", v)?,
                UnaryKind::Sigmoid => b.unary("tosa.sigmoid", v)?,
                // Not in the coverage list, so refused before any rewrite.
                k @ (UnaryKind::Not
                | UnaryKind::BitNot
                | UnaryKind::Sin
                | UnaryKind::Cos
                | UnaryKind::Tan
                | UnaryKind::Asin
                | UnaryKind::Acos
                | UnaryKind::Atan
                | UnaryKind::Sinh
                | UnaryKind::Cosh
                | UnaryKind::Asinh
                | UnaryKind::Acosh
                | UnaryKind::Atanh
                | UnaryKind::Floor
                | UnaryKind::Ceil
                | UnaryKind::Round) => {
                    return Err(b.error(format!("{} has no TOSA form", k.name())))
                }
                UnaryKind::Neg => {
                    let z = b.zero_point(&out_elem)?;
                    b.generic("tosa.negate", &[v, z, z], result_ty.clone(), vec![])
                }
                UnaryKind::Relu => {
                    let (lo, hi) = if out_elem.is_float() {
                        (
                            Attribute::float(0.0, out_elem.clone()),
                            Attribute::float(f64::INFINITY, out_elem.clone()),
                        )
                    } else {
                        let bits = out_elem.int_or_float_bit_width().unwrap_or(32);
                        (
                            Attribute::integer(0, out_elem.clone()),
                            Attribute::integer((1i128 << (bits - 1)) - 1, out_elem.clone()),
                        )
                    };
                    b.generic(
                        "tosa.clamp",
                        &[v],
                        result_ty.clone(),
                        vec![("min_val", lo), ("max_val", hi)],
                    )
                }
            }
        }
        nn::WHERE => {
            let rank = out_shape.len();
            let c = b.with_rank(operands[0], rank)?;
            let t = b.with_rank(operands[1], rank)?;
            let f = b.with_rank(operands[2], rank)?;
            b.generic("tosa.select", &[c, t, f], result_ty.clone(), vec![])
        }
        nn::CAST => b.generic("tosa.cast", &[x0()], result_ty.clone(), vec![]),
        nn::IDENTITY => x0(),
        nn::RESHAPE | nn::SQUEEZE | nn::UNSQUEEZE | nn::FLATTEN => b.reshape(x0(), &out_shape)?,
        nn::EXPAND => b.broadcast_to(x0(), &out_shape)?,
        nn::TRANSPOSE => {
            let perm: Vec<i64> = nn::TransposeOp(op)
                .perm(b.ctx)
                .into_iter()
                .map(|p| p as i64)
                .collect();
            b.transpose(x0(), &perm)?
        }
        nn::CONCAT => {
            let axis = nn::ConcatOp(op).axis(b.ctx) as i64;
            b.generic(
                "tosa.concat",
                &operands,
                result_ty.clone(),
                vec![("axis", i32_attr(axis))],
            )
        }
        nn::SLICE => {
            let ranges = nn::SliceOp(op).ranges(b.ctx);
            let start: Vec<i64> = ranges.iter().map(|r| r.start).collect();
            let st = b.shape_value(&start)?;
            let sz = b.shape_value(&out_shape)?;
            b.generic("tosa.slice", &[x0(), st, sz], result_ty.clone(), vec![])
        }
        nn::SPLIT => return split(b, op),
        nn::GATHER => gather(b, op)?,
        nn::TILE => {
            let m = b.shape_value(&nn::TileOp(op).repeats(b.ctx))?;
            b.generic("tosa.tile", &[x0(), m], result_ty.clone(), vec![])
        }
        nn::PAD => {
            let p = nn::PadOp(op);
            let pads = p.pads(b.ctx);
            let rank = out_shape.len();
            let pairs: Vec<i64> = (0..rank).flat_map(|i| [pads[i], pads[rank + i]]).collect();
            let value = p.value(b.ctx) as f64;
            let sv = b.shape_value(&pairs)?;
            let pc = b.splat(&[1], &out_elem, value)?;
            b.generic("tosa.pad", &[x0(), sv, pc], result_ty.clone(), vec![])
        }
        n if ReduceKind::from_name(n).is_some() => {
            let r = nn::ReduceOp(op);
            let axes = r.axes(b.ctx);
            let mut v = x0();
            match r.kind(b.ctx) {
                ReduceKind::Mean => v = b.mean(v, &axes)?,
                kind => {
                    let tosa = match kind {
                        ReduceKind::Sum => "tosa.reduce_sum",
                        ReduceKind::Max => "tosa.reduce_max",
                        ReduceKind::Min => "tosa.reduce_min",
                        ReduceKind::Prod => "tosa.reduce_product",
                        ReduceKind::Mean => unreachable!("handled above"),
                    };
                    for &a in &axes {
                        v = b.reduce(tosa, v, a)?;
                    }
                }
            }
            b.reshape(v, &out_shape)?
        }
        nn::SOFTMAX => {
            let axis = nn::SoftmaxOp(op).axis(b.ctx);
            let v = x0();
            let m = b.reduce("tosa.reduce_max", v, axis)?;
            let d = b.binary("tosa.sub", v, m, None)?;
            let e = b.unary("tosa.exp", d)?;
            let s = b.reduce("tosa.reduce_sum", e, axis)?;
            let r = b.unary("tosa.reciprocal", s)?;
            b.binary("tosa.mul", e, r, None)?
        }
        nn::LAYER_NORMALIZATION => {
            let ln = nn::LayerNormalizationOp(op);
            let axes: Vec<usize> = (ln.axis(b.ctx)..out_shape.len()).collect();
            let eps = ln.epsilon(b.ctx) as f64;
            let (scale, bias) = (ln.scale(b.ctx), ln.bias(b.ctx));
            let v = x0();
            let mean = b.mean(v, &axes)?;
            let c = b.binary("tosa.sub", v, mean, None)?;
            let sq = b.binary("tosa.mul", c, c, None)?;
            let var = b.mean(sq, &axes)?;
            let e = b.scalar_of_rank(out_shape.len(), &out_elem, eps)?;
            let ve = b.binary("tosa.add", var, e, None)?;
            let inv = b.unary("tosa.rsqrt", ve)?;
            let n = b.binary("tosa.mul", c, inv, None)?;
            let y = b.binary("tosa.mul", n, scale, None)?;
            match bias {
                Some(bias) => b.binary("tosa.add", y, bias, None)?,
                None => y,
            }
        }
        nn::GELU => {
            let v = x0();
            let rank = out_shape.len();
            let inner = match nn::GeluOp(op).approximate(b.ctx) {
                nn::GeluApproximation::None => {
                    let s = b.scale(v, std::f64::consts::FRAC_1_SQRT_2)?;
                    b.unary("tosa.erf", s)?
                }
                nn::GeluApproximation::Tanh => {
                    let x2 = b.binary("tosa.mul", v, v, None)?;
                    let x3 = b.binary("tosa.mul", x2, v, None)?;
                    let c = b.scale(x3, 0.044715)?;
                    let s = b.binary("tosa.add", v, c, None)?;
                    let t = b.scale(s, (2.0 / std::f64::consts::PI).sqrt())?;
                    b.unary("tosa.tanh", t)?
                }
            };
            let one = b.scalar_of_rank(rank, &out_elem, 1.0)?;
            let p = b.binary("tosa.add", inner, one, None)?;
            let xp = b.binary("tosa.mul", v, p, None)?;
            b.scale(xp, 0.5)?
        }
        nn::MATMUL => matmul(b, operands[0], operands[1], &out_shape)?,
        nn::GEMM => {
            let g = nn::GemmOp(op);
            let p = g.params(b.ctx);
            let mut a = g.a(b.ctx);
            let mut w = g.b(b.ctx);
            if p.trans_a {
                a = b.transpose(a, &[1, 0])?;
            }
            if p.trans_b {
                w = b.transpose(w, &[1, 0])?;
            }
            let mut y = matmul(b, a, w, &out_shape)?;
            if p.alpha != 1.0 {
                y = b.scale(y, p.alpha as f64)?;
            }
            if let Some(c) = g.c(b.ctx) {
                let c = if p.beta != 1.0 {
                    b.scale(c, p.beta as f64)?
                } else {
                    c
                };
                y = b.binary("tosa.add", y, c, None)?;
            }
            y
        }
        nn::LINEAR => {
            let l = nn::LinearOp(op);
            let y = matmul(b, l.input(b.ctx), l.weight(b.ctx), &out_shape)?;
            match l.bias(b.ctx) {
                Some(bias) => b.binary("tosa.add", y, bias, None)?,
                None => y,
            }
        }
        nn::CONV2D => conv2d(b, op)?,
        nn::MAX_POOL | nn::AVERAGE_POOL => super::pool::write(b, op)?,
        n if nn::ArgKind::from_name(n).is_some() => {
            // tosa.argmax drops the axis; upstream takes the i64 positions nn has.
            let a = nn::ArgReduceOp(op);
            let axis = a.axis(b.ctx);
            let mut dropped = b.shape(x0())?.0;
            dropped.remove(axis);
            let y = b.generic(
                "tosa.argmax",
                &[x0()],
                tensor_ty(&dropped, &out_elem),
                vec![("axis", i32_attr(axis as i64))],
            );
            b.reshape(y, &out_shape)?
        }
        other => return Err(b.error(format!("'{other}' has no TOSA form"))),
    };
    if b.ctx.value_type(v) != &result_ty {
        return Err(b.error(format!(
            "internal error: '{name}' became a value of type '{}', expected '{result_ty}'",
            b.ctx.value_type(v)
        )));
    }
    Ok(vec![v])
}

/// numpy `matmul` as `tosa.matmul`: 1-D operands promoted, batch
/// dimensions folded into the rows when the right operand has none, else
/// broadcast by tiling and flattened into one.
fn matmul(b: &mut Builder, l: Value, r: Value, out_shape: &[i64]) -> Result<Value, Diagnostic> {
    let (mut sl, _) = b.shape(l)?;
    let (mut sr, _) = b.shape(r)?;
    if sl.len() == 1 {
        sl.insert(0, 1);
    }
    if sr.len() == 1 {
        sr.push(1);
    }
    let (m, k) = (sl[sl.len() - 2], sl[sl.len() - 1]);
    let n = sr[sr.len() - 1];
    let batch =
        nn::broadcast_shapes(&sl[..sl.len() - 2], &sr[..sr.len() - 2]).map_err(|e| b.error(e))?;
    let batch_size: i64 = batch.iter().product();
    if sr[..sr.len() - 2].iter().all(|&d| d == 1) {
        // A weight without batch dimensions of its own (a linear layer's)
        // multiplies every row alike: the batch folds into the rows, one
        // `[1, B·M, K] x [1, K, N]` product, where tiling the weight B times
        // would cost B copies of it (a sequence-first attention's tokens
        // are its batch: 7.7 GB for so400m's pooling head).
        let a = b.reshape(l, &[1, batch_size * m, k])?;
        let w = b.reshape(r, &[1, k, n])?;
        let y = b.matmul3(a, w)?;
        return b.reshape(y, out_shape);
    }
    let operand =
        |b: &mut Builder, v: Value, s: &[i64], rows: i64, cols: i64| -> Result<Value, Diagnostic> {
            let v = b.reshape(v, s)?;
            let mut full = batch.clone();
            full.extend([rows, cols]);
            // Broadcasting a weight shared by every batch is a tile: TOSA's
            // matmul has no broadcast.
            let v = b.broadcast_to(v, &full)?;
            b.reshape(v, &[batch_size, rows, cols])
        };
    let a = operand(b, l, &sl, m, k)?;
    let w = operand(b, r, &sr, k, n)?;
    let y = b.matmul3(a, w)?;
    b.reshape(y, out_shape)
}

/// `nn.conv2d` (NCHW) as `tosa.conv2d` or `tosa.depthwise_conv2d` (NHWC).
fn conv2d(b: &mut Builder, op: OpId) -> Result<Value, Diagnostic> {
    let c = nn::Conv2dOp(op);
    let p = c.params(b.ctx);
    let (x, w, bias) = (c.input(b.ctx), c.weight(b.ctx), c.bias(b.ctx));
    let (ws, elem) = b.shape(w)?;
    let (xs, _) = b.shape(x)?;
    let (m, kh, kw) = (ws[0], ws[2], ws[3]);
    // TOSA wants the last window to end exactly on the padded edge; ONNX
    // drops rows and columns no window reaches (a 384-pixel image in
    // 14-pixel patches). Trim them: bottom/right padding first, then input.
    let mut pads = p.pads; // top, left, bottom, right
    let mut extent = [xs[2], xs[3]];
    let out_nchw = b.shape(b.ctx.result(op, 0))?.0;
    for (d, k) in [kh, kw].into_iter().enumerate() {
        (extent[d], pads[d + 2]) = super::pool::fit_windows(
            extent[d],
            (pads[d], pads[d + 2]),
            (k - 1) * p.dilations[d] + 1,
            p.strides[d],
            out_nchw[2 + d],
        );
    }
    let x = if extent != [xs[2], xs[3]] {
        let st = b.shape_value(&[0, 0, 0, 0])?;
        let sz = b.shape_value(&[xs[0], xs[1], extent[0], extent[1]])?;
        b.generic(
            "tosa.slice",
            &[x, st, sz],
            tensor_ty(&[xs[0], xs[1], extent[0], extent[1]], &elem),
            vec![],
        )
    } else {
        x
    };
    let nhwc = b.transpose(x, &[0, 2, 3, 1])?;
    let bias = match bias {
        Some(bias) => bias,
        None => b.splat(&[m], &elem, 0.0)?,
    };
    let zx = b.zero_point(&elem)?;
    let zw = b.zero_point(&elem)?;
    let out = [out_nchw[0], out_nchw[2], out_nchw[3], out_nchw[1]];
    let attrs = vec![
        ("acc_type", Attribute::type_attr(elem.clone())),
        ("dilation", super::i64_array(&p.dilations)),
        (
            "pad",
            super::i64_array(&[pads[0], pads[2], pads[1], pads[3]]),
        ),
        ("stride", super::i64_array(&p.strides)),
    ];
    let y = if p.groups == 1 {
        // [M, C, KH, KW] -> [M, KH, KW, C].
        let wt = b.transpose(w, &[0, 2, 3, 1])?;
        b.generic(
            "tosa.conv2d",
            &[nhwc, wt, bias, zx, zw],
            tensor_ty(&out, &elem),
            attrs,
        )
    } else {
        // Depthwise: [C*mult, 1, KH, KW] -> [C, mult, KH, KW] -> [KH, KW, C, mult].
        let channels = xs[1];
        let r = b.reshape(w, &[channels, m / channels, kh, kw])?;
        let wt = b.transpose(r, &[2, 3, 0, 1])?;
        b.generic(
            "tosa.depthwise_conv2d",
            &[nhwc, wt, bias, zx, zw],
            tensor_ty(&out, &elem),
            attrs,
        )
    };
    b.transpose(y, &[0, 3, 1, 2])
}

/// ONNX Gather along `axis` as `tosa.gather` of `[N, K, C]` values (the
/// dimensions before, at and after the axis) by `[N, W]` indices: the
/// indices (flattened, negative ones wrapped) repeated for every `n`.
fn gather(b: &mut Builder, op: OpId) -> Result<Value, Diagnostic> {
    let g = nn::GatherOp(op);
    let (data, indices, axis) = (g.data(b.ctx), g.indices(b.ctx), g.axis(b.ctx));
    let (ds, elem) = b.shape(data)?;
    let (is, ielem) = b.shape(indices)?;
    let n: i64 = ds[..axis].iter().product();
    let k = ds[axis];
    let c: i64 = ds[axis + 1..].iter().product();
    let w: i64 = is.iter().product();
    let i32t = Type::i32();
    let idx = match super::to_nn::constant_of(b.ctx, indices).and_then(|d| elements::ints(&d)) {
        // Constant indices: wrapped and narrowed here.
        Some(values) => {
            let wrapped: Vec<i128> = values
                .iter()
                .map(|&i| if i < 0 { i + k as i128 } else { i })
                .collect();
            let ty = tensor_ty(&[1, w], &i32t);
            let attr = elements::from_ints(&ty, &wrapped)
                .ok_or_else(|| b.error("cannot build gather indices"))?;
            b.tosa_const(attr)?
        }
        None => {
            let flat = b.reshape(indices, &[1, w])?;
            let flat = if ielem == i32t {
                flat
            } else {
                b.generic("tosa.cast", &[flat], tensor_ty(&[1, w], &i32t), vec![])
            };
            let zero = b.splat(&[1, 1], &i32t, 0.0)?;
            let kk = b.splat(&[1, 1], &i32t, k as f64)?;
            let neg = b.binary("tosa.greater", zero, flat, Some(&Type::i1()))?;
            let shifted = b.binary("tosa.add", flat, kk, None)?;
            b.generic(
                "tosa.select",
                &[neg, shifted, flat],
                tensor_ty(&[1, w], &i32t),
                vec![],
            )
        }
    };
    let idx = b.broadcast_to(idx, &[n, w])?;
    let values = b.reshape(data, &[n, k, c])?;
    let y = b.generic(
        "tosa.gather",
        &[values, idx],
        tensor_ty(&[n, w, c], &elem),
        vec![],
    );
    let mut out = ds[..axis].to_vec();
    out.extend(&is);
    out.extend(&ds[axis + 1..]);
    b.reshape(y, &out)
}

/// `nn.split` as one `tosa.slice` per output.
fn split(b: &mut Builder, op: OpId) -> Result<Vec<Value>, Diagnostic> {
    let s = nn::SplitOp(op);
    let axis = s.axis(b.ctx);
    let x = b.ctx.operand(op, 0);
    let (xs, elem) = b.shape(x)?;
    let mut start = vec![0; xs.len()];
    let mut outs = Vec::new();
    for size in s.sizes(b.ctx) {
        let mut shape = xs.clone();
        shape[axis] = size;
        let st = b.shape_value(&start)?;
        let sz = b.shape_value(&shape)?;
        outs.push(b.generic("tosa.slice", &[x, st, sz], tensor_ty(&shape, &elem), vec![]));
        start[axis] += size;
    }
    Ok(outs)
}
