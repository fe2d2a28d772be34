//! A hand-written reader for the generic operations most IR is made of:
//! `%r = "dialect.op"(%a, %b#1) <{props}> {attrs} : (T, U) -> R` on its
//! own, with attribute values that are strings, numbers, booleans, `unit`,
//! types, `array<T: ...>`, and arrays and dictionaries of those.
//!
//! pest stays the grammar of record. This reader only takes the fast lane:
//! anything outside that subset (regions, successors, locations, `dense`,
//! symbol references, aliases, non-ASCII text, any syntax or conversion
//! error, ...) makes it answer "not mine" before it changes any state, and
//! the item goes to pest, which also reports every error. So what it
//! accepts must be a subset of what pest accepts, built into the same IR:
//! the `parse` fuzz target and `ir/tests/parser_fuzz.rs` compare the two
//! readers on every input ([`ParseOptions::hand_reader`](super::ParseOptions)).
//!
//! Why it exists: pest spends most of a generic op's parse time in rule
//! calls and per-literal comparisons (`ir_throughput`'s profile), and
//! these ops are most of every file.

use smallvec::SmallVec;

use super::attrs::{dense_array_element, typed_number, unescape, unescape_bytes, Number};
use super::syntax::Rule;
use super::{GenericOp, Parser};
use crate::attributes::{AttrKind, Attribute, DenseArrayValues, Dictionary};
use crate::context::OpId;
use crate::diagnostics::Diagnostic;
use crate::types::Type;

