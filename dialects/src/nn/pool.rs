//! Windowed pooling: `nn.max_pool` and `nn.average_pool` on `[N, C, D1, ...,
//! Dn]` tensors (any number n >= 1 of spatial dimensions) with ONNX
//! `MaxPool`/`AveragePool` semantics: `kernel_shape`, `strides`, `pads =
//! [begin_1, ..., begin_n, end_1, ..., end_n]`, `dilations`, `ceil_mode`
//! and, for the average, `count_include_pad`.
//!
//! Window `o` along a spatial axis reads input positions `o * stride -
//! begin + j * dilation` for `j < kernel`. Positions inside the input are
//! data; positions in the explicit padding count as padding (ignored by the
//! maximum, counted as zeros by an average with `count_include_pad`);
//! positions past the end padding, which only `ceil_mode` windows reach,
//! are ignored by both. `auto_pad` is the importer's business: the op holds
//! explicit pads.

use ipuc_ir::interfaces::{CombiningKind, ElementWork, OpSignature, Reduction, ReductionShape};
use ipuc_ir::types::DYNAMIC;
use ipuc_ir::{
    Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type, Value,
};

use super::support::*;

/// The pooling ops.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// `nn.max_pool`: the largest element of each window.
    Max,
    /// `nn.average_pool`: the mean of each window.
    Average,
}

impl PoolKind {
    /// Both pooling ops.
    pub const ALL: [PoolKind; 2] = [PoolKind::Max, PoolKind::Average];
    /// The op name.
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Max => "nn.max_pool",
            PoolKind::Average => "nn.average_pool",
        }
    }
    /// The kind of the op called `name`.
    pub fn from_name(name: &str) -> Option<PoolKind> {
        PoolKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// `nn.max_pool`.
pub const MAX_POOL: &str = "nn.max_pool";
/// `nn.average_pool`.
pub const AVERAGE_POOL: &str = "nn.average_pool";

/// The window of a pooling op, every list resolved to the spatial rank
/// (ONNX defaults: unit strides and dilations, no padding, floor mode,
/// padding not counted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolParams {
    /// The window extent per spatial axis (required).
    pub kernel_shape: Vec<i64>,
    /// The step between windows per spatial axis.
    pub strides: Vec<i64>,
    /// All begin paddings, then all end paddings.
    pub pads: Vec<i64>,
    /// The step between window elements per spatial axis.
    pub dilations: Vec<i64>,
    /// Whether partial windows past the end make an extra output (the last
    /// window still starts inside the input or its begin padding).
    pub ceil_mode: bool,
    /// Whether an average divides by the padding positions too.
    pub count_include_pad: bool,
}

impl PoolParams {
    /// A `kernel_shape` window with the ONNX defaults for the rest.
    pub fn new(kernel_shape: &[i64]) -> PoolParams {
        let n = kernel_shape.len();
        PoolParams {
            kernel_shape: kernel_shape.to_vec(),
            strides: vec![1; n],
            pads: vec![0; 2 * n],
            dilations: vec![1; n],
            ceil_mode: false,
            count_include_pad: false,
        }
    }

    /// Reads the attributes of a pooling op; `None` without `kernel_shape`
    /// (which the verifier reports first).
    pub fn of(ctx: &Context, op: OpId) -> Option<PoolParams> {
        Self::read(
            |name| attr_i64_list(ctx, op, name),
            |name| attr_i64(ctx, op, name, 0),
        )
    }

    /// Reads the attributes of a pooling op's signature.
    pub fn of_signature(sig: &OpSignature<'_>) -> Option<PoolParams> {
        Self::read(|name| sig.i64_list(name), |name| sig.i64_attr(name, 0))
    }

    fn read(
        list: impl Fn(&str) -> Option<Vec<i64>>,
        flag: impl Fn(&str) -> i64,
    ) -> Option<PoolParams> {
        let d = PoolParams::new(&list("kernel_shape")?);
        Some(PoolParams {
            strides: list("strides").unwrap_or(d.strides),
            pads: list("pads").unwrap_or(d.pads),
            dilations: list("dilations").unwrap_or(d.dilations),
            ceil_mode: flag("ceil_mode") != 0,
            count_include_pad: flag("count_include_pad") != 0,
            kernel_shape: d.kernel_shape,
        })
    }

