//! Conversion of parsed types, attributes and locations into IR values.

use std::sync::Arc;

use pest::iterators::Pair;
use rustc_hash::FxHashMap;

use pest::Parser as _;

use super::syntax::Rule;
use super::Parser;
use crate::affine::{AffineExpr, AffineMap, IntegerSet};
use crate::attributes::{AttrKind, Attribute, DenseArrayValues, DenseElements, Dictionary};
use crate::diagnostics::Diagnostic;
use crate::float_format;
use crate::location::{LocKind, Location};
use crate::types::{FloatKind, Signedness, Type, TypeKind, DYNAMIC};

/// Decodes the body of a string literal (with quotes) with MLIR escapes,
/// for names that must be text.
pub(crate) fn unescape(lit: &str) -> Result<String, String> {
    String::from_utf8(unescape_bytes(lit)?).map_err(|_| "string is not valid UTF-8".to_string())
}

/// Decodes the body of a string literal (with quotes) with MLIR escapes
/// into bytes (string attributes may hold any bytes, as upstream's).
pub(crate) fn unescape_bytes(lit: &str) -> Result<Vec<u8>, String> {
    let body = &lit[1..lit.len() - 1];
    if !body.contains('\\') {
        return Ok(body.as_bytes().to_vec());
    }
    let mut out = Vec::with_capacity(body.len());
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = *b.get(i + 1).ok_or("unterminated escape in string")?;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            _ if c.is_ascii_hexdigit() => {
                let d = *b.get(i + 2).ok_or("expected two hex digits after '\\'")?;
                let hex = std::str::from_utf8(&[c, d])
                    .map_err(|_| "invalid escape")?
                    .to_string();
                out.push(
                    u8::from_str_radix(&hex, 16)
                        .map_err(|_| format!("invalid escape '\\{hex}'"))?,
                );
                i += 1;
            }
            _ => return Err(format!("unknown escape '\\{}' in string", c as char)),
        }
        i += 2;
    }
    Ok(out)
}

/// Decodes `0x...` hex text into bytes.
pub(crate) fn decode_hex_blob(s: &str) -> Result<Vec<u8>, String> {
    decode_hex_digits(hex_digits(s)?.as_bytes())
}

/// The digits of `0x...` hex text (an even number of them).
pub(crate) fn hex_digits(s: &str) -> Result<&str, String> {
    let hex = s
        .strip_prefix("0x")
        .ok_or("expected a hex string starting with '0x'")?;
    if hex.len() % 2 != 0 {
        return Err("hex string has an odd number of digits".into());
    }
    Ok(hex)
}

/// Decodes hex digits (two per byte) into bytes.
pub(crate) fn decode_hex_digits(hex: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = vec![0; hex.len() / 2];
    decode_hex_into(hex, &mut out)?;
    Ok(out)
}

/// Decodes hex digits (two per byte) straight into an `Arc<[u8]>`: a
/// blob runs to gigabytes, and building a `Vec` first would hold it twice.
pub(crate) fn decode_hex_shared(hex: &[u8]) -> Result<Arc<[u8]>, String> {
    // Zeroes first (a memset), then the decoding loop on a plain slice:
    // collecting the decoded bytes straight into the `Arc` wrote them one
    // at a time behind a panic guard (4 % of reading a weight-heavy file).
    let mut out: Arc<[u8]> = std::iter::repeat_n(0, hex.len() / 2).collect();
    decode_hex_into(
        hex,
        Arc::get_mut(&mut out).expect("a fresh Arc has no other owner"),
    )?;
    Ok(out)
}

/// Decodes `hex` (`2 * out.len()` digits, either case) into `out`.
fn decode_hex_into(hex: &[u8], out: &mut [u8]) -> Result<(), String> {
    // Branch-free per digit, so that the loops vectorise: resource
    // sections hold gigabytes of hex. For a valid digit `c`, its value is
    // `(c & 0xF) + 9 * (c >> 6)` ('0'..'9' are 0x3_, 'a'..'f'/'A'..'F'
    // are 0x6_/0x4_ plus 1..6).
    fn nibble(c: u8) -> (u8, bool) {
        let valid = c.is_ascii_digit() | matches!(c | 0x20, b'a'..=b'f');
        ((c & 0xF) + 9 * (c >> 6), valid)
    }
    // Digits, then pairs, a block at a time: on contiguous digits the
    // first loop vectorises with whole-register loads, where decoding pair
    // by pair gathered the digits byte by byte.
    const BLOCK: usize = 64;
    debug_assert_eq!(hex.len(), 2 * out.len());
    let mut all_valid = true;
    let (blocks, tail) = hex.as_chunks::<BLOCK>();
    let (out_blocks, out_tail) = out.as_chunks_mut::<{ BLOCK / 2 }>();
    for (digits, o) in blocks.iter().zip(out_blocks) {
        let mut values = [0u8; BLOCK];
        let mut ok = true;
        for (v, &c) in values.iter_mut().zip(digits) {
            let (n, valid) = nibble(c);
            *v = n;
            ok &= valid;
        }
        all_valid &= ok;
        for (byte, pair) in o.iter_mut().zip(values.as_chunks::<2>().0) {
            *byte = pair[0] << 4 | pair[1];
        }
    }
    for (byte, pair) in out_tail.iter_mut().zip(tail.as_chunks::<2>().0) {
        let (hi, hi_ok) = nibble(pair[0]);
        let (lo, lo_ok) = nibble(pair[1]);
        all_valid &= hi_ok & lo_ok;
        *byte = hi << 4 | lo;
    }
    if all_valid {
        Ok(())
    } else {
        Err("invalid hex digit".into())
    }
}

/// `!x`/`#x` text: an alias use, or an opaque dialect type/attribute.
enum DialectSymbol {
    Alias(String),
    Opaque {
        dialect: Arc<str>,
        mnemonic: Option<Arc<str>>,
        body: Arc<str>,
    },
}

/// A type or attribute of a dialect the context does not know, kept as
/// its text (`!dialect.mnemonic<body>`, `#dialect.mnemonic<body>`).
trait OpaqueSymbol {
    fn opaque(dialect: Arc<str>, mnemonic: Option<Arc<str>>, body: Arc<str>) -> Self;
}

