//! `convert-precision`: rewrites an `nn` function from f32 (or f64) to the
//! precision a target runs it in, so that the reference executor and the
//! backend run the same converted IR and their comparison isolates the
//! lowering from the precision change.
//!
//! - `precision=fp16`: every f32/f64 tensor becomes f16: constants are
//!   rounded (weights into new resources), casts to f32 cast to f16, and
//!   every other op's result types are inferred again from its converted
//!   operands. Ops whose row reductions need a wider accumulator than f16
//!   state it with `acc_type = f32`: LayerNorm (mean and variance), softmax
//!   (its sum) and attention (its softmax). Contractions carry no
//!   `acc_type`: their accumulator is the target's choice (the IPU's AMP
//!   accumulates f16 products in f32 inside a block either way).
//! - `precision=fp8`: as fp16, and the 2-D constant right operands of
//!   `nn.linear` and `nn.matmul` (the weights) become `f8E4M3FNUZ` (the
//!   IPU's F143) codes with a per-tensor power-of-two scale chosen from the
//!   weights' range: the smallest `s` with `max|w| * 2^-s <= 240` (the
//!   format's largest finite value), so the largest weight uses the top of
//!   the range and nothing saturates. The contraction records the scale as
//!   `rhs_scale = s`: its right operand stands for `code * 2^s`.
//!   `fp8-scales=shared` (the default) gives every weight of one shape
//!   (in a function) the largest of their scales, so that nothing
//!   saturates in any of them: a model's repeated layers (so400m's 27
//!   QKV, output, up and down projections) then differ only in their
//!   codes, and a backend can run them as one loop body whose scales are
//!   immediates of its code (the IPU backend's chain loop,
//!   `ipuc_backend_ipu::lower::chain_loop`); the best known compiler for
//!   the IPU shares one scale per GEMM position across layers too. The
//!   price is precision in the tensors whose own range is smaller: their
//!   codes sit lower in the format's range, where their smallest values
//!   become subnormal (below `2^-7`) or zero sooner.
//!   `fp8-scales=per-tensor` gives each tensor its own scale. With
//!   `fp8-activations=true` (the default) the left operand of each such
//!   contraction is cast to FP8 too, `nn.cast %x {to = f8E4M3FNUZ}`, at
//!   scale 0 (the code is the value), ONNX `Cast` with `saturate = 1`:
//!   round to nearest even; magnitudes above 240 and infinities saturate
//!   to +-240 (the format has no infinity); NaN becomes the format's one
//!   NaN (code 0x80); magnitudes up to 2^-11 (half the smallest subnormal,
//!   2^-10, the tie going to the even zero) become +0, whatever their sign
//!   (the format has no -0). The reference executor's `nn.cast` does
//!   exactly this (tested in `runtime/tests/fp8_contractions.rs`). The
//!   contraction then takes FP8 on both sides and its result is f16 (the
//!   `nn` dialect's rule for 8-bit float operands); activations elsewhere
//!   stay f16.
//!
//!   Why the cast is in the IR rather than left to the backend: the IPU's
//!   FP8 AMP (`f8v8hihov4amp`) multiplies FP8 by FP8, so a backend that
//!   uses it must quantize the activations; if the IR did not say so, the
//!   reference executor would compute with f16 activations and a
//!   backend-vs-reference comparison would measure the activation
//!   quantization as if it were a lowering error. With the cast explicit,
//!   the reference runs the same quantization and the comparison isolates
//!   the lowering again. One cast serves every FP8 contraction of the same
//!   activation (the QKV projections of one LayerNorm output share it),
//!   placed before the first of them. `fp8-activations=false` keeps the
//!   f16 activations: f16 x FP8 products, which the reference computes as
//!   written and a backend runs on the FP8 AMP only by quantizing the
//!   activations itself (the mismatch the default removes).
//!
//! With `keep-interface=true` (the default) the function keeps its f32
//! arguments and results, converted by `nn.cast` at its entry and return,
//! so the converted model runs on the same inputs and compares with the
//! same outputs as the original; `keep-interface=false` converts the
//! signature too.
//!
//! Run it after `eqsat-fuse`: the fused ops are the ones that carry
//! `acc_type`, and the e-graph does not keep attributes it does not know.

use std::collections::HashMap;
use std::sync::Arc;

