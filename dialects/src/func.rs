//! The `func` dialect: `func.func`, `func.return`, `func.call`, with
//! upstream MLIR's custom assembly forms.

use ipuc_ir::asm::{CustomParser, OpPrinter};
use ipuc_ir::attributes::{AttrKind, Attribute, Dictionary};
use ipuc_ir::builtin::{SYM_NAME, SYM_VISIBILITY};
use ipuc_ir::dialect::{Arity, AttrDecl, Dialect, OpDefinition, Traits, TypeConstraint, ValueDecl};
use ipuc_ir::symbol_table;
use ipuc_ir::{Context, Diagnostic, OpId, OperationState, Type};

/// `func.func`.
pub const FUNC: &str = "func.func";
/// `func.return`.
pub const RETURN: &str = "func.return";
/// `func.call`.
pub const CALL: &str = "func.call";

const FUNCTION_TYPE: AttrDecl = AttrDecl {
    name: "function_type",
    description: "function type",
    check: |a| {
        a.as_type()
            .is_some_and(|t| t.function_signature().is_some())
    },
    optional: false,
};
const ARG_ATTRS: AttrDecl = AttrDecl {
    name: "arg_attrs",
    description: "array of dictionaries",
    check: |a| {
        a.as_array()
            .is_some_and(|x| x.iter().all(|d| d.as_dictionary().is_some()))
    },
    optional: true,
};
const RES_ATTRS: AttrDecl = AttrDecl {
    name: "res_attrs",
    ..ARG_ATTRS
};
const CALLEE: AttrDecl = AttrDecl {
    name: "callee",
    description: "flat symbol reference",
    check: |a| matches!(a.kind(), AttrKind::SymbolRef { nested, .. } if nested.is_empty()),
    optional: false,
};

/// The `func` dialect.
pub fn dialect() -> Dialect {
    Dialect::new("func", "Functions, calls and returns")
        .op(OpDefinition::new(FUNC)
            .summary("A function with a name, a type and an optional body")
            .traits(Traits::ISOLATED_FROM_ABOVE | Traits::SYMBOL)
            .attribute(SYM_NAME)
            .attribute(FUNCTION_TYPE)
            .attribute(SYM_VISIBILITY)
            .attribute(ARG_ATTRS)
            .attribute(RES_ATTRS)
            .operands(&[])
            .results(&[])
            .regions(Some(1))
            .default_dialect("func")
            .verifier(verify_func)
            .custom_assembly_format(print_func, parse_func))
        .op(OpDefinition::new(RETURN)
            .summary("Returns from a function")
            .traits(Traits::TERMINATOR | Traits::RETURN_LIKE | Traits::PURE)
            .operands(&[ValueDecl {
                name: "operands",
                constraint: TypeConstraint::ANY,
                arity: Arity::Variadic,
            }])
            .results(&[])
            .verifier(verify_return)
            .custom_assembly_format(print_return, parse_return))
        .op(OpDefinition::new(CALL)
            .summary("Calls a function by symbol")
            .attribute(CALLEE)
            .operands(&[ValueDecl {
                name: "operands",
                constraint: TypeConstraint::ANY,
                arity: Arity::Variadic,
            }])
            .verifier(verify_call)
            .custom_assembly_format(print_call, parse_call))
}

/// The signature of a `func.func`.
pub fn function_type(ctx: &Context, op: OpId) -> Option<(Vec<Type>, Vec<Type>)> {
    let t = ctx.attr(op, "function_type")?.as_type()?;
    let (i, r) = t.function_signature()?;
    Some((i.to_vec(), r.to_vec()))
}

/// The body region's entry block of a `func.func`, if it has a body.
pub fn entry_block(ctx: &Context, op: OpId) -> Option<ipuc_ir::BlockId> {
    ctx.entry_block(ctx.regions(op)[0])
}

/// Creates `func.func @name(inputs) -> results` with an entry block (detached).
pub fn build_func(
    ctx: &mut Context,
    name: &str,
    inputs: &[Type],
    results: &[Type],
    loc: ipuc_ir::Location,
) -> OpId {
    let region = ctx.create_region();
    let block = ctx.create_block(inputs);
    ctx.append_block(region, block);
    let state = OperationState::new(ctx.op_name(FUNC), loc)
        .attr("sym_name", Attribute::string(name))
        .attr(
            "function_type",
            Attribute::type_attr(Type::function(inputs.to_vec(), results.to_vec())),
        )
        .region(region);
    ctx.create_op(state)
}

fn verify_func(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    let (inputs, _) = function_type(ctx, op).expect("checked by attribute constraint");
    if let Some(b) = entry_block(ctx, op) {
        let args: Vec<&Type> = ctx
            .block_args(b)
            .iter()
            .map(|&a| ctx.value_type(a))
            .collect();
        if args.len() != inputs.len() || args.iter().zip(&inputs).any(|(a, b)| *a != b) {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "type of entry block arguments ({}) does not match the function signature",
                    join(&args)
                ),
            ));
        }
    } else if symbol_table::visibility(ctx, op) == symbol_table::Visibility::Public {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "symbol declaration cannot have public visibility",
        ));
    }
    Ok(())
}

