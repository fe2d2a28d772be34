//! The `builtin` dialect: `builtin.module` and
//! `builtin.unrealized_conversion_cast`.

use crate::asm::{CustomParser, OpPrinter};
use crate::attributes::Attribute;
use crate::context::{Context, OpId, OperationState};
use crate::diagnostics::Diagnostic;
use crate::dialect::{Arity, AttrDecl, Dialect, OpDefinition, Traits, TypeConstraint, ValueDecl};

/// The name of the module operation.
pub const MODULE: &str = "builtin.module";
/// The name of the conversion cast operation.
pub const UNREALIZED_CONVERSION_CAST: &str = "builtin.unrealized_conversion_cast";

/// The `sym_name` attribute declaration shared by symbol ops.
pub const SYM_NAME: AttrDecl = AttrDecl {
    name: "sym_name",
    description: "string",
    check: |a| a.as_str().is_some(),
    optional: false,
};

/// The optional `sym_visibility` attribute declaration.
pub const SYM_VISIBILITY: AttrDecl = AttrDecl {
    name: "sym_visibility",
    description: "string (\"public\", \"private\" or \"nested\")",
    check: |a| matches!(a.as_str(), Some("public" | "private" | "nested")),
    optional: true,
};

/// The builtin dialect.
pub fn dialect() -> Dialect {
    Dialect::new(
        "builtin",
        "MLIR's builtin dialect: the top-level module and conversion casts",
    )
    .op(OpDefinition::new(MODULE)
        .summary("A top-level container operation")
        .traits(
            Traits::ISOLATED_FROM_ABOVE
                | Traits::SYMBOL_TABLE
                | Traits::NO_TERMINATOR
                | Traits::SINGLE_BLOCK
                | Traits::GRAPH_REGION,
        )
        .attribute(AttrDecl {
            optional: true,
            ..SYM_NAME
        })
        .attribute(SYM_VISIBILITY)
        .operands(&[])
        .results(&[])
        .regions(Some(1))
        .verifier(verify_module)
        .custom_assembly_format(print_module, parse_module))
    .op(OpDefinition::new(UNREALIZED_CONVERSION_CAST)
        .summary("A cast between types that a partial conversion left behind")
        .traits(Traits::PURE)
        .operands(&[ValueDecl {
            name: "inputs",
            constraint: TypeConstraint::ANY,
            arity: Arity::Variadic,
        }])
        .results(&[ValueDecl {
            name: "outputs",
            constraint: TypeConstraint::ANY,
            arity: Arity::Variadic,
        }])
        .custom_assembly_format(print_cast, parse_cast))
}

fn verify_module(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    let r = ctx.regions(op)[0];
    if ctx.region_blocks(r).len() > 1 {
        return Err(Diagnostic::op_error(ctx, op, "expects a single block"));
    }
    if let Some(&b) = ctx.region_blocks(r).first() {
        if !ctx.block_args(b).is_empty() {
            return Err(Diagnostic::op_error(ctx, op, "body may not have arguments"));
        }
    }
    Ok(())
}

fn print_module(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let name = p
        .ctx()
        .attr(op, "sym_name")
        .and_then(|a| a.as_str())
        .map(str::to_string);
    if let Some(n) = name {
        p.write_str(" ");
        p.symbol_name(&n);
    }
    let mut attrs = p.ctx().attributes(op).clone();
    if let Some(props) = p.ctx().properties(op) {
        for (k, v) in props.iter() {
            if k != "sym_name" {
                attrs.set(k, v.clone());
            }
        }
    }
    p.attr_dict_with_keyword(&attrs, &[]);
    p.write_str(" ");
    let r = p.ctx().regions(op)[0];
    p.region(r, false);
    Ok(())
}

fn parse_module(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    if let Ok(name) = p.parse_symbol_name() {
        *state = state.clone().attr("sym_name", Attribute::string(&name));
    }
    let mut attrs = crate::attributes::Dictionary::new();
    p.parse_optional_attr_dict_with_keyword(&mut attrs)?;
    for (k, v) in attrs.iter() {
        *state = state.clone().attr(k, v.clone());
    }
    let r = p.parse_region(&[], true)?;
    state.regions.push(r);
    Ok(())
}

fn print_cast(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let operands = p.ctx().operands(op).to_vec();
    p.values_with_types(&operands);
    p.write_str(" to ");
    let tys = p.ctx().result_types(op);
    p.types(&tys);
    let attrs = p.ctx().attributes(op).clone();
    p.attr_dict(&attrs, &[]);
    Ok(())
}

fn parse_cast(p: &mut CustomParser<'_, '_>, state: &mut OperationState) -> Result<(), Diagnostic> {
    let operands = p.parse_operand_list()?;
    if !operands.is_empty() {
        p.expect_punct(":")?;
        let tys = p.parse_type_list()?;
        state.operands = p.resolve_operands(&operands, &tys)?;
    }
    p.expect_keyword("to")?;
    state.result_types = p.parse_type_list()?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    Ok(())
}
