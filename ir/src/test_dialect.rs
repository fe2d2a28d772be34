//! The `test` dialect: small operations that exercise the IR infrastructure
//! (verifier, folding, rewriting, dialect conversion) without depending on a
//! real dialect, after MLIR's `test` dialect.
//!
//! **Test-only.** Nothing in the compiler lowers or executes these ops. The
//! dialect is public so that integration tests and lit tests (through a
//! tool that registers it, e.g. `ipu-opt`) can use it. Its ops:
//!
//! | op | traits | purpose |
//! |---|---|---|
//! | `test.constant` | ConstantLike, Pure | a constant with a `value` attribute |
//! | `test.add` | Pure, Commutative, SameOperandsAndResultType | integer add with a folder and the custom form `%2 = test.add %0, %1 : i32` |
//! | `test.add_i32`, `test.mul_i32` | Pure | i32-only arithmetic, the source of conversion tests |
//! | `test.add_i64` | Pure | i64-only add, the target of conversion tests |
//! | `test.region` | — | one SSACFG region that needs a terminator |
//! | `test.graph_region` | GraphRegion | one graph region (no dominance, no terminator) |
//! | `test.isolated` | IsolatedFromAbove | one region that may not capture outer values |
//! | `test.terminator` | Terminator, ReturnLike | ends a block, any operands |
//! | `test.br` | Terminator | branches to its successors, passing its operands |
//! | `test.symbol` | Symbol | defines `sym_name` |
//!
//! It also defines the type `!test.pair<T, U>` ([`PairType`]) and the
//! attribute `#test.range<lo, hi>` ([`RangeAttr`]), which exercise
//! [`crate::dialect_symbols`].
//!
//! Ops with a declarative assembly format (see [`crate::assembly_format`]),
//! one per directive family:
//!
//! | op | format |
//! |---|---|
//! | `test.add` | `$lhs `,` $rhs attr-dict `:` type($result)` (operand types inferred from SameOperandsAndResultType) |
//! | `test.format_operands` | `operands attr-dict `:` type(operands) `->` type(results)` (a variadic operand) |
//! | `test.format_optional` | `$value (`,` $extra^ `:` type($extra))? attr-dict `:` type($value) `->` type($result)` |
//! | `test.format_attr` | `$input `by` $count (`scale` `=` $scale^)? attr-dict `:` type($input) `->` type($output)` |
//! | `test.format_functional` | `$lhs `,` $rhs attr-dict `:` functional-type(operands, results)` |
//! | `test.format_region` | `(`(` $inits^ `:` type($inits) `)`)? `->` type($result) attr-dict-with-keyword $body` |
//! | `test.format_branch` | `$dest (`(` $args^ `:` type($args) `)`)? attr-dict` (a terminator with a successor) |
//! | `test.format_list` | `` `[` operands `]` attr-dict `:` type(operands) `` (square-bracket literals, no results) |
//!
//! The dialect accepts ops it does not define (as unregistered ops), as
//! upstream's test dialect does, so tools can register it without
//! rejecting the ad hoc `test.*` ops of lit tests.

use crate::asm::{CustomParser, OpPrinter};
use crate::attributes::{normalize_int, AttrKind, Attribute};
use crate::context::{Context, OpId, OperationState};
use crate::diagnostics::Diagnostic;
use crate::dialect::{
    Arity, AttrDecl, Dialect, FoldResult, OpDefinition, Traits, TypeConstraint, ValueDecl,
};
use crate::dialect_symbols::{
    parse_type, split_params, AttrDef, ParamError, SymbolParams, TypeDef,
};
use crate::location::Location;
use crate::types::Type;

const fn one(name: &'static str, constraint: TypeConstraint) -> ValueDecl {
    ValueDecl {
        name,
        constraint,
        arity: Arity::One,
    }
}