impl OpaqueSymbol for Type {
    fn opaque(dialect: Arc<str>, mnemonic: Option<Arc<str>>, body: Arc<str>) -> Self {
        Type::new(TypeKind::Dialect {
            dialect,
            mnemonic,
            body,
        })
    }
}

impl OpaqueSymbol for Attribute {
    fn opaque(dialect: Arc<str>, mnemonic: Option<Arc<str>>, body: Arc<str>) -> Self {
        Attribute::new(AttrKind::Dialect {
            dialect,
            mnemonic,
            body,
        })
    }
}

/// The body of a `loc(...)` pair (an attribute or an op's trailing
/// location): what its parentheses hold.
pub(super) fn loc_body(pair: Pair<'_, Rule>) -> Pair<'_, Rule> {
    pair.into_inner()
        .next()
        .expect("location")
        .into_inner()
        .next()
        .expect("loc body")
}

/// A parsed numeric literal.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Number {
    Int(i128),
    Float(f64),
    /// `0x...`: an integer, or a float's bit pattern.
    Hex(u128),
}

impl<'c> Parser<'c> {
    pub(crate) fn keyword_or_string(&self, p: &Pair<'_, Rule>) -> Result<String, Diagnostic> {
        match p.as_rule() {
            Rule::string_lit => unescape(p.as_str()).map_err(|m| self.err(p, m)),
            _ => Ok(p.as_str().to_string()),
        }
    }

    pub(crate) fn symbol_name_text(&self, p: &Pair<'_, Rule>) -> Result<String, Diagnostic> {
        let s = &p.as_str()[1..];
        if s.starts_with('"') {
            unescape(s).map_err(|m| self.err(p, m))
        } else {
            Ok(s.to_string())
        }
    }

    pub(crate) fn parse_number(&self, p: &Pair<'_, Rule>) -> Result<(bool, Number), Diagnostic> {
        let mut neg = false;
        let mut num = None;
        for q in p.clone().into_inner() {
            match q.as_rule() {
                Rule::neg => neg = true,
                Rule::dec_int => {
                    let v: i128 = q
                        .as_str()
                        .parse()
                        .map_err(|_| self.err(&q, "integer literal is too large"))?;
                    num = Some(Number::Int(if neg { -v } else { v }));
                }
                Rule::float_lit => {
                    let v: f64 = q
                        .as_str()
                        .parse()
                        .map_err(|_| self.err(&q, "invalid float literal"))?;
                    num = Some(Number::Float(if neg { -v } else { v }));
                }
                Rule::hex_int => {
                    let v = u128::from_str_radix(&q.as_str()[2..], 16)
                        .map_err(|_| self.err(&q, "hex literal is too large"))?;
                    num = Some(Number::Hex(v));
                }
                _ => unreachable!("unexpected rule in number"),
            }
        }
        Ok((neg, num.expect("number has digits")))
    }

    pub(crate) fn convert_number_int(&self, p: &Pair<'_, Rule>) -> Result<i128, Diagnostic> {
        match self.parse_number(p)? {
            (_, Number::Int(v)) => Ok(v),
            (neg, Number::Hex(v)) => {
                let v =
                    i128::try_from(v).map_err(|_| self.err(p, "integer literal is too large"))?;
                Ok(if neg { -v } else { v })
            }
            (_, Number::Float(_)) => Err(self.err(p, "expected an integer, found a float")),
        }
    }

    /// Builds a typed number attribute.
    pub(crate) fn number_attr(
        &self,
        p: &Pair<'_, Rule>,
        ty: Option<Type>,
    ) -> Result<Attribute, Diagnostic> {
        let (neg, n) = self.parse_number(p)?;
        typed_number(neg, n, ty).map_err(|m| self.err(p, m))
    }

    // ------------------------------------------------------------ types

    pub(crate) fn convert_type(&self, p: Pair<'_, Rule>) -> Result<Type, Diagnostic> {
        // The same few types are spelled over and over: convert each text once.
        if matches!(
            p.as_rule(),
            Rule::any_type
                | Rule::function_type
                | Rule::shaped_type_text
                | Rule::function_type_text
        ) {
            if let Some(t) = self.type_cache.borrow().get(p.as_str()) {
                return Ok(t.clone());
            }
            let key = p.as_str().to_string();
            let t = self.convert_type_uncached(p)?;
            self.type_cache.borrow_mut().insert(key, t.clone());
            return Ok(t);
        }
        self.convert_type_uncached(p)
    }

