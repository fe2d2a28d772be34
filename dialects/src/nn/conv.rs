//! `nn.conv2d`: 2-D convolution in NCHW layout with ONNX `Conv` semantics
//! (`strides`, `pads = [top, left, bottom, right]`, `dilations`, `groups`).

use ipuc_ir::interfaces::{Contraction, ContractionShape, OpSignature};
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::support::*;

/// `nn.conv2d`.
pub const CONV2D: &str = "nn.conv2d";

/// Attributes of `nn.conv2d` (ONNX defaults: unit strides and dilations, no
/// padding, one group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conv2dParams {
    /// `[stride_h, stride_w]`.
    pub strides: [i64; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [i64; 4],
    /// `[dilation_h, dilation_w]`.
    pub dilations: [i64; 2],
    /// Number of groups (`C` and `M` are both divisible by it).
    pub groups: i64,
}

impl Default for Conv2dParams {
    fn default() -> Self {
        Conv2dParams {
            strides: [1, 1],
            pads: [0; 4],
            dilations: [1, 1],
            groups: 1,
        }
    }
}

fn fixed<const N: usize>(
    name: &str,
    v: Option<Vec<i64>>,
    default: [i64; N],
) -> InferResult<[i64; N]> {
    match v {
        None => Ok(default),
        Some(v) => v
            .as_slice()
            .try_into()
            .map_err(|_| shape_err!("'{name}' must have {N} elements, but has {}", v.len())),
    }
}

impl Conv2dParams {
    /// Reads the attributes of a `nn.conv2d` op.
    pub fn of(ctx: &Context, op: OpId) -> InferResult<Conv2dParams> {
        Self::read(
            |name| attr_i64_list(ctx, op, name),
            attr_i64(ctx, op, "groups", 1),
        )
    }
    /// Reads the attributes of a `nn.conv2d` signature.
    pub fn of_signature(sig: &OpSignature<'_>) -> InferResult<Conv2dParams> {
        Self::read(|name| sig.i64_list(name), sig.i64_attr("groups", 1))
    }
    fn read(list: impl Fn(&str) -> Option<Vec<i64>>, groups: i64) -> InferResult<Conv2dParams> {
        let d = Conv2dParams::default();
        Ok(Conv2dParams {
            strides: fixed("strides", list("strides"), d.strides)?,
            pads: fixed("pads", list("pads"), d.pads)?,
            dilations: fixed("dilations", list("dilations"), d.dilations)?,
            groups,
        })
    }
    /// The attributes that differ from the defaults.
    pub fn attributes(&self) -> Vec<(&'static str, Attribute)> {
        let d = Conv2dParams::default();
        let mut v = Vec::new();
        if self.strides != d.strides {
            v.push(("strides", Attribute::dense_i64_array(&self.strides)));
        }
        if self.pads != d.pads {
            v.push(("pads", Attribute::dense_i64_array(&self.pads)));
        }
        if self.dilations != d.dilations {
            v.push(("dilations", Attribute::dense_i64_array(&self.dilations)));
        }
        if self.groups != 1 {
            v.push(("groups", Attribute::i64(self.groups)));
        }
        v
    }
}

/// One spatial output size: `floor((in + pads - dilation * (k - 1) - 1) / stride) + 1`.
fn out_dim(
    axis: &str,
    input: i64,
    k: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
) -> InferResult<i64> {
    if input == DYNAMIC || k == DYNAMIC {
        return Ok(DYNAMIC);
    }
    // Attributes come from files: overflow is an error, not a panic.
    let overflow = || shape_err!("the extent of the kernel or padding along {axis} overflows");
    let effective = dilation
        .checked_mul(k - 1)
        .and_then(|e| e.checked_add(1))
        .ok_or_else(overflow)?;
    let padded = input.checked_add(pad).ok_or_else(overflow)?;
    if effective > padded {
        return Err(shape_err!(
            "kernel extent {effective} exceeds the padded input extent {padded} along {axis}"
        ));
    }
    Ok((padded - effective) / stride + 1)
}