const fn variadic(name: &'static str) -> ValueDecl {
    ValueDecl {
        name,
        constraint: TypeConstraint::ANY,
        arity: Arity::Variadic,
    }
}

const I32: TypeConstraint = TypeConstraint {
    description: "i32",
    check: |t| t.is_integer_of_width(32),
};

const I64: TypeConstraint = TypeConstraint {
    description: "i64",
    check: |t| t.is_integer_of_width(64),
};

/// The `test` dialect (see the module documentation).
/// `!test.pair<T, U>`: a pair of builtin types (a dialect type whose
/// parameters are types).
#[derive(Clone, Debug, PartialEq)]
pub struct PairType {
    /// The first type.
    pub first: Type,
    /// The second type.
    pub second: Type,
}

impl TypeDef for PairType {}

impl SymbolParams for PairType {
    const DIALECT: &'static str = "test";
    const MNEMONIC: &'static str = "pair";
    fn parse_params(params: &str) -> Result<Self, ParamError> {
        let [a, b] = split_params(params)[..] else {
            return Err(ParamError::Count {
                expected: "2 parameters (two types)",
                found: split_params(params).len(),
            });
        };
        Ok(PairType {
            first: parse_type(a)?,
            second: parse_type(b)?,
        })
    }
    fn print_params(&self, out: &mut String) {
        crate::printer::write_type(out, &self.first, None);
        out.push_str(", ");
        crate::printer::write_type(out, &self.second, None);
    }
}

/// `#test.range<lo, hi>`: an integer range with `lo <= hi` (a dialect
/// attribute with a verifier).
#[derive(Clone, Debug, PartialEq)]
pub struct RangeAttr {
    /// Lower bound.
    pub lo: i64,
    /// Upper bound (inclusive).
    pub hi: i64,
}

impl AttrDef for RangeAttr {}

impl SymbolParams for RangeAttr {
    const DIALECT: &'static str = "test";
    const MNEMONIC: &'static str = "range";
    fn parse_params(params: &str) -> Result<Self, ParamError> {
        let [lo, hi] = split_params(params)[..] else {
            return Err(ParamError::Count {
                expected: "2 parameters (lo, hi)",
                found: split_params(params).len(),
            });
        };
        let int = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| ParamError::invalid(format!("expected an integer bound, found '{s}'")))
        };
        Ok(RangeAttr {
            lo: int(lo)?,
            hi: int(hi)?,
        })
    }
    fn print_params(&self, out: &mut String) {
        out.push_str(&format!("{}, {}", self.lo, self.hi));
    }
    fn verify(&self) -> Result<(), ParamError> {
        if self.lo > self.hi {
            return Err(ParamError::invalid(format!(
                "empty range: lower bound {} exceeds upper bound {}",
                self.lo, self.hi
            )));
        }
        Ok(())
    }
}

