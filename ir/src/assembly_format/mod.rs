//! Declarative assembly formats: an op's custom textual form written as a
//! format string, after MLIR ODS's `assemblyFormat`, instead of a pair of
//! hand-written print/parse hooks.
//!
//! ```
//! use std::sync::Arc;
//! use ipuc_ir::dialect::{Arity, Dialect, OpDefinition, TypeConstraint, ValueDecl};
//! use ipuc_ir::{parse_source, print_op, Context, DialectRegistry, PrintOptions};
//!
//! let value = |name| ValueDecl { name, constraint: TypeConstraint::ANY, arity: Arity::One };
//! let dialect = Dialect::new("demo", "an example").op(
//!     OpDefinition::new("demo.scale")
//!         .operands(&[value("input"), value("factor")])
//!         .results(&[value("output")])
//!         .assembly_format(
//!             "$input `by` $factor attr-dict `:` type($input) `,` type($factor) `->` type($output)",
//!         ),
//! );
//! let mut registry = DialectRegistry::new();
//! registry.register(dialect); // compiles and validates the format, once
//!
//! let mut ctx = Context::new(Arc::new(registry));
//! ctx.allow_unregistered = true;
//! let src = "%0 = \"x.f\"() : () -> f32\n%1 = demo.scale %0 by %0 {k} : f32, f32 -> f32\n";
//! let module = parse_source(&mut ctx, "demo.mlir", src).unwrap().module;
//! let text = print_op(&ctx, module, &PrintOptions::default());
//! assert!(text.contains("%1 = demo.scale %0 by %0 {k} : f32, f32 -> f32"));
//! ```
//!
//! # Syntax
//!
//! A format is a sequence of elements separated by whitespace:
//!
//! | element | prints | parses |
//! |---|---|---|
//! | `` `lit` `` | the literal: punctuation `,` `:` `->` `=` `<` `>` `*` `+` `?` `\|` `::` `...` `-`, the brackets `(` `)` `[` `]` (balanced), or a keyword (a bare identifier) | the same token |
//! | `$name` (operand) | the operand; a variadic operand as a comma-separated list (possibly empty) | an SSA operand (list) |
//! | `$name` (attribute) | the attribute value | an attribute, stored as a property |
//! | `$name` (region, see [`OpDefinition::region_names`](crate::dialect::OpDefinition::region_names)) | the region with its entry block header | a region |
//! | `$name` (successor, see [`OpDefinition::successor_names`](crate::dialect::OpDefinition::successor_names)) | the block label | a block label |
//! | `operands` | every operand, comma-separated | an operand list |
//! | `regions` / `successors` | every region / successor, comma-separated | a list |
//! | `attr-dict` | ` {...}`: the attributes and properties not printed elsewhere by the format (nothing if none) | an optional dictionary; declared names become properties |
//! | `attr-dict-with-keyword` | the same with the `attributes` keyword before it | the same |
//! | `type(x)` | the type(s) of `x` = `$operand`, `$result`, `operands` or `results`, comma-separated | a type list |
//! | `functional-type(x, y)` | `(types of x) -> types of y` (one non-function result bare, else in parentheses) | a function type |
//! | `( ... )?` | an optional group: printed when its anchor (the element marked `^`) is present | present when its first element is |
//!
//! Spacing follows upstream's rules: a space before each element except
//! before `)`, `]`, `,` (and `(`, `[`, `<`, `>` unless a punctuation literal
//! precedes them) and after `(`, `[`, `<`; an element that prints nothing
//! leaves no space behind.
//!
//! # Validation
//!
//! A format is compiled once, when its dialect is registered
//! ([`DialectRegistry::register`](crate::DialectRegistry::register) panics
//! with the message, [`DialectRegistry::try_register`](crate::DialectRegistry::try_register)
//! returns it): a bad format is a bug in the dialect's source, found by the
//! first test that builds a registry, never at print time. It is rejected
//! (with the op, the offending element and its column) when:
//! - a `$name` is not a declared operand, result, attribute, region or
//!   successor, or a directive or literal is unknown or cannot be parsed back
//!   (`{`, `}`, unbalanced brackets);
//! - an element is printed twice, or a result appears outside a type directive;
//! - an operand, region or successor is never printed, or there is no `attr-dict`;
//! - the type of an operand or result is neither printed nor inferable (the
//!   only inference is the `SameOperandsAndResultType` trait, from any printed
//!   type; a variadic or optional result must print its types);
//! - an optional group has no anchor, two anchors, an anchor that is not an
//!   optional/variadic operand or an optional attribute, a first element the
//!   parser cannot test for (allowed: a literal other than `[`, or an
//!   optional/variadic operand), a required operand or attribute, or a region;
//!   `^` appears outside an optional group; an optional attribute appears
//!   outside an optional group;
//! - `$name` or `type($name)` needs the operands (or results) split per
//!   declaration and there is more than one optional/variadic declaration
//!   (there are no segment sizes to split them by).
//!
//! # Limits (compared with upstream)
//!
//! No `custom<...>` directives, no `ref(...)`, no `prop-dict`, no `$x` of a
//! unit attribute printed as a keyword, no alternative groups (`:` else),
//! no type inference other than `SameOperandsAndResultType`, and no
//! attribute-typed printing (an integer attribute prints with its `: i64`).

