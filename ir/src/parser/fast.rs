//! A hand-written reader for the operations most IR is made of:
//!
//! - generic ops, `%r = "dialect.op"(%a, %b#1)[^bb1] <{props}> ({ region
//!   }) {attrs} : (T, U) -> R`, with attribute values that are strings,
//!   numbers, booleans, `unit`, types, `array<T: ...>`, `dense<...>` and
//!   `dense_resource<...>`, and arrays and dictionaries of those;
//! - custom forms of ops whose declarative format is
//!   `operands attr-dict : type(operands) -> type(results)` (every `nn` op
//!   but two), and of ops that declare their hand-written form to be
//!   `attr-dict $value` (`nn.constant`,
//!   [`OpDefinition::attr_dict_value_form`](crate::dialect::OpDefinition::attr_dict_value_form));
//! - block labels `^bb1(%a: T):` in region bodies.
//!
//! pest stays the grammar of record. This reader only takes the fast lane:
//! anything outside that subset (locations, symbol references, aliases,
//! non-ASCII text, any syntax or conversion error, ...) makes it answer
//! "not mine" before it changes any state, and the item goes to pest,
//! which also reports every error. So what it accepts must be a subset of
//! what pest accepts, built into the same IR: the `parse` fuzz target and
//! `ir/tests/parser_fuzz.rs` compare the two readers on every input
//! ([`ParseOptions::hand_reader`](super::ParseOptions)). The bodies of the
//! regions it reads are parsed item by item when the op is built, as
//! every large region body is (`Parser::stream_body`); `dense` literals
//! are read by pest, once per distinct text (`Parser::attribute_of_text`).
//!
//! Attribute values and dictionary names are shared by their text within
//! a parse: IR repeats them (every layer's ops carry the same
//! attributes), and one copy of each keeps memory near upstream's, which
//! uniques every attribute.
//!
//! Why it exists: pest spends most of a generic op's parse time in rule
//! calls and per-literal comparisons (`ir_throughput`'s profile), and
//! these ops are most of every file.

use std::sync::Arc;

use smallvec::SmallVec;

use super::attrs::{dense_array_element, typed_number, unescape, unescape_bytes, Number};
use super::syntax::Rule;
use super::{chunks, GenericOp, Parser, PendingBody, Signature};
use crate::attributes::{AttrKind, Attribute, DenseArrayValues, Dictionary};
use crate::context::{BlockId, OpId, RegionId};
use crate::diagnostics::Diagnostic;
use crate::dialect::OperationName;
use crate::types::Type;