use ipuc_dialects::func;
use ipuc_dialects::nn::{self, elements, CastOp};
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::attributes::{zeroed_bytes, AttrKind, ResourceBlob};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::types::FloatKind;
use ipuc_ir::{Attribute, Context, Diagnostic, OpId, Type, Value};

/// The precision to convert to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Precision {
    /// f16 weights and activations.
    Fp16,
    /// f8E4M3FNUZ weights with power-of-two scales; the activations
    /// multiplied by them cast to f8E4M3FNUZ unless `fp8-activations=false`.
    Fp8,
}

impl Precision {
    /// Every precision, as options list them.
    pub const ALL: [Precision; 2] = [Precision::Fp16, Precision::Fp8];

    /// The option value.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
        }
    }

    /// Parses an option value.
    pub fn parse(s: &str) -> Result<Precision, String> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown precision '{s}' (precisions: fp16, fp8)"))
    }
}

/// How FP8 weights get their scales.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fp8Scales {
    /// Every weight of one shape shares the largest scale any of them
    /// needs: a model's repeated layers get equal scales.
    Shared,
    /// Each weight tensor gets the scale its own range needs.
    PerTensor,
}

impl Fp8Scales {
    /// Parses an option value.
    pub fn parse(s: &str) -> Result<Fp8Scales, String> {
        match s {
            "shared" => Ok(Fp8Scales::Shared),
            "per-tensor" => Ok(Fp8Scales::PerTensor),
            _ => Err(format!(
                "unknown fp8-scales '{s}' (choices: shared, per-tensor)"
            )),
        }
    }
}

pub use nn::{ACC_TYPE, RHS_SCALE};

/// The largest finite `f8E4M3FNUZ` value.
const F8_MAX: f64 = 240.0;

/// Constants up to this many elements stay inline `dense<...>`; larger ones
/// (weights) go to resources, as the importer does.
pub(crate) const INLINE_ELEMENTS: u64 = 64;

/// The FP8 scale exponent of a tensor whose largest magnitude is
/// `max_abs`: the smallest `s` with `max_abs * 2^-s <= 240` (0 for a zero
/// tensor).
pub fn fp8_scale(max_abs: f64) -> i32 {
    if max_abs == 0.0 || !max_abs.is_finite() {
        return 0;
    }
    let mut s = (max_abs / F8_MAX).log2().ceil() as i32;
    // log2 may be off by one ulp at exact powers of two.
    while max_abs * 2f64.powi(-s) > F8_MAX {
        s += 1;
    }
    while max_abs * 2f64.powi(-(s - 1)) <= F8_MAX {
        s -= 1;
    }
    s
}

/// Whether element type `e` is converted: f32 or f64.
fn is_wide_element(e: &Type) -> bool {
    matches!(e.float_kind(), Some(FloatKind::F32 | FloatKind::F64))
}

/// Whether values of type `t` are converted: tensors of f32 or f64.
fn is_wide(t: &Type) -> bool {
    t.element_type().is_some_and(is_wide_element)
}

/// `t` with element type `e`.
fn with_element(t: &Type, e: Type) -> Type {
    Type::tensor(t.shape().expect("a ranked tensor"), e)
}

/// The pipeline of the tools' `--precision P`: the conversion of every
/// function of the module.
pub fn precision_pipeline(precision: &str) -> String {
    format!("builtin.module(func.func(convert-precision{{precision={precision}}}))")
}

/// The pass.
#[derive(Clone)]
pub struct ConvertPrecision {
    precision: Precision,
    keep_interface: bool,
    fp8_activations: bool,
    fp8_scales: Fp8Scales,
}

ipuc_ir::declare_pass! {
    ConvertPrecision => "convert-precision" {
        summary: "Convert an nn function to fp16 (f16 everywhere, f32 accumulation in LayerNorm, softmax and attention) or fp8 (f8E4M3FNUZ weights with power-of-two scales, and the activations they multiply cast to f8E4M3FNUZ; f16 elsewhere)",
        anchor: "func.func",
        options ConvertPrecisionOptions {
            /// fp16 or fp8
            precision: String = "fp16".to_string() => "precision",
            /// Keep f32 arguments and results, converted by nn.cast at entry and return
            keep_interface: bool = true => "keep-interface",
            /// With fp8: cast the left operand of every FP8-weight contraction to f8E4M3FNUZ (the AMP multiplies FP8 by FP8)
            fp8_activations: bool = true => "fp8-activations",
            /// With fp8: shared (one scale for every weight of a shape, the largest any of them needs) or per-tensor
            fp8_scales: String = "shared".to_string() => "fp8-scales",
        }
        statistics ConvertPrecisionStatistics {
            /// Constants converted to f16
            constants: u64 => "num-f16-constants",
            /// Weights converted to FP8 with a scale
            fp8_weights: u64 => "num-fp8-weights",
            /// Activations cast to FP8 (one per distinct value)
            fp8_activations: u64 => "num-fp8-activation-casts",
            /// Ops given an f32 accumulator
            accumulators: u64 => "num-f32-accumulators",
        }
    }
}