mod format_parser;
mod parse_op;
mod print;

use std::fmt;

use crate::dialect::{Arity, OpDefinition, Traits, ValueDecl};

pub(crate) use parse_op::parse_op;
pub(crate) use print::print_op;

/// A compiled, validated declarative assembly format.
#[derive(Debug)]
pub struct AssemblyFormat {
    source: &'static str,
    elements: Vec<Element>,
    /// Attributes printed by the format, elided from `attr-dict`.
    format_attrs: Vec<&'static str>,
}

impl AssemblyFormat {
    /// The format string it was compiled from.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Whether this is `operands attr-dict : type(operands) -> type(results)`,
    /// the format the parser's hand-written reader reads itself (`nn`'s
    /// ops use it): parsed by it, such an op is built as its generic form
    /// would be.
    pub(crate) fn is_operands_dict_types(&self) -> bool {
        matches!(
            self.elements.as_slice(),
            [
                Element::Operands,
                Element::AttrDict {
                    with_keyword: false
                },
                Element::Literal(Literal::Punct(":")),
                Element::Type(TypeArg::Operands),
                Element::Literal(Literal::Punct("->")),
                Element::Type(TypeArg::Results),
            ]
        )
    }

    /// Compiles `source` against the declarations of `def` (its operands,
    /// results, attributes, regions, successors and traits).
    pub fn compile(
        def: &OpDefinition,
        source: &'static str,
    ) -> Result<AssemblyFormat, FormatError> {
        let raw = format_parser::parse(source).map_err(|(offset, message)| FormatError {
            op: def.name,
            source,
            offset,
            message,
        })?;
        let mut v = Validator::new(def, source);
        let elements = v.resolve_seq(&raw, None)?;
        v.finish()?;
        Ok(AssemblyFormat {
            source,
            elements,
            format_attrs: v.format_attrs,
        })
    }
}

/// Why a format string was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// The op whose format it is.
    pub op: &'static str,
    /// The format string.
    pub source: &'static str,
    /// Byte offset of the offending element in `source`.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "invalid assembly format for '{}': {} (at column {})",
            self.op,
            self.message,
            self.offset + 1
        )?;
        writeln!(f, "  {}", self.source)?;
        write!(
            f,
            "  {}^",
            " ".repeat(self.source[..self.offset].chars().count())
        )
    }
}

impl std::error::Error for FormatError {}

/// A literal token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Literal {
    /// Punctuation (`,`, `:`, `->`, ...), matched as one token.
    Punct(&'static str),
    /// A bare keyword.
    Keyword(&'static str),
}

/// `( ... )` or `[ ... ]` written as balanced literals: the tokenizer of a
/// custom op sees them as one group token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Brackets {
    Paren,
    Square,
}

/// What a type directive refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypeArg {
    Operand(usize),
    Result(usize),
    Operands,
    Results,
}

/// What decides whether an optional group is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    Operand(usize),
    Attribute(usize),
}

/// One resolved element of a format.
#[derive(Clone, Debug)]
pub(crate) enum Element {
    Literal(Literal),
    Group(Brackets, Vec<Element>),
    Operand(usize),
    Attribute(usize),
    Region(usize),
    Successor(usize),
    Operands,
    Regions,
    Successors,
    AttrDict {
        with_keyword: bool,
    },
    Type(TypeArg),
    FunctionalType(TypeArg, TypeArg),
    Optional {
        anchor: Anchor,
        elements: Vec<Element>,
    },
}

