//! TOSA, the tensor operator set that torch-mlir, TensorFlow Lite converters
//! and IREE's importers hand models over in, as upstream MLIR 22 spells it
//! (TOSA 1.0: shapes as `!tosa.shape<N>` values of `tosa.const_shape`, zero
//! points and `mul` shifts as operands).
//!
//! ipuc registers no `tosa` dialect: upstream MLIR parses and verifies TOSA
//! (through melior, in the `ipuc-mlir-interop` crate), and the ops enter an
//! ipuc context as unregistered ops in upstream's generic form. This module
//! converts between them and `nn` on ipuc IR alone, so both directions are
//! tested without LLVM:
//! - [`to_nn`]: the `convert-tosa-to-nn` pass (TOSA plus the `arith` and
//!   `tensor` ops such models carry, into `nn`);
//! - [`from_nn`]: [`convert_nn_to_tosa`], rewriting an `nn` function into
//!   TOSA for `ipu-opt --emit=tosa`.
//!
//! [`coverage`] lists what each direction handles; the README's table is
//! generated from it by a test.

pub mod coverage;
pub mod from_nn;
mod pool;
mod rescale;
pub mod to_nn;

pub use from_nn::convert_nn_to_tosa;
pub use to_nn::ConvertTosaToNn;

use ipuc_ir::pass::{PassRegistry, RegistrationError};
use ipuc_ir::{Attribute, Context, Diagnostic, Location, OpId, OperationState, Type, Value};

/// Registers the passes of this module.
pub fn register_passes(r: &mut PassRegistry) -> Result<(), RegistrationError> {
    r.register::<ConvertTosaToNn>()
}

/// Inserts ops before an anchor op, all at one location.
pub(crate) struct Builder<'c> {
    pub ctx: &'c mut Context,
    before: OpId,
    pub loc: Location,
}

impl<'c> Builder<'c> {
    pub fn new(ctx: &'c mut Context, before: OpId) -> Self {
        let loc = ctx.loc(before).clone();
        Builder { ctx, before, loc }
    }

    /// Creates `state` before the anchor; returns its results.
    pub fn insert(&mut self, state: OperationState) -> Vec<Value> {
        let op = self.ctx.create_op(state);
        self.ctx.insert_op_before(self.before, op);
        self.ctx.results(op).to_vec()
    }

    /// Creates an op built by an `nn` builder; returns its first result.
    pub fn nn(&mut self, state: Result<OperationState, Diagnostic>) -> Result<Value, Diagnostic> {
        Ok(self.insert(state?)[0])
    }

    /// Creates a generic op with one result.
    pub fn generic(
        &mut self,
        name: &str,
        operands: &[Value],
        result: Type,
        attrs: Vec<(&str, Attribute)>,
    ) -> Value {
        let mut state = OperationState::new(self.ctx.op_name(name), self.loc.clone())
            .operands(operands)
            .results(&[result]);
        for (k, v) in attrs {
            state = state.attr(k, v);
        }
        self.insert(state)[0]
    }

    /// The static shape and element type of a ranked tensor value.
    pub fn shape(&self, v: Value) -> Result<(Vec<i64>, Type), Diagnostic> {
        tensor_parts(self.ctx.value_type(v)).ok_or_else(|| {
            Diagnostic::error(
                self.loc.clone(),
                format!(
                    "expected a statically shaped tensor, got '{}'",
                    self.ctx.value_type(v)
                ),
            )
        })
    }

    /// An error at the anchor's location.
    pub fn error(&self, msg: impl std::fmt::Display) -> Diagnostic {
        Diagnostic::error(self.loc.clone(), msg.to_string())
    }
}

/// Replaces `op` by what `convert` builds in front of it.
pub(crate) fn replace_op(
    ctx: &mut Context,
    op: OpId,
    convert: fn(&mut Builder, OpId) -> Result<Vec<Value>, Diagnostic>,
) -> Result<(), Diagnostic> {
    let replacement = convert(&mut Builder::new(ctx, op), op)?;
    let results = ctx.results(op).to_vec();
    for (r, v) in results.into_iter().zip(replacement) {
        ctx.replace_all_uses(r, v);
    }
    ctx.erase_op(op);
    Ok(())
}

/// One error for every op a conversion cannot handle (MLIR's partial
/// conversion reports them all): at the first, with a note at each saying
/// `why`. `headline` gets the count, the plural `s` (or nothing) and the
/// sorted op names.
pub(crate) fn unsupported_ops(
    ctx: &Context,
    unsupported: &[OpId],
    headline: impl FnOnce(usize, &str, String) -> String,
    why: impl Fn(OpId) -> String,
) -> Option<Diagnostic> {
    let &first = unsupported.first()?;
    let mut kinds: Vec<&str> = unsupported.iter().map(|&o| ctx.name_str(o)).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let n = unsupported.len();
    let message = headline(n, if n == 1 { "" } else { "s" }, kinds.join(", "));
    let mut d = Diagnostic::error(ctx.loc(first).clone(), message);
    for &op in unsupported {
        d = d.with_note(
            ctx.loc(op).clone(),
            format!("'{}' {}", ctx.name_str(op), why(op)),
        );
    }
    Some(d)
}

/// The shape and element type of a statically shaped tensor type.
pub(crate) fn tensor_parts(ty: &Type) -> Option<(Vec<i64>, Type)> {
    if !ty.has_static_shape() {
        return None;
    }
    Some((ty.shape()?.to_vec(), ty.element_type()?.clone()))
}

/// `array<i64: ...>`.
pub(crate) fn i64_array(values: &[i64]) -> Attribute {
    Attribute::dense_i64_array(values)
}