    fn convert_type_uncached(&self, p: Pair<'_, Rule>) -> Result<Type, Diagnostic> {
        match p.as_rule() {
            Rule::any_type | Rule::non_function_type | Rule::function_result => {
                let inner = p.into_inner().next().expect("type body");
                self.convert_type(inner)
            }
            Rule::function_type => self.convert_function_type_uncached(p),
            Rule::shaped_type_text => self.convert_type_text(p, Rule::single_shaped_type),
            Rule::function_type_text => self.convert_type_text(p, Rule::single_function_type),
            Rule::paren_types => {
                let types = self.convert_paren_types(p)?;
                Ok(Type::new(TypeKind::Tuple(types)))
            }
            Rule::integer_type => {
                let s = p.as_str();
                let (signedness, digits) = if let Some(d) = s.strip_prefix("si") {
                    (Signedness::Signed, d)
                } else if let Some(d) = s.strip_prefix("ui") {
                    (Signedness::Unsigned, d)
                } else {
                    (Signedness::Signless, &s[1..])
                };
                let width: u32 = digits
                    .parse()
                    .map_err(|_| self.err(&p, "invalid integer width"))?;
                // Upstream allows up to 2^24 - 1 bits; our integer attributes
                // and dense storage hold at most 128.
                if width > 128 {
                    return Err(self.err(
                        &p,
                        format!("integer bitwidth {width} is not supported (0 to 128)"),
                    ));
                }
                Ok(Type::new(TypeKind::Integer { width, signedness }))
            }
            Rule::float_type => Ok(Type::float(
                FloatKind::from_keyword(p.as_str()).expect("grammar float keyword"),
            )),
            Rule::index_type => Ok(Type::index()),
            Rule::none_type => Ok(Type::none()),
            Rule::tensor_type | Rule::memref_type => self.convert_shaped(p),
            Rule::vector_type => {
                let mut it = p.clone().into_inner();
                let dims = it.next().expect("dims");
                let mut shape = Vec::new();
                let mut scalable = Vec::new();
                for d in dims.into_inner() {
                    match d.as_rule() {
                        Rule::scalable_dim => {
                            shape.push(
                                d.as_str()[1..d.as_str().len() - 1]
                                    .parse()
                                    .map_err(|_| self.err(&d, "invalid dimension"))?,
                            );
                            scalable.push(true);
                        }
                        _ => {
                            if d.as_str() == "?" {
                                return Err(self.err(&d, "vector types must have static shape"));
                            }
                            shape.push(
                                d.as_str()
                                    .parse()
                                    .map_err(|_| self.err(&d, "invalid dimension"))?,
                            );
                            scalable.push(false);
                        }
                    }
                }
                let element = self.convert_type(it.next().expect("element"))?;
                if !element.is_int_or_index_or_float() {
                    return Err(self.err(
                        &p,
                        format!("vector elements must be int/index/float type but got {element}"),
                    ));
                }
                if !scalable.iter().any(|s| *s) {
                    scalable.clear();
                }
                Ok(Type::new(TypeKind::Vector {
                    shape,
                    scalable,
                    element,
                }))
            }
            Rule::complex_type => {
                let e = self.convert_type(p.into_inner().next().expect("element"))?;
                Ok(Type::new(TypeKind::Complex(e)))
            }
            Rule::tuple_type => {
                let mut types = Vec::new();
                if let Some(list) = p.into_inner().next() {
                    for t in list.into_inner() {
                        types.push(self.convert_type(t)?);
                    }
                }
                Ok(Type::new(TypeKind::Tuple(types)))
            }
            Rule::dialect_type => self.dialect_symbol_value(&p, true, &self.type_aliases),
            r => unreachable!("not a type rule: {r:?}"),
        }
    }

    /// Reads `!ident<body>` / `#ident<body>`: an alias reference (no body, no
    /// dot) or an opaque dialect symbol, checked against its dialect.
    /// The value of a dialect type or attribute: an alias's definition
    /// from `aliases`, or the opaque symbol.
    fn dialect_symbol_value<T: Clone + OpaqueSymbol>(
        &self,
        p: &Pair<'_, Rule>,
        is_type: bool,
        aliases: &FxHashMap<String, T>,
    ) -> Result<T, Diagnostic> {
        match self.dialect_symbol(p, is_type)? {
            DialectSymbol::Alias(name) => aliases
                .get(&name)
                .cloned()
                .ok_or_else(|| self.err(p, format!("undefined symbol alias id '{name}'"))),
            DialectSymbol::Opaque {
                dialect,
                mnemonic,
                body,
            } => Ok(T::opaque(dialect, mnemonic, body)),
        }
    }

    fn dialect_symbol(
        &self,
        p: &Pair<'_, Rule>,
        is_type: bool,
    ) -> Result<DialectSymbol, Diagnostic> {
        let mut it = p.clone().into_inner();
        let ident = it.next().expect("ident").as_str();
        let body = it
            .next()
            .map(|b| b.as_str()[1..b.as_str().len() - 1].to_string());
        let aliases_have = if is_type {
            self.type_aliases.contains_key(ident)
        } else {
            self.attr_aliases.contains_key(ident)
        };
        if body.is_none() && (aliases_have || !ident.contains('.')) {
            return Ok(DialectSymbol::Alias(ident.to_string()));
        }
        let (dialect, mnemonic) = match ident.split_once('.') {
            Some((d, m)) => (d, Some(m)),
            None => (ident, None),
        };
        let body =
            self.check_dialect_symbol(p, dialect, mnemonic, body.unwrap_or_default(), is_type)?;
        Ok(DialectSymbol::Opaque {
            dialect: dialect.into(),
            mnemonic: mnemonic.map(Into::into),
            body: body.into(),
        })
    }

    /// Checks a dialect type/attribute against its registered definition
    /// and returns its parameters in canonical spelling (as written for
    /// unregistered dialects).
    fn check_dialect_symbol(
        &self,
        p: &Pair<'_, Rule>,
        dialect: &str,
        mnemonic: Option<&str>,
        body: String,
        is_type: bool,
    ) -> Result<String, Diagnostic> {
        let what = if is_type { "type" } else { "attribute" };
        match self.ctx.registry().dialect(dialect) {
            Some(info) => {
                let table = if is_type { &info.types } else { &info.attributes };
                let m = mnemonic.unwrap_or("");
                match table.iter().find(|d| d.mnemonic == m) {
                    Some(def) => (def.normalize)(&body).map_err(|msg| self.err(p, format!("invalid {what} '{dialect}.{m}': {msg}"))),
                    None => Err(self.err(p, format!("dialect '{dialect}' provides no {what} '{m}'"))),
                }
            }
            None if self.ctx.allow_unregistered => Ok(body),
            None => Err(self.err(p, format!("{what} of unregistered dialect '{dialect}' (use --allow-unregistered-dialect to accept it)"))),
        }
    }

    fn convert_paren_types(&self, p: Pair<'_, Rule>) -> Result<Vec<Type>, Diagnostic> {
        let mut out = Vec::new();
        if let Some(list) = p.into_inner().next() {
            for t in list.into_inner() {
                out.push(self.convert_type(t)?);
            }
        }
        Ok(out)
    }

    pub(crate) fn convert_function_type(&self, p: Pair<'_, Rule>) -> Result<Type, Diagnostic> {
        self.convert_type(p)
    }

    fn convert_function_type_uncached(&self, p: Pair<'_, Rule>) -> Result<Type, Diagnostic> {
        let mut it = p.into_inner();
        let inputs = self.convert_paren_types(it.next().expect("inputs"))?;
        let res = it
            .next()
            .expect("results")
            .into_inner()
            .next()
            .expect("result body");
        let results = match res.as_rule() {
            Rule::paren_types => self.convert_paren_types(res)?,
            _ => vec![self.convert_type(res)?],
        };
        Ok(Type::function(inputs, results))
    }

