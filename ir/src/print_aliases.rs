//! Attribute aliases in printed IR, as upstream prints them: affine maps
//! and integer sets are named `#map`, `#map1`, ..., `#set`, ... in the order
//! of their first use, defined once at the top of the output and referred
//! to by name (including inside types, e.g. a memref layout).
//!
//! The printer learns the order by printing: the first pass records every
//! aliasable attribute it writes (inline); when it recorded any, the IR is
//! printed again with the names. IR without such attributes is printed once.
//! A printer that streams its text (`print_op_to`) cannot take back what
//! it wrote, so it asks `may_use_aliases` first and, if so, makes its
//! recording pass into the void.

use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::attributes::{AttrKind, Attribute};
use crate::context::{Context, OpId, WalkOrder};
use crate::types::{Type, TypeKind};

/// The alias state of a printer pass, carried in
/// [`PrintOptions`](crate::PrintOptions) so that nested attribute printing
/// sees it. Opaque: the printer sets it; callers leave it at its default.
#[derive(Debug, Clone)]
pub struct PrinterAliases(pub(crate) Arc<AliasState>);

/// What the printer does with aliasable attributes.
#[derive(Debug)]
pub(crate) enum AliasState {
    /// First pass: write inline, remember the texts in first-use order.
    Recording(Mutex<Recorded>),
    /// Second pass: write the alias name for each known text.
    Named(FxHashMap<String, String>),
}

/// Texts seen by a recording pass.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    order: Vec<String>,
    seen: FxHashSet<String>,
}

/// The alias prefix upstream's builtin dialect gives an attribute text.
fn prefix_of(text: &str) -> &'static str {
    if text.starts_with("affine_set<") {
        "set"
    } else {
        "map"
    }
}

impl AliasState {
    /// A fresh recording state.
    pub(crate) fn recording() -> AliasState {
        AliasState::Recording(Mutex::new(Recorded::default()))
    }

    /// Writes `text` (an aliasable attribute's full inline spelling) or its
    /// alias, recording it on a first pass.
    pub(crate) fn write(&self, out: &mut String, text: &str) {
        match self {
            AliasState::Recording(r) => {
                let mut r = r.lock().expect("alias recorder poisoned");
                if r.seen.insert(text.to_string()) {
                    r.order.push(text.to_string());
                }
                out.push_str(text);
            }
            AliasState::Named(names) => match names.get(text) {
                Some(name) => out.push_str(name),
                None => out.push_str(text),
            },
        }
    }