/// An operation read by the fast reader, not yet built.
pub(crate) struct FastOp<'t> {
    /// (name, count, offset) of each result group before `=`.
    results: SmallVec<[(&'t str, usize, usize); 2]>,
    name: FastName<'t>,
    operand_uses: Vec<(&'t str, usize, usize)>,
    /// `^name` and offset of each successor.
    successors: SmallVec<[(&'t str, usize); 2]>,
    properties: Option<Dictionary>,
    /// The `{` and matching `}` of each region.
    regions: SmallVec<[PendingBody; 1]>,
    attributes: Dictionary,
    signature: Signature,
    /// Offset of the function type (generic form) or of the first type.
    types_off: usize,
}

/// How the op names itself.
enum FastName<'t> {
    /// The generic form's string literal, quotes included, and its offset.
    Generic(&'t str, usize),
    /// A custom form's resolved name and the offset of its spelling.
    Custom(OperationName, usize),
}

/// A block label `^name(%a: T, ...):` read by the fast reader.
pub(crate) struct FastLabel<'t> {
    name: &'t str,
    off: usize,
    /// (name, offset, type) of each argument.
    args: Vec<(&'t str, usize, Type)>,
}

/// One item of a region body: a label or an operation.
// Pieces live on the stack for one item: boxing the op would cost an
// allocation per op for nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum FastPiece<'t> {
    Label(FastLabel<'t>),
    Op(FastOp<'t>),
}

impl<'c> Parser<'c> {
    /// Reads the operation item `start..end` with the fast reader: `None`
    /// if it is not in the reader's subset (nothing has changed then).
    pub(crate) fn read_fast_op(&self, start: usize, end: usize) -> Option<FastOp<'c>> {
        let mut r = Reader::new(self, start, end);
        let op = r.op()?;
        r.ws();
        (r.i == end).then_some(op)
    }

    /// Reads the region-body item `start..end` (labels and operations)
    /// with the fast reader: `None` if any of it is not in the subset.
    pub(crate) fn read_fast_pieces(
        &self,
        start: usize,
        end: usize,
    ) -> Option<SmallVec<[FastPiece<'c>; 2]>> {
        let mut r = Reader::new(self, start, end);
        let mut pieces = SmallVec::new();
        loop {
            r.ws();
            match r.peek() {
                None => return Some(pieces),
                Some(b'^') => pieces.push(FastPiece::Label(r.label()?)),
                Some(_) => pieces.push(FastPiece::Op(r.op()?)),
            }
        }
    }

    /// Builds an operation [`Parser::read_fast_op`] read, as the pest
    /// reader would build it (same checks, same errors).
    pub(crate) fn build_fast_op(&mut self, op: FastOp<'_>) -> Result<OpId, Diagnostic> {
        self.hand_read_ops += 1;
        let (name, name_off) = match op.name {
            FastName::Generic(literal, off) => (self.generic_op_name(literal, off)?, off),
            FastName::Custom(name, off) => (name, off),
        };
        let loc = self.loc_at(name_off);
        let successors = op
            .successors
            .iter()
            .map(|&(s, off)| self.block_ref(s, off))
            .collect();
        let id = self.finish_generic(
            GenericOp {
                name,
                operand_uses: op.operand_uses,
                successors,
                properties: op.properties,
                attributes: op.attributes,
                signature: op.signature,
                fn_off: op.types_off,
                loc,
            },
            super::RegionSource::Bodies(op.regions),
        )?;
        self.bind_results(id, &op.results)?;
        Ok(id)
    }

    /// Builds a region from its body's text, item by item (counted with
    /// the streamed bodies when it is large enough to be one).
    pub(crate) fn build_region_body(
        &mut self,
        body: PendingBody,
        isolated: bool,
    ) -> Result<RegionId, Diagnostic> {
        let region = self.ctx.create_region();
        if body.close - body.open > self.stream_body_bytes {
            self.streamed_bodies += 1;
        }
        self.push_scope(isolated);
        let (mut saw_label, mut current) = (false, None);
        let saved = self.base.borrow().clone();
        self.stream_body(body, region, false, &mut saw_label, &mut current)?;
        self.base.replace(saved);
        self.finish_scope()?;
        Ok(region)
    }

    /// Starts the block a label [`Parser::read_fast_pieces`] read defines.
    pub(crate) fn build_fast_label(
        &mut self,
        label: FastLabel<'_>,
        region: RegionId,
        first_after_entry_args: bool,
        current: Option<BlockId>,
    ) -> Result<BlockId, Diagnostic> {
        let b = self.start_block(
            label.name,
            label.off,
            region,
            first_after_entry_args,
            current,
        )?;
        for (name, off, ty) in label.args {
            self.add_block_argument(b, name, off, ty, None)?;
        }
        Ok(b)
    }

    /// The attribute spelled `text` (at source offset `off`) by pest, once
    /// per distinct text: for `dense<...> : T`, whose literal the fast
    /// reader leaves to the grammar.
    fn attribute_of_text(&self, text: &'c str, off: usize) -> Option<Attribute> {
        if let Some(a) = self.interned.borrow().attributes.get(text) {
            return Some(a.clone());
        }
        let a = self
            .with_base(off, |me| {
                use pest::Parser as _;
                let mut pairs = super::syntax::MlirGrammar::parse(Rule::single_attribute, text)
                    .map_err(|e| me.pest_error(e, "invalid attribute"))?;
                let top = pairs.next().expect("single attribute rule");
                me.convert_attribute(top.into_inner().next().expect("attribute"))
            })
            .ok()?;
        self.interned
            .borrow_mut()
            .attributes
            .insert(text, a.clone());
        Some(a)
    }
}

/// A cursor over the source; every method returns `None` for "not mine".
struct Reader<'p, 'c> {
    p: &'p Parser<'c>,
    src: &'c str,
    t: &'c [u8],
    i: usize,
    end: usize,
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

/// Characters of SSA and block names after the first (`[A-Za-z0-9$._-]`).
fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

impl<'p, 'c> Reader<'p, 'c> {
    fn new(p: &'p Parser<'c>, start: usize, end: usize) -> Self {
        Reader {
            p,
            src: p.text,
            t: p.text.as_bytes(),
            i: start,
            end,
        }
    }

    fn peek(&self) -> Option<u8> {
        (self.i < self.end).then(|| self.t[self.i])
    }

    fn at(&self, s: &[u8]) -> bool {
        self.t[self.i..self.end].starts_with(s)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.i += 1)
    }

    /// A comma-separated list after its opener, through `close`, each item
    /// read by `item` after whitespace. An empty list is read only where
    /// `empty` allows it (the grammar wants at least one successor, region
    /// or result name); anything else is left to pest.
    fn comma_list<T, C: Default + Extend<T>>(
        &mut self,
        close: u8,
        empty: bool,
        mut item: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<C> {
        let mut items = C::default();
        self.ws();
        if empty && self.eat(close).is_some() {
            return Some(items);
        }
        loop {
            items.extend(Some(item(self)?));
            self.ws();
            if self.eat(close).is_some() {
                return Some(items);
            }
            self.eat(b',')?;
            self.ws();
        }
    }

    /// Skips ASCII whitespace and `//` comments (pest's `ws`; other
    /// Unicode whitespace is left for pest).
    fn ws(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.i += 1,
                b'/' if self.at(b"//") => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.i += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// Skips blanks within a line: what separates the tokens of a custom
    /// form (the grammar's `hspace`).
    fn hspace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }

    fn digits(&mut self) -> usize {
        let s = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - s
    }

    /// `sigil` then a name (digits, or a letter-like first character then
    /// name characters): `%0`, `%arg0`, `^bb1`; returns it with the sigil.
    fn sigil_name(&mut self, sigil: u8) -> Option<&'c str> {
        let s = self.i;
        self.eat(sigil)?;
        match self.peek()? {
            b'0'..=b'9' => {
                self.digits();
            }
            b if b.is_ascii_alphabetic() || matches!(b, b'$' | b'.' | b'_' | b'-') => {
                while self.peek().is_some_and(is_name) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        Some(&self.src[s..self.i])
    }

    /// A decimal count after `:` or `#`.
    fn count(&mut self) -> Option<usize> {
        let s = self.i;
        (self.digits() > 0).then_some(())?;
        self.src[s..self.i].parse().ok()
    }

    /// `%name` or `%name#N`: (name, result number, offset).
    fn value_use(&mut self) -> Option<(&'c str, usize, usize)> {
        let off = self.i;
        let name = self.sigil_name(b'%')?;
        let index = if self.eat(b'#').is_some() {
            self.count()?
        } else {
            0
        };
        Some((name, index, off))
    }

    /// A string literal, quotes included.
    fn string(&mut self) -> Option<&'c str> {
        let s = self.i;
        self.eat(b'"')?;
        loop {
            let k = memchr::memchr3(b'"', b'\\', b'\n', &self.t[self.i..self.end])?;
            self.i += k;
            match self.t[self.i] {
                b'"' => {
                    self.i += 1;
                    return Some(&self.src[s..self.i]);
                }
                b'\\' if self.i + 1 < self.end => self.i += 2,
                _ => return None,
            }
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_$.]*`.
    fn bare_id(&mut self) -> Option<&'c str> {
        let s = self.i;
        let b = self.peek()?;
        (b.is_ascii_alphabetic() || b == b'_').then_some(())?;
        while self.peek().is_some_and(is_ident) {
            self.i += 1;
        }
        Some(&self.src[s..self.i])
    }

    /// The grammar's `number`: `-`? then hex, float or decimal digits.
    fn number(&mut self) -> Option<(bool, Number)> {
        let neg = self.eat(b'-').is_some();
        let s = self.i;
        if self.at(b"0x") {
            self.i += 2;
            let h = self.i;
            while self.peek().is_some_and(|b| b.is_ascii_hexdigit()) {
                self.i += 1;
            }
            (self.i > h).then_some(())?;
            return Some((
                neg,
                Number::Hex(u128::from_str_radix(&self.src[h..self.i], 16).ok()?),
            ));
        }
        (self.digits() > 0).then_some(())?;
        if self.eat(b'.').is_none() {
            let v: i128 = self.src[s..self.i].parse().ok()?;
            return Some((neg, Number::Int(if neg { -v } else { v })));
        }
        self.digits();
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let e = self.i;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                // pest would end the literal before the `e`, then fail.
                self.i = e;
                return None;
            }
        }
        let v: f64 = self.src[s..self.i].parse().ok()?;
        Some((neg, Number::Float(if neg { -v } else { v })))
    }

    /// The extent of a bracketed group starting at its opener: to just
    /// past the matching closer (`->` and `>=` are no closers; strings
    /// and non-ASCII bytes are left to pest).
    fn balanced(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            let b = self.peek()?;
            match b {
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b')' | b']' | b'}' | b'>' => {
                    if b == b'>' && self.t.get(self.i + 1) == Some(&b'=') {
                        return None;
                    }
                    depth = depth.checked_sub(1)?;
                }
                b'-' if self.t.get(self.i + 1) == Some(&b'>') => self.i += 1,
                b'"' => return None,
                b if b >= 0x80 => return None,
                _ => {}
            }
            self.i += 1;
            if depth == 0 {
                return Some(());
            }
        }
    }

    /// A region `{ ... }` at the cursor: its braces, the cursor moved past
    /// the closing one.
    fn region(&mut self) -> Option<PendingBody> {
        let open = self.i;
        self.eat(b'{')?;
        let close = chunks::matching_brace(self.t, open, self.end)?;
        self.i = close + 1;
        Some(PendingBody { open, close })
    }

    /// A type that is a word (`i64`, `f16`, `index`) or a word with a
    /// bracketed body (`tensor<4x?xf32>`), converted through the type
    /// cache.
    fn simple_type(&mut self) -> Option<Type> {
        let s = self.i;
        self.bare_id()?;
        if self.peek() == Some(b'<') {
            self.balanced()?;
        }
        self.p
            .type_of_text(&self.src[s..self.i], s, Rule::single_type)
            .ok()
    }

    /// `: type` after a number or string, if written.
    fn optional_type_suffix(&mut self) -> Option<Option<Type>> {
        let save = self.i;
        self.ws();
        if self.eat(b':').is_none() {
            self.i = save;
            return Some(None);
        }
        self.ws();
        self.simple_type().map(Some)
    }

    /// An attribute value, shared with every earlier one of the same text.
    fn attribute(&mut self) -> Option<Attribute> {
        let s = self.i;
        let a = self.attribute_value()?;
        let text = &self.src[s..self.i];
        let mut interned = self.p.interned.borrow_mut();
        Some(interned.attributes.entry(text).or_insert(a).clone())
    }

    fn attribute_value(&mut self) -> Option<Attribute> {
        match self.peek()? {
            b'"' => {
                let lit = self.string()?;
                let bytes = unescape_bytes(lit).ok()?;
                let ty = self.optional_type_suffix()?;
                Some(Attribute::string_from_bytes(bytes, ty))
            }
            b'-' | b'0'..=b'9' => {
                let (neg, n) = self.number()?;
                let ty = self.optional_type_suffix()?;
                typed_number(neg, n, ty).ok()
            }
            b'[' => {
                self.i += 1;
                let items = self.comma_list(b']', true, Self::attribute)?;
                Some(Attribute::array(items))
            }
            b'{' => Some(Attribute::dictionary(self.dictionary()?)),
            b'(' => Some(Attribute::type_attr(self.function_type()?.0)),
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let s = self.i;
                let word = self.bare_id()?;
                match word {
                    "true" | "false" => Some(Attribute::bool(word == "true")),
                    "unit" => Some(Attribute::unit()),
                    "array" => self.dense_array(),
                    "dense_resource" => self.dense_resource(),
                    "dense" => self.dense(s),
                    // Other keyword-led attributes are pest's.
                    "affine_map" | "affine_set" | "strided" | "loc" => None,
                    _ => {
                        self.i = s;
                        Some(Attribute::type_attr(self.simple_type()?))
                    }
                }
            }
            _ => None,
        }
    }

    /// `dense_resource<name> : T` after its keyword, `name` a bare id and
    /// `T` statically shaped (else pest reports the error). Read here, not
    /// by pest once per text: every weight has a name of its own.
    fn dense_resource(&mut self) -> Option<Attribute> {
        self.ws();
        self.eat(b'<')?;
        self.ws();
        let name = self.bare_id()?;
        self.ws();
        self.eat(b'>')?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        let ty = self.simple_type()?;
        if name == "__elided__" || !ty.has_static_shape() {
            return None;
        }
        let resource = self.p.ctx.resources().get_or_create(name);
        Some(Attribute::new(AttrKind::DenseResource { resource, ty }))
    }

    /// `dense<...> : T` from its keyword at `s`: the extent here, the
    /// value from pest (once per text).
    fn dense(&mut self, s: usize) -> Option<Attribute> {
        self.ws();
        if self.peek() != Some(b'<') {
            return None;
        }
        self.balanced()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        let ty = self.i;
        self.bare_id()?;
        if self.peek() == Some(b'<') {
            self.balanced()?;
        }
        // The type must be one the reader knows (no aliases).
        self.p
            .type_of_text(&self.src[ty..self.i], ty, Rule::single_type)
            .ok()?;
        self.p.attribute_of_text(&self.src[s..self.i], s)
    }

    /// `array<T: e, ...>` after its keyword.
    fn dense_array(&mut self) -> Option<Attribute> {
        self.ws();
        self.eat(b'<')?;
        self.ws();
        let element = self.simple_type()?;
        if !element.is_integer() && element.float_kind().is_none() {
            return None;
        }
        self.ws();
        let values: Vec<u64> = if self.eat(b':').is_some() {
            self.comma_list(b'>', true, |r| {
                let value = match r.peek()? {
                    b't' | b'f' => match r.bare_id()? {
                        "true" => Err(true),
                        "false" => Err(false),
                        _ => return None,
                    },
                    _ => Ok(r.number()?),
                };
                dense_array_element(&element, value).ok()
            })?
        } else {
            self.eat(b'>')?;
            Vec::new()
        };
        let values = if element.float_kind().is_some() {
            DenseArrayValues::Float(values)
        } else {
            DenseArrayValues::Int(values.into_iter().map(|x| x as i64).collect())
        };
        Some(Attribute::new(AttrKind::DenseArray { element, values }))
    }

    /// A dictionary name, shared with every earlier one of the same text.
    fn dictionary_key(&mut self) -> Option<Arc<str>> {
        let text = match self.peek()? {
            b'"' => self.string()?,
            _ => self.bare_id()?,
        };
        if let Some(k) = self.p.interned.borrow().names.get(text) {
            return Some(k.clone());
        }
        let key: Arc<str> = match text.as_bytes()[0] {
            b'"' => unescape(text).ok()?.into(),
            _ => text.into(),
        };
        if key.is_empty() {
            return None;
        }
        self.p.interned.borrow_mut().names.insert(text, key.clone());
        Some(key)
    }

    /// `{key = value, key, ...}`.
    fn dictionary(&mut self) -> Option<Dictionary> {
        self.eat(b'{')?;
        let mut d = Dictionary::new();
        let _: Vec<()> = self.comma_list(b'}', true, |r| {
            let key = r.dictionary_key()?;
            r.ws();
            let value = if r.eat(b'=').is_some() {
                r.ws();
                r.attribute()?
            } else {
                Attribute::unit()
            };
            // A key written twice is pest's to report.
            d.set_shared(&key, value).is_none().then_some(())
        })?;
        Some(d)
    }

    /// `(T, U) -> R` or `(T) -> (R, S)`.
    fn function_type(&mut self) -> Option<(Type, usize)> {
        let s = self.i;
        if self.peek() != Some(b'(') {
            return None;
        }
        self.balanced()?;
        self.ws();
        if !self.at(b"->") {
            return None;
        }
        self.i += 2;
        self.ws();
        match self.peek()? {
            b'(' => self.balanced()?,
            _ => {
                self.bare_id()?;
                if self.peek() == Some(b'<') {
                    self.balanced()?;
                }
            }
        }
        let ty = self
            .p
            .type_of_text(&self.src[s..self.i], s, Rule::single_function_type)
            .ok()?;
        Some((ty, s))
    }

    /// `^name(%a: T, ...):`.
    fn label(&mut self) -> Option<FastLabel<'c>> {
        let off = self.i;
        let name = self.sigil_name(b'^')?;
        let mut args = Vec::new();
        self.ws();
        if self.eat(b'(').is_some() {
            args = self.comma_list(b')', true, |r| {
                let aoff = r.i;
                let a = r.sigil_name(b'%')?;
                r.ws();
                r.eat(b':')?;
                r.ws();
                Some((a, aoff, r.simple_type()?))
            })?;
            self.ws();
        }
        self.eat(b':')?;
        Some(FastLabel { name, off, args })
    }

    fn op(&mut self) -> Option<FastOp<'c>> {
        let mut results = SmallVec::new();
        if self.peek() == Some(b'%') {
            results = self.comma_list(b'=', false, |r| {
                let off = r.i;
                let name = r.sigil_name(b'%')?;
                let count = if r.eat(b':').is_some() {
                    r.count().filter(|&c| c > 0)?
                } else {
                    1
                };
                Some((name, count, off))
            })?;
            self.ws();
        }
        if self.peek() != Some(b'"') {
            return self.custom_op(results);
        }
        let name_off = self.i;
        let name = self.string()?;
        self.ws();
        self.eat(b'(')?;
        let operand_uses: Vec<_> = self.comma_list(b')', true, Self::value_use)?;
        self.ws();
        let mut successors = SmallVec::new();
        if self.eat(b'[').is_some() {
            successors = self.comma_list(b']', false, |r| {
                let off = r.i;
                Some((r.sigil_name(b'^')?, off))
            })?;
            self.ws();
        }
        let mut properties = None;
        if self.eat(b'<').is_some() {
            self.ws();
            properties = Some(self.dictionary()?);
            self.ws();
            self.eat(b'>')?;
            self.ws();
        }
        let mut regions = SmallVec::new();
        if self.eat(b'(').is_some() {
            regions = self.comma_list(b')', false, Self::region)?;
            self.ws();
        }
        let attributes = if self.peek() == Some(b'{') {
            let d = self.dictionary()?;
            self.ws();
            d
        } else {
            Dictionary::new()
        };
        self.eat(b':')?;
        self.ws();
        let (fn_type, fn_off) = self.function_type()?;
        let inputs = fn_type.function_signature().expect("function type").0.len();
        (inputs == operand_uses.len()).then_some(())?;
        Some(FastOp {
            results,
            name: FastName::Generic(name, name_off),
            operand_uses,
            successors,
            properties,
            regions,
            attributes,
            signature: Signature::Function(fn_type),
            types_off: fn_off,
        })
    }

    /// The custom form of an op whose declarative format is
    /// `operands attr-dict : type(operands) -> type(results)`, on one
    /// line, its tokens separated by blanks (the grammar's
    /// `custom_operation`).
    fn custom_op(&mut self, results: SmallVec<[(&'c str, usize, usize); 2]>) -> Option<FastOp<'c>> {
        let name_off = self.i;
        let written = self.bare_id()?;
        let name = self.p.resolve_custom_name(written)?;
        let def = name.def()?;
        if let Some(attr) = def.value_form {
            let check = def.attributes.iter().find(|d| d.name == attr)?.check;
            return self.value_form_op(results, name, name_off, attr, check);
        }
        if !def
            .assembly_format
            .as_ref()
            .is_some_and(|f| f.is_operands_dict_types())
        {
            return None;
        }
        self.hspace();
        let mut operand_uses = Vec::new();
        if self.peek() == Some(b'%') {
            loop {
                operand_uses.push(self.value_use()?);
                self.hspace();
                if self.eat(b',').is_none() {
                    break;
                }
                self.hspace();
            }
        }
        let attributes = self.custom_attr_dict()?;
        self.eat(b':')?;
        if self.peek() == Some(b':') {
            return None;
        }
        self.hspace();
        let types_off = self.i;
        let inputs = if operand_uses.is_empty() {
            Vec::new()
        } else {
            self.custom_types()?
        };
        (inputs.len() == operand_uses.len()).then_some(())?;
        self.hspace();
        self.at(b"->").then_some(())?;
        self.i += 2;
        self.hspace();
        let outputs = self.custom_types()?;
        self.custom_line_end()?;
        Some(FastOp {
            results,
            name: FastName::Custom(name, name_off),
            operand_uses,
            successors: SmallVec::new(),
            properties: None,
            regions: SmallVec::new(),
            attributes,
            signature: Signature::Lists(inputs, outputs),
            types_off,
        })
    }

    /// The optional `{attr-dict}` of a custom form, and the blanks after it.
    fn custom_attr_dict(&mut self) -> Option<Dictionary> {
        if self.peek() != Some(b'{') {
            return Some(Dictionary::new());
        }
        // A `{` ending its line would open a region.
        let mut j = self.i + 1;
        while j < self.end && matches!(self.t[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        if j >= self.end || self.t[j] == b'\n' || self.t[j..self.end].starts_with(b"//") {
            return None;
        }
        let d = self.dictionary()?;
        self.hspace();
        Some(d)
    }

    /// A custom form runs to the end of its line: anything but blanks or
    /// a comment after it is pest's to reject. The cursor stays put.
    fn custom_line_end(&mut self) -> Option<()> {
        let save = self.i;
        self.hspace();
        let end = self.i >= self.end || self.t[self.i] == b'\n' || self.at(b"//");
        self.i = save;
        end.then_some(())
    }

    /// The custom form `attr-dict $value` of an op that declares it (see
    /// [`OpDefinition::attr_dict_value_form`](crate::dialect::OpDefinition::attr_dict_value_form)),
    /// on one line: `{attrs}` as discardable attributes, the value, passing
    /// its declaration's `check`, as the property `attr`, and its type as
    /// the result's, as the op's parse hook builds it.
    fn value_form_op(
        &mut self,
        results: SmallVec<[(&'c str, usize, usize); 2]>,
        name: OperationName,
        name_off: usize,
        attr: &'static str,
        check: fn(&Attribute) -> bool,
    ) -> Option<FastOp<'c>> {
        self.hspace();
        let attributes = self.custom_attr_dict()?;
        // The hook would keep a written `value` among the attributes too.
        if attributes.get(attr).is_some() {
            return None;
        }
        let value_off = self.i;
        let value = self.attribute()?;
        // `dense<...> : T` may break lines where the custom form's tokens
        // may not; leave any such value to pest.
        if self.t[value_off..self.i].contains(&b'\n') || !check(&value) {
            return None;
        }
        let ty = value.ty()?.clone();
        self.custom_line_end()?;
        let mut properties = Dictionary::new();
        properties.set(attr, value);
        Some(FastOp {
            results,
            name: FastName::Custom(name, name_off),
            operand_uses: Vec::new(),
            successors: SmallVec::new(),
            properties: Some(properties),
            regions: SmallVec::new(),
            attributes,
            signature: Signature::Lists(Vec::new(), vec![ty]),
            types_off: value_off,
        })
    }

    /// `T, U, ...` in a custom form: simple types only.
    fn custom_types(&mut self) -> Option<Vec<Type>> {
        let mut types = vec![self.simple_type()?];
        loop {
            let save = self.i;
            self.hspace();
            if self.eat(b',').is_none() {
                self.i = save;
                return Some(types);
            }
            self.hspace();
            types.push(self.simple_type()?);
        }
    }
}