/// A generic operation read by the fast reader, not yet built.
pub(crate) struct FastOp<'t> {
    /// (name, count, offset) of each result group before `=`.
    results: SmallVec<[(&'t str, usize, usize); 2]>,
    /// The op name's string literal, quotes included, and its offset.
    name: (&'t str, usize),
    operand_uses: Vec<(&'t str, usize, usize)>,
    properties: Option<Dictionary>,
    attributes: Dictionary,
    fn_type: Type,
    fn_off: usize,
}

impl<'c> Parser<'c> {
    /// Reads the operation item `start..end` with the fast reader: `None`
    /// if it is not in the reader's subset (nothing has changed then).
    pub(crate) fn read_fast_op(&self, start: usize, end: usize) -> Option<FastOp<'c>> {
        let mut r = Reader {
            p: self,
            src: self.text,
            t: self.text.as_bytes(),
            i: start,
            end,
        };
        let op = r.op()?;
        r.ws();
        (r.i == end).then_some(op)
    }

    /// Builds an operation [`Parser::read_fast_op`] read, as the pest
    /// reader would build it (same checks, same errors).
    pub(crate) fn build_fast_op(&mut self, op: FastOp<'_>) -> Result<OpId, Diagnostic> {
        self.hand_read_ops += 1;
        let name = self.generic_op_name(op.name.0, op.name.1)?;
        let loc = self.loc_at(op.name.1);
        let id = self.finish_generic(
            GenericOp {
                name,
                operand_uses: op.operand_uses,
                successors: Vec::new(),
                properties: op.properties,
                attributes: op.attributes,
                fn_type: op.fn_type,
                fn_off: op.fn_off,
                loc,
            },
            Vec::new(),
        )?;
        self.bind_results(id, &op.results)?;
        Ok(id)
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

/// Characters of SSA names after the first (`[A-Za-z0-9$._-]`).
fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

impl<'p, 'c> Reader<'p, 'c> {
    fn peek(&self) -> Option<u8> {
        (self.i < self.end).then(|| self.t[self.i])
    }

    fn at(&self, s: &[u8]) -> bool {
        self.t[self.i..self.end].starts_with(s)
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.i += 1)
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

    fn digits(&mut self) -> usize {
        let s = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - s
    }

    /// `%name` (digits, or a letter-like first character then name
    /// characters); returns it with the `%`.
    fn percent_name(&mut self) -> Option<&'c str> {
        let s = self.i;
        self.eat(b'%')?;
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

    fn attribute(&mut self) -> Option<Attribute> {
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
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']').is_none() {
                    loop {
                        items.push(self.attribute()?);
                        self.ws();
                        if self.eat(b']').is_some() {
                            break;
                        }
                        self.eat(b',')?;
                        self.ws();
                    }
                }
                Some(Attribute::array(items))
            }
            b'{' => Some(Attribute::dictionary(self.dictionary()?)),
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let s = self.i;
                let word = self.bare_id()?;
                match word {
                    "true" | "false" => Some(Attribute::bool(word == "true")),
                    "unit" => Some(Attribute::unit()),
                    "array" => self.dense_array(),
                    // Other keyword-led attributes are pest's.
                    "dense" | "dense_resource" | "affine_map" | "affine_set" | "strided"
                    | "loc" => None,
                    _ => {
                        self.i = s;
                        Some(Attribute::type_attr(self.simple_type()?))
                    }
                }
            }
            _ => None,
        }
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
        let mut values = Vec::new();
        self.ws();
        if self.eat(b':').is_some() {
            self.ws();
            if self.peek() != Some(b'>') {
                loop {
                    let value = match self.peek()? {
                        b't' | b'f' => match self.bare_id()? {
                            "true" => Err(true),
                            "false" => Err(false),
                            _ => return None,
                        },
                        _ => Ok(self.number()?),
                    };
                    values.push(dense_array_element(&element, value).ok()?);
                    self.ws();
                    if self.peek() == Some(b'>') {
                        break;
                    }
                    self.eat(b',')?;
                    self.ws();
                }
            }
        }
        self.eat(b'>')?;
        let values = if element.float_kind().is_some() {
            DenseArrayValues::Float(values)
        } else {
            DenseArrayValues::Int(values.into_iter().map(|x| x as i64).collect())
        };
        Some(Attribute::new(AttrKind::DenseArray { element, values }))
    }

    /// `{key = value, key, ...}`.
    fn dictionary(&mut self) -> Option<Dictionary> {
        self.eat(b'{')?;
        let mut d = Dictionary::new();
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(d);
        }
        loop {
            let key = match self.peek()? {
                b'"' => unescape(self.string()?).ok()?,
                _ => self.bare_id()?.to_string(),
            };
            if key.is_empty() {
                return None;
            }
            self.ws();
            let value = if self.eat(b'=').is_some() {
                self.ws();
                self.attribute()?
            } else {
                Attribute::unit()
            };
            if d.set(&key, value).is_some() {
                return None;
            }
            self.ws();
            if self.eat(b'}').is_some() {
                return Some(d);
            }
            self.eat(b',')?;
            self.ws();
        }
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

    fn op(&mut self) -> Option<FastOp<'c>> {
        let mut results = SmallVec::new();
        if self.peek() == Some(b'%') {
            loop {
                let off = self.i;
                let name = self.percent_name()?;
                let count = if self.eat(b':').is_some() {
                    self.count().filter(|&c| c > 0)?
                } else {
                    1
                };
                results.push((name, count, off));
                self.ws();
                if self.eat(b'=').is_some() {
                    break;
                }
                self.eat(b',')?;
                self.ws();
            }
            self.ws();
        }
        let name_off = self.i;
        let name = self.string()?;
        self.ws();
        self.eat(b'(')?;
        self.ws();
        let mut operand_uses = Vec::new();
        if self.eat(b')').is_none() {
            loop {
                let off = self.i;
                let name = self.percent_name()?;
                let index = if self.eat(b'#').is_some() {
                    self.count()?
                } else {
                    0
                };
                operand_uses.push((name, index, off));
                self.ws();
                if self.eat(b')').is_some() {
                    break;
                }
                self.eat(b',')?;
                self.ws();
            }
        }
        self.ws();
        let mut properties = None;
        if self.eat(b'<').is_some() {
            self.ws();
            properties = Some(self.dictionary()?);
            self.ws();
            self.eat(b'>')?;
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
        Some(FastOp {
            results,
            name: (name, name_off),
            operand_uses,
            properties,
            attributes,
            fn_type,
            fn_off,
        })
    }
}
