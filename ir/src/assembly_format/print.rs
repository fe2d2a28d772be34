//! Printing an op with its compiled format, through [`OpPrinter`].

use std::ops::Range;

use super::{
    flexible_count, segments, Anchor, AssemblyFormat, Brackets, Element, Literal, TypeArg,
};
use crate::asm::OpPrinter;
use crate::attributes::{Attribute, Dictionary};
use crate::context::{OpId, Value};
use crate::dialect::OpDefinition;
use crate::types::Type;

/// The [`PrintFn`](crate::dialect::PrintFn) of every op with a declarative
/// format. A malformed op (operand, result, region or successor counts the
/// definition does not allow, a required attribute missing) prints in the
/// generic form, which always round-trips.
pub(crate) fn print_op(p: &mut OpPrinter<'_, '_>, op: OpId) -> std::fmt::Result {
    let name = p.ctx().name(op).clone();
    let def = name.def().expect("formats belong to registered ops");
    let format = def
        .assembly_format
        .clone()
        .expect("print_op is installed only with a format");
    if format.is_operands_dict_types() && print_operands_dict_types(p, op, def, &format) {
        return Ok(());
    }
    match OpView::new(p, op, def) {
        Some(view) => {
            let mut printer = FormatPrinter {
                p,
                view: &view,
                format: &format,
                def,
                emit_space: true,
                last_punct: false,
            };
            printer.elements(&format.elements);
        }
        None => p.generic(op),
    }
    Ok(())
}

/// Prints an op whose format is `operands attr-dict : type(operands) ->
/// type(results)` (most `nn` ops) straight from the context: `false`
/// (nothing printed) if the op is malformed for its definition, which
/// [`OpView::new`] then finds too. The same text as the format's elements
/// through [`FormatPrinter`] (whose spacing rules give ` %a, %b {dict} :
/// T, U -> R`), without the view's copies of the operands, their types
/// and the dictionary merged from properties and attributes: a quarter of
/// printing such IR went to them.
fn print_operands_dict_types(
    p: &mut OpPrinter<'_, '_>,
    op: OpId,
    def: &OpDefinition,
    format: &AssemblyFormat,
) -> bool {
    let ctx = p.context();
    let (operands, results) = (ctx.operands(op), ctx.results(op));
    let (attrs, props) = (ctx.attributes(op), ctx.properties(op));
    let fits = |decls: &Option<Vec<crate::dialect::ValueDecl>>, n: usize| {
        decls
            .as_ref()
            .is_none_or(|d| flexible_count(d, n).is_some())
    };
    let well_formed = fits(&def.operands, operands.len())
        && fits(&def.results, results.len())
        && def.attributes.iter().all(|a| {
            a.optional
                || attrs.get(a.name).is_some()
                || props.is_some_and(|d| d.get(a.name).is_some())
        })
        && (def.region_names.is_empty() || ctx.regions(op).len() == def.region_names.len())
        && (def.successor_names.is_empty()
            || ctx.successors(op).len() == def.successor_names.len());
    if !well_formed {
        return false;
    }
    if !operands.is_empty() {
        p.write_str(" ");
        p.values(operands);
    }
    p.merged_attr_dict(attrs, props, &format.format_attrs);
    p.write_str(" :");
    if !operands.is_empty() {
        p.write_str(" ");
        p.value_types(operands);
    }
    p.write_str(" ->");
    if !results.is_empty() {
        p.write_str(" ");
        p.value_types(results);
    }
    true
}

/// The parts of an op, split per declaration.
struct OpView {
    operands: Vec<Value>,
    operand_segments: Option<Vec<Range<usize>>>,
    operand_types: Vec<Type>,
    result_types: Vec<Type>,
    result_segments: Option<Vec<Range<usize>>>,
    /// Properties and discardable attributes, as one dictionary.
    attrs: Dictionary,
    regions: Vec<crate::context::RegionId>,
    successors: Vec<crate::context::BlockId>,
}

impl OpView {
    fn new(p: &OpPrinter<'_, '_>, op: OpId, def: &OpDefinition) -> Option<OpView> {
        let ctx = p.ctx();
        let operands = ctx.operands(op).to_vec();
        let operand_types: Vec<Type> = ctx.operand_types(op);
        let result_types: Vec<Type> = ctx.result_types(op);
        let split = |decls: &Option<Vec<crate::dialect::ValueDecl>>, n: usize| match decls {
            Some(d) => segments(d, n).map(Some),
            None => Some(None),
        };
        let operand_segments = split(&def.operands, operands.len())?;
        let result_segments = split(&def.results, result_types.len())?;
        let mut attrs = ctx.attributes(op).clone();
        if let Some(props) = ctx.properties(op) {
            for (k, v) in props.iter() {
                attrs.set(k, v.clone());
            }
        }
        if def
            .attributes
            .iter()
            .any(|a| !a.optional && attrs.get(a.name).is_none())
        {
            return None;
        }
        let regions = ctx.regions(op).to_vec();
        let successors = ctx.successors(op).to_vec();
        if (!def.region_names.is_empty() && regions.len() != def.region_names.len())
            || (!def.successor_names.is_empty() && successors.len() != def.successor_names.len())
        {
            return None;
        }
        Some(OpView {
            operands,
            operand_segments,
            operand_types,
            result_types,
            result_segments,
            attrs,
            regions,
            successors,
        })
    }