    /// The type spelled `text` (at source offset `off`), through the type
    /// cache; `rule` (a `single_*` rule) reads it on a miss.
    pub(crate) fn type_of_text(
        &self,
        text: &str,
        off: usize,
        rule: Rule,
    ) -> Result<Type, Diagnostic> {
        if let Some(t) = self.type_cache.borrow().get(text) {
            return Ok(t.clone());
        }
        let t = self.with_base(off, |me| {
            match super::syntax::MlirGrammar::parse(rule, text) {
                Ok(mut pairs) => {
                    let top = pairs.next().expect("single type rule");
                    me.convert_type(top.into_inner().next().expect("type"))
                }
                Err(e) => Err(me.pest_error(e, "invalid type")),
            }
        })?;
        self.type_cache
            .borrow_mut()
            .insert(text.to_string(), t.clone());
        Ok(t)
    }

    /// Parses the text of a type that was matched by extent only, with
    /// `rule` (a `single_*` rule wrapping the structured one).
    fn convert_type_text(&self, p: Pair<'_, Rule>, rule: Rule) -> Result<Type, Diagnostic> {
        let offset = p.as_span().start();
        let text = p.as_str();
        self.with_base(
            self.abs(offset),
            |me| match super::syntax::MlirGrammar::parse(rule, text) {
                Ok(mut pairs) => {
                    let top = pairs.next().expect("single type rule");
                    let ty = top.into_inner().next().expect("shaped type");
                    me.convert_type(ty)
                }
                Err(e) => Err(me.pest_error(e, "invalid type")),
            },
        )
    }

    fn convert_shaped(&self, p: Pair<'_, Rule>) -> Result<Type, Diagnostic> {
        let is_tensor = p.as_rule() == Rule::tensor_type;
        let mut it = p.clone().into_inner();
        let first = it.next().expect("dims");
        let ranked = first.as_rule() == Rule::dims;
        let mut shape = Vec::new();
        if ranked {
            for d in first.into_inner() {
                if d.as_str() == "?" {
                    shape.push(DYNAMIC);
                } else {
                    let v: i64 = d
                        .as_str()
                        .parse()
                        .map_err(|_| self.err(&d, "dimension is too large"))?;
                    shape.push(v);
                }
            }
        }
        let element = self.convert_type(it.next().expect("element"))?;
        if matches!(element.kind(), TypeKind::Function { .. } | TypeKind::None)
            || (!is_tensor && element.is_tensor())
        {
            return Err(self.err(&p, format!("invalid element type {element}")));
        }
        let extra: Vec<Attribute> = it
            .map(|a| self.convert_attribute(a))
            .collect::<Result<_, _>>()?;
        if is_tensor {
            if !ranked {
                if !extra.is_empty() {
                    return Err(self.err(&p, "unranked tensors cannot have an encoding"));
                }
                return Ok(Type::new(TypeKind::UnrankedTensor { element }));
            }
            return Ok(Type::new(TypeKind::RankedTensor {
                shape,
                element,
                encoding: extra.into_iter().next(),
            }));
        }
        if !ranked {
            if extra.len() > 1 {
                return Err(self.err(&p, "unranked memrefs take at most a memory space"));
            }
            return Ok(Type::new(TypeKind::UnrankedMemRef {
                element,
                memory_space: extra.into_iter().next(),
            }));
        }
        let mut layout = None;
        let mut memory_space = None;
        for a in extra {
            if let AttrKind::Strided { strides, .. } = a.kind() {
                if strides.len() != shape.len() {
                    return Err(self.err(&p, "expected the number of strides to match the rank"));
                }
            }
            let is_layout = matches!(a.kind(), AttrKind::AffineMap(_) | AttrKind::Strided { .. });
            if is_layout && layout.is_none() && memory_space.is_none() {
                layout = Some(a);
            } else if memory_space.is_none() {
                memory_space = Some(a);
            } else {
                return Err(self.err(&p, "too many memref parameters"));
            }
        }
        Ok(Type::new(TypeKind::MemRef {
            shape,
            element,
            layout,
            memory_space,
        }))
    }

    // ------------------------------------------------------------ attributes

    pub(crate) fn convert_attribute(&self, p: Pair<'_, Rule>) -> Result<Attribute, Diagnostic> {
        match p.as_rule() {
            Rule::attribute | Rule::custom_attr => {
                let inner = p.into_inner().next().expect("attribute body");
                self.convert_attribute_inner(inner)
            }
            _ => self.convert_attribute_inner(p),
        }
    }

