//! `nn.constant`: a tensor constant (`dense<...>` or `dense_resource<...>`
//! for weights), and the dialect's constant materializer that folders use.
//!
//! ```text
//! %w = nn.constant dense_resource<w0> : tensor<1152x4304xf32>
//! %b = nn.constant dense<0.0> : tensor<4304xf32>
//! ```

use ipuc_ir::asm::{CustomParser, OpPrinter};
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::dialect::{AttrDecl, OpDefinition, Traits};
use ipuc_ir::{Attribute, Context, Diagnostic, Dialect, Location, OpId, OperationState, Type};

use super::support::*;

/// `nn.constant`.
pub const CONSTANT: &str = "nn.constant";

fn is_tensor_constant(a: &Attribute) -> bool {
    matches!(
        a.kind(),
        AttrKind::DenseElements(_) | AttrKind::DenseResource { .. }
    ) && a.ty().is_some_and(|t| t.is_tensor())
}

/// The `value` declaration.
const VALUE: AttrDecl = AttrDecl {
    name: "value",
    description: "dense elements or dense resource tensor attribute",
    check: is_tensor_constant,
    optional: false,
};

/// Result type of `nn.constant {value}`: the type of the value.
pub fn infer_constant(value: &Attribute) -> InferResult<Type> {
    if !is_tensor_constant(value) {
        return Err(shape_err!(
            "'value' must be a dense or dense_resource tensor, but is {value}"
        ));
    }
    Ok(value.ty().expect("tensor constants are typed").clone())
}

pub(crate) fn infer_from_op(ctx: &Context, op: OpId) -> Option<InferResult<Vec<Type>>> {
    if ctx.name_str(op) != CONSTANT {
        return None;
    }
    Some(infer_constant(ctx.attr(op, "value")?).map(|t| vec![t]))
}

fn print_constant(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(value) = ctx.attr(op, "value").cloned() else {
        p.generic(op);
        return Ok(());
    };
    let mut attrs = ctx.attributes(op).clone();
    if let Some(props) = ctx.properties(op) {
        for (k, v) in props.iter() {
            attrs.set(k, v.clone());
        }
    }
    p.attr_dict(&attrs, &["value"]);
    p.write_str(" ");
    p.attr(&value);
    Ok(())
}

fn parse_constant(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let mut attrs = ipuc_ir::Dictionary::new();
    p.parse_optional_attr_dict(&mut attrs)?;
    let value = p.parse_attribute()?;
    let ty = value
        .ty()
        .filter(|_| is_tensor_constant(&value))
        .cloned()
        .ok_or_else(|| {
            p.error(format!(
                "expected a dense or dense_resource tensor attribute, found {value}"
            ))
        })?;
    for (k, v) in attrs.iter() {
        state.attributes.set(k, v.clone());
    }
    state
        .properties
        .get_or_insert_with(ipuc_ir::Dictionary::new)
        .set("value", value);
    state.result_types = vec![ty];
    Ok(())
}

/// Builds an `nn.constant` for a folded `value` of type `ty` (the dialect's
/// `materialize_constant` hook).
pub(crate) fn materialize(
    ctx: &mut Context,
    value: &Attribute,
    ty: &Type,
    loc: Location,
) -> Option<OpId> {
    if !is_tensor_constant(value) || value.ty() != Some(ty) {
        return None;
    }
    let state = make_state(
        ctx,
        CONSTANT,
        &[],
        vec![ty.clone()],
        vec![("value", value.clone())],
        loc,
    );
    Some(ctx.create_op(state))
}

pub(crate) fn register(d: Dialect) -> Dialect {
    d.op(OpDefinition::new(CONSTANT)
        .summary("A constant tensor (dense elements or a dense resource blob)")
        .traits(Traits::PURE | Traits::CONSTANT_LIKE)
        .attribute(VALUE)
        .operands(&[])
        .results(&[one("result", TENSOR)])
        .verifier(super::verify_op)
        .custom_assembly_format(print_constant, parse_constant)
        .attr_dict_value_form("value"))
}

op_wrapper!(
    /// `nn.constant {value}`.
    ConstantOp,
    CONSTANT
);

impl ConstantOp {
    /// The value (`dense<...>` or `dense_resource<...>`).
    pub fn value(self, ctx: &Context) -> Attribute {
        ctx.attr(self.0, "value")
            .cloned()
            .expect("verified constant has a value")
    }
    /// A state for a constant holding `value`.
    pub fn build(
        ctx: &Context,
        value: Attribute,
        loc: Location,
    ) -> Result<OperationState, Diagnostic> {
        let ty = infer_constant(&value);
        build_inferred(ctx, CONSTANT, &[], ty, vec![("value", value)], loc)
    }
}