    fn operand_range(&self, i: usize) -> Range<usize> {
        self.operand_segments
            .as_ref()
            .expect("validated: operands declared")[i]
            .clone()
    }

    fn types_of(&self, arg: TypeArg) -> &[Type] {
        match arg {
            TypeArg::Operands => &self.operand_types,
            TypeArg::Results => &self.result_types,
            TypeArg::Operand(i) => &self.operand_types[self.operand_range(i)],
            TypeArg::Result(i) => {
                let r = self
                    .result_segments
                    .as_ref()
                    .expect("validated: results declared")[i]
                    .clone();
                &self.result_types[r]
            }
        }
    }
}

struct FormatPrinter<'v, 'p, 'a, 'c> {
    p: &'p mut OpPrinter<'a, 'c>,
    view: &'v OpView,
    format: &'v AssemblyFormat,
    def: &'v OpDefinition,
    /// Upstream's spacing state: whether the last element wants a space
    /// after it, and whether it was punctuation.
    emit_space: bool,
    last_punct: bool,
}

impl FormatPrinter<'_, '_, '_, '_> {
    /// Called before an element that prints something non-empty.
    fn space(&mut self) {
        if self.emit_space || !self.last_punct {
            self.p.write_str(" ");
        }
        self.emit_space = true;
        self.last_punct = false;
    }

    fn literal(&mut self, text: &str) {
        let first = text.chars().next().expect("literals are non-empty");
        let space_before = if text.len() != 1 && text != "->" {
            true
        } else if self.last_punct {
            !">)}],".contains(first)
        } else {
            !"<>(){}[],".contains(first)
        };
        if space_before {
            self.p.write_str(" ");
        }
        self.p.write_str(text);
        self.emit_space = !(text.len() == 1 && "<({[".contains(first));
        self.last_punct = first != '_' && !first.is_ascii_alphabetic();
    }

    fn elements(&mut self, elements: &[Element]) {
        for e in elements {
            self.element(e);
        }
    }

    fn element(&mut self, e: &Element) {
        let view = self.view;
        match e {
            Element::Literal(Literal::Punct(s) | Literal::Keyword(s)) => self.literal(s),
            Element::Group(b, inner) => {
                let (open, close) = match b {
                    Brackets::Paren => ("(", ")"),
                    Brackets::Square => ("[", "]"),
                };
                self.literal(open);
                self.elements(inner);
                self.literal(close);
            }
            Element::Operand(i) => {
                let r = view.operand_range(*i);
                self.values(&view.operands[r]);
            }
            Element::Operands => self.values(&view.operands),
            Element::Attribute(i) => {
                if let Some(a) = view.attrs.get(self.def.attributes[*i].name) {
                    let a: Attribute = a.clone();
                    self.space();
                    self.p.attr(&a);
                }
            }
            Element::Region(i) => {
                self.space();
                self.p.region(view.regions[*i], true);
            }
            Element::Regions => {
                for (k, &r) in view.regions.iter().enumerate() {
                    if k > 0 {
                        self.literal(",");
                    }
                    self.space();
                    self.p.region(r, true);
                }
            }
            Element::Successor(i) => {
                self.space();
                self.p.block(view.successors[*i]);
            }
            Element::Successors => {
                if !view.successors.is_empty() {
                    self.space();
                    for (k, &b) in view.successors.iter().enumerate() {
                        if k > 0 {
                            self.p.write_str(", ");
                        }
                        self.p.block(b);
                    }
                }
            }
            Element::AttrDict { with_keyword } => {
                let elide = &self.format.format_attrs;
                if view.attrs.iter().any(|(k, _)| !elide.contains(&k)) {
                    if *with_keyword {
                        self.p.attr_dict_with_keyword(&view.attrs, elide);
                    } else {
                        self.p.attr_dict(&view.attrs, elide);
                    }
                    self.last_punct = false;
                }
            }
            Element::Type(arg) => {
                let types = view.types_of(*arg);
                if !types.is_empty() {
                    self.space();
                    self.p.types(types);
                }
            }
            Element::FunctionalType(inputs, results) => {
                let inputs = view.types_of(*inputs).to_vec();
                let results = view.types_of(*results).to_vec();
                self.space();
                self.p.write_str("(");
                self.p.types(&inputs);
                self.p.write_str(") -> ");
                self.p.result_types(&results);
            }
            Element::Optional { anchor, elements } => {
                let present = match anchor {
                    Anchor::Operand(i) => !view.operand_range(*i).is_empty(),
                    Anchor::Attribute(i) => view.attrs.get(self.def.attributes[*i].name).is_some(),
                };
                if present {
                    self.elements(elements);
                }
            }
        }
    }

    fn values(&mut self, vs: &[Value]) {
        if !vs.is_empty() {
            self.space();
            self.p.values(vs);
        }
    }
}