    pub(crate) fn convert_attribute_inner(
        &self,
        p: Pair<'_, Rule>,
    ) -> Result<Attribute, Diagnostic> {
        match p.as_rule() {
            Rule::bool_attr => Ok(Attribute::bool(p.as_str() == "true")),
            Rule::unit_attr => Ok(Attribute::unit()),
            Rule::number_attr => {
                let mut it = p.into_inner();
                let n = it.next().expect("number");
                let ty = it.next().map(|t| self.convert_type(t)).transpose()?;
                self.number_attr(&n, ty)
            }
            Rule::number => self.number_attr(&p, None),
            Rule::string_attr => {
                let mut it = p.into_inner();
                let s = it.next().expect("string");
                let value = unescape_bytes(s.as_str()).map_err(|m| self.err(&s, m))?;
                let ty = it.next().map(|t| self.convert_type(t)).transpose()?;
                Ok(Attribute::string_from_bytes(value, ty))
            }
            Rule::string_lit => {
                let value = unescape_bytes(p.as_str()).map_err(|m| self.err(&p, m))?;
                Ok(Attribute::string_from_bytes(value, None))
            }
            Rule::symbol_ref_attr => {
                let mut names = Vec::new();
                for s in p.into_inner() {
                    names.push(Arc::<str>::from(self.symbol_name_text(&s)?));
                }
                let root = names.remove(0);
                Ok(Attribute::new(AttrKind::SymbolRef {
                    root,
                    nested: names,
                }))
            }
            Rule::array_attr => {
                let items = p
                    .into_inner()
                    .map(|a| self.convert_attribute(a))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Attribute::array(items))
            }
            Rule::dict_attr => Ok(Attribute::dictionary(self.convert_dict(p)?)),
            Rule::dialect_attr => self.dialect_symbol_value(&p, false, &self.attr_aliases),
            Rule::any_type => Ok(Attribute::type_attr(self.convert_type(p)?)),
            Rule::loc_attr => {
                let body = loc_body(p);
                Ok(Attribute::new(AttrKind::Location(
                    self.convert_location(body)?,
                )))
            }
            Rule::dense_attr => self.convert_dense(p),
            Rule::dense_resource_attr => {
                let mut it = p.into_inner();
                let name_pair = it.next().expect("name");
                let name = self.keyword_or_string(&name_pair)?;
                let ty = self.convert_type(it.next().expect("type"))?;
                if name == "__elided__" {
                    return Err(self.err(&name_pair, "cannot parse an elided resource ('__elided__'): print without --mlir-elide-elementsattrs-if-larger to round-trip"));
                }
                if !ty.has_static_shape() {
                    return Err(self.err(
                        &name_pair,
                        format!("dense_resource needs a statically shaped type, got {ty}"),
                    ));
                }
                let resource = self.ctx.resources().get_or_create(&name);
                Ok(Attribute::new(AttrKind::DenseResource { resource, ty }))
            }
            Rule::dense_array_attr => {
                let mut it = p.clone().into_inner();
                let element = self.convert_type(it.next().expect("type"))?;
                if !element.is_integer() && element.float_kind().is_none() {
                    return Err(self.err(
                        &p,
                        format!("invalid element type {element} for a dense array"),
                    ));
                }
                let mut v = Vec::new();
                for e in it {
                    let n = e.into_inner().next().expect("elem");
                    let value = if n.as_rule() == Rule::bool_attr {
                        Err(n.as_str() == "true")
                    } else {
                        Ok(self.parse_number(&n)?)
                    };
                    v.push(dense_array_element(&element, value).map_err(|m| self.err(&n, m))?);
                }
                let values = if element.float_kind().is_some() {
                    DenseArrayValues::Float(v)
                } else {
                    DenseArrayValues::Int(v.into_iter().map(|x| x as i64).collect())
                };
                Ok(Attribute::new(AttrKind::DenseArray { element, values }))
            }
            Rule::strided_attr => self.convert_strided(p),
            Rule::affine_map_attr => Ok(Attribute::new(AttrKind::AffineMap(
                self.convert_affine_map(p.into_inner().next().expect("body"))?,
            ))),
            Rule::affine_set_attr => Ok(Attribute::new(AttrKind::IntegerSet(
                self.convert_integer_set(p.into_inner().next().expect("body"))?,
            ))),
            r => unreachable!("not an attribute rule: {r:?}"),
        }
    }

    /// `strided<[16, 1], offset: ?>`: every value a 64-bit integer or `?`
    /// (upstream's dynamic marker, `i64::MIN`, is not a value of its own).
    fn convert_strided(&self, p: Pair<'_, Rule>) -> Result<Attribute, Diagnostic> {
        let mut it = p.into_inner();
        let strides = it
            .next()
            .expect("stride list")
            .into_inner()
            .map(|s| self.convert_stride(s))
            .collect::<Result<_, _>>()?;
        let offset = it.next().map(|s| self.convert_stride(s)).transpose()?;
        Ok(Attribute::new(AttrKind::Strided {
            strides,
            offset: offset.unwrap_or(0),
        }))
    }

    fn convert_stride(&self, p: Pair<'_, Rule>) -> Result<i64, Diagnostic> {
        let v = p.into_inner().next().expect("stride value");
        if v.as_rule() == Rule::dynamic_stride {
            return Ok(DYNAMIC);
        }
        self.convert_number_int(&v)
            .ok()
            .and_then(|x| i64::try_from(x).ok())
            .filter(|&x| x != DYNAMIC)
            .ok_or_else(|| self.err(&v, "expected a 64-bit signed integer or '?'"))
    }

    pub(crate) fn convert_dict(&self, p: Pair<'_, Rule>) -> Result<Dictionary, Diagnostic> {
        let mut d = Dictionary::new();
        for na in p.into_inner() {
            let mut it = na.into_inner();
            let key_pair = it.next().expect("name");
            let key = self.keyword_or_string(&key_pair)?;
            if key.is_empty() {
                return Err(self.err(&key_pair, "expected valid attribute name"));
            }
            let value = match it.next() {
                Some(v) => self.convert_attribute(v)?,
                None => Attribute::unit(),
            };
            if d.set(&key, value).is_some() {
                return Err(self.err(
                    &key_pair,
                    format!("duplicate key '{key}' in dictionary attribute"),
                ));
            }
        }
        Ok(d)
    }

    fn convert_dense(&self, p: Pair<'_, Rule>) -> Result<Attribute, Diagnostic> {
        let mut literal = None;
        let mut ty_pair = None;
        for q in p.clone().into_inner() {
            match q.as_rule() {
                Rule::dense_literal => literal = Some(q.into_inner().next().expect("literal")),
                _ => ty_pair = Some(q),
            }
        }
        let ty_pair = ty_pair.expect("dense type");
        let ty = self.convert_type(ty_pair.clone())?;
        let Some(shape) = ty.shape().map(<[i64]>::to_vec) else {
            return Err(self.err(
                &ty_pair,
                format!("elements literal type must be a shaped type, got {ty}"),
            ));
        };
        if !ty.has_static_shape() {
            return Err(self.err(
                &ty_pair,
                format!("elements literal type must have static shape, got {ty}"),
            ));
        }
        let element = ty.element_type().expect("shaped").clone();
        let Some(esize) = DenseElements::element_size(&element) else {
            return Err(self.err(
                &ty_pair,
                format!("unsupported dense element type {element}"),
            ));
        };
        let Some(n) = ty.num_elements().and_then(|n| usize::try_from(n).ok()) else {
            return Err(self.err(
                &ty_pair,
                format!("{ty} has more elements than a 64-bit count holds"),
            ));
        };
        // Bytes of the elements written out one by one (a splat holds one);
        // `None` when no buffer could hold them.
        let full_bytes = n.checked_mul(esize);
        let Some(lit) = literal else {
            if n != 0 {
                return Err(self.err(
                    &p,
                    format!("expected {n} elements in dense literal, found none"),
                ));
            }
            let d = DenseElements::new(ty, Arc::from(Vec::new()), false)
                .map_err(|m| self.err(&p, m.to_string()))?;
            return Ok(Attribute::new(AttrKind::DenseElements(d)));
        };
        if lit.as_rule() == Rule::string_lit {
            let text = unescape(lit.as_str()).map_err(|m| self.err(&lit, m))?;
            if !text.starts_with("0x") {
                return Err(self.err(
                    &lit,
                    "string dense elements are not supported; expected a hex string \"0x...\"",
                ));
            }
            let bytes = decode_hex_blob(&text).map_err(|m| self.err(&lit, m))?;
            let splat = bytes.len() == esize && n != 1;
            if !splat && Some(bytes.len()) != full_bytes {
                let needs =
                    full_bytes.map_or("more than memory holds".to_string(), |b| b.to_string());
                return Err(self.err(
                    &lit,
                    format!(
                        "hex dense literal has {} bytes but {ty} needs {needs}",
                        bytes.len()
                    ),
                ));
            }
            let d = DenseElements::new(ty, Arc::from(bytes), splat)
                .map_err(|m| self.err(&lit, m.to_string()))?;
            return Ok(Attribute::new(AttrKind::DenseElements(d)));
        }
        // Element literal: splat scalar or nested lists matching the shape.
        let inner = lit.into_inner().next().expect("dense element");
        if inner.as_rule() != Rule::dense_list {
            // A splat stores one element, however many the type has.
            let mut bytes = Vec::with_capacity(esize);
            self.push_dense_scalar(&inner, &element, &mut bytes)?;
            let d = DenseElements::new(ty, Arc::from(bytes), n != 1)
                .map_err(|m| self.err(&inner, m.to_string()))?;
            return Ok(Attribute::new(AttrKind::DenseElements(d)));
        }
        // Each element takes at least one byte of text: reserve no more
        // than the literal can fill (its count is checked as it is read).
        let reserve = n.min(inner.as_str().len()) * esize;
        let mut bytes = Vec::with_capacity(reserve);
        self.push_dense_list(inner, &shape, &element, &mut bytes)?;
        let d = DenseElements::new(ty, Arc::from(bytes), false)
            .map_err(|m| self.err(&p, m.to_string()))?;
        Ok(Attribute::new(AttrKind::DenseElements(d)))
    }

    fn push_dense_list(
        &self,
        p: Pair<'_, Rule>,
        shape: &[i64],
        element: &Type,
        out: &mut Vec<u8>,
    ) -> Result<(), Diagnostic> {
        let items: Vec<_> = p.clone().into_inner().collect();
        let Some((&dim, rest)) = shape.split_first() else {
            return Err(self.err(&p, "tensor literal is nested deeper than the type's rank"));
        };
        if items.len() as i64 != dim {
            return Err(self.err(
                &p,
                format!(
                    "expected {dim} elements in dimension, found {}",
                    items.len()
                ),
            ));
        }
        for it in items {
            let e = it.into_inner().next().expect("element");
            if e.as_rule() == Rule::dense_list {
                self.push_dense_list(e, rest, element, out)?;
            } else {
                if !rest.is_empty() {
                    return Err(self.err(
                        &e,
                        "expected a nested list: the literal does not match the type's rank",
                    ));
                }
                self.push_dense_scalar(&e, element, out)?;
            }
        }
        Ok(())
    }

    fn push_dense_scalar(
        &self,
        p: &Pair<'_, Rule>,
        element: &Type,
        out: &mut Vec<u8>,
    ) -> Result<(), Diagnostic> {
        match p.as_rule() {
            Rule::bool_attr => {
                if !element.is_integer_of_width(1) {
                    return Err(self.err(
                        p,
                        format!("boolean literal for non-i1 element type {element}"),
                    ));
                }
                out.push((p.as_str() == "true") as u8);
                Ok(())
            }
            Rule::number => {
                let a = self.number_attr(p, Some(element.clone()))?;
                if let Some(k) = element.float_kind() {
                    float_format::push_bytes(k, a.as_f64().expect("float"), out);
                } else {
                    let size = DenseElements::element_size(element).expect("sized");
                    out.extend_from_slice(&a.as_int().expect("int").to_le_bytes()[..size]);
                }
                Ok(())
            }
            Rule::complex_elem => Err(self.err(p, "complex dense elements are not supported")),
            _ => Err(self.err(p, "invalid dense element")),
        }
    }

    // ------------------------------------------------------------ affine

    fn affine_ids(
        &self,
        dims: Pair<'_, Rule>,
        syms: Option<Pair<'_, Rule>>,
    ) -> Vec<(String, AffineExpr)> {
        let mut ids = Vec::new();
        for (i, d) in dims.into_inner().enumerate() {
            ids.push((d.as_str().to_string(), AffineExpr::Dim(i as u32)));
        }
        if let Some(s) = syms {
            for (i, d) in s.into_inner().enumerate() {
                ids.push((d.as_str().to_string(), AffineExpr::Symbol(i as u32)));
            }
        }
        ids
    }

    /// The `(dims)[symbols]` that open an affine map or integer set: their
    /// counts and the identifiers the expressions after them use.
    fn affine_header<'i>(
        &self,
        it: &mut std::iter::Peekable<pest::iterators::Pairs<'i, Rule>>,
    ) -> (u32, u32, Vec<(String, AffineExpr)>) {
        let dims = it.next().expect("dims");
        let syms = if it.peek().is_some_and(|q| q.as_rule() == Rule::symbol_list) {
            it.next()
        } else {
            None
        };
        let num_dims = dims.clone().into_inner().count() as u32;
        let num_symbols = syms
            .as_ref()
            .map_or(0, |s| s.clone().into_inner().count() as u32);
        (num_dims, num_symbols, self.affine_ids(dims, syms))
    }

    fn convert_affine_map(&self, p: Pair<'_, Rule>) -> Result<AffineMap, Diagnostic> {
        let mut it = p.into_inner().peekable();
        let (num_dims, num_symbols, ids) = self.affine_header(&mut it);
        let results = it
            .map(|e| self.convert_affine_expr(e, &ids))
            .collect::<Result<_, _>>()?;
        Ok(AffineMap {
            num_dims,
            num_symbols,
            results,
        })
    }

    fn convert_integer_set(&self, p: Pair<'_, Rule>) -> Result<IntegerSet, Diagnostic> {
        let mut it = p.into_inner().peekable();
        let (num_dims, num_symbols, ids) = self.affine_header(&mut it);
        let mut constraints = Vec::new();
        for c in it {
            let mut ci = c.clone().into_inner();
            let lhs = self.convert_affine_expr(ci.next().expect("lhs"), &ids)?;
            let op = ci.next().expect("op");
            let rhs = self.convert_affine_expr(ci.next().expect("rhs"), &ids)?;
            if rhs != AffineExpr::Const(0) {
                return Err(self.err(
                    &c,
                    "integer set constraints must compare against 0 ('>= 0' or '== 0')",
                ));
            }
            constraints.push((lhs, op.as_rule() == Rule::affine_eq));
        }
        Ok(IntegerSet {
            num_dims,
            num_symbols,
            constraints,
        })
    }

    fn convert_affine_expr(
        &self,
        p: Pair<'_, Rule>,
        ids: &[(String, AffineExpr)],
    ) -> Result<AffineExpr, Diagnostic> {
        match p.as_rule() {
            Rule::affine_expr => {
                let mut it = p.into_inner();
                let mut acc = self.convert_affine_expr(it.next().expect("term"), ids)?;
                while let Some(op) = it.next() {
                    let rhs = self.convert_affine_expr(it.next().expect("term"), ids)?;
                    let rhs = if op.as_str() == "-" {
                        match rhs {
                            AffineExpr::Const(c) => AffineExpr::Const(-c),
                            r => AffineExpr::Mul(Arc::new(r), Arc::new(AffineExpr::Const(-1))),
                        }
                    } else {
                        rhs
                    };
                    acc = AffineExpr::Add(Arc::new(acc), Arc::new(rhs));
                }
                Ok(acc)
            }
            Rule::affine_term => {
                let mut it = p.into_inner();
                let mut acc = self.convert_affine_expr(it.next().expect("factor"), ids)?;
                while let Some(op) = it.next() {
                    let rhs = self.convert_affine_expr(it.next().expect("factor"), ids)?;
                    let (a, b) = (Arc::new(acc), Arc::new(rhs));
                    acc = match op.as_str() {
                        "*" => AffineExpr::Mul(a, b),
                        "mod" => AffineExpr::Mod(a, b),
                        "floordiv" => AffineExpr::FloorDiv(a, b),
                        _ => AffineExpr::CeilDiv(a, b),
                    };
                }
                Ok(acc)
            }
            Rule::affine_factor => {
                let mut neg = false;
                let mut val = None;
                for q in p.clone().into_inner() {
                    match q.as_rule() {
                        Rule::affine_neg => neg = true,
                        Rule::dec_int => {
                            val = Some(AffineExpr::Const(
                                q.as_str()
                                    .parse()
                                    .map_err(|_| self.err(&q, "affine constant is too large"))?,
                            ))
                        }
                        Rule::bare_id => {
                            let e = ids
                                .iter()
                                .find(|(n, _)| n == q.as_str())
                                .map(|(_, e)| e.clone());
                            val = Some(e.ok_or_else(|| {
                                self.err(
                                    &q,
                                    format!("use of undeclared identifier '{}'", q.as_str()),
                                )
                            })?);
                        }
                        _ => val = Some(self.convert_affine_expr(q, ids)?),
                    }
                }
                let v = val.expect("factor value");
                Ok(if neg {
                    match v {
                        AffineExpr::Const(c) => AffineExpr::Const(-c),
                        v => AffineExpr::Mul(Arc::new(v), Arc::new(AffineExpr::Const(-1))),
                    }
                } else {
                    v
                })
            }
            r => unreachable!("not an affine rule: {r:?}"),
        }
    }

    // ------------------------------------------------------------ locations

    pub(crate) fn convert_location(&self, p: Pair<'_, Rule>) -> Result<Location, Diagnostic> {
        let p = if p.as_rule() == Rule::loc_body {
            p.into_inner().next().expect("loc body")
        } else {
            p
        };
        match p.as_rule() {
            Rule::loc_unknown => Ok(Location::unknown()),
            Rule::loc_callsite => {
                let mut it = p.into_inner();
                let callee = self.convert_location(it.next().expect("callee"))?;
                let caller = self.convert_location(it.next().expect("caller"))?;
                Ok(Location::new(LocKind::CallSite { callee, caller }))
            }
            Rule::loc_fused => {
                let mut metadata = None;
                let mut locations = Vec::new();
                for q in p.into_inner() {
                    match q.as_rule() {
                        Rule::attribute => metadata = Some(self.convert_attribute(q)?),
                        _ => locations.push(self.convert_location(q)?),
                    }
                }
                Ok(Location::new(LocKind::Fused {
                    locations,
                    metadata,
                }))
            }
            Rule::loc_alias => {
                let name = &p.as_str()[1..];
                self.loc_aliases
                    .get(name)
                    .cloned()
                    .ok_or_else(|| self.err(&p, format!("undefined location alias '#{name}'")))
            }
            Rule::loc_named_or_file => {
                let mut it = p.into_inner();
                let s = it.next().expect("string");
                let text = unescape(s.as_str()).map_err(|m| self.err(&s, m))?;
                match it.next() {
                    None => Ok(Location::name(&text, None)),
                    Some(q) if q.as_rule() == Rule::loc_file_pos => {
                        let mut nums = q.into_inner();
                        let line: u32 = nums
                            .next()
                            .expect("line")
                            .as_str()
                            .parse()
                            .map_err(|_| self.err(&s, "line number too large"))?;
                        let col: u32 = nums
                            .next()
                            .expect("col")
                            .as_str()
                            .parse()
                            .map_err(|_| self.err(&s, "column number too large"))?;
                        let Some(end) = nums.next() else {
                            return Ok(Location::file_line_col(&text, line, col));
                        };
                        // `to :C` keeps the start line.
                        let parts: Vec<&str> = end.as_str().split(':').collect();
                        let end_line = match parts[0] {
                            "" => line,
                            l => l
                                .parse()
                                .map_err(|_| self.err(&end, "line number too large"))?,
                        };
                        let end_col: u32 = parts[parts.len() - 1]
                            .parse()
                            .map_err(|_| self.err(&end, "column number too large"))?;
                        Ok(Location::file_line_col_range(
                            &text, line, col, end_line, end_col,
                        ))
                    }
                    Some(q) => Ok(Location::name(&text, Some(self.convert_location(q)?))),
                }
            }
            r => unreachable!("not a location rule: {r:?}"),
        }
    }
}

