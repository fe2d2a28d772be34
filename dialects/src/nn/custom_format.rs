//! The custom assembly format shared by every `nn` op but `nn.constant`:
//!
//! ```text
//! %r = nn.op %a, %b {attr = ...} : type(a), type(b) -> type(r)
//! %r:2 = nn.split %a {attr = ...} : type(a) -> (type(r0), type(r1))
//! ```
//!
//! Properties and discardable attributes print together in the optional
//! dictionary; the parser sends declared (inherent) names back to properties.
//!
//! Every single-result op states it declaratively ([`STANDARD_FORMAT`]).
//! `nn.split`, the one op with variadic results, keeps the hand-written
//! hooks below: its results print as function results, `(T, U)` (and a
//! lone result bare), while the declarative `type(results)` prints a bare
//! comma-separated list as upstream's does; changing the text would break
//! every printed `nn.split`.

use ipuc_ir::asm::{CustomParser, OpPrinter};
use ipuc_ir::{Diagnostic, OpId, OperationState, Type};

/// The declarative format of every single-result `nn` op:
/// `%r = nn.op %a, %b {attrs} : T1, T2 -> R`.
pub(crate) const STANDARD_FORMAT: &str = "operands attr-dict `:` type(operands) `->` type(results)";

/// Prints `operands attr-dict : operand-types -> result-types`.
pub(crate) fn print_standard(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let operands = ctx.operands(op).to_vec();
    let operand_types: Vec<Type> = ctx.operand_types(op);
    let result_types: Vec<Type> = ctx.result_types(op);
    let mut attrs = ctx.attributes(op).clone();
    if let Some(props) = ctx.properties(op) {
        for (k, v) in props.iter() {
            attrs.set(k, v.clone());
        }
    }
    if !operands.is_empty() {
        p.write_str(" ");
        p.values(&operands);
    }
    p.attr_dict(&attrs, &[]);
    p.write_str(" : ");
    if !operand_types.is_empty() {
        p.types(&operand_types);
        p.write_str(" ");
    }
    p.write_str("-> ");
    p.result_types(&result_types);
    Ok(())
}

/// Parses the form [`print_standard`] writes.
pub(crate) fn parse_standard(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let operands = p.parse_operand_list()?;
    let mut attrs = ipuc_ir::Dictionary::new();
    p.parse_optional_attr_dict(&mut attrs)?;
    p.expect_punct(":")?;
    let operand_types = if operands.is_empty() {
        Vec::new()
    } else {
        p.parse_type_list()?
    };
    if operand_types.len() != operands.len() {
        return Err(p.error(format!(
            "{} operands present, but {} operand types given",
            operands.len(),
            operand_types.len()
        )));
    }
    p.expect_punct("->")?;
    state.result_types = p.parse_function_results()?;
    state.operands = p.resolve_operands(&operands, &operand_types)?;
    for (k, v) in attrs.iter() {
        if state.name.is_inherent_attr(k) {
            state
                .properties
                .get_or_insert_with(ipuc_ir::Dictionary::new)
                .set(k, v.clone());
        } else {
            state.attributes.set(k, v.clone());
        }
    }
    Ok(())
}