impl DeclaredPass for ConvertPrecision {
    fn create(o: &ConvertPrecisionOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(ConvertPrecision {
            precision: Precision::parse(&o.precision).map_err(PassCreateError::Refused)?,
            keep_interface: o.keep_interface,
            fp8_activations: o.fp8_activations,
            fp8_scales: Fp8Scales::parse(&o.fp8_scales).map_err(PassCreateError::Refused)?,
        })
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut ConvertPrecisionStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let Some(body) = func::entry_block(ctx, op) else {
            return Ok(PreservedAnalyses::all());
        };
        let (inputs, results) = func::function_type(ctx, op).expect("a verified function");
        let half = Type::f16();
        // Arguments: cast at entry (in argument order), or retyped.
        let mut last_cast: Option<OpId> = None;
        for arg in ctx.block_args(body).to_vec() {
            let ty = ctx.value_type(arg).clone();
            if !is_wide(&ty) {
                continue;
            }
            if self.keep_interface {
                let loc = ctx
                    .value_loc(arg)
                    .cloned()
                    .unwrap_or_else(|| ctx.loc(op).clone());
                let cast = ctx.create_op(CastOp::build(ctx, arg, &half, true, loc)?);
                match last_cast {
                    Some(prev) => ctx.insert_op_after(prev, cast),
                    None => ctx.prepend_op(body, cast),
                }
                last_cast = Some(cast);
                let converted = ctx.result(cast, 0);
                ctx.replace_uses_if(arg, converted, |_, u| u.op != cast);
            } else {
                ctx.set_value_type(arg, with_element(&ty, half.clone()));
            }
        }
        if self.precision == Precision::Fp8 {
            let scales = weight_scales(ctx, body, self.fp8_scales)?;
            // The FP8 cast of each activation value, once made.
            let mut casts: HashMap<Value, Value> = HashMap::new();
            for o in ctx.block_ops_vec(body) {
                let Some(&scale) = scales.get(&o) else {
                    continue;
                };
                quantize_weight(ctx, o, scale)?;
                stats.fp8_weights += 1;
                if self.fp8_activations && quantize_activation(ctx, o, &mut casts)? {
                    stats.fp8_activations += 1;
                }
            }
        }
        for o in ctx.block_ops_vec(body) {
            let name = ctx.name_str(o);
            if name == nn::CONSTANT {
                if convert_constant(ctx, o)? {
                    stats.constants += 1;
                }
                continue;
            }
            if name == func::RETURN {
                if self.keep_interface {
                    restore_results(ctx, o, &results)?;
                }
                continue;
            }
            if name == nn::CAST && is_wide_element(&CastOp(o).to(ctx)) {
                ctx.set_attr(o, "to", Attribute::type_attr(half.clone()));
                let input = CastOp(o).operand(ctx);
                if ctx.value_type(input).element_type() == Some(&half) {
                    // Now a cast from f16 to f16: gone.
                    let result = ctx.result(o, 0);
                    ctx.replace_all_uses(result, input);
                    ctx.erase_op(o);
                    continue;
                }
            }
            reinfer(ctx, o)?;
            if [nn::LAYER_NORMALIZATION, nn::SOFTMAX, nn::ATTENTION].contains(&ctx.name_str(o)) {
                ctx.set_attr(o, ACC_TYPE, Attribute::type_attr(Type::f32()));
                stats.accumulators += 1;
            }
        }
        if !self.keep_interface {
            let args: Vec<Type> = ctx
                .block_args(body)
                .iter()
                .map(|&a| ctx.value_type(a).clone())
                .collect();
            let ret = ctx
                .terminator(body)
                .expect("a function body ends in a return");
            let res: Vec<Type> = ctx
                .operands(ret)
                .iter()
                .map(|&v| ctx.value_type(v).clone())
                .collect();
            debug_assert_eq!(args.len(), inputs.len());
            ctx.set_attr(
                op,
                "function_type",
                Attribute::type_attr(Type::function(args, res)),
            );
        }
        Ok(PreservedAnalyses::none())
    }
}