fn join(ts: &[&Type]) -> String {
    ts.iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn verify_return(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    let Some(parent) = ctx.parent_op(op) else {
        return Ok(());
    };
    if ctx.name_str(parent) != FUNC {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "expects parent op 'func.func', found '{}'",
                ctx.name_str(parent)
            ),
        ));
    }
    let (_, results) = function_type(ctx, parent).unwrap_or_default();
    let got: Vec<&Type> = ctx
        .operands(op)
        .iter()
        .map(|&v| ctx.value_type(v))
        .collect();
    if got.len() != results.len() {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "has {} operands, but enclosing function (@{}) returns {}",
                got.len(),
                symbol_table::symbol_name(ctx, parent).unwrap_or("?"),
                results.len()
            ),
        ));
    }
    for (i, (g, r)) in got.iter().zip(&results).enumerate() {
        if *g != r {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!("type of return operand {i} ({g}) doesn't match function result type ({r}) in function @{}", symbol_table::symbol_name(ctx, parent).unwrap_or("?")),
            ));
        }
    }
    Ok(())
}

fn verify_call(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    // Symbol uses are checked where a symbol table encloses the call; a
    // function verified on its own (e.g. in a parallel pass) skips this.
    if ctx
        .parent_op(op)
        .and_then(|f| symbol_table::nearest_symbol_table(ctx, f))
        .is_none()
    {
        return Ok(());
    }
    let callee = ctx.attr(op, "callee").expect("checked").clone();
    let name = callee.as_symbol_root().unwrap_or("").to_string();
    let Some(f) = symbol_table::lookup_symbol(ctx, op, &callee) else {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("'{name}' does not reference a valid function"),
        ));
    };
    if ctx.name_str(f) != FUNC {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("'{name}' does not reference a valid function"),
        ));
    }
    let (inputs, results) = function_type(ctx, f).unwrap_or_default();
    let got: Vec<Type> = ctx.operand_types(op);
    if got != inputs {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "operand types do not match the callee's signature",
        ));
    }
    let res: Vec<Type> = ctx.result_types(op);
    if res != results {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "result types do not match the callee's signature",
        ));
    }
    Ok(())
}

fn print_func(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let vis = ctx
        .attr(op, "sym_visibility")
        .and_then(|a| a.as_str())
        .map(str::to_string);
    let name = symbol_table::symbol_name(ctx, op).unwrap_or("").to_string();
    let (inputs, results) = function_type(ctx, op).unwrap_or_default();
    let arg_attrs = ctx
        .attr(op, "arg_attrs")
        .and_then(|a| a.as_array())
        .map(<[Attribute]>::to_vec);
    let res_attrs = ctx
        .attr(op, "res_attrs")
        .and_then(|a| a.as_array())
        .map(<[Attribute]>::to_vec);
    let region = ctx.regions(op)[0];
    let entry = ctx.entry_block(region);
    let args: Vec<ipuc_ir::Value> = entry
        .map(|b| ctx.block_args(b).to_vec())
        .unwrap_or_default();
    let mut extra = ctx.attributes(op).clone();
    if let Some(props) = ctx.properties(op) {
        for (k, v) in props.iter() {
            if !matches!(
                k,
                "sym_name" | "function_type" | "sym_visibility" | "arg_attrs" | "res_attrs"
            ) {
                extra.set(k, v.clone());
            }
        }
    }
    if let Some(v) = vis {
        p.write_str(" ");
        p.write_str(&v);
    }
    p.write_str(" ");
    p.symbol_name(&name);
    p.write_str("(");
    for (i, t) in inputs.iter().enumerate() {
        if i > 0 {
            p.write_str(", ");
        }
        if let Some(&a) = args.get(i) {
            p.block_arg_with_type(a);
        } else {
            p.ty(t);
        }
        if let Some(d) = arg_attrs
            .as_ref()
            .and_then(|v| v.get(i))
            .and_then(|a| a.as_dictionary())
        {
            let d = d.clone();
            p.attr_dict(&d, &[]);
        }
        if let Some(&a) = args.get(i) {
            p.arg_location(a);
        }
    }
    p.write_str(")");
    if !results.is_empty() {
        p.write_str(" -> ");
        let has_res_attrs = res_attrs.as_ref().is_some_and(|v| {
            v.iter()
                .any(|a| a.as_dictionary().is_some_and(|d| !d.is_empty()))
        });
        if has_res_attrs {
            p.write_str("(");
            for (i, t) in results.iter().enumerate() {
                if i > 0 {
                    p.write_str(", ");
                }
                p.ty(t);
                if let Some(d) = res_attrs
                    .as_ref()
                    .and_then(|v| v.get(i))
                    .and_then(|a| a.as_dictionary())
                {
                    let d = d.clone();
                    p.attr_dict(&d, &[]);
                }
            }
            p.write_str(")");
        } else {
            p.result_types(&results);
        }
    }
    p.attr_dict_with_keyword(&extra, &[]);
    if entry.is_some() {
        p.write_str(" ");
        p.region(region, false);
    }
    Ok(())
}