    /// The attributes of `kind`: `kernel_shape` and those that differ from
    /// the defaults.
    pub fn attributes(&self, kind: PoolKind) -> Vec<(&'static str, Attribute)> {
        let d = PoolParams::new(&self.kernel_shape);
        let mut v = vec![(
            "kernel_shape",
            Attribute::dense_i64_array(&self.kernel_shape),
        )];
        for (name, value, default) in [
            ("strides", &self.strides, &d.strides),
            ("pads", &self.pads, &d.pads),
            ("dilations", &self.dilations, &d.dilations),
        ] {
            if value != default {
                v.push((name, Attribute::dense_i64_array(value)));
            }
        }
        if self.ceil_mode {
            v.push(("ceil_mode", Attribute::i64(1)));
        }
        if self.count_include_pad && kind == PoolKind::Average {
            v.push(("count_include_pad", Attribute::i64(1)));
        }
        v
    }

    /// Checks the lists against `spatial` axes and their value ranges.
    fn check(&self, spatial: usize) -> InferResult<()> {
        for (name, list, len) in [
            ("kernel_shape", &self.kernel_shape, spatial),
            ("strides", &self.strides, spatial),
            ("dilations", &self.dilations, spatial),
            ("pads", &self.pads, 2 * spatial),
        ] {
            if list.len() != len {
                return Err(shape_err!(
                    "'{name}' must have {len} entries for {spatial} spatial dimension(s), but has {}",
                    list.len()
                ));
            }
            let least = if name == "pads" { 0 } else { 1 };
            if list.iter().any(|&v| v < least) {
                let what = if least == 0 {
                    "non-negative"
                } else {
                    "positive"
                };
                return Err(shape_err!("'{name}' must be {what}, but is {list:?}"));
            }
        }
        // As onnxruntime: a window of padding alone has no value.
        for axis in 0..spatial {
            let k = self.kernel_shape[axis];
            let (begin, end) = (self.pads[axis], self.pads[spatial + axis]);
            if begin >= k || end >= k {
                return Err(shape_err!(
                    "pads ({begin}, {end}) of spatial axis {axis} must be smaller than its kernel extent {k}"
                ));
            }
        }
        Ok(())
    }
}