/// Sets `op`'s result types to what its (converted) operands imply.
fn reinfer(ctx: &mut Context, op: OpId) -> Result<(), Diagnostic> {
    let types = match nn::infer_result_types(ctx, op) {
        Some(Ok(t)) => t,
        Some(Err(msg)) => {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!("cannot be converted to the new precision: {msg}"),
            ))
        }
        None => {
            // Not an nn op: only ops without float tensors pass through.
            let touches_float = ctx.operands(op).iter().chain(ctx.results(op)).any(|&v| {
                ctx.value_type(v)
                    .element_type()
                    .is_some_and(|e| e.is_float())
            });
            if touches_float {
                return Err(Diagnostic::op_error(
                    ctx,
                    op,
                    "convert-precision converts nn ops only; this op's float tensors cannot be retyped",
                ));
            }
            return Ok(());
        }
    };
    for (r, t) in ctx.results(op).to_vec().into_iter().zip(types) {
        ctx.set_value_type(r, t);
    }
    Ok(())
}

/// Casts the returned values back to the function's declared result types.
fn restore_results(ctx: &mut Context, ret: OpId, results: &[Type]) -> Result<(), Diagnostic> {
    for (i, v) in ctx.operands(ret).to_vec().into_iter().enumerate() {
        let want = &results[i];
        if ctx.value_type(v) == want {
            continue;
        }
        let to = want.element_type().expect("a tensor result").clone();
        let loc = ctx.loc(ret).clone();
        let cast = ctx.create_op(CastOp::build(ctx, v, &to, true, loc)?);
        ctx.insert_op_before(ret, cast);
        let converted = ctx.result(cast, 0);
        ctx.set_operand(ret, i, converted);
    }
    Ok(())
}

/// The attribute of `value` rounded to element type `element`, or `None` if
/// it is not a float constant whose data is available.
pub(crate) fn rounded(
    ctx: &Context,
    value: &Attribute,
    values: &[f64],
    element: Type,
    hint: &str,
) -> Option<Attribute> {
    let ty = with_element(value.ty()?, element);
    let is_resource = matches!(value.kind(), AttrKind::DenseResource { .. });
    if !is_resource || ty.num_elements()? <= INLINE_ELEMENTS {
        return elements::from_floats(&ty, values);
    }
    let kind = ty.element_type()?.float_kind()?;
    let mut bytes = zeroed_bytes(values.len() * kind.byte_size());
    let out = Arc::get_mut(&mut bytes).expect("a new buffer is unique");
    ipuc_ir::float_format::encode_into(kind, values, out);
    Some(new_resource(ctx, ty, kind, bytes, hint))
}

/// A `dense_resource` of type `ty` holding `bytes` (elements of `kind`),
/// in a new blob named after `hint`.
pub(crate) fn new_resource(
    ctx: &Context,
    ty: Type,
    kind: FloatKind,
    bytes: Arc<[u8]>,
    hint: &str,
) -> Attribute {
    let blob = ResourceBlob {
        alignment: kind.byte_size() as u32,
        data: bytes,
    };
    let resource = ctx.resources().insert_unique(hint, blob);
    Attribute::new(AttrKind::DenseResource { resource, ty })
}

/// `value` (a float constant) times `factor` (a power of two: exact)
/// rounded to `element`, as [`rounded`] builds it; a large resource's is
/// encoded straight from its stored bytes (no `f64` copy of so400m's 428 M
/// weights; on the host's threads, [`ipuc_ir::float_format::encode_scaled`]).
fn rounded_scaled(
    ctx: &Context,
    value: &Attribute,
    factor: f64,
    element: Type,
    hint: &str,
) -> Option<Attribute> {
    let data = elements::dense_data(value)?;
    let ty = with_element(value.ty()?, element.clone());
    let is_resource = matches!(value.kind(), AttrKind::DenseResource { .. });
    if !is_resource || data.splat || ty.num_elements()? <= INLINE_ELEMENTS {
        let values: Vec<f64> = elements::floats(&data)?
            .into_iter()
            .map(|v| v * factor)
            .collect();
        return rounded(ctx, value, &values, element, hint);
    }
    let from = data.element_type().float_kind()?;
    let kind = ty.element_type()?.float_kind()?;
    let bytes = ipuc_ir::float_format::encode_scaled(from, &data.data, factor, kind);
    Some(new_resource(ctx, ty, kind, bytes, hint))
}

