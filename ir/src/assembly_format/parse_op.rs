//! Parsing an op with its compiled format, through [`CustomParser`]: every
//! token goes through the cursor's own methods, so errors carry the same
//! locations and wording as hand-written parsers.

use super::{segments, Anchor, Brackets, Element, Literal, TypeArg};
use crate::asm::{CustomParser, UnresolvedOperand};
use crate::attributes::{Attribute, Dictionary};
use crate::context::{BlockId, OperationState, RegionId};
use crate::diagnostics::Diagnostic;
use crate::dialect::{Arity, OpDefinition, Traits};
use crate::types::Type;

/// The [`ParseFn`](crate::dialect::ParseFn) of every op with a declarative format.
pub(crate) fn parse_op(
    p: &mut CustomParser<'_, '_>,
    state: &mut OperationState,
) -> Result<(), Diagnostic> {
    let name = state.name.clone();
    let def = name.def().expect("formats belong to registered ops");
    let format = def
        .assembly_format
        .clone()
        .expect("parse_op is installed only with a format");
    let mut st = Parsed::new(def);
    elements(p, &format.elements, &mut st)?;
    st.finish(p, state, &format.format_attrs)
}

/// What has been parsed so far, per declaration.
struct Parsed<'d> {
    def: &'d OpDefinition,
    operands: Vec<Option<Vec<UnresolvedOperand>>>,
    all_operands: Option<Vec<UnresolvedOperand>>,
    operand_types: Vec<Option<Vec<Type>>>,
    all_operand_types: Option<Vec<Type>>,
    result_types: Vec<Option<Vec<Type>>>,
    all_result_types: Option<Vec<Type>>,
    attr_dict: Dictionary,
    format_attrs: Vec<(&'static str, Attribute)>,
    regions: Vec<Option<RegionId>>,
    all_regions: Option<Vec<RegionId>>,
    successors: Vec<Option<BlockId>>,
    all_successors: Option<Vec<BlockId>>,
    /// The anchor of the optional group being parsed: once the group is
    /// present, its anchor must be written.
    group_anchor: Option<Anchor>,
}

fn operand_decls(def: &OpDefinition) -> &[crate::dialect::ValueDecl] {
    def.operands.as_deref().unwrap_or(&[])
}

fn result_decls(def: &OpDefinition) -> &[crate::dialect::ValueDecl] {
    def.results.as_deref().unwrap_or(&[])
}

impl<'d> Parsed<'d> {
    fn new(def: &'d OpDefinition) -> Self {
        let nops = operand_decls(def).len();
        Parsed {
            def,
            operands: vec![None; nops],
            all_operands: None,
            operand_types: vec![None; nops],
            all_operand_types: None,
            result_types: vec![None; result_decls(def).len()],
            all_result_types: None,
            attr_dict: Dictionary::new(),
            format_attrs: Vec::new(),
            regions: vec![None; def.region_names.len()],
            all_regions: None,
            successors: vec![None; def.successor_names.len()],
            all_successors: None,
            group_anchor: None,
        }
    }

    /// Once both an operand group and its types are known, their counts
    /// must agree; reported at the token after whichever came second.
    fn check_counts(&self, p: &CustomParser<'_, '_>, i: Option<usize>) -> Result<(), Diagnostic> {
        let (ops, types) = match i {
            None => (self.all_operands.as_ref(), self.all_operand_types.as_ref()),
            Some(i) => (self.operands[i].as_ref(), self.operand_types[i].as_ref()),
        };
        if let (Some(ops), Some(types)) = (ops, types) {
            if ops.len() != types.len() {
                let what = match i {
                    None => String::new(),
                    Some(i) => format!(" for '{}'", operand_decls(self.def)[i].name),
                };
                return Err(p.error(format!(
                    "{} operands present, but {} operand types given{what}",
                    ops.len(),
                    types.len()
                )));
            }
        }
        Ok(())
    }