fn parse_func(p: &mut CustomParser<'_, '_>, state: &mut OperationState) -> Result<(), Diagnostic> {
    let mut props = Dictionary::new();
    for vis in ["private", "public", "nested"] {
        if p.parse_optional_keyword(vis) {
            props.set("sym_visibility", Attribute::string(vis));
            break;
        }
    }
    let name = p.parse_symbol_name()?;
    props.set("sym_name", Attribute::string(&name));
    let (args, named) = p.parse_argument_list(true)?;
    let inputs: Vec<Type> = args.iter().map(|a| a.ty.clone()).collect();
    let mut results = Vec::new();
    let mut res_attrs = Vec::new();
    if p.parse_optional_punct("->") {
        if p.at_parens() {
            p.parse_parens(|q| {
                if q.is_at_end() {
                    return Ok(());
                }
                loop {
                    results.push(q.parse_type()?);
                    let mut d = Dictionary::new();
                    q.parse_optional_attr_dict(&mut d)?;
                    res_attrs.push(Attribute::dictionary(d));
                    if !q.parse_optional_punct(",") {
                        return Ok(());
                    }
                }
            })?;
        } else {
            results.push(p.parse_type()?);
        }
    }
    props.set(
        "function_type",
        Attribute::type_attr(Type::function(inputs, results)),
    );
    if args.iter().any(|a| !a.attrs.is_empty()) {
        props.set(
            "arg_attrs",
            Attribute::array(
                args.iter()
                    .map(|a| Attribute::dictionary(a.attrs.clone()))
                    .collect(),
            ),
        );
    }
    if res_attrs
        .iter()
        .any(|a| a.as_dictionary().is_some_and(|d| !d.is_empty()))
    {
        props.set("res_attrs", Attribute::array(res_attrs));
    }
    p.parse_optional_attr_dict_with_keyword(&mut state.attributes)?;
    // Inherent attributes written in the `attributes` dictionary move to properties.
    for k in ["sym_visibility", "arg_attrs", "res_attrs"] {
        if let Some(v) = state.attributes.remove(k) {
            props.set(k, v);
        }
    }
    let region = if p.at_region() {
        if !named && !args.is_empty() {
            return Err(
                p.error("expected SSA identifiers for the arguments of a function with a body")
            );
        }
        p.parse_region(&args, true)?
    } else {
        p.ctx().create_region()
    };
    state.properties = Some(props);
    state.regions.push(region);
    Ok(())
}

fn print_return(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let operands = p.ctx().operands(op).to_vec();
    let attrs = p.ctx().attributes(op).clone();
    p.attr_dict(&attrs, &[]);
    p.values_with_types(&operands);
    Ok(())
}

fn parse_return(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let ops = p.parse_operand_list()?;
    if !ops.is_empty() {
        p.expect_punct(":")?;
        let tys = p.parse_type_list()?;
        state.operands = p.resolve_operands(&ops, &tys)?;
    }
    Ok(())
}

fn print_call(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let callee = ctx
        .attr(op, "callee")
        .and_then(|a| a.as_symbol_root())
        .unwrap_or("")
        .to_string();
    let operands = ctx.operands(op).to_vec();
    let inputs: Vec<Type> = ctx.operand_types(op);
    let results: Vec<Type> = ctx.result_types(op);
    let attrs = ctx.attributes(op).clone();
    p.write_str(" ");
    p.symbol_name(&callee);
    p.write_str("(");
    p.values(&operands);
    p.write_str(")");
    p.attr_dict(&attrs, &["callee"]);
    p.write_str(" : ");
    p.ty(&Type::function(inputs, results));
    Ok(())
}

fn parse_call(p: &mut CustomParser<'_, '_>, state: &mut OperationState) -> Result<(), Diagnostic> {
    let callee = p.parse_symbol_name()?;
    let ops = p.parse_parens(|q| q.parse_operand_list())?;
    p.parse_optional_attr_dict(&mut state.attributes)?;
    let fty = p.parse_colon_type()?;
    let Some((inputs, results)) = fty.function_signature() else {
        return Err(p.error(format!("expected a function type, found {fty}")));
    };
    state.operands = p.resolve_operands(&ops, inputs)?;
    state.result_types = results.to_vec();
    state.properties = Some(Dictionary::from_entries([(
        "callee".into(),
        Attribute::symbol_ref(&callee),
    )]));
    Ok(())
}