/// A constant op's value, checked to hold its data, and a name hint for a
/// new resource holding its converted data.
fn constant_with_data(ctx: &Context, op: OpId) -> Result<(Attribute, String), Diagnostic> {
    let value = ctx
        .attr(op, "value")
        .cloned()
        .expect("a verified nn.constant");
    let hint = match value.kind() {
        AttrKind::DenseResource { resource, .. } => resource.name().to_string(),
        _ => "converted".to_string(),
    };
    if elements::dense_data(&value).is_none() {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "has no data to convert (its dense_resource blob is missing)",
        ));
    }
    Ok((value, hint))
}

/// Rounds an f32/f64 constant to f16; `false` if it is not one.
fn convert_constant(ctx: &mut Context, op: OpId) -> Result<bool, Diagnostic> {
    let result = ctx.result(op, 0);
    if !is_wide(ctx.value_type(result)) {
        return Ok(false);
    }
    let (value, hint) = constant_with_data(ctx, op)?;
    let converted = rounded_scaled(ctx, &value, 1.0, Type::f16(), &format!("{hint}_f16"))
        .expect("f16 holds any float tensor");
    let ty = converted.ty().expect("typed").clone();
    ctx.set_attr(op, "value", converted);
    ctx.set_value_type(result, ty);
    drop(release_replaced(ctx, value));
    Ok(true)
}

/// Releases the blob of `value` (the value of a constant just replaced
/// or erased), if it is a resource nothing refers to any more
/// (`ResourceTable::release_if_unreferenced`): its bytes are freed when
/// the caller drops the data returned (or reused, if it writes a blob of
/// the same size next).
pub(crate) fn release_replaced(ctx: &Context, value: Attribute) -> Option<Arc<[u8]>> {
    let AttrKind::DenseResource { resource, .. } = value.kind() else {
        return None;
    };
    let name = resource.name().to_string();
    drop(value);
    let blob = ctx.resources().release_if_unreferenced(&name)?;
    tracing::trace!(
        resource = name,
        bytes = blob.data.len(),
        "released a replaced blob"
    );
    Some(blob.data)
}

/// The constant 2-D f32/f64 right operand (the weights) of contraction
/// `op` (an `nn.linear` or `nn.matmul`), if it has one.
fn fp8_weights(ctx: &Context, op: OpId) -> Option<OpId> {
    if ![nn::LINEAR, nn::MATMUL].contains(&ctx.name_str(op)) {
        return None;
    }
    let w: Value = ctx.operand(op, 1);
    let ty = ctx.value_type(w);
    if !is_wide(ty) || ty.shape().map_or(0, |s| s.len()) != 2 {
        return None;
    }
    ctx.defining_op(w)
        .filter(|&d| ctx.name_str(d) == nn::CONSTANT)
}

/// The FP8 scale of every contraction in `body` whose weights become FP8
/// ([`fp8_weights`]): each tensor's own ([`fp8_scale`] of its largest
/// magnitude) or, with [`Fp8Scales::Shared`], the largest of those among
/// the weights of its shape.
fn weight_scales(
    ctx: &Context,
    body: ipuc_ir::BlockId,
    mode: Fp8Scales,
) -> Result<HashMap<OpId, i32>, Diagnostic> {
    let mut own: Vec<(OpId, Vec<i64>, i32)> = Vec::new();
    for o in ctx.block_ops_vec(body) {
        let Some(c) = fp8_weights(ctx, o) else {
            continue;
        };
        // The largest magnitude straight from the stored elements (a
        // weight's f64 copy is 8 bytes an element, and so400m has 428 M).
        let value = ctx.attr(c, "value").expect("a verified nn.constant");
        let max_abs = elements::dense_data(value)
            .and_then(|d| d.max_abs())
            .ok_or_else(|| {
                Diagnostic::op_error(
                    ctx,
                    c,
                    "has no data to convert (its dense_resource blob is missing)",
                )
            })?;
        if !max_abs.is_finite() {
            return Err(Diagnostic::op_error(
                ctx,
                c,
                "holds a NaN or infinite weight, which no FP8 scale represents",
            ));
        }
        let shape = ctx
            .value_type(ctx.result(c, 0))
            .shape()
            .unwrap_or_default()
            .to_vec();
        own.push((o, shape, fp8_scale(max_abs)));
    }
    let mut shared: HashMap<&[i64], i32> = HashMap::new();
    if mode == Fp8Scales::Shared {
        for (_, shape, s) in &own {
            let e = shared.entry(shape.as_slice()).or_insert(*s);
            *e = (*e).max(*s);
        }
    }
    Ok(own
        .iter()
        .map(|(o, shape, s)| (*o, shared.get(shape.as_slice()).copied().unwrap_or(*s)))
        .collect())
}