/// An unresolved element, as written.
#[derive(Clone, Debug)]
pub(crate) struct Raw {
    pub offset: usize,
    pub anchor: bool,
    pub kind: RawKind,
}

#[derive(Clone, Debug)]
pub(crate) enum RawKind {
    Literal(&'static str),
    Variable(&'static str),
    Directive(&'static str),
    Type(Box<Raw>),
    FunctionalType(Box<Raw>, Box<Raw>),
    Optional(Vec<Raw>),
}

/// Where the operands (or results) of an op split into its declarations:
/// one range per declaration, or `None` when `n` values cannot match them.
/// Unambiguous only with at most one optional/variadic declaration.
pub(crate) fn segments(decls: &[ValueDecl], n: usize) -> Option<Vec<std::ops::Range<usize>>> {
    let extra = flexible_count(decls, n)?;
    let mut start = 0;
    Some(
        decls
            .iter()
            .map(|d| {
                let len = if d.arity == Arity::One { 1 } else { extra };
                start += len;
                start - len..start
            })
            .collect(),
    )
}

/// How many of `n` values the one variadic or optional declaration of
/// `decls` takes (0 without one); `None` if `n` values cannot match them.
pub(crate) fn flexible_count(decls: &[ValueDecl], n: usize) -> Option<usize> {
    let fixed = decls.iter().filter(|d| d.arity == Arity::One).count();
    let mut flexible = decls.iter().map(|d| d.arity).filter(|a| *a != Arity::One);
    let extra = n.checked_sub(fixed)?;
    match (flexible.next(), flexible.next()) {
        (None, _) if extra != 0 => None,
        (Some(Arity::Optional), None) if extra > 1 => None,
        (_, None) => Some(extra),
        (_, Some(_)) => None,
    }
}

/// Which kind of declared thing a `$name` refers to.
enum Named {
    Operand(usize),
    Result(usize),
    Attribute(usize),
    Region(usize),
    Successor(usize),
}

struct Validator<'d> {
    def: &'d OpDefinition,
    source: &'static str,
    operand_printed: Vec<bool>,
    all_operands: bool,
    operand_typed: Vec<bool>,
    all_operand_types: bool,
    result_typed: Vec<bool>,
    all_result_types: bool,
    attr_printed: Vec<bool>,
    region_printed: Vec<bool>,
    all_regions: bool,
    successor_printed: Vec<bool>,
    all_successors: bool,
    attr_dict: bool,
    /// Offset of the first per-declaration operand (result) reference.
    operand_split_at: Option<usize>,
    result_split_at: Option<usize>,
    format_attrs: Vec<&'static str>,
}

fn decls(d: &Option<Vec<ValueDecl>>) -> &[ValueDecl] {
    d.as_deref().unwrap_or(&[])
}

impl<'d> Validator<'d> {
    fn new(def: &'d OpDefinition, source: &'static str) -> Self {
        Validator {
            def,
            source,
            operand_printed: vec![false; decls(&def.operands).len()],
            all_operands: false,
            operand_typed: vec![false; decls(&def.operands).len()],
            all_operand_types: false,
            result_typed: vec![false; decls(&def.results).len()],
            all_result_types: false,
            attr_printed: vec![false; def.attributes.len()],
            region_printed: vec![false; def.region_names.len()],
            all_regions: false,
            successor_printed: vec![false; def.successor_names.len()],
            all_successors: false,
            attr_dict: false,
            operand_split_at: None,
            result_split_at: None,
            format_attrs: Vec::new(),
        }
    }

    fn err(&self, offset: usize, message: impl Into<String>) -> FormatError {
        FormatError {
            op: self.def.name,
            source: self.source,
            offset,
            message: message.into(),
        }
    }

    fn lookup(&self, name: &str) -> Option<Named> {
        let def = self.def;
        if let Some(i) = decls(&def.operands).iter().position(|d| d.name == name) {
            return Some(Named::Operand(i));
        }
        if let Some(i) = decls(&def.results).iter().position(|d| d.name == name) {
            return Some(Named::Result(i));
        }
        if let Some(i) = def.attributes.iter().position(|a| a.name == name) {
            return Some(Named::Attribute(i));
        }
        if let Some(i) = def.region_names.iter().position(|r| *r == name) {
            return Some(Named::Region(i));
        }
        def.successor_names
            .iter()
            .position(|s| *s == name)
            .map(Named::Successor)
    }

    fn known_names(&self) -> String {
        let def = self.def;
        let list = |what: &str, names: Vec<&str>| {
            if names.is_empty() {
                None
            } else {
                Some(format!("{what} {}", names.join(", ")))
            }
        };
        let parts: Vec<String> = [
            list(
                "operands",
                decls(&def.operands).iter().map(|d| d.name).collect(),
            ),
            list(
                "results",
                decls(&def.results).iter().map(|d| d.name).collect(),
            ),
            list(
                "attributes",
                def.attributes.iter().map(|a| a.name).collect(),
            ),
            list("regions", def.region_names.clone()),
            list("successors", def.successor_names.clone()),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            "the op declares no names".to_string()
        } else {
            format!("declared: {}", parts.join("; "))
        }
    }

    /// Resolves a sequence; `optional` is `Some` inside an optional group.
    fn resolve_seq(
        &mut self,
        raw: &[Raw],
        optional: Option<&mut Option<Anchor>>,
    ) -> Result<Vec<Element>, FormatError> {
        let mut optional = optional;
        // Stack of open bracket literals: (brackets, offset, elements before it).
        let mut stack: Vec<(Brackets, usize, Vec<Element>)> = Vec::new();
        let mut out: Vec<Element> = Vec::new();
        for r in raw {
            if r.anchor {
                let anchor = match (&r.kind, &optional) {
                    (_, None) => {
                        return Err(self.err(r.offset, "'^' (an anchor) is only allowed inside an optional group '( ... )?'"))
                    }
                    (RawKind::Variable(name), Some(_)) => match self.lookup(name) {
                        Some(Named::Operand(i))
                            if decls(&self.def.operands)[i].arity != Arity::One =>
                        {
                            Anchor::Operand(i)
                        }
                        Some(Named::Attribute(i)) if self.def.attributes[i].optional => {
                            Anchor::Attribute(i)
                        }
                        _ => return Err(self.err(
                            r.offset,
                            format!("'${name}' cannot anchor an optional group: an anchor must be an optional or variadic operand or an optional attribute"),
                        )),
                    },
                    _ => {
                        return Err(self.err(
                            r.offset,
                            "only '$name' elements can anchor an optional group",
                        ))
                    }
                };
                let slot = optional.as_deref_mut().expect("inside a group");
                if slot.is_some() {
                    return Err(
                        self.err(r.offset, "an optional group may have only one anchor '^'")
                    );
                }
                *slot = Some(anchor);
            }
            match &r.kind {
                RawKind::Literal(text) => match *text {
                    "(" | "[" => {
                        let b = if *text == "(" {
                            Brackets::Paren
                        } else {
                            Brackets::Square
                        };
                        stack.push((b, r.offset, std::mem::take(&mut out)));
                    }
                    ")" | "]" => {
                        let b = if *text == ")" {
                            Brackets::Paren
                        } else {
                            Brackets::Square
                        };
                        match stack.pop() {
                            Some((open, _, before)) if open == b => {
                                let inner = std::mem::replace(&mut out, before);
                                out.push(Element::Group(b, inner));
                            }
                            _ => {
                                return Err(self.err(
                                    r.offset,
                                    format!(
                                    "literal '{text}' closes no open bracket literal in this group"
                                ),
                                ))
                            }
                        }
                    }
                    _ => out.push(Element::Literal(self.literal(text, r.offset)?)),
                },
                RawKind::Variable(name) => {
                    let inside = optional.is_some();
                    out.push(self.variable(name, r.offset, inside)?)
                }
                RawKind::Directive(d) => {
                    out.push(self.directive(d, r.offset, optional.is_some())?)
                }
                RawKind::Type(arg) => {
                    let a = self.type_arg(arg)?;
                    out.push(Element::Type(a));
                }
                RawKind::FunctionalType(a, b) => {
                    let a = self.type_arg(a)?;
                    let b = self.type_arg(b)?;
                    out.push(Element::FunctionalType(a, b));
                }
                RawKind::Optional(inner) => {
                    if optional.is_some() {
                        return Err(self.err(r.offset, "optional groups may not be nested"));
                    }
                    let mut anchor = None;
                    let elements = self.resolve_seq(inner, Some(&mut anchor))?;
                    let Some(anchor) = anchor else {
                        return Err(self.err(
                            r.offset,
                            "optional group has no anchor: mark the element that decides its presence with '^'",
                        ));
                    };
                    self.check_group_start(&elements, r.offset)?;
                    out.push(Element::Optional { anchor, elements });
                }
            }
        }
        if let Some((b, offset, _)) = stack.pop() {
            let text = if b == Brackets::Paren { "(" } else { "[" };
            return Err(self.err(
                offset,
                format!("literal '{text}' is not closed in the same group"),
            ));
        }
        Ok(out)
    }

    /// The parser decides whether an optional group is present from its
    /// first element, so that element must be testable.
    fn check_group_start(&self, elements: &[Element], offset: usize) -> Result<(), FormatError> {
        match elements.first() {
            Some(Element::Literal(_)) | Some(Element::Group(Brackets::Paren, _)) => Ok(()),
            Some(Element::Operand(i)) if decls(&self.def.operands)[*i].arity != Arity::One => {
                Ok(())
            }
            _ => Err(self.err(
                offset,
                "the first element of an optional group must be a literal (not '[') or an optional/variadic operand, so that the parser can tell whether the group is present",
            )),
        }
    }

    fn literal(&self, text: &'static str, offset: usize) -> Result<Literal, FormatError> {
        // The punctuation tokens of the custom-op grammar (`punct`).
        const PUNCT: [&str; 13] = [
            "->", "::", "...", ":", ",", "=", "*", "+", "?", "<", ">", "-", "|",
        ];
        if PUNCT.contains(&text) {
            return Ok(Literal::Punct(text));
        }
        if crate::printer::is_bare_identifier(text) {
            return Ok(Literal::Keyword(text));
        }
        Err(self.err(
            offset,
            format!("literal '{text}' cannot be parsed back: a literal is a keyword (a bare identifier), one of -> :: ... : , = * + ? < > - |, or a balanced ( ) or [ ]"),
        ))
    }

    fn mark(flag: &mut bool, err: impl FnOnce() -> FormatError) -> Result<(), FormatError> {
        if *flag {
            return Err(err());
        }
        *flag = true;
        Ok(())
    }

    /// A region or successor `$name` printed on its own: never in an
    /// optional group, nor when the directive `list` (`regions`,
    /// `successors`) prints `all` of them.
    fn check_list_entry(
        &self,
        name: &str,
        list: &str,
        all: bool,
        offset: usize,
        in_optional: bool,
    ) -> Result<(), FormatError> {
        if in_optional {
            return Err(self.err(offset, format!("{list} cannot be in an optional group")));
        }
        if all {
            return Err(self.err(offset, format!("'${name}' is already printed by '{list}'")));
        }
        Ok(())
    }

    fn variable(
        &mut self,
        name: &'static str,
        offset: usize,
        in_optional: bool,
    ) -> Result<Element, FormatError> {
        let twice = || self.err(offset, format!("'${name}' is printed more than once"));
        let dup = twice();
        match self.lookup(name) {
            None => Err(self.err(
                offset,
                format!("'${name}' is not a declared operand, result, attribute, region or successor ({})", self.known_names()),
            )),
            Some(Named::Result(_)) => Err(self.err(
                offset,
                format!("result '${name}' can only appear in a type directive (results are bound by '%r = ', not printed)"),
            )),
            Some(Named::Operand(i)) => {
                if self.all_operands {
                    return Err(self.err(offset, format!("'${name}' is already printed by 'operands'")));
                }
                let decl = decls(&self.def.operands)[i];
                if in_optional && decl.arity == Arity::One {
                    return Err(self.err(offset, format!("operand '${name}' is required, so it cannot be in an optional group (it would be lost when the group is absent)")));
                }
                Self::mark(&mut self.operand_printed[i], || dup)?;
                self.operand_split_at.get_or_insert(offset);
                Ok(Element::Operand(i))
            }
            Some(Named::Attribute(i)) => {
                let optional = self.def.attributes[i].optional;
                if in_optional && !optional {
                    return Err(self.err(offset, format!("attribute '${name}' is required, so it cannot be in an optional group")));
                }
                if !in_optional && optional {
                    return Err(self.err(offset, format!("optional attribute '${name}' must be inside an optional group anchored on it (`(`kw` ${name}^)?`), or left to attr-dict")));
                }
                Self::mark(&mut self.attr_printed[i], || dup)?;
                self.format_attrs.push(self.def.attributes[i].name);
                Ok(Element::Attribute(i))
            }
            Some(Named::Region(i)) => {
                self.check_list_entry(name, "regions", self.all_regions, offset, in_optional)?;
                Self::mark(&mut self.region_printed[i], || dup)?;
                Ok(Element::Region(i))
            }
            Some(Named::Successor(i)) => {
                self.check_list_entry(name, "successors", self.all_successors, offset, in_optional)?;
                Self::mark(&mut self.successor_printed[i], || dup)?;
                Ok(Element::Successor(i))
            }
        }
    }

    fn directive(
        &mut self,
        d: &'static str,
        offset: usize,
        in_optional: bool,
    ) -> Result<Element, FormatError> {
        let twice = self.err(offset, format!("'{d}' appears more than once"));
        match d {
            "attr-dict" | "attr-dict-with-keyword" => {
                if in_optional {
                    return Err(self.err(offset, format!("'{d}' cannot be in an optional group")));
                }
                Self::mark(&mut self.attr_dict, || twice)?;
                Ok(Element::AttrDict {
                    with_keyword: d == "attr-dict-with-keyword",
                })
            }
            "operands" => {
                if in_optional {
                    return Err(self.err(offset, "'operands' cannot be in an optional group"));
                }
                if self.operand_printed.iter().any(|p| *p) {
                    return Err(self.err(offset, "'operands' repeats operands already printed by '$name'"));
                }
                Self::mark(&mut self.all_operands, || twice)?;
                Ok(Element::Operands)
            }
            "regions" | "successors" => {
                if in_optional {
                    return Err(self.err(offset, format!("'{d}' cannot be in an optional group")));
                }
                let (all, named) = if d == "regions" {
                    (&mut self.all_regions, &self.region_printed)
                } else {
                    (&mut self.all_successors, &self.successor_printed)
                };
                if named.iter().any(|p| *p) {
                    return Err(FormatError {
                        op: self.def.name,
                        source: self.source,
                        offset,
                        message: format!("'{d}' repeats elements already printed by '$name'"),
                    });
                }
                Self::mark(all, || twice)?;
                Ok(if d == "regions" {
                    Element::Regions
                } else {
                    Element::Successors
                })
            }
            "results" => Err(self.err(offset, "'results' can only appear in a type directive: 'type(results)'")),
            _ => Err(self.err(
                offset,
                format!("unknown directive '{d}' (known: attr-dict, attr-dict-with-keyword, operands, regions, successors, type(...), functional-type(..., ...); names start with '$')"),
            )),
        }
    }

    fn type_arg(&mut self, raw: &Raw) -> Result<TypeArg, FormatError> {
        let offset = raw.offset;
        if raw.anchor {
            return Err(self.err(offset, "a type directive's argument cannot be an anchor; put '^' on the type directive's operand"));
        }
        let arg = match &raw.kind {
            RawKind::Directive("operands") => TypeArg::Operands,
            RawKind::Directive("results") => TypeArg::Results,
            RawKind::Variable(name) => match self.lookup(name) {
                Some(Named::Operand(i)) => TypeArg::Operand(i),
                Some(Named::Result(i)) => TypeArg::Result(i),
                Some(_) => {
                    return Err(self.err(
                        offset,
                        format!("'${name}' has no type: type directives take an operand, a result, 'operands' or 'results'"),
                    ))
                }
                None => {
                    return Err(self.err(
                        offset,
                        format!("'${name}' is not a declared operand or result ({})", self.known_names()),
                    ))
                }
            },
            _ => {
                return Err(self.err(
                    offset,
                    "a type directive takes '$operand', '$result', 'operands' or 'results'",
                ))
            }
        };
        let twice = || {
            self.err(
                offset,
                "this type is already printed by another type directive",
            )
        };
        let dup = twice();
        match arg {
            TypeArg::Operand(i) => {
                if self.all_operand_types {
                    return Err(dup);
                }
                Self::mark(&mut self.operand_typed[i], || dup)?;
                self.operand_split_at.get_or_insert(offset);
            }
            TypeArg::Result(i) => {
                if self.all_result_types {
                    return Err(dup);
                }
                Self::mark(&mut self.result_typed[i], || dup)?;
                self.result_split_at.get_or_insert(offset);
            }
            TypeArg::Operands => {
                if self.operand_typed.iter().any(|t| *t) {
                    return Err(dup);
                }
                Self::mark(&mut self.all_operand_types, || dup)?;
            }
            TypeArg::Results => {
                if self.result_typed.iter().any(|t| *t) {
                    return Err(dup);
                }
                Self::mark(&mut self.all_result_types, || dup)?;
            }
        }
        Ok(arg)
    }

    /// Unless the directive prints `all` of them, every named `what`
    /// (region or successor) is `printed`, and an op that has some names
    /// them.
    fn check_list_printed(
        &self,
        what: &str,
        all: bool,
        printed: &[bool],
        names: &[&str],
        count: Option<usize>,
        end: usize,
    ) -> Result<(), FormatError> {
        if all {
            return Ok(());
        }
        if let Some(i) = printed.iter().position(|p| !p) {
            return Err(self.err(end, format!("{what} '${}' is not printed", names[i])));
        }
        if names.is_empty() && count != Some(0) {
            return Err(self.err(end, format!("the op has {what}s but the format prints none (add '{what}s', or name them with {what}_names and print '$name')")));
        }
        Ok(())
    }

    fn finish(&self) -> Result<(), FormatError> {
        let def = self.def;
        let end = self.source.len();
        if !self.attr_dict {
            return Err(self.err(end, "the format has no 'attr-dict' (or 'attr-dict-with-keyword') directive, so discardable attributes could not be printed"));
        }
        let flexible = |d: &[ValueDecl]| d.iter().filter(|d| d.arity != Arity::One).count();
        if let Some(offset) = self.operand_split_at {
            if flexible(decls(&def.operands)) > 1 {
                return Err(self.err(offset, "this op declares more than one optional/variadic operand, so operands cannot be split per declaration; use 'operands' and 'type(operands)'"));
            }
        }
        if let Some(offset) = self.result_split_at {
            if flexible(decls(&def.results)) > 1 {
                return Err(self.err(offset, "this op declares more than one optional/variadic result, so results cannot be split per declaration; use 'type(results)'"));
            }
        }
        if !self.all_operands {
            if def.operands.is_none() {
                return Err(self.err(end, "the op does not declare its operands, so the format must print them with 'operands'"));
            }
            if let Some(i) = self.operand_printed.iter().position(|p| !p) {
                return Err(self.err(
                    end,
                    format!(
                        "operand '${}' is not printed (add '${0}' or 'operands')",
                        decls(&def.operands)[i].name
                    ),
                ));
            }
        }
        let same_types = def.traits.contains(Traits::SAME_OPERANDS_AND_RESULT_TYPE);
        let any_type = self.all_operand_types
            || self.all_result_types
            || self.operand_typed.iter().any(|t| *t)
            || self.result_typed.iter().any(|t| *t);
        let inferable = same_types && any_type;
        if !self.all_operand_types {
            if def.operands.is_none() && !inferable {
                return Err(self.err(end, "the op does not declare its operands, so the format must print their types with 'type(operands)'"));
            }
            if let Some(i) = self.operand_typed.iter().position(|t| !t) {
                if !inferable {
                    return Err(self.err(
                        end,
                        format!("the type of operand '${}' is neither printed nor inferable (add 'type(${0})', or the SameOperandsAndResultType trait with another type printed)", decls(&def.operands)[i].name),
                    ));
                }
            }
        }
        if !self.all_result_types {
            if def.results.is_none() {
                return Err(self.err(end, "the op does not declare its results, so the format must print their types with 'type(results)'"));
            }
            for (i, typed) in self.result_typed.iter().enumerate() {
                let decl = decls(&def.results)[i];
                if !typed && (!inferable || decl.arity != Arity::One) {
                    return Err(self.err(
                        end,
                        format!("the type of result '${}' is neither printed nor inferable (add 'type(${0})'{})", decl.name,
                            if decl.arity == Arity::One { ", or the SameOperandsAndResultType trait with another type printed" } else { "; a variadic or optional result always needs its types printed" }),
                    ));
                }
            }
        }
        self.check_list_printed(
            "region",
            self.all_regions,
            &self.region_printed,
            &def.region_names,
            def.num_regions,
            end,
        )?;
        self.check_list_printed(
            "successor",
            self.all_successors,
            &self.successor_printed,
            &def.successor_names,
            def.num_successors,
            end,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
