//! The `nn` dialect: graph-level tensor operations on ranked tensors with
//! ONNX semantics (numpy broadcasting, ONNX attribute meanings and
//! defaults). It is what the ONNX importer produces and what the graph
//! rewrites, quantization and the planner consume.
//!
//! Every op has
//! - a result-type inference function (`infer_*`, public: the builders, the
//!   verifier and the importer share it; [`infer_result_types`] runs the
//!   right one for an existing op),
//! - a verifier that compares the declared result types with the inferred
//!   ones and reports the first problem precisely,
//! - the custom assembly `operands attr-dict : operand-types -> result-types`
//!   (declarative, `custom_format::STANDARD_FORMAT`, but for `nn.split`)
//!   (the generic form is accepted too),
//! - a typed wrapper (`MatmulOp`, `BinaryOp`, ...) with accessors that apply
//!   the ONNX defaults, and a `build` function returning an
//!   [`OperationState`](ipuc_ir::OperationState) with inferred result types,
//! - and, where it makes sense, a constant folder (elementwise ops, cast,
//!   reductions and every shape op on constants of at most
//!   [`FOLD_ELEMENT_LIMIT`] elements), materialized as `nn.constant`.
//!
//! ```
//! use std::sync::Arc;
//! use ipuc_ir::{parse_source, verify, Context, DialectRegistry};
//!
//! let mut registry = DialectRegistry::new();
//! registry.register(ipuc_dialects::nn::dialect());
//! let mut ctx = Context::new(Arc::new(registry));
//! let src = r#"
//! %0 = nn.constant dense<1.0> : tensor<4x8xf32>
//! %1 = nn.softmax %0 {axis = -1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
//! "#;
//! let parsed = parse_source(&mut ctx, "example.mlir", src).unwrap();
//! verify(&ctx, parsed.module).unwrap();
//! ```

pub mod attention;
pub mod bitcast;
pub mod constant;
pub mod conv;
pub mod cumulative;
mod custom_format;
pub mod elements;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod norm;
pub mod pool;
pub mod reduce;
pub mod shape;
pub mod storage_types;
mod support;

use ipuc_ir::{Context, Diagnostic, Dialect, OpId, Type};

pub use attention::*;
pub use bitcast::*;
pub use constant::*;
pub use conv::*;
pub use cumulative::*;
pub use elements::FOLD_ELEMENT_LIMIT;
pub use elementwise::*;
pub use index::*;
pub use matmul::*;
pub use norm::*;
pub use pool::*;
pub use reduce::*;
pub use shape::*;
pub use support::{
    accumulator_type, broadcast_shapes, broadcasts_to, normalize_axes, normalize_axis, InferResult,
    ShapeError, ACC_TYPE,
};

/// The dialect namespace.
pub const NAMESPACE: &str = "nn";

/// The `nn` dialect definition, ready to register.
pub fn dialect() -> Dialect {
    // Each file of the dialect adds its ops.
    let files: [fn(Dialect) -> Dialect; 12] = [
        elementwise::register,
        matmul::register,
        conv::register,
        shape::register,
        reduce::register,
        norm::register,
        attention::register,
        index::register,
        cumulative::register,
        bitcast::register,
        pool::register,
        constant::register,
    ];
    let mut d = files.into_iter().fold(
        Dialect::new(
            NAMESPACE,
            "Graph-level tensor operations on ranked tensors with ONNX semantics",
        ),
        |d, add_ops| add_ops(d),
    );
    d.materialize_constant = Some(constant::materialize);
    d
}

/// Infers the result types of an existing `nn` op from its operand types and
/// attributes. `None` if `op` is not an `nn` op (or lacks a required
/// attribute, which the verifier reports first).
pub fn infer_result_types(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    let def = ctx.name(op).def()?;
    if !def.name.starts_with("nn.") {
        return None;
    }
    if let Err(msg) = check_operand_count(def, ctx.operands(op).len()) {
        return Some(Err(msg));
    }
    if let Err(msg) = storage_types::check(ctx, op, def.name) {
        return Some(Err(msg));
    }
    elementwise::infer_from_op(ctx, op)
        .or_else(|| matmul::infer_from_op(ctx, op))
        .or_else(|| conv::infer_from_op(ctx, op))
        .or_else(|| shape::infer_from_op(ctx, op))
        .or_else(|| reduce::infer_from_op(ctx, op))
        .or_else(|| norm::infer_from_op(ctx, op))
        .or_else(|| attention::infer_from_op(ctx, op))
        .or_else(|| index::infer_from_op(ctx, op))
        .or_else(|| cumulative::infer_from_op(ctx, op))
        .or_else(|| bitcast::infer_from_op(ctx, op))
        .or_else(|| pool::infer_from_op(ctx, op))
        .or_else(|| constant::infer_from_op(ctx, op))
}

/// Checks the operand count against the declarations (the core verifier
/// accepts any number of trailing optional operands).
fn check_operand_count(def: &ipuc_ir::OpDefinition, n: usize) -> InferResult<()> {
    use ipuc_ir::dialect::Arity;
    let Some(decls) = &def.operands else {
        return Ok(());
    };
    let min = decls.iter().filter(|d| d.arity == Arity::One).count();
    let max = if decls.iter().any(|d| d.arity == Arity::Variadic) {
        usize::MAX
    } else {
        decls.len()
    };
    if n < min || n > max {
        let expected = match (min == max, max == usize::MAX) {
            (true, _) => min.to_string(),
            (false, true) => format!("at least {min}"),
            (false, false) => format!("{min} to {max}"),
        };
        return Err(ShapeError::OperandCount { expected, found: n });
    }
    Ok(())
}

/// The verifier of every `nn` op: inference must succeed and agree with the
/// declared result types.
pub(crate) fn verify_op(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    match infer_result_types(ctx, op) {
        Some(Ok(types)) => support::check_results(ctx, op, &types),
        Some(Err(msg)) => Err(Diagnostic::op_error(ctx, op, msg)),
        None => Err(Diagnostic::op_error(
            ctx,
            op,
            "is missing a required attribute",
        )),
    }
}