/// Replaces the constant right operand of contraction `op` (which
/// [`fp8_weights`] found) by FP8 codes at scale `2^scale`.
fn quantize_weight(ctx: &mut Context, op: OpId, scale: i32) -> Result<(), Diagnostic> {
    let w: Value = ctx.operand(op, 1);
    let c = fp8_weights(ctx, op).expect("weight_scales found the weights");
    let (value, hint) = constant_with_data(ctx, c)?;
    let codes = rounded_scaled(
        ctx,
        &value,
        2f64.powi(-scale),
        Type::float(FloatKind::F8E4M3FNUZ),
        &format!("{hint}_f8"),
    )
    .expect("FP8 holds the scaled weights");
    let loc = ctx.loc(c).clone();
    let state = nn::ConstantOp::build(ctx, codes, loc)?;
    let q = ctx.create_op(state);
    ctx.insert_op_before(op, q);
    let qv = ctx.result(q, 0);
    ctx.set_operand(op, 1, qv);
    ctx.set_attr(op, RHS_SCALE, Attribute::i64(i64::from(scale)));
    if ctx.use_empty(w) {
        ctx.erase_op(c);
        drop(release_replaced(ctx, value));
    }
    tracing::debug!("convert-precision: FP8 weight {hint}: scale 2^{scale}");
    Ok(())
}

/// Casts the left operand of contraction `op` (whose right operand is now
/// FP8) to `f8E4M3FNUZ` at scale 0, reusing the cast in `casts` when the
/// same value fed an earlier FP8 contraction; `true` if a cast was made.
/// The cast goes right before `op`: the ops are visited in block order, so
/// the first contraction to use a value precedes every later one.
fn quantize_activation(
    ctx: &mut Context,
    op: OpId,
    casts: &mut HashMap<Value, Value>,
) -> Result<bool, Diagnostic> {
    let x = ctx.operand(op, 0);
    if let Some(&cast) = casts.get(&x) {
        ctx.set_operand(op, 0, cast);
        return Ok(false);
    }
    let element = ctx.value_type(x).element_type().cloned();
    if element
        .as_ref()
        .and_then(|e| e.float_kind())
        .map(|k| k.bit_width())
        == Some(8)
    {
        // Already FP8 (IR converted before): nothing to cast.
        return Ok(false);
    }
    let loc = ctx.loc(op).clone();
    let f8 = Type::float(FloatKind::F8E4M3FNUZ);
    let cast = ctx.create_op(CastOp::build(ctx, x, &f8, true, loc)?);
    ctx.insert_op_before(op, cast);
    let q = ctx.result(cast, 0);
    ctx.set_operand(op, 0, q);
    casts.insert(x, q);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_scale_uses_the_top_of_the_range() {
        assert_eq!(fp8_scale(240.0), 0);
        assert_eq!(fp8_scale(240.1), 1);
        assert_eq!(fp8_scale(120.0), -1);
        assert_eq!(fp8_scale(0.1), -11); // 0.1 * 2^11 = 204.8
        assert_eq!(fp8_scale(0.0), 0);
        for m in [1e-3, 0.02, 0.5, 3.0, 1e4] {
            let s = fp8_scale(m);
            assert!(
                m * 2f64.powi(-s) <= 240.0 && m * 2f64.powi(-s) > 120.0,
                "{m}: {s}"
            );
        }
    }

    #[test]
    fn parses_precisions() {
        assert_eq!(Precision::parse("fp8").unwrap(), Precision::Fp8);
        assert!(Precision::parse("bf16").unwrap_err().contains("fp16, fp8"));
    }
}
