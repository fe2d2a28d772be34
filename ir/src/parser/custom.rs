//! The token cursor that custom assembly formats parse with, in the style of
//! MLIR's `OpAsmParser`: `parse_operand`, `parse_colon_type`,
//! `parse_optional_attr_dict`, `parse_region`, ...

use pest::iterators::Pair;

use super::syntax::Rule;
use super::Parser;
use crate::attributes::{Attribute, Dictionary};
use crate::context::{BlockId, RegionId, Value};
use crate::diagnostics::Diagnostic;
use crate::location::Location;
use crate::types::Type;

/// An operand written in a custom form, resolved once its type is known.
#[derive(Clone, Debug)]
pub struct UnresolvedOperand {
    /// `%name`.
    pub name: String,
    /// Result number (`%name#N`).
    pub index: usize,
    /// Byte offset for diagnostics.
    pub offset: usize,
}

/// A function argument parsed from a signature: `%arg0: i32 {attrs} loc(...)`.
#[derive(Clone, Debug)]
pub struct Argument {
    /// `%name`.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// Argument attributes.
    pub attrs: Dictionary,
    /// Explicit location, if written.
    pub loc: Option<Location>,
    /// Byte offset for diagnostics.
    pub offset: usize,
}

/// Cursor over the tokens of one custom operation (or of a group inside it).
pub struct CustomParser<'p, 'c> {
    parser: &'p mut Parser<'c>,
    elems: Vec<Pair<'p, Rule>>,
    pos: usize,
    end_offset: usize,
    num_results: usize,
}

impl<'p, 'c> CustomParser<'p, 'c> {
    pub(crate) fn new(
        parser: &'p mut Parser<'c>,
        elems: Vec<Pair<'p, Rule>>,
        end_offset: usize,
        num_results: usize,
    ) -> Self {
        CustomParser {
            parser,
            elems,
            pos: 0,
            end_offset,
            num_results,
        }
    }

    /// The number of results the op is bound to (`%0:2 = ...` gives 2).
    pub fn num_results(&self) -> usize {
        self.num_results
    }

    /// The context (e.g. to look up op names or the registry).
    pub fn ctx(&mut self) -> &mut crate::Context {
        self.parser.ctx
    }