/// Result type of `nn.conv2d(x[N, C, H, W], w[M, C/groups, kH, kW][, b[M]])`.
pub fn infer_conv2d(x: &Type, w: &Type, b: Option<&Type>, p: &Conv2dParams) -> InferResult<Type> {
    let (sx, ex) = ranked(x, "input")?;
    let (sw, ew) = ranked(w, "weight")?;
    if !(ex.is_float() && ew.is_float()) && ex != ew {
        return Err(shape_err!(
            "input and weight element types '{ex}' and '{ew}' are incompatible"
        ));
    }
    if sx.len() != 4 || sw.len() != 4 {
        return Err(shape_err!(
            "input and weight must have rank 4 (NCHW, MCHW), but have ranks {} and {}",
            sx.len(),
            sw.len()
        ));
    }
    if p.strides.iter().any(|&s| s < 1) {
        return Err(shape_err!(
            "strides must be positive, but are {:?}",
            p.strides
        ));
    }
    if p.dilations.iter().any(|&s| s < 1) {
        return Err(shape_err!(
            "dilations must be positive, but are {:?}",
            p.dilations
        ));
    }
    if p.pads.iter().any(|&s| s < 0) {
        return Err(shape_err!(
            "pads must be non-negative, but are {:?}",
            p.pads
        ));
    }
    let g = p.groups;
    if g < 1 {
        return Err(shape_err!("groups must be positive, but is {g}"));
    }
    let (c, m) = (sx[1], sw[0]);
    if c != DYNAMIC && c % g != 0 {
        return Err(shape_err!(
            "input channels {c} are not divisible by groups {g}"
        ));
    }
    if m != DYNAMIC && m % g != 0 {
        return Err(shape_err!(
            "output channels {m} are not divisible by groups {g}"
        ));
    }
    if c != DYNAMIC && sw[1] != DYNAMIC && c / g != sw[1] {
        return Err(shape_err!(
            "weight expects {} input channels per group, but the input has {c} channels in {g} group(s)",
            sw[1]
        ));
    }
    if let Some(b) = b {
        let (sb, _) = ranked(b, "bias")?;
        if sb.len() != 1 || (sb[0] != m && sb[0] != DYNAMIC && m != DYNAMIC) {
            return Err(shape_err!(
                "bias must have shape [{}], but has shape [{}]",
                shape_str(&[m]),
                shape_str(sb)
            ));
        }
    }
    // Spatial axis `i` (0: H, 1: W) of the output.
    let spatial = |i: usize, name: &str| {
        out_dim(
            name,
            sx[2 + i],
            sw[2 + i],
            p.pads[i].saturating_add(p.pads[2 + i]),
            p.strides[i],
            p.dilations[i],
        )
    };
    let h = spatial(0, "H")?;
    let wd = spatial(1, "W")?;
    Ok(tensor(&[sx[0], m, h, wd], ex))
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    if ctx.name_str(op) != CONV2D {
        return None;
    }
    let t = value_types(ctx, ctx.operands(op));
    Some(
        Conv2dParams::of(ctx, op)
            .and_then(|p| infer_conv2d(&t[0], &t[1], t.get(2), &p))
            .map(|ty| vec![ty]),
    )
}

/// `nn.conv2d` as a matrix product per group (im2col): M is the output
/// positions `N * H_out * W_out`, N the output channels of a group, K the
/// receptive field `C / groups * kH * kW`; the output shape comes from
/// [`infer_conv2d`].
struct ConvContraction;

impl Contraction for ConvContraction {
    fn contractions(&self, sig: &OpSignature<'_>) -> Option<Vec<ContractionShape>> {
        let (x, w) = (sig.operand(0)?, sig.operand(1)?);
        let p = Conv2dParams::of_signature(sig).ok()?;
        let out = infer_conv2d(x, w, None, &p).ok()?;
        let (so, sw) = (out.shape()?, w.shape()?);
        let groups = p.groups;
        let n = so[1].checked_div(groups)?;
        let k = static_product(&sw[1..])?;
        let shape = contraction(
            sig,
            (0, 1),
            &[groups],
            &[so[0], so[2], so[3]],
            [n, i64::try_from(k).ok()?],
        )?;
        Some(vec![shape])
    }
}

pub(crate) fn register(d: Dialect) -> Dialect {
    d.op(nn_op(
        CONV2D,
        "2-D convolution, NCHW input and MCHW weights (ONNX Conv)",
    )
    .attribute(i64_array_attr("strides", true))
    .attribute(i64_array_attr("pads", true))
    .attribute(i64_array_attr("dilations", true))
    .attribute(i64_attr("groups", true))
    .operands(&[
        one("input", TENSOR),
        one("weight", TENSOR),
        optional("bias", TENSOR),
    ])
    .results(&[one("result", TENSOR)])
    .implement::<dyn Contraction>(Box::new(ConvContraction)))
}

op_wrapper!(
    /// `nn.conv2d(input, weight[, bias])`.
    Conv2dOp,
    CONV2D
);

operand_accessors!(Conv2dOp {
    /// `x[N, C, H, W]`.
    input = 0,
    /// `w[M, C/groups, kH, kW]`.
    weight = 1,
});

impl Conv2dOp {
    /// `b[M]`, if given.
    pub fn bias(self, ctx: &Context) -> Option<Value> {
        ctx.operands(self.0).get(2).copied()
    }
    /// The attributes (of a verified op).
    pub fn params(self, ctx: &Context) -> Conv2dParams {
        Conv2dParams::of(ctx, self.0).unwrap_or_default()
    }
    /// A state for `conv2d(x, w[, b])`.
    pub fn build(
        ctx: &Context,
        x: Value,
        w: Value,
        b: Option<Value>,
        params: &Conv2dParams,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_conv2d(
            ctx.value_type(x),
            ctx.value_type(w),
            b.map(|b| ctx.value_type(b)),
            params,
        );
        let mut operands = vec![x, w];
        operands.extend(b);
        build_inferred(ctx, CONV2D, &operands, ty, params.attributes(), loc)
    }
}