/// A number literal (`neg`: written with a leading `-`) as an attribute
/// of type `ty` (by default `i64`, or `f64` for a float literal).
pub(crate) fn typed_number(neg: bool, n: Number, ty: Option<Type>) -> Result<Attribute, String> {
    let ty = ty.unwrap_or_else(|| match n {
        Number::Float(_) => Type::float(FloatKind::F64),
        _ => Type::i64(),
    });
    match ty.kind() {
        TypeKind::Float(k) => {
            let v = match n {
                Number::Float(f) => float_format::round_to(*k, f),
                Number::Int(i) => float_format::round_to(*k, i as f64),
                Number::Hex(bits) => {
                    if neg {
                        return Err(
                            "hexadecimal float literal should not have a leading minus".into()
                        );
                    }
                    if bits >> k.bit_width() != 0 {
                        return Err(format!(
                            "hexadecimal float constant out of range for type {ty}"
                        ));
                    }
                    float_format::decode_bits(*k, bits as u64)
                }
            };
            Ok(Attribute::float(v, ty))
        }
        TypeKind::Integer { width, signedness } => {
            let v = match n {
                Number::Int(i) => i,
                Number::Hex(h) => {
                    let v = i128::try_from(h).map_err(|_| "integer literal is too large")?;
                    if neg {
                        -v
                    } else {
                        v
                    }
                }
                Number::Float(_) => {
                    return Err(format!(
                        "floating point value not valid for specified type {ty}"
                    ))
                }
            };
            check_int_fits(v, *width, *signedness)?;
            Ok(Attribute::integer(v, ty))
        }
        TypeKind::Index => match n {
            Number::Int(i) => Ok(Attribute::integer(i, ty)),
            Number::Hex(h) => Ok(Attribute::integer(h as i128, ty)),
            Number::Float(_) => Err("floating point value not valid for type index".into()),
        },
        _ => Err(format!("invalid type {ty} for a number literal")),
    }
}

