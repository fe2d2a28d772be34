//! The `example` dialect: one op, `example.powi`.
//!
//! ```mlir
//! %y = example.powi %x {exponent = 5 : i64} : tensor<4xf32>
//! ```
//!
//! `%x` raised to the power `exponent` (an integer of at least 1),
//! elementwise; the result has the operand's type.

use ipuc_ir::dialect::{Arity, AttrDecl, OpDefinition, Traits, TypeConstraint, ValueDecl};
use ipuc_ir::{AttrKind, Context, Diagnostic, Dialect, OpId};

/// The op name.
pub const POWI: &str = "example.powi";

/// The dialect.
pub fn dialect() -> Dialect {
    Dialect::new("example", "An example dialect defined outside the compiler").op(
        OpDefinition::new(POWI)
            .summary("Raise a tensor to a positive integer power, elementwise")
            .traits(Traits::PURE | Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .operands(&[ValueDecl {
                name: "x",
                constraint: TypeConstraint::RANKED_TENSOR,
                arity: Arity::One,
            }])
            .results(&[ValueDecl {
                name: "result",
                constraint: TypeConstraint::RANKED_TENSOR,
                arity: Arity::One,
            }])
            .attribute(AttrDecl {
                name: "exponent",
                description: "an integer",
                check: |a| matches!(a.kind(), AttrKind::Integer { .. }),
                optional: false,
            })
            .verifier(verify_powi)
            .assembly_format("$x attr-dict `:` type($result)"),
    )
}

/// The exponent of an `example.powi`.
pub fn exponent(ctx: &Context, op: OpId) -> Option<i128> {
    ctx.attr(op, "exponent").and_then(|a| a.as_int())
}

fn verify_powi(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    match exponent(ctx, op) {
        Some(e) if e >= 1 => Ok(()),
        Some(e) => Err(Diagnostic::error(
            ctx.loc(op).clone(),
            format!("'{POWI}' needs an exponent of at least 1, found {e}"),
        )),
        None => Ok(()),
    }
}