pub fn dialect() -> Dialect {
    let mut d = Dialect::new(
        "test",
        "Operations for testing the IR infrastructure (test-only)",
    )
    .type_def::<PairType>()
    .attr_def::<RangeAttr>()
    .op(OpDefinition::new("test.constant")
        .summary("A constant holding its `value` attribute")
        .traits(Traits::CONSTANT_LIKE | Traits::PURE)
        .operands(&[])
        .results(&[one("result", TypeConstraint::ANY)])
        .attribute(AttrDecl {
            name: "value",
            description: "any attribute",
            check: |_| true,
            optional: false,
        }))
    .op(OpDefinition::new("test.add")
        .summary("Integer addition (folds `x + 0` and constant operands)")
        .traits(Traits::PURE | Traits::COMMUTATIVE | Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        .operands(&[
            one("lhs", TypeConstraint::INT_OR_INDEX),
            one("rhs", TypeConstraint::INT_OR_INDEX),
        ])
        .results(&[one("result", TypeConstraint::INT_OR_INDEX)])
        .folder(fold_add)
        .assembly_format("$lhs `,` $rhs attr-dict `:` type($result)"))
    .op(binary_op(
        "test.add_i32",
        "i32 addition (conversion source)",
        I32,
    ))
    .op(binary_op(
        "test.mul_i32",
        "i32 multiplication (conversion source)",
        I32,
    ))
    .op(binary_op(
        "test.add_i64",
        "i64 addition (conversion target)",
        I64,
    ))
    .op(OpDefinition::new("test.region")
        .summary("An op with one SSACFG region")
        .regions(Some(1)))
    .op(OpDefinition::new("test.graph_region")
        .summary("An op with one graph region")
        .traits(Traits::GRAPH_REGION | Traits::NO_TERMINATOR | Traits::SINGLE_BLOCK)
        .regions(Some(1)))
    .op(OpDefinition::new("test.isolated")
        .summary("An op whose region is isolated from above")
        .traits(Traits::ISOLATED_FROM_ABOVE)
        .regions(Some(1)))
    .op(OpDefinition::new("test.terminator")
        .summary("A terminator returning its operands to the parent")
        .traits(Traits::TERMINATOR | Traits::RETURN_LIKE)
        .operands(&[variadic("operands")])
        .results(&[]))
    .op(OpDefinition::new("test.br")
        .summary("A branch to its successors")
        .traits(Traits::TERMINATOR)
        .operands(&[variadic("operands")])
        .results(&[])
        .successors(None))
    .op(OpDefinition::new("test.symbol")
        .summary("An op defining a symbol")
        .traits(Traits::SYMBOL)
        .attribute(crate::builtin::SYM_NAME)
        .attribute(crate::builtin::SYM_VISIBILITY))
    .op(OpDefinition::new("test.format_operands")
        .summary("Declarative format: a variadic operand list and its types")
        .operands(&[variadic("inputs")])
        .results(&[one("output", TypeConstraint::ANY)])
        // Inherent, so kept in properties: `attr-dict` shows it merged
        // in name order with the discardable attributes.
        .attribute(AttrDecl {
            name: "level",
            description: "any attribute",
            check: |_| true,
            optional: true,
        })
        .assembly_format("operands attr-dict `:` type(operands) `->` type(results)"))
    .op(OpDefinition::new("test.format_optional")
        .summary("Declarative format: an optional operand in an optional group")
        .operands(&[
            one("value", TypeConstraint::ANY),
            ValueDecl {
                name: "extra",
                constraint: TypeConstraint::ANY,
                arity: Arity::Optional,
            },
        ])
        .results(&[one("result", TypeConstraint::ANY)])
        .assembly_format(
            "$value (`,` $extra^ `:` type($extra))? attr-dict `:` type($value) `->` type($result)",
        ))
    .op(OpDefinition::new("test.format_attr")
        .summary("Declarative format: a required and an optional attribute")
        .operands(&[one("input", TypeConstraint::ANY)])
        .results(&[one("output", TypeConstraint::ANY)])
        .attribute(AttrDecl {
            name: "count",
            description: "an integer attribute",
            check: |a| matches!(a.kind(), AttrKind::Integer { .. }),
            optional: false,
        })
        .attribute(AttrDecl {
            name: "scale",
            description: "any attribute",
            check: |_| true,
            optional: true,
        })
        .assembly_format(
            "$input `by` $count (`scale` `=` $scale^)? attr-dict `:` type($input) `->` type($output)",
        ))
    .op(OpDefinition::new("test.format_functional")
        .summary("Declarative format: functional-type")
        .operands(&[
            one("lhs", TypeConstraint::ANY),
            one("rhs", TypeConstraint::ANY),
        ])
        .results(&[one("result", TypeConstraint::ANY)])
        .assembly_format("$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"))
    .op(OpDefinition::new("test.format_region")
        .summary("Declarative format: a named region and bracketed optional operands")
        .operands(&[variadic("inits")])
        .results(&[one("result", TypeConstraint::ANY)])
        .region_names(&["body"])
        .assembly_format(
            "(`(` $inits^ `:` type($inits) `)`)? `->` type($result) attr-dict-with-keyword $body",
        ))
    .op(OpDefinition::new("test.format_branch")
        .summary("Declarative format: a successor with optional arguments")
        .traits(Traits::TERMINATOR)
        .operands(&[variadic("args")])
        .results(&[])
        .successor_names(&["dest"])
        .assembly_format("$dest (`(` $args^ `:` type($args) `)`)? attr-dict"))
    .op(OpDefinition::new("test.format_list")
        .summary("Declarative format: square-bracket literals around an operand list")
        .operands(&[variadic("items")])
        .results(&[])
        .assembly_format("`[` operands `]` attr-dict `:` type(operands)"));
    d.materialize_constant = Some(materialize_constant);
    d.allow_unknown_operations = true;
    d
}

fn binary_op(name: &'static str, summary: &'static str, c: TypeConstraint) -> OpDefinition {
    OpDefinition::new(name)
        .summary(summary)
        .traits(Traits::PURE)
        .operands(&[one("lhs", c), one("rhs", c)])
        .results(&[one("result", c)])
        .custom_assembly_format(print_binary, parse_binary)
}

/// Builds a `test.constant` for a folded value.
fn materialize_constant(
    ctx: &mut Context,
    value: &Attribute,
    ty: &Type,
    loc: Location,
) -> Option<OpId> {
    let state = OperationState::new(ctx.op_name("test.constant"), loc)
        .results(std::slice::from_ref(ty))
        .attr("value", value.clone());
    Some(ctx.create_op(state))
}

/// `x + 0 -> x`, `0 + x -> x`, and `c1 + c2 -> (c1 + c2)` wrapped to the type's width.
fn fold_add(ctx: &Context, op: OpId, consts: &[Option<Attribute>]) -> Option<Vec<FoldResult>> {
    let ints: Vec<Option<i128>> = consts
        .iter()
        .map(|c| {
            c.as_ref().and_then(|a| match a.kind() {
                AttrKind::Integer { value, .. } => Some(*value),
                _ => None,
            })
        })
        .collect();
    let ty = ctx.value_type(ctx.result(op, 0)).clone();
    match (
        ints.first().copied().flatten(),
        ints.get(1).copied().flatten(),
    ) {
        (Some(a), Some(b)) => {
            let sum = normalize_int(a.wrapping_add(b), &ty);
            Some(vec![FoldResult::Constant(Attribute::integer(sum, ty))])
        }
        (_, Some(0)) => Some(vec![FoldResult::Value(ctx.operand(op, 0))]),
        (Some(0), _) => Some(vec![FoldResult::Value(ctx.operand(op, 1))]),
        _ => None,
    }
}

/// `%r = test.add %a, %b {attrs} : T`.
fn print_binary(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let operands = p.ctx().operands(op).to_vec();
    if operands.len() != 2 || p.ctx().results(op).len() != 1 {
        // Malformed ops (e.g. while being built) print generically.
        p.generic(op);
        return Ok(());
    }
    p.write_str(" ");
    p.values(&operands);
    let attrs = p.ctx().attributes(op).clone();
    p.attr_dict(&attrs, &[]);
    p.write_str(" : ");
    let ty = p.ctx().value_type(p.ctx().result(op, 0)).clone();
    p.ty(&ty);
    Ok(())
}

fn parse_binary(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let operands = p.parse_operand_list()?;
    if operands.len() != 2 {
        return Err(p.error(format!(
            "'{}' expects 2 operands, found {}",
            state.name.as_str(),
            operands.len()
        )));
    }
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let ty = p.parse_colon_type()?;
    state.operands = p.resolve_operands(&operands, &[ty.clone(), ty.clone()])?;
    state.result_types = vec![ty];
    Ok(())
}