/// One element of `array<T: ...>` (a number or a bool) as stored in
/// [`DenseArrayValues`]: float bits for float arrays, the value for
/// integer arrays.
pub(crate) fn dense_array_element(
    element: &Type,
    value: Result<(bool, Number), bool>,
) -> Result<u64, String> {
    if let Some(k) = element.float_kind() {
        let Ok((neg, n)) = value else {
            return Err("expected floating point literal".into());
        };
        let a = typed_number(neg, n, Some(Type::float(k)))?;
        return Ok(a.as_f64().expect("float").to_bits());
    }
    match value {
        Err(b) => Ok(b as u64),
        Ok((neg, n)) => Ok(typed_number(neg, n, Some(element.clone()))?
            .as_int()
            .expect("int") as i64 as u64),
    }
}

fn check_int_fits(v: i128, width: u32, signedness: Signedness) -> Result<(), String> {
    if width >= 128 {
        return Ok(());
    }
    let fits = match signedness {
        // `i0` holds only zero.
        _ if width == 0 => v == 0,
        Signedness::Unsigned => v >= 0 && v < (1i128 << width),
        Signedness::Signed => v >= -(1i128 << (width - 1)) && v < (1i128 << (width - 1)),
        // Signless integers accept both the signed and the unsigned range.
        Signedness::Signless => {
            if width == 1 {
                v == 0 || v == 1 || v == -1
            } else {
                v >= -(1i128 << (width - 1)) && v < (1i128 << width)
            }
        }
    };
    if fits {
        Ok(())
    } else {
        Err(format!(
            "integer constant out of range for attribute of width {width}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free digit decoding against `u8::from_str_radix`, for
    /// every byte on either side of a pair; and printing's digits read back.
    #[test]
    fn hex_decoding_matches_from_str_radix_on_every_byte() {
        for hi in 0..=255u8 {
            for lo in 0..=255u8 {
                let pair = [hi, lo];
                let expected = std::str::from_utf8(&pair)
                    .ok()
                    .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
                    .map(|s| u8::from_str_radix(s, 16).expect("hex digits"));
                match expected {
                    Some(v) => {
                        assert_eq!(decode_hex_digits(&pair), Ok(vec![v]));
                        assert_eq!(decode_hex_shared(&pair).as_deref(), Ok(&[v][..]));
                    }
                    None => assert!(decode_hex_digits(&pair).is_err(), "{pair:?} accepted"),
                }
            }
        }
        // Whole blocks of digits and a tail; a bad digit in either.
        for bad in [3, 9_990] {
            let mut text = "0A".repeat(5_000).into_bytes();
            text[bad] = b'g';
            assert!(
                decode_hex_digits(&text).is_err(),
                "bad digit at {bad} accepted"
            );
        }
        let bytes: Vec<u8> = (0..=255).cycle().take(10_000).collect();
        let mut text = String::new();
        crate::printer::push_hex(&mut text, &bytes);
        assert_eq!(text.len(), 20_000);
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()));
        assert_eq!(decode_hex_digits(text.as_bytes()), Ok(bytes));
    }
}
