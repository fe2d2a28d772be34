//! What interface methods see of an op: its operand and result types and
//! its attributes.

use crate::attributes::{Attribute, Dictionary};
use crate::context::{Context, OpId};
use crate::types::Type;

/// An op's operand types, result types and attributes (inherent and
/// discardable in one dictionary), borrowed.
#[derive(Clone, Copy, Debug)]
pub struct OpSignature<'a> {
    /// Operand types, in order.
    pub operands: &'a [Type],
    /// Result types, in order.
    pub results: &'a [Type],
    /// Attributes.
    pub attributes: &'a Dictionary,
}

impl<'a> OpSignature<'a> {
    /// A signature from its parts.
    pub fn new(operands: &'a [Type], results: &'a [Type], attributes: &'a Dictionary) -> Self {
        OpSignature {
            operands,
            results,
            attributes,
        }
    }
    /// The type of operand `i`, if present.
    pub fn operand(&self, i: usize) -> Option<&'a Type> {
        self.operands.get(i)
    }
    /// The type of result `i`, if present.
    pub fn result(&self, i: usize) -> Option<&'a Type> {
        self.results.get(i)
    }
    /// Attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&'a Attribute> {
        self.attributes.get(name)
    }
    /// Integer attribute `name`, or `default` when absent or not an integer
    /// that fits `i64`.
    pub fn i64_attr(&self, name: &str, default: i64) -> i64 {
        self.attr(name)
            .and_then(|a| a.as_int())
            .and_then(|v| i64::try_from(v).ok())
            .unwrap_or(default)
    }
    /// Integer-list attribute `name` (a dense array or an array of integers).
    pub fn i64_list(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).and_then(|a| a.as_i64_list())
    }
    /// String attribute `name`, or `default`.
    pub fn str_attr(&self, name: &str, default: &'a str) -> &'a str {
        self.attr(name).and_then(|a| a.as_str()).unwrap_or(default)
    }
}

/// The signature of an op of a [`Context`], owned (the context stores the
/// inherent and discardable attributes apart; the signature merges them).
#[derive(Clone, Debug, Default)]
pub struct OwnedSignature {
    /// Operand types.
    pub operands: Vec<Type>,
    /// Result types.
    pub results: Vec<Type>,
    /// Discardable attributes overlaid with the inherent ones.
    pub attributes: Dictionary,
}

impl OwnedSignature {
    /// The borrowed view interface methods take.
    pub fn view(&self) -> OpSignature<'_> {
        OpSignature::new(&self.operands, &self.results, &self.attributes)
    }
}

impl OpSignature<'_> {
    /// The signature of `op`, owned.
    pub fn of(ctx: &Context, op: OpId) -> OwnedSignature {
        OwnedSignature {
            operands: ctx.operand_types(op),
            results: ctx.result_types(op),
            attributes: all_attributes(ctx, op),
        }
    }
}

/// The attributes of `op` in one dictionary: the discardable ones overlaid
/// with the inherent ones (which [`Context::attr`] finds first).
pub fn all_attributes(ctx: &Context, op: OpId) -> Dictionary {
    let mut d = ctx.attributes(op).clone();
    if let Some(p) = ctx.properties(op) {
        for (k, v) in p.iter() {
            d.set(k, v.clone());
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_source, DialectRegistry};
    use std::sync::Arc;

    #[test]
    fn signature_of_an_op_merges_properties_and_attributes() {
        let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
        ctx.allow_unregistered = true;
        let src = "%0 = \"t.op\"() <{axis = 2 : i64}> {axes = array<i64: 1, 3>, mode = \"tanh\"} : () -> tensor<4xf32>\n";
        let module = parse_source(&mut ctx, "s.mlir", src).unwrap().module;
        let body = ctx.regions(module)[0];
        let block = ctx.region_blocks(body)[0];
        let op = ctx.first_op(block).unwrap();
        let owned = OpSignature::of(&ctx, op);
        let sig = owned.view();
        assert!(sig.operands.is_empty());
        assert_eq!(sig.result(0), Some(&Type::tensor(&[4], Type::f32())));
        assert_eq!(sig.i64_attr("axis", -1), 2);
        assert_eq!(sig.i64_attr("missing", -1), -1);
        assert_eq!(sig.i64_list("axes"), Some(vec![1, 3]));
        assert_eq!(sig.str_attr("mode", "none"), "tanh");
        assert_eq!(sig.str_attr("axis", "none"), "none");
    }
}