/// The number of windows along one spatial axis of extent `input`
/// (ONNX: `(input + begin + end - dilation * (kernel - 1) - 1) / stride +
/// 1`, rounded down, or up in `ceil_mode` unless that window would start
/// in the end padding).
pub fn pool_output_extent(
    input: i64,
    kernel: i64,
    (begin, end): (i64, i64),
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> InferResult<i64> {
    if input == DYNAMIC {
        return Ok(DYNAMIC);
    }
    // Attributes come from files: overflow is an error, not a panic.
    let overflow = || shape_err!("the extent of the window or padding overflows");
    let window = dilation
        .checked_mul(kernel - 1)
        .and_then(|e| e.checked_add(1))
        .ok_or_else(overflow)?;
    let padded = input
        .checked_add(begin)
        .and_then(|p| p.checked_add(end))
        .ok_or_else(overflow)?;
    if window > padded {
        return Err(shape_err!(
            "window extent {window} exceeds the padded input extent {padded}"
        ));
    }
    let span = padded - window;
    let mut out = if ceil_mode {
        span / stride + i64::from(span % stride != 0) + 1
    } else {
        span / stride + 1
    };
    if ceil_mode && (out - 1).saturating_mul(stride) >= input + begin {
        out -= 1;
    }
    Ok(out)
}

/// Result type of a pooling op on `x[N, C, D1, ..., Dn]`: `[N, C, O1, ...,
/// On]` with [`pool_output_extent`] per spatial axis. The maximum takes any
/// numeric element type, the average floats.
pub fn infer_pool(kind: PoolKind, x: &Type, p: &PoolParams) -> InferResult<Type> {
    let (s, e) = ranked(x, "input")?;
    if s.len() < 3 {
        return Err(shape_err!(
            "input must have rank >= 3 ([N, C, spatial...]), but has rank {}",
            s.len()
        ));
    }
    if kind == PoolKind::Average && !e.is_float() {
        return Err(shape_err!(
            "averages floats, but the input has element type '{e}'"
        ));
    }
    if !(e.is_float() || e.is_integer()) || e.is_integer_of_width(1) {
        return Err(shape_err!(
            "pools numbers, but the input has element type '{e}'"
        ));
    }
    let spatial = s.len() - 2;
    p.check(spatial)?;
    let mut shape = s[..2].to_vec();
    for axis in 0..spatial {
        shape.push(
            pool_output_extent(
                s[2 + axis],
                p.kernel_shape[axis],
                (p.pads[axis], p.pads[spatial + axis]),
                p.strides[axis],
                p.dilations[axis],
                p.ceil_mode,
            )
            .map_err(|e| shape_err!("spatial axis {axis}: {e}"))?,
        );
    }
    Ok(tensor(&shape, e))
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let kind = PoolKind::from_name(ctx.name_str(op))?;
    let p = PoolParams::of(ctx, op)?;
    let t = value_types(ctx, ctx.operands(op));
    Some(infer_pool(kind, &t[0], &p).map(|ty| vec![ty]))
}

/// Each output element combines one window: `outer` is the output's
/// element count, `inner` the kernel's (windows overlap, so the elements
/// combined exceed the input's; the average's one division per output is
/// the reduction's, as for `nn.reduce_mean`).
impl Reduction for PoolKind {
    fn reduction(&self, sig: &OpSignature<'_>) -> Option<ReductionShape> {
        let p = PoolParams::of_signature(sig)?;
        let out = sig.result(0)?.shape()?;
        Some(ReductionShape {
            outer: static_product(out)?,
            inner: static_product(&p.kernel_shape)?,
            passes: vec![match self {
                PoolKind::Max => CombiningKind::Max,
                PoolKind::Average => CombiningKind::Add,
            }],
            per_element: ElementWork::NONE,
        })
    }
}

pub(crate) fn register(mut d: Dialect) -> Dialect {
    for k in PoolKind::ALL {
        let summary = match k {
            PoolKind::Max => "Maximum over sliding windows (ONNX MaxPool, any spatial rank)",
            PoolKind::Average => "Mean over sliding windows (ONNX AveragePool, any spatial rank)",
        };
        let mut def = nn_op(k.name(), summary)
            .attribute(i64_array_attr("kernel_shape", false))
            .attribute(i64_array_attr("strides", true))
            .attribute(i64_array_attr("pads", true))
            .attribute(i64_array_attr("dilations", true))
            .attribute(i64_attr("ceil_mode", true));
        if k == PoolKind::Average {
            def = def.attribute(i64_attr("count_include_pad", true));
        }
        d = d.op(def
            .operands(&[one("input", TENSOR)])
            .results(&[one("result", TENSOR)])
            .implement::<dyn Reduction>(Box::new(k)));
    }
    d
}

op_family_wrapper!(
    /// `nn.max_pool` or `nn.average_pool`.
    PoolOp,
    PoolKind,
    "pooling op"
);
operand_accessors!(PoolOp {
    /// `x[N, C, D1, ..., Dn]`.
    input = 0,
});

impl PoolOp {
    /// The window (of a verified op).
    pub fn params(self, ctx: &Context) -> PoolParams {
        PoolParams::of(ctx, self.0).unwrap_or_else(|| PoolParams::new(&[]))
    }
    /// A state pooling `x` with `kind` over the window `params`.
    pub fn build(
        ctx: &Context,
        kind: PoolKind,
        x: Value,
        params: &PoolParams,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_pool(kind, ctx.value_type(x), params);
        build_inferred(ctx, kind.name(), &[x], ty, params.attributes(kind), loc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_input(shape: &[i64]) -> Type {
        Type::tensor(shape, Type::f32())
    }

    fn out(kind: PoolKind, shape: &[i64], p: &PoolParams) -> InferResult<Vec<i64>> {
        infer_pool(kind, &f32_input(shape), p).map(|t| t.shape().unwrap().to_vec())
    }

    #[test]
    fn output_extents_follow_onnx() {
        let mut p = PoolParams::new(&[3, 3]);
        p.strides = vec![2, 2];
        // floor((4 - 3) / 2) + 1 = 1; ceil gives 2 (onnx test_maxpool_2d_ceil).
        assert_eq!(out(PoolKind::Max, &[1, 1, 4, 4], &p).unwrap(), [1, 1, 1, 1]);
        p.ceil_mode = true;
        assert_eq!(out(PoolKind::Max, &[1, 1, 4, 4], &p).unwrap(), [1, 1, 2, 2]);
        // A ceil window that would start in the end padding is dropped
        // (onnx test_averagepool_2d_ceil_last_window_starts_on_pad).
        let mut p = PoolParams::new(&[3, 3]);
        p.strides = vec![3, 3];
        p.pads = vec![1, 1, 1, 1];
        p.ceil_mode = true;
        assert_eq!(
            out(PoolKind::Average, &[1, 3, 2, 2], &p).unwrap(),
            [1, 3, 1, 1]
        );
        // Dilated 3-D: window 9, (32 - 9) / 3 + 1 = 8.
        let mut p = PoolParams::new(&[5, 5, 5]);
        p.strides = vec![3; 3];
        p.dilations = vec![2; 3];
        assert_eq!(
            out(PoolKind::Max, &[1, 1, 32, 32, 32], &p).unwrap(),
            [1, 1, 8, 8, 8]
        );
        // 1-D, and a dynamic batch and extent stay dynamic.
        assert_eq!(
            out(PoolKind::Average, &[DYNAMIC, 3, 32], &PoolParams::new(&[2])).unwrap(),
            [DYNAMIC, 3, 31]
        );
        assert_eq!(
            out(PoolKind::Max, &[1, 3, DYNAMIC], &PoolParams::new(&[2])).unwrap(),
            [1, 3, DYNAMIC]
        );
    }

    #[test]
    fn bad_windows_are_refused() {
        let err =
            |shape: &[i64], p: &PoolParams| out(PoolKind::Max, shape, p).unwrap_err().to_string();
        assert_eq!(
            err(&[1, 3, 8], &PoolParams::new(&[2, 2])),
            "'kernel_shape' must have 1 entries for 1 spatial dimension(s), but has 2"
        );
        assert_eq!(
            err(&[4, 8], &PoolParams::new(&[2])),
            "input must have rank >= 3 ([N, C, spatial...]), but has rank 2"
        );
        let mut p = PoolParams::new(&[2]);
        p.strides = vec![0];
        assert_eq!(
            err(&[1, 3, 8], &p),
            "'strides' must be positive, but is [0]"
        );
        let mut p = PoolParams::new(&[2]);
        p.pads = vec![2, 0];
        assert_eq!(
            err(&[1, 3, 8], &p),
            "pads (2, 0) of spatial axis 0 must be smaller than its kernel extent 2"
        );
        assert_eq!(
            err(&[1, 3, 4], &PoolParams::new(&[5])),
            "spatial axis 0: window extent 5 exceeds the padded input extent 4"
        );
        let mut p = PoolParams::new(&[2]);
        p.dilations = vec![i64::MAX];
        assert_eq!(
            err(&[1, 3, 4], &p),
            "spatial axis 0: the extent of the window or padding overflows"
        );
        let ints = Type::tensor(&[1, 1, 4], Type::int(8));
        assert!(infer_pool(PoolKind::Max, &ints, &PoolParams::new(&[2])).is_ok());
        assert_eq!(
            infer_pool(PoolKind::Average, &ints, &PoolParams::new(&[2]))
                .unwrap_err()
                .to_string(),
            "averages floats, but the input has element type 'i8'"
        );
    }
}