    fn finish(
        self,
        p: &mut CustomParser<'_, '_>,
        state: &mut OperationState,
        format_attrs: &[&'static str],
    ) -> Result<(), Diagnostic> {
        let def = self.def;
        // The one type `SameOperandsAndResultType` lets every other take.
        let inferred: Option<Type> = if def.traits.contains(Traits::SAME_OPERANDS_AND_RESULT_TYPE) {
            self.all_operand_types
                .iter()
                .chain(self.operand_types.iter().flatten())
                .chain(self.all_result_types.iter())
                .chain(self.result_types.iter().flatten())
                .flat_map(|ts| ts.first())
                .next()
                .cloned()
        } else {
            None
        };
        let missing = |p: &CustomParser<'_, '_>, what: &str| {
            p.error(format!(
                "cannot infer the type of {what}: no type was given"
            ))
        };

        // Operands.
        let flat_ops: Vec<UnresolvedOperand> = match &self.all_operands {
            Some(v) => v.clone(),
            None => self.operands.iter().flatten().flatten().cloned().collect(),
        };
        let flat_types: Vec<Type> = match self.all_operand_types {
            Some(t) => t,
            None => {
                let decls = operand_decls(def);
                let counts: Vec<usize> = match &self.all_operands {
                    Some(all) if self.operand_types.iter().any(Option::is_some) => {
                        segments(decls, all.len())
                            .ok_or_else(|| {
                                p.error(format!(
                            "{} operands present, which do not match the declared operands of '{}'",
                            all.len(),
                            def.name
                        ))
                            })?
                            .into_iter()
                            .map(|r| r.len())
                            .collect()
                    }
                    Some(all) => vec![all.len()],
                    None => self
                        .operands
                        .iter()
                        .map(|o| o.as_ref().map_or(0, Vec::len))
                        .collect(),
                };
                let mut out = Vec::with_capacity(flat_ops.len());
                for (i, count) in counts.into_iter().enumerate() {
                    match self.operand_types.get(i).and_then(Option::as_ref) {
                        Some(ts) => out.extend(ts.iter().cloned()),
                        None if count == 0 => {}
                        None => {
                            let t = inferred.clone().ok_or_else(|| missing(p, "the operands"))?;
                            out.extend(vec![t; count]);
                        }
                    }
                }
                out
            }
        };
        if flat_ops.len() != flat_types.len() {
            return Err(p.error(format!(
                "{} operands present, but {} operand types given",
                flat_ops.len(),
                flat_types.len()
            )));
        }
        state.operands = p.resolve_operands(&flat_ops, &flat_types)?;

        // Results.
        state.result_types = match self.all_result_types {
            Some(t) => t,
            None => {
                let mut out = Vec::new();
                for (i, d) in result_decls(def).iter().enumerate() {
                    match &self.result_types[i] {
                        Some(ts) => out.extend(ts.iter().cloned()),
                        None if d.arity == Arity::One => {
                            out.push(inferred.clone().ok_or_else(|| missing(p, "the results"))?)
                        }
                        None => {}
                    }
                }
                out
            }
        };

        // Attributes: declared names become properties, as in the generic form.
        for (k, v) in self.attr_dict.iter() {
            if format_attrs.contains(&k) {
                return Err(p.error(format!(
                    "attribute '{k}' is written by the op's format, so it may not appear in the attribute dictionary"
                )));
            }
            if state.name.is_inherent_attr(k) {
                state
                    .properties
                    .get_or_insert_with(Dictionary::new)
                    .set(k, v.clone());
            } else {
                state.attributes.set(k, v.clone());
            }
        }
        for (k, v) in self.format_attrs {
            state
                .properties
                .get_or_insert_with(Dictionary::new)
                .set(k, v);
        }

        state.regions = match self.all_regions {
            Some(r) => r,
            None => self.regions.into_iter().flatten().collect(),
        };
        state.successors = match self.all_successors {
            Some(s) => s,
            None => self.successors.into_iter().flatten().collect(),
        };
        Ok(())
    }
}

fn elements(
    p: &mut CustomParser<'_, '_>,
    elements: &[Element],
    st: &mut Parsed<'_>,
) -> Result<(), Diagnostic> {
    for e in elements {
        element(p, e, st)?;
    }
    Ok(())
}

fn literal(p: &mut CustomParser<'_, '_>, l: Literal) -> Result<(), Diagnostic> {
    match l {
        Literal::Punct(s) => p.expect_punct(s),
        Literal::Keyword(k) => p.expect_keyword(k),
    }
}

/// Parses a type list that may be empty: types only if one starts here.
fn optional_types(p: &mut CustomParser<'_, '_>) -> Result<Vec<Type>, Diagnostic> {
    if p.at_type() {
        p.parse_type_list()
    } else {
        Ok(Vec::new())
    }
}

fn parse_types(
    p: &mut CustomParser<'_, '_>,
    arg: TypeArg,
    st: &mut Parsed<'_>,
) -> Result<(), Diagnostic> {
    let def = st.def;
    let arity = |decls: &[crate::dialect::ValueDecl], i: usize| decls[i].arity;
    match arg {
        TypeArg::Operands => {
            st.all_operand_types = Some(optional_types(p)?);
            st.check_counts(p, None)?;
        }
        TypeArg::Results => st.all_result_types = Some(optional_types(p)?),
        TypeArg::Operand(i) => {
            let ts = match arity(operand_decls(def), i) {
                Arity::One => vec![p.parse_type()?],
                _ => optional_types(p)?,
            };
            st.operand_types[i] = Some(ts);
            st.check_counts(p, Some(i))?;
        }
        TypeArg::Result(i) => {
            let ts = match arity(result_decls(def), i) {
                Arity::One => vec![p.parse_type()?],
                _ => optional_types(p)?,
            };
            st.result_types[i] = Some(ts);
        }
    }
    Ok(())
}

/// Stores types parsed by `functional-type` as if `type(arg)` had been parsed.
fn store_types(
    p: &CustomParser<'_, '_>,
    arg: TypeArg,
    types: Vec<Type>,
    st: &mut Parsed<'_>,
) -> Result<(), Diagnostic> {
    match arg {
        TypeArg::Operands => {
            st.all_operand_types = Some(types);
            st.check_counts(p, None)?;
        }
        TypeArg::Results => st.all_result_types = Some(types),
        TypeArg::Operand(i) => {
            st.operand_types[i] = Some(types);
            st.check_counts(p, Some(i))?;
        }
        TypeArg::Result(i) => st.result_types[i] = Some(types),
    }
    Ok(())
}

fn element(
    p: &mut CustomParser<'_, '_>,
    e: &Element,
    st: &mut Parsed<'_>,
) -> Result<(), Diagnostic> {
    let def = st.def;
    match e {
        Element::Literal(l) => literal(p, *l)?,
        Element::Group(Brackets::Paren, inner) => p.parse_parens(|sub| elements(sub, inner, st))?,
        Element::Group(Brackets::Square, inner) => {
            p.parse_square(|sub| elements(sub, inner, st))?
        }
        Element::Operand(i) => {
            let required = st.group_anchor == Some(Anchor::Operand(*i)) && !p.at_operand();
            let ops = match operand_decls(def)[*i].arity {
                Arity::One => vec![p.parse_operand()?],
                _ if required => vec![p.parse_operand()?],
                Arity::Optional if p.at_operand() => vec![p.parse_operand()?],
                Arity::Optional => Vec::new(),
                Arity::Variadic => p.parse_operand_list()?,
            };
            st.operands[*i] = Some(ops);
            st.check_counts(p, Some(*i))?;
        }
        Element::Operands => {
            st.all_operands = Some(p.parse_operand_list()?);
            st.check_counts(p, None)?;
        }
        Element::Attribute(i) => {
            let loc = p.current_loc();
            let a = p.parse_attribute()?;
            let decl = &def.attributes[*i];
            if !(decl.check)(&a) {
                return Err(Diagnostic::error(
                    loc,
                    format!("attribute '{}' must be {}", decl.name, decl.description),
                ));
            }
            st.format_attrs.push((decl.name, a));
        }
        Element::Region(i) => {
            let isolated = def.traits.contains(Traits::ISOLATED_FROM_ABOVE);
            st.regions[*i] = Some(p.parse_region(&[], isolated)?);
        }
        Element::Regions => {
            let isolated = def.traits.contains(Traits::ISOLATED_FROM_ABOVE);
            let mut regions = Vec::new();
            if p.at_region() {
                loop {
                    regions.push(p.parse_region(&[], isolated)?);
                    if !p.parse_optional_punct(",") {
                        break;
                    }
                }
            }
            st.all_regions = Some(regions);
        }
        Element::Successor(i) => st.successors[*i] = Some(p.parse_successor()?),
        Element::Successors => {
            let mut blocks = Vec::new();
            if p.at_successor() {
                loop {
                    blocks.push(p.parse_successor()?);
                    if !p.parse_optional_punct(",") {
                        break;
                    }
                }
            }
            st.all_successors = Some(blocks);
        }
        Element::AttrDict { with_keyword } => {
            if *with_keyword {
                p.parse_optional_attr_dict_with_keyword(&mut st.attr_dict)?;
            } else {
                p.parse_optional_attr_dict(&mut st.attr_dict)?;
            }
        }
        Element::Type(arg) => parse_types(p, *arg, st)?,
        Element::FunctionalType(inputs, results) => {
            if !p.at_parens() {
                return Err(p.error("expected a function type '(inputs) -> results'".to_string()));
            }
            let t = p.parse_type()?;
            let (ins, outs) = t
                .function_signature()
                .expect("a parenthesized type is a function type");
            let (ins, outs) = (ins.to_vec(), outs.to_vec());
            store_types(p, *inputs, ins, st)?;
            store_types(p, *results, outs, st)?;
        }
        Element::Optional {
            anchor,
            elements: inner,
        } => {
            st.group_anchor = Some(*anchor);
            let r = optional_group(p, inner, st);
            st.group_anchor = None;
            r?;
        }
    }
    Ok(())
}

fn optional_group(
    p: &mut CustomParser<'_, '_>,
    inner: &[Element],
    st: &mut Parsed<'_>,
) -> Result<(), Diagnostic> {
    // Validation guarantees the first element can be tested for.
    let rest = match &inner[0] {
        Element::Literal(Literal::Punct(s)) if p.parse_optional_punct(s) => &inner[1..],
        Element::Literal(Literal::Keyword(k)) if p.parse_optional_keyword(k) => &inner[1..],
        Element::Group(Brackets::Paren, _) if p.at_parens() => inner,
        Element::Operand(_) if p.at_operand() => inner,
        Element::Literal(_) | Element::Group(Brackets::Paren, _) | Element::Operand(_) => {
            return Ok(())
        }
        other => unreachable!("validated optional-group start {other:?}"),
    };
    elements(p, rest, st)
}