    /// After a recording pass: the alias table and the definitions to print
    /// at the top (`#map = affine_map<...>` lines, maps before sets, each
    /// numbered by first use), or `None` if nothing was recorded.
    pub(crate) fn finish(&self) -> Option<(AliasState, String)> {
        let AliasState::Recording(r) = self else {
            return None;
        };
        let order = std::mem::take(&mut r.lock().expect("alias recorder poisoned").order);
        if order.is_empty() {
            return None;
        }
        let mut counts: FxHashMap<&'static str, usize> = FxHashMap::default();
        let mut defs: Vec<(&'static str, usize, String, &str)> = Vec::new();
        for text in &order {
            let prefix = prefix_of(text);
            let n = counts.entry(prefix).or_insert(0);
            let name = if *n == 0 {
                format!("#{prefix}")
            } else {
                format!("#{prefix}{n}")
            };
            defs.push((prefix, *n, name, text));
            *n += 1;
        }
        defs.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut header = String::new();
        let mut names = FxHashMap::default();
        for (_, _, name, text) in defs {
            header.push_str(&name);
            header.push_str(" = ");
            header.push_str(text);
            header.push('\n');
            names.insert(text.to_string(), name);
        }
        Some((AliasState::Named(names), header))
    }
}

/// Whether printing `root` may write an aliasable attribute: one held,
/// at any depth, by an attribute or a value type of `root` or of an op
/// nested in it. Conservative where it must be (it looks at every
/// operand's type, even of values defined outside `root`); what it misses
/// would be an attribute a custom printer makes up, which the streaming
/// printer detects after the fact (see `AsmPrinter::print_top_level_to`).
pub(crate) fn may_use_aliases(ctx: &Context, root: OpId) -> bool {
    let mut found = false;
    ctx.walk(root, WalkOrder::PreOrder, &mut |ctx, op| {
        if found {
            return;
        }
        let attrs = ctx.attributes(op).iter();
        let props = ctx.properties(op).into_iter().flat_map(|p| p.iter());
        found = attrs.chain(props).any(|(_, a)| attribute_may_alias(a))
            || ctx
                .operands(op)
                .iter()
                .chain(ctx.results(op))
                .any(|&v| type_may_alias(ctx.value_type(v)))
            || ctx.regions(op).iter().any(|&r| {
                ctx.region_blocks(r).iter().any(|&b| {
                    ctx.block_args(b)
                        .iter()
                        .any(|&v| type_may_alias(ctx.value_type(v)))
                })
            });
    });
    found
}

/// Whether `a` is or holds an affine map or integer set.
fn attribute_may_alias(a: &Attribute) -> bool {
    match a.kind() {
        AttrKind::AffineMap(_) | AttrKind::IntegerSet(_) => true,
        AttrKind::Array(items) => items.iter().any(attribute_may_alias),
        AttrKind::Dictionary(d) => d.iter().any(|(_, v)| attribute_may_alias(v)),
        AttrKind::Type(t) => type_may_alias(t),
        AttrKind::DenseElements(d) => type_may_alias(&d.ty),
        AttrKind::DenseResource { ty, .. } => type_may_alias(ty),
        AttrKind::String { ty, .. } | AttrKind::Bytes { ty, .. } => {
            ty.as_ref().is_some_and(type_may_alias)
        }
        // Scalar types hold no attributes; locations and dialect
        // attributes print without aliases (their bodies are text).
        AttrKind::Unit
        | AttrKind::Bool(_)
        | AttrKind::Integer { .. }
        | AttrKind::Float { .. }
        | AttrKind::DenseArray { .. }
        | AttrKind::SymbolRef { .. }
        | AttrKind::Strided { .. }
        | AttrKind::Location(_)
        | AttrKind::Dialect { .. } => false,
    }
}

/// Whether `t` holds an aliasable attribute (a layout, an encoding, ...).
fn type_may_alias(t: &Type) -> bool {
    match t.kind() {
        TypeKind::Integer { .. }
        | TypeKind::Index
        | TypeKind::Float(_)
        | TypeKind::None
        | TypeKind::Dialect { .. } => false,
        TypeKind::Function { inputs, results } => inputs.iter().chain(results).any(type_may_alias),
        TypeKind::RankedTensor {
            element, encoding, ..
        } => type_may_alias(element) || encoding.as_ref().is_some_and(attribute_may_alias),
        TypeKind::UnrankedTensor { element }
        | TypeKind::Vector { element, .. }
        | TypeKind::Complex(element) => type_may_alias(element),
        TypeKind::MemRef {
            element,
            layout,
            memory_space,
            ..
        } => {
            type_may_alias(element)
                || layout.as_ref().is_some_and(attribute_may_alias)
                || memory_space.as_ref().is_some_and(attribute_may_alias)
        }
        TypeKind::UnrankedMemRef {
            element,
            memory_space,
        } => type_may_alias(element) || memory_space.as_ref().is_some_and(attribute_may_alias),
        TypeKind::Tuple(ts) => ts.iter().any(type_may_alias),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_first_use_per_prefix_and_maps_come_first() {
        let r = AliasState::recording();
        let mut out = String::new();
        for t in [
            "affine_set<(d0) : (d0 >= 0)>",
            "affine_map<(d0) -> (d0 * 3)>",
            "affine_map<(d0) -> (d0 * 2)>",
            "affine_map<(d0) -> (d0 * 3)>",
        ] {
            r.write(&mut out, t);
        }
        let (named, header) = r.finish().expect("recorded");
        assert_eq!(
            header,
            "#map = affine_map<(d0) -> (d0 * 3)>\n#map1 = affine_map<(d0) -> (d0 * 2)>\n\
             #set = affine_set<(d0) : (d0 >= 0)>\n"
        );
        let mut out = String::new();
        named.write(&mut out, "affine_map<(d0) -> (d0 * 2)>");
        named.write(&mut out, "affine_map<(d0) -> (d0)>");
        assert_eq!(out, "#map1affine_map<(d0) -> (d0)>");
    }

    #[test]
    fn nothing_recorded_means_no_aliases() {
        assert!(AliasState::recording().finish().is_none());
    }
}