    fn peek(&self) -> Option<&Pair<'p, Rule>> {
        self.elems.get(self.pos)
    }

    fn current_offset(&self) -> usize {
        match self.peek() {
            Some(p) => self.parser.abs(p.as_span().start()),
            None => self.end_offset,
        }
    }

    /// The location of the current token.
    pub fn current_loc(&self) -> Location {
        self.parser.loc_at(self.current_offset())
    }

    /// An error at the current token.
    pub fn error(&self, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.current_loc(), msg)
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(p) => format!(
                "'{}'",
                p.as_str()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(30)
                    .collect::<String>()
            ),
            None => "end of operation".to_string(),
        }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        self.error(format!("expected {what}, found {}", self.found()))
    }

    /// Whether all tokens were consumed.
    pub fn is_at_end(&self) -> bool {
        self.pos >= self.elems.len()
    }

    /// Fails unless all tokens were consumed.
    pub fn expect_end(&self) -> Result<(), Diagnostic> {
        if self.is_at_end() {
            Ok(())
        } else {
            Err(self.error(format!(
                "unexpected {} in custom operation syntax",
                self.found()
            )))
        }
    }

    /// Consumes the next token if `accepts` it.
    fn eat_if(&mut self, accepts: impl FnOnce(&Pair<'p, Rule>) -> bool) -> bool {
        let eaten = self.peek().is_some_and(accepts);
        self.pos += usize::from(eaten);
        eaten
    }

    /// `Ok` if the token `text` was `eaten`, else the error that it is expected.
    fn expect_eaten(&self, eaten: bool, text: &str) -> Result<(), Diagnostic> {
        if eaten {
            Ok(())
        } else {
            Err(self.expected(&format!("'{text}'")))
        }
    }

    /// Consumes punctuation `p` (`,`, `:`, `->`, `=`, ...) if present.
    pub fn parse_optional_punct(&mut self, p: &str) -> bool {
        self.eat_if(|t| t.as_rule() == Rule::punct && t.as_str() == p)
    }

    /// Consumes punctuation `p` or fails.
    pub fn expect_punct(&mut self, p: &str) -> Result<(), Diagnostic> {
        let eaten = self.parse_optional_punct(p);
        self.expect_eaten(eaten, p)
    }

    /// Consumes keyword `kw` if present.
    pub fn parse_optional_keyword(&mut self, kw: &str) -> bool {
        self.eat_if(|t| matches!(t.as_rule(), Rule::keyword | Rule::any_type) && t.as_str() == kw)
    }

    /// Consumes keyword `kw` or fails.
    pub fn expect_keyword(&mut self, kw: &str) -> Result<(), Diagnostic> {
        let eaten = self.parse_optional_keyword(kw);
        self.expect_eaten(eaten, kw)
    }

    /// Consumes the next token if it is of kind `rule`, giving what `read`
    /// makes of it; anything else is an error that `what` is expected.
    fn parse_token<T>(
        &mut self,
        rule: Rule,
        what: &str,
        read: impl FnOnce(&Self, &Pair<'p, Rule>) -> Result<T, Diagnostic>,
    ) -> Result<T, Diagnostic> {
        match self.peek().cloned() {
            Some(t) if t.as_rule() == rule => {
                let v = read(self, &t)?;
                self.pos += 1;
                Ok(v)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// Consumes any bare keyword.
    pub fn parse_keyword(&mut self) -> Result<String, Diagnostic> {
        self.parse_token(Rule::keyword, "a keyword", |_, t| {
            Ok(t.as_str().to_string())
        })
    }

    /// Consumes a symbol name `@name`.
    pub fn parse_symbol_name(&mut self) -> Result<String, Diagnostic> {
        self.parse_token(Rule::symbol_ref_attr, "a symbol name '@...'", |p, t| {
            let mut inner = t.clone().into_inner();
            let first = inner.next().expect("symbol name");
            if inner.next().is_some() {
                return Err(p.error("expected a flat symbol name, found a nested reference"));
            }
            p.parser.symbol_name_text(&first)
        })
    }

    /// Consumes an operand `%name` or `%name#N`.
    pub fn parse_operand(&mut self) -> Result<UnresolvedOperand, Diagnostic> {
        self.parse_token(Rule::value_use, "an SSA operand", |p, t| {
            let (name, index, offset) = p.parser.value_use_parts(t)?;
            Ok(UnresolvedOperand {
                name: name.to_string(),
                index,
                offset,
            })
        })
    }

    /// Whether the next token is an operand.
    pub fn at_operand(&self) -> bool {
        self.peek().is_some_and(|t| t.as_rule() == Rule::value_use)
    }

    /// Consumes a comma-separated operand list (possibly empty).
    pub fn parse_operand_list(&mut self) -> Result<Vec<UnresolvedOperand>, Diagnostic> {
        let mut out = Vec::new();
        if !self.at_operand() {
            return Ok(out);
        }
        loop {
            out.push(self.parse_operand()?);
            if !self.parse_optional_punct(",") {
                return Ok(out);
            }
        }
    }

    /// Resolves operands against their types.
    pub fn resolve_operands(
        &mut self,
        ops: &[UnresolvedOperand],
        types: &[Type],
    ) -> Result<Vec<Value>, Diagnostic> {
        if ops.len() != types.len() {
            return Err(self.error(format!(
                "{} operands present, but expected {}",
                ops.len(),
                types.len()
            )));
        }
        ops.iter()
            .zip(types)
            .map(|(o, t)| self.parser.resolve_value(&o.name, o.index, t, o.offset))
            .collect()
    }

    /// Resolves one operand.
    pub fn resolve_operand(
        &mut self,
        op: &UnresolvedOperand,
        ty: &Type,
    ) -> Result<Value, Diagnostic> {
        self.parser.resolve_value(&op.name, op.index, ty, op.offset)
    }

    /// Consumes a block reference `^bb1`.
    pub fn parse_successor(&mut self) -> Result<BlockId, Diagnostic> {
        match self.peek() {
            Some(t) if t.as_rule() == Rule::caret_id => {
                let name = t.as_str().to_string();
                let off = self.current_offset();
                self.pos += 1;
                Ok(self.parser.block_ref(&name, off))
            }
            _ => Err(self.expected("a block label")),
        }
    }

    /// Consumes a type (a function type is a paren group, `->`, and results).
    pub fn parse_type(&mut self) -> Result<Type, Diagnostic> {
        match self.peek().cloned() {
            Some(t) if t.as_rule() == Rule::any_type => {
                self.pos += 1;
                self.parser.convert_type(t)
            }
            Some(t) if t.as_rule() == Rule::paren_group => {
                self.pos += 1;
                let inputs = self.group_types(t)?;
                self.expect_punct("->")?;
                let results = self.parse_function_results()?;
                Ok(Type::function(inputs, results))
            }
            _ => Err(self.expected("a type")),
        }
    }

    /// Consumes `: type`.
    pub fn parse_colon_type(&mut self) -> Result<Type, Diagnostic> {
        self.expect_punct(":")?;
        self.parse_type()
    }

    /// Consumes a comma-separated type list (at least one).
    pub fn parse_type_list(&mut self) -> Result<Vec<Type>, Diagnostic> {
        let mut out = vec![self.parse_type()?];
        while self.parse_optional_punct(",") {
            out.push(self.parse_type()?);
        }
        Ok(out)
    }

    /// Consumes function results: `(T, U)` or a single type.
    pub fn parse_function_results(&mut self) -> Result<Vec<Type>, Diagnostic> {
        match self.peek().cloned() {
            Some(t) if t.as_rule() == Rule::paren_group => {
                // `(T) -> U` here would be a function-typed single result.
                if self
                    .elems
                    .get(self.pos + 1)
                    .is_some_and(|n| n.as_rule() == Rule::punct && n.as_str() == "->")
                {
                    return Ok(vec![self.parse_type()?]);
                }
                self.pos += 1;
                self.group_types(t)
            }
            _ => Ok(vec![self.parse_type()?]),
        }
    }

    /// Consumes `-> results` if present.
    pub fn parse_optional_arrow_results(&mut self) -> Result<Vec<Type>, Diagnostic> {
        if self.parse_optional_punct("->") {
            self.parse_function_results()
        } else {
            Ok(Vec::new())
        }
    }

    fn group_types(&mut self, group: Pair<'p, Rule>) -> Result<Vec<Type>, Diagnostic> {
        let mut sub = self.sub(group);
        if sub.is_at_end() {
            return Ok(Vec::new());
        }
        let types = sub.parse_type_list()?;
        sub.expect_end()?;
        Ok(types)
    }

    fn sub(&mut self, group: Pair<'p, Rule>) -> CustomParser<'_, 'c> {
        let end = self.parser.abs(group.as_span().end()) - 1;
        let elems: Vec<Pair<'p, Rule>> = group
            .into_inner()
            .map(|e| e.into_inner().next().expect("custom element"))
            .collect();
        CustomParser {
            parser: self.parser,
            elems,
            pos: 0,
            end_offset: end,
            num_results: 0,
        }
    }

    /// Runs `f` over the contents of a parenthesized group `( ... )`.
    pub fn parse_parens<T>(
        &mut self,
        f: impl FnOnce(&mut CustomParser<'_, 'c>) -> Result<T, Diagnostic>,
    ) -> Result<T, Diagnostic> {
        self.parse_group(Rule::paren_group, "'('", f)
    }

    /// Runs `f` over the contents of a square group `[ ... ]`.
    pub fn parse_square<T>(
        &mut self,
        f: impl FnOnce(&mut CustomParser<'_, 'c>) -> Result<T, Diagnostic>,
    ) -> Result<T, Diagnostic> {
        self.parse_group(Rule::square_group, "'['", f)
    }

    /// Runs `f` over the contents of the next token, a group of kind
    /// `rule` (expected as `opening` when it is something else); `f` must
    /// consume the whole group.
    fn parse_group<T>(
        &mut self,
        rule: Rule,
        opening: &str,
        f: impl FnOnce(&mut CustomParser<'_, 'c>) -> Result<T, Diagnostic>,
    ) -> Result<T, Diagnostic> {
        match self.peek().cloned() {
            Some(t) if t.as_rule() == rule => {
                self.pos += 1;
                let mut sub = self.sub(t);
                let v = f(&mut sub)?;
                sub.expect_end()?;
                Ok(v)
            }
            _ => Err(self.expected(opening)),
        }
    }

    /// Whether the next token starts a type (a type, or the `(` of a
    /// function type): lets a possibly empty type list be parsed.
    pub fn at_type(&self) -> bool {
        self.peek()
            .is_some_and(|t| matches!(t.as_rule(), Rule::any_type | Rule::paren_group))
    }

    /// Whether the next token is a block label `^bb`.
    pub fn at_successor(&self) -> bool {
        self.peek().is_some_and(|t| t.as_rule() == Rule::caret_id)
    }

    /// Whether the next token is a `( ... )` group.
    pub fn at_parens(&self) -> bool {
        self.peek()
            .is_some_and(|t| t.as_rule() == Rule::paren_group)
    }

    /// Consumes an attribute (with `: type` for numbers and strings).
    pub fn parse_attribute(&mut self) -> Result<Attribute, Diagnostic> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.expected("an attribute"));
        };
        match t.as_rule() {
            Rule::custom_attr => {
                self.pos += 1;
                let inner = t.into_inner().next().expect("attribute");
                match inner.as_rule() {
                    Rule::number => {
                        let ty = if self.parse_optional_punct(":") {
                            Some(self.parse_type()?)
                        } else {
                            None
                        };
                        self.parser.number_attr(&inner, ty)
                    }
                    Rule::string_lit => {
                        let bytes = super::attrs::unescape_bytes(inner.as_str())
                            .map_err(|m| self.parser.err(&inner, m))?;
                        let ty = if self.parse_optional_punct(":") {
                            Some(self.parse_type()?)
                        } else {
                            None
                        };
                        Ok(Attribute::string_from_bytes(bytes, ty))
                    }
                    _ => self.parser.convert_attribute_inner(inner),
                }
            }
            Rule::symbol_ref_attr | Rule::any_type => {
                self.pos += 1;
                self.parser.convert_attribute_inner(t)
            }
            Rule::custom_dict => {
                self.pos += 1;
                Ok(Attribute::dictionary(
                    self.parser
                        .convert_dict(t.into_inner().next().expect("dict"))?,
                ))
            }
            Rule::square_group => {
                self.pos += 1;
                let mut sub = self.sub(t);
                let mut items = Vec::new();
                if !sub.is_at_end() {
                    loop {
                        items.push(sub.parse_attribute()?);
                        if !sub.parse_optional_punct(",") {
                            break;
                        }
                    }
                }
                sub.expect_end()?;
                Ok(Attribute::array(items))
            }
            _ => Err(self.expected("an attribute")),
        }
    }

    /// Consumes `{...}` into `attrs` if present.
    pub fn parse_optional_attr_dict(&mut self, attrs: &mut Dictionary) -> Result<(), Diagnostic> {
        if let Some(t) = self.peek().cloned() {
            if t.as_rule() == Rule::custom_dict {
                self.pos += 1;
                let d = self
                    .parser
                    .convert_dict(t.into_inner().next().expect("dict"))?;
                for (k, v) in d.iter() {
                    attrs.set(k, v.clone());
                }
            }
        }
        Ok(())
    }

    /// Consumes `attributes {...}` into `attrs` if present.
    pub fn parse_optional_attr_dict_with_keyword(
        &mut self,
        attrs: &mut Dictionary,
    ) -> Result<(), Diagnostic> {
        if self.parse_optional_keyword("attributes") {
            if self.peek().is_none_or(|t| t.as_rule() != Rule::custom_dict) {
                return Err(self.expected("an attribute dictionary after 'attributes'"));
            }
            self.parse_optional_attr_dict(attrs)?;
        }
        Ok(())
    }

    /// Consumes `<{...}>` properties if present.
    pub fn parse_optional_properties(&mut self) -> Result<Option<Dictionary>, Diagnostic> {
        if let Some(t) = self.peek().cloned() {
            if t.as_rule() == Rule::properties {
                self.pos += 1;
                let d = t.into_inner().next().expect("dict");
                return Ok(Some(self.parser.convert_dict(d)?));
            }
        }
        Ok(None)
    }

    /// Whether the next token is a region.
    pub fn at_region(&self) -> bool {
        self.peek().is_some_and(|t| {
            matches!(t.as_rule(), Rule::newline_region | Rule::region)
                || (t.as_rule() == Rule::custom_dict
                    && t.as_str().trim_start_matches('{').trim().starts_with('}'))
        })
    }

    /// Consumes a region; `entry_args` become the entry block's arguments.
    pub fn parse_region(
        &mut self,
        entry_args: &[Argument],
        isolated: bool,
    ) -> Result<RegionId, Diagnostic> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.expected("a region"));
        };
        let region_pair = match t.as_rule() {
            Rule::newline_region => t
                .into_inner()
                .next()
                .expect("region_nl")
                .into_inner()
                .next()
                .expect("region"),
            Rule::region => t,
            Rule::custom_dict if self.at_region() => {
                // `{}` is an empty region.
                self.pos += 1;
                let r = self.parser.ctx.create_region();
                if !entry_args.is_empty() {
                    return Err(self
                        .error("expected a non-empty region body for a function with arguments"));
                }
                return Ok(r);
            }
            _ => return Err(self.expected("a region")),
        };
        self.pos += 1;
        let args: Vec<(String, Type, Option<Location>, usize)> = entry_args
            .iter()
            .map(|a| (a.name.clone(), a.ty.clone(), a.loc.clone(), a.offset))
            .collect();
        self.parser.build_region(region_pair, isolated, &args)
    }

    /// Consumes an argument list `(%a: T {attrs} loc(..), ...)`; with
    /// `allow_types_only`, also `(T, U)` (declarations without a body).
    pub fn parse_argument_list(
        &mut self,
        allow_types_only: bool,
    ) -> Result<(Vec<Argument>, bool), Diagnostic> {
        self.parse_parens(|p| {
            let mut args = Vec::new();
            if p.is_at_end() {
                return Ok((args, true));
            }
            let named = p.at_operand();
            if !named && !allow_types_only {
                return Err(p.expected("an SSA argument '%name: type'"));
            }
            loop {
                let offset = p.current_offset();
                let name = if named {
                    p.parse_operand()?.name
                } else {
                    String::new()
                };
                if named {
                    p.expect_punct(":")?;
                }
                let ty = p.parse_type()?;
                let mut attrs = Dictionary::new();
                p.parse_optional_attr_dict(&mut attrs)?;
                let loc = p.parse_optional_location()?;
                args.push(Argument {
                    name,
                    ty,
                    attrs,
                    loc,
                    offset,
                });
                if !p.parse_optional_punct(",") {
                    break;
                }
            }
            Ok((args, named))
        })
    }

    /// Consumes `loc(...)` if present.
    pub fn parse_optional_location(&mut self) -> Result<Option<Location>, Diagnostic> {
        if self
            .peek()
            .is_some_and(|t| t.as_rule() == Rule::keyword && t.as_str() == "loc")
            && self
                .elems
                .get(self.pos + 1)
                .is_some_and(|t| t.as_rule() == Rule::paren_group)
        {
            let text = self.elems[self.pos + 1].as_str().to_string();
            let offset = self.parser.abs(self.elems[self.pos].as_span().start());
            self.pos += 2;
            let src = format!("loc{text}");
            let pair = {
                use pest::Parser as _;
                super::syntax::MlirGrammar::parse(Rule::location, &src)
                    .map_err(|_| Diagnostic::error(self.parser.loc_at(offset), "invalid location"))?
                    .next()
                    .expect("location")
            };
            let body = pair.into_inner().next().expect("loc body");
            let l = self.parser.with_base(offset, |p| p.convert_location(body));
            return l.map(Some);
        }
        Ok(None)
    }
}
