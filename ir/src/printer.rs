//! The textual IR printer (MLIR syntax).
//!
//! Prints operations in their custom form when the op defines one (unless
//! [`PrintOptions::generic`]), otherwise in the generic form that always
//! round-trips. SSA values are numbered as MLIR numbers them: results `%N`,
//! entry-block arguments `%argN`, restarting in every isolated-from-above op.
//!
//! [`print_op`] returns the text; [`print_op_to`] streams it to a writer in
//! pieces of about [`FLUSH_BYTES`], handed over between operations, so
//! that printing a large module never holds its whole text (it is the
//! largest allocation of `ipu-opt` on attribute-heavy IR otherwise).

use std::fmt::Write;

use rustc_hash::FxHashSet;

use crate::attributes::{
    AttrKind, Attribute, DenseArrayValues, DenseElements, Dictionary, Resource,
};
use crate::context::{BlockId, Context, OpId, RegionId, Value};
use crate::dialect::Traits;
use crate::float_format;
use crate::location::{LocKind, Location};
use crate::print_aliases::{may_use_aliases, AliasState, PrinterAliases};
use crate::types::{FloatKind, Signedness, Type, TypeKind, DYNAMIC};

/// Printer options (the `--mlir-print-*` flags).
#[derive(Clone, Debug)]
pub struct PrintOptions {
    /// Print every op in the generic form.
    pub generic: bool,
    /// Print trailing locations.
    pub debug_info: bool,
    /// Elide dense elements with more elements than this.
    pub elide_elements_if_larger: Option<u64>,
    /// Elide resource blobs larger than this many bytes.
    pub elide_resources_if_larger: Option<u64>,
    /// Print dense elements with more elements than this as a hex string (`None`: never).
    pub hex_if_larger: Option<u64>,
    /// Print affine maps and integer sets inline instead of as `#map`
    /// aliases (`--mlir-print-local-scope`).
    pub local_scope: bool,
    /// Alias state of the printer pass in progress: set by the printer,
    /// leave it at its default.
    #[doc(hidden)]
    pub aliases: Option<PrinterAliases>,
}

impl PrintOptions {
    /// Every op in the generic form, the other options at their defaults.
    pub fn generic() -> PrintOptions {
        PrintOptions {
            generic: true,
            ..PrintOptions::default()
        }
    }
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            generic: false,
            debug_info: false,
            elide_elements_if_larger: None,
            elide_resources_if_larger: None,
            hex_if_larger: Some(100),
            local_scope: false,
            aliases: None,
        }
    }
}

/// Decodes a float stored in `bytes`.
pub fn decode_float(kind: FloatKind, bytes: &[u8]) -> f64 {
    float_format::decode(kind, bytes)
}

/// Writes a type.
pub fn write_type(out: &mut String, ty: &Type, opts: Option<&PrintOptions>) {
    let default_opts;
    let opts = match opts {
        Some(o) => o,
        None => {
            default_opts = PrintOptions::default();
            &default_opts
        }
    };
    match ty.kind() {
        TypeKind::Integer { width, signedness } => {
            let p = match signedness {
                Signedness::Signless => "i",
                Signedness::Signed => "si",
                Signedness::Unsigned => "ui",
            };
            let _ = write!(out, "{p}{width}");
        }
        TypeKind::Index => out.push_str("index"),
        TypeKind::Float(k) => out.push_str(k.keyword()),
        TypeKind::None => out.push_str("none"),
        TypeKind::Function { inputs, results } => {
            out.push('(');
            write_type_list(out, inputs, opts);
            out.push_str(") -> ");
            write_result_types(out, results, opts);
        }
        TypeKind::RankedTensor {
            shape,
            element,
            encoding,
        } => {
            out.push_str("tensor<");
            write_shape(out, shape, None);
            write_type(out, element, Some(opts));
            if let Some(e) = encoding {
                out.push_str(", ");
                write_attribute(out, e, opts);
            }
            out.push('>');
        }
        TypeKind::UnrankedTensor { element } => {
            out.push_str("tensor<*x");
            write_type(out, element, Some(opts));
            out.push('>');
        }
        TypeKind::Vector {
            shape,
            scalable,
            element,
        } => {
            out.push_str("vector<");
            write_shape(out, shape, Some(scalable));
            write_type(out, element, Some(opts));
            out.push('>');
        }
        TypeKind::MemRef {
            shape,
            element,
            layout,
            memory_space,
        } => {
            out.push_str("memref<");
            write_shape(out, shape, None);
            write_type(out, element, Some(opts));
            if let Some(l) = layout {
                out.push_str(", ");
                write_attribute(out, l, opts);
            }
            if let Some(m) = memory_space {
                write_memory_space(out, m, opts);
            }
            out.push('>');
        }
        TypeKind::UnrankedMemRef {
            element,
            memory_space,
        } => {
            out.push_str("memref<*x");
            write_type(out, element, Some(opts));
            if let Some(m) = memory_space {
                write_memory_space(out, m, opts);
            }
            out.push('>');
        }
        TypeKind::Complex(e) => {
            out.push_str("complex<");
            write_type(out, e, Some(opts));
            out.push('>');
        }
        TypeKind::Tuple(ts) => {
            out.push_str("tuple<");
            write_type_list(out, ts, opts);
            out.push('>');
        }
        TypeKind::Dialect {
            dialect,
            mnemonic,
            body,
        } => write_dialect_symbol(out, '!', dialect, mnemonic.as_deref(), body),
    }
}

/// A dialect type (`!`) or attribute (`#`): `dialect.mnemonic<body>`.
fn write_dialect_symbol(
    out: &mut String,
    sigil: char,
    dialect: &str,
    mnemonic: Option<&str>,
    body: &str,
) {
    out.push(sigil);
    out.push_str(dialect);
    if let Some(m) = mnemonic {
        out.push('.');
        out.push_str(m);
    }
    if !body.is_empty() {
        out.push('<');
        out.push_str(body);
        out.push('>');
    }
}

/// `, space` of a memref type: as upstream, an `i64` memory space is
/// printed without its type (`memref<4xf32, 1>`).
fn write_memory_space(out: &mut String, space: &Attribute, opts: &PrintOptions) {
    out.push_str(", ");
    match space.kind() {
        AttrKind::Integer { value, ty }
            if matches!(
                ty.kind(),
                TypeKind::Integer {
                    width: 64,
                    signedness: Signedness::Signless
                }
            ) =>
        {
            let _ = write!(out, "{value}");
        }
        _ => write_attribute(out, space, opts),
    }
}

fn write_shape(out: &mut String, shape: &[i64], scalable: Option<&Vec<bool>>) {
    for (i, &d) in shape.iter().enumerate() {
        let sc = scalable.is_some_and(|s| s.get(i).copied().unwrap_or(false));
        if sc {
            out.push('[');
        }
        if d == DYNAMIC {
            out.push('?');
        } else {
            let _ = write!(out, "{d}");
        }
        if sc {
            out.push(']');
        }
        out.push('x');
    }
}

fn write_type_list(out: &mut String, tys: &[Type], opts: &PrintOptions) {
    for (i, t) in tys.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_type(out, t, Some(opts));
    }
}

/// Writes function results: a single non-function type bare, otherwise parenthesized.
fn write_result_types(out: &mut String, results: &[Type], opts: &PrintOptions) {
    if results.len() == 1 && !matches!(results[0].kind(), TypeKind::Function { .. }) {
        write_type(out, &results[0], Some(opts));
    } else {
        out.push('(');
        write_type_list(out, results, opts);
        out.push(')');
    }
}

/// Appends `bytes` as uppercase hex digits. Weight blobs run to gigabytes,
/// so this avoids the formatting machinery: see `hex_pieces`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(2 * bytes.len());
    hex_pieces(bytes, |digits| {
        out.push_str(std::str::from_utf8(digits).expect("hex digits are ASCII"))
    });
}

/// Hands `bytes` as uppercase hex digits to `put`, a few KiB at a time:
/// one table lookup per byte into a buffer on the stack, no allocation.
fn hex_pieces(bytes: &[u8], mut put: impl FnMut(&[u8])) {
    static PAIRS: [[u8; 2]; 256] = {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        let mut t = [[0; 2]; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = [DIGITS[i >> 4], DIGITS[i & 15]];
            i += 1;
        }
        t
    };
    const PIECE: usize = 4096;
    let mut buf = [0u8; 2 * PIECE];
    for piece in bytes.chunks(PIECE) {
        for (pair, &b) in buf.chunks_exact_mut(2).zip(piece) {
            pair.copy_from_slice(&PAIRS[b as usize]);
        }
        put(&buf[..2 * piece.len()]);
    }
}

/// Writes a string literal with MLIR escapes.
pub fn write_escaped_string(out: &mut String, s: &str) {
    write_escaped_bytes(out, s.as_bytes());
}

/// Writes bytes as a string literal: printable ASCII as is, everything
/// else (and `"`, `\`) as `\XX`.
pub fn write_escaped_bytes(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(b as char);
        } else {
            let _ = write!(out, "\\{b:02X}");
        }
    }
    out.push('"');
}

/// Writes an identifier as a bare id if it is one, otherwise as a string.
pub fn write_keyword_or_string(out: &mut String, s: &str) {
    if is_bare_identifier(s) {
        out.push_str(s);
    } else {
        write_escaped_string(out, s);
    }
}

/// Whether `s` is a valid bare identifier (`[a-zA-Z_][a-zA-Z0-9_$.]*`).
pub fn is_bare_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.')
}

/// Writes a symbol name `@name` (quoted if needed).
pub fn write_symbol_name(out: &mut String, s: &str) {
    out.push('@');
    write_keyword_or_string(out, s);
}

/// Formats a float value of `kind` the way MLIR does: `%e` with six digits
/// when that round-trips, otherwise the shortest round-tripping decimal,
/// and the bit pattern in hex for NaN and infinities.
pub fn write_float(out: &mut String, v: f64, kind: FloatKind) {
    if v.is_finite() {
        let e = format_exp6(v);
        if float_format::encode_bits(kind, e.parse::<f64>().unwrap_or(f64::NAN))
            == float_format::encode_bits(kind, v)
            && kind_parse_exact(kind, &e, v)
        {
            out.push_str(&e);
            return;
        }
        let s = match kind {
            FloatKind::F32 => format!("{:e}", v as f32),
            _ => format!("{v:e}"),
        };
        // `{:e}` gives `1.2345e6` or `1e6`; MLIR needs a '.' in float literals.
        let (mant, exp) = s.split_once('e').expect("LowerExp has an exponent");
        let mant = if mant.contains('.') {
            mant.to_string()
        } else {
            format!("{mant}.0")
        };
        if exp == "0" {
            out.push_str(&mant);
        } else {
            let _ = write!(out, "{mant}e{exp}");
        }
        return;
    }
    let bits = float_format::encode_bits(kind, v);
    let digits = (kind.bit_width() / 4) as usize;
    let _ = write!(out, "0x{bits:0digits$X}");
}

/// For f32, parse the text directly as f32 to avoid double rounding.
fn kind_parse_exact(kind: FloatKind, text: &str, v: f64) -> bool {
    match kind {
        FloatKind::F32 => text.parse::<f32>().map(|x| x as f64 == v).unwrap_or(false),
        _ => true,
    }
}

/// APFloat's `toString(6 digits)` in scientific form: six significant
/// digits, padded to `d.dddddde±XX` (`1.000000e+00`).
fn format_exp6(v: f64) -> String {
    let s = format!("{v:.5e}");
    let (mant, exp) = s.split_once('e').expect("LowerExp has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}0e{sign}{:02}", exp.abs())
}

/// Writes an attribute.
pub fn write_attribute(out: &mut String, attr: &Attribute, opts: &PrintOptions) {
    match attr.kind() {
        AttrKind::Unit => out.push_str("unit"),
        AttrKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        AttrKind::Integer { value, ty } => {
            if ty.is_integer_of_width(1)
                && matches!(
                    ty.kind(),
                    TypeKind::Integer {
                        signedness: Signedness::Signless,
                        ..
                    }
                )
            {
                out.push_str(if *value != 0 { "true" } else { "false" });
                return;
            }
            let _ = write!(out, "{value} : ");
            write_type(out, ty, Some(opts));
        }
        AttrKind::Float { bits, ty } => {
            write_float(
                out,
                f64::from_bits(*bits),
                ty.float_kind().unwrap_or(FloatKind::F64),
            );
            out.push_str(" : ");
            write_type(out, ty, Some(opts));
        }
        AttrKind::String { value, ty } => {
            write_escaped_string(out, value);
            if let Some(t) = ty {
                out.push_str(" : ");
                write_type(out, t, Some(opts));
            }
        }
        AttrKind::Bytes { value, ty } => {
            write_escaped_bytes(out, value);
            if let Some(t) = ty {
                out.push_str(" : ");
                write_type(out, t, Some(opts));
            }
        }
        AttrKind::Type(t) => write_type(out, t, Some(opts)),
        AttrKind::Array(items) => {
            out.push('[');
            for (i, a) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_attribute(out, a, opts);
            }
            out.push(']');
        }
        AttrKind::DenseArray { element, values } => {
            out.push_str("array<");
            write_type(out, element, Some(opts));
            let kind = element.float_kind();
            let mut first = true;
            let mut sep = |out: &mut String| {
                out.push_str(if first { ": " } else { ", " });
                first = false;
            };
            match values {
                DenseArrayValues::Int(v) => {
                    for x in v {
                        sep(out);
                        if element.is_integer_of_width(1) {
                            out.push_str(if *x != 0 { "true" } else { "false" });
                        } else {
                            let _ = write!(out, "{x}");
                        }
                    }
                }
                DenseArrayValues::Float(v) => {
                    for x in v {
                        sep(out);
                        write_float(out, f64::from_bits(*x), kind.unwrap_or(FloatKind::F64));
                    }
                }
            }
            out.push('>');
        }
        AttrKind::Dictionary(d) => write_dictionary(out, d, &[], opts),
        AttrKind::SymbolRef { root, nested } => {
            write_symbol_name(out, root);
            for n in nested {
                out.push_str("::");
                write_symbol_name(out, n);
            }
        }
        AttrKind::DenseElements(d) => write_dense(out, d, opts),
        AttrKind::DenseResource { resource, ty } => {
            out.push_str("dense_resource<");
            write_keyword_or_string(out, resource.name());
            out.push_str("> : ");
            write_type(out, ty, Some(opts));
        }
        AttrKind::AffineMap(m) => {
            let mut text = String::from("affine_map<");
            m.write_body(&mut text);
            text.push('>');
            write_aliasable(out, &text, opts);
        }
        AttrKind::IntegerSet(s) => {
            let mut text = String::from("affine_set<");
            s.write_body(&mut text);
            text.push('>');
            write_aliasable(out, &text, opts);
        }
        AttrKind::Strided { strides, offset } => {
            // As upstream: `?` for dynamic values, a zero offset left out.
            let value = |out: &mut String, v: i64| {
                if v == DYNAMIC {
                    out.push('?');
                } else {
                    let _ = write!(out, "{v}");
                }
            };
            out.push_str("strided<[");
            for (i, &s) in strides.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                value(out, s);
            }
            out.push(']');
            if *offset != 0 {
                out.push_str(", offset: ");
                value(out, *offset);
            }
            out.push('>');
        }
        AttrKind::Location(l) => write_location(out, l),
        AttrKind::Dialect {
            dialect,
            mnemonic,
            body,
        } => write_dialect_symbol(out, '#', dialect, mnemonic.as_deref(), body),
    }
}

/// Writes an aliasable attribute's inline text, or its alias while the
/// printer assigns them.
fn write_aliasable(out: &mut String, text: &str, opts: &PrintOptions) {
    match &opts.aliases {
        Some(a) => a.0.write(out, text),
        None => out.push_str(text),
    }
}

/// Writes `{a = 1, b}` skipping names in `elide`; writes nothing if empty.
pub fn write_dictionary(out: &mut String, d: &Dictionary, elide: &[&str], opts: &PrintOptions) {
    write_dictionary_entries(out, d.iter(), elide, opts);
}

/// [`write_dictionary`] of entries in name order.
fn write_dictionary_entries<'d>(
    out: &mut String,
    entries: impl Iterator<Item = (&'d str, &'d Attribute)>,
    elide: &[&str],
    opts: &PrintOptions,
) {
    let mut first = true;
    for (k, v) in entries {
        if elide.contains(&k) {
            continue;
        }
        out.push_str(if first { "{" } else { ", " });
        first = false;
        write_keyword_or_string(out, k);
        if !matches!(v.kind(), AttrKind::Unit) {
            out.push_str(" = ");
            write_attribute(out, v, opts);
        }
    }
    if first {
        out.push_str("{}");
    } else {
        out.push('}');
    }
}

/// The entries of `attrs` with those of `props` merged in (a name in both
/// takes `props`' value), in name order: the dictionary a custom form's
/// `attr-dict` shows, without building it.
fn merged_entries<'d>(
    attrs: &'d Dictionary,
    props: Option<&'d Dictionary>,
) -> impl Iterator<Item = (&'d str, &'d Attribute)> + Clone {
    let mut a = attrs.iter().peekable();
    let mut b = props.into_iter().flat_map(Dictionary::iter).peekable();
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(&(ka, _)), Some(&(kb, _))) => match ka.cmp(kb) {
            std::cmp::Ordering::Less => a.next(),
            std::cmp::Ordering::Greater => b.next(),
            std::cmp::Ordering::Equal => {
                a.next();
                b.next()
            }
        },
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    })
}

fn write_dense(out: &mut String, d: &DenseElements, opts: &PrintOptions) {
    let n = d.len() as u64;
    if opts.elide_elements_if_larger.is_some_and(|limit| n > limit) && !d.splat {
        out.push_str("dense_resource<__elided__> : ");
        write_type(out, &d.ty, Some(opts));
        return;
    }
    out.push_str("dense<");
    let elem = d.element_type();
    if !d.splat && opts.hex_if_larger.is_some_and(|limit| n > limit) {
        out.push_str("\"0x");
        push_hex(out, &d.data);
        out.push('"');
    } else if d.splat {
        write_dense_element(out, d, 0, elem);
    } else if n == 0 {
        // Upstream prints every zero-element literal as `dense<>`: a nested
        // `[]` would infer the shape [0] whatever the type's rank.
    } else {
        let shape = d.ty.shape().unwrap_or(&[]).to_vec();
        let mut index = 0usize;
        write_dense_nested(out, d, elem, &shape, &mut index);
    }
    out.push_str("> : ");
    write_type(out, &d.ty, Some(opts));
}

fn write_dense_nested(
    out: &mut String,
    d: &DenseElements,
    elem: &Type,
    shape: &[i64],
    index: &mut usize,
) {
    if shape.is_empty() {
        write_dense_element(out, d, *index, elem);
        *index += 1;
        return;
    }
    out.push('[');
    for i in 0..shape[0] {
        if i > 0 {
            out.push_str(", ");
        }
        write_dense_nested(out, d, elem, &shape[1..], index);
    }
    out.push(']');
}

fn write_dense_element(out: &mut String, d: &DenseElements, i: usize, elem: &Type) {
    if let Some(k) = elem.float_kind() {
        write_float(out, d.float_at(i), k);
    } else if elem.is_integer_of_width(1) {
        out.push_str(if d.int_at(i) != 0 { "true" } else { "false" });
    } else {
        let _ = write!(out, "{}", d.int_at(i));
    }
}

/// Writes `loc(...)`.
pub fn write_location(out: &mut String, loc: &Location) {
    out.push_str("loc(");
    write_location_body(out, loc);
    out.push(')');
}

fn write_location_body(out: &mut String, loc: &Location) {
    match loc.kind() {
        LocKind::Unknown => out.push_str("unknown"),
        LocKind::FileLineCol { file, line, col } => {
            write_escaped_string(out, file);
            let _ = write!(out, ":{line}:{col}");
        }
        LocKind::FileLineColRange {
            file,
            line,
            col,
            end_line,
            end_col,
        } => {
            write_escaped_string(out, file);
            let _ = write!(out, ":{line}:{col} to ");
            if end_line != line {
                let _ = write!(out, "{end_line}");
            }
            let _ = write!(out, ":{end_col}");
        }
        LocKind::Name { name, child } => {
            write_escaped_string(out, name);
            if let Some(c) = child {
                out.push('(');
                write_location_body(out, c);
                out.push(')');
            }
        }
        LocKind::CallSite { callee, caller } => {
            out.push_str("callsite(");
            write_location_body(out, callee);
            out.push_str(" at ");
            write_location_body(out, caller);
            out.push(')');
        }
        LocKind::Fused {
            locations,
            metadata,
        } => {
            out.push_str("fused");
            if let Some(m) = metadata {
                out.push('<');
                write_attribute(out, m, &PrintOptions::default());
                out.push('>');
            }
            out.push('[');
            for (i, l) in locations.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_location_body(out, l);
            }
            out.push(']');
        }
    }
}

#[derive(Copy, Clone, Default)]
struct ValueName {
    /// Number `N` of `%N` / `%argN`; `u32::MAX` if unnamed.
    number: u32,
    is_arg: bool,
    /// Result index within a multi-result group, or `u32::MAX`.
    group_index: u32,
}

/// How much text a streaming printer gathers before writing it: large
/// enough that the writer's per-call cost vanishes, small next to any IR
/// worth streaming.
pub const FLUSH_BYTES: usize = 1 << 16;

/// Prints operations; holds SSA naming state and collects referenced resources.
pub struct AsmPrinter<'c> {
    pub(crate) ctx: &'c Context,
    pub(crate) opts: PrintOptions,
    pub(crate) out: String,
    names: Vec<ValueName>,
    block_names: Vec<u32>,
    indent: usize,
    resources: Vec<Resource>,
    seen_resources: FxHashSet<String>,
    default_dialects: Vec<&'static str>,
    /// Output position (counting text already flushed) before the op
    /// name of the custom form being printed, so that
    /// [`OpPrinter::generic`] can replace it with the generic form.
    custom_start: usize,
    /// Where `out` goes between operations when streaming; `None`: `out`
    /// holds the whole text.
    sink: Option<Box<dyn std::io::Write + 'c>>,
    /// Bytes of text already handed to `sink`.
    flushed: usize,
    /// The sink's first error: printing ends quietly (nothing more is
    /// written) and returns it.
    sink_error: Option<std::io::Error>,
}

impl<'c> AsmPrinter<'c> {
    /// A printer over `ctx`.
    pub fn new(ctx: &'c Context, opts: PrintOptions) -> AsmPrinter<'c> {
        AsmPrinter {
            ctx,
            opts,
            out: String::new(),
            names: Vec::new(),
            block_names: Vec::new(),
            indent: 0,
            resources: Vec::new(),
            seen_resources: FxHashSet::default(),
            default_dialects: Vec::new(),
            custom_start: 0,
            sink: None,
            flushed: 0,
            sink_error: None,
        }
    }

    /// Hands the text gathered so far to the sink, if streaming.
    fn flush(&mut self) {
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        if self.sink_error.is_none() {
            if let Err(e) = sink.write_all(self.out.as_bytes()) {
                self.sink_error = Some(e);
            }
        }
        self.flushed += self.out.len();
        self.out.clear();
    }

    /// [`AsmPrinter::flush`] once enough text has gathered. Called only
    /// between operations (and resource chunks): a custom printer may
    /// still take back what it printed of its own op.
    fn maybe_flush(&mut self) {
        if self.out.len() >= FLUSH_BYTES {
            self.flush();
        }
    }

    /// Prints `op` as a top-level operation followed by the resource section.
    pub fn print_top_level(mut self, op: OpId) -> String {
        self.print_ir_with_aliases(op);
        self.print_resources();
        self.out
    }

    /// Prints the IR of `op` (without resources), preceded by alias
    /// definitions when it uses aliasable attributes (see `print_aliases`).
    fn print_ir_with_aliases(&mut self, op: OpId) {
        self.number_op_tree(op);
        if self.opts.local_scope {
            self.opts.aliases = None;
        } else {
            self.opts.aliases = Some(PrinterAliases(std::sync::Arc::new(AliasState::recording())));
        }
        self.print_operation(op);
        self.out.push('\n');
        let recorded = self.opts.aliases.take().and_then(|a| a.0.finish());
        if let Some((named, header)) = recorded {
            self.out = header;
            self.resources.clear();
            self.seen_resources.clear();
            self.opts.aliases = Some(PrinterAliases(std::sync::Arc::new(named)));
            self.print_operation(op);
            self.out.push('\n');
            self.opts.aliases = None;
        }
    }

    /// Prints `op` and the resource section to `sink`, streamed: the
    /// text goes out in pieces of about [`FLUSH_BYTES`], the resource
    /// blobs in chunks, so printing never holds the module's text nor its
    /// weights twice. The same bytes as [`AsmPrinter::print_top_level`].
    ///
    /// Alias definitions come first but are known only once everything is
    /// printed; so when the IR may use aliases (`may_use_aliases`), the
    /// recording pass prints into the void and the named pass streams.
    pub fn print_top_level_to(
        self,
        op: OpId,
        sink: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        // `AsmPrinter` is covariant in its lifetime: narrow it to the sink's.
        let mut p: AsmPrinter<'_> = self;
        p.number_op_tree(op);
        let scan_says_aliases = !p.opts.local_scope && may_use_aliases(p.ctx, op);
        if scan_says_aliases {
            p.opts.aliases = Some(PrinterAliases(std::sync::Arc::new(AliasState::recording())));
            p.sink = Some(Box::new(std::io::sink()));
            p.print_operation(op);
            p.flush();
            let recorded = p.opts.aliases.take().and_then(|a| a.0.finish());
            p.resources.clear();
            p.seen_resources.clear();
            p.flushed = 0;
            if let Some((named, header)) = recorded {
                p.out = header;
                p.opts.aliases = Some(PrinterAliases(std::sync::Arc::new(named)));
            }
        } else if !p.opts.local_scope {
            // Records nothing unless the scan missed an aliasable attribute.
            p.opts.aliases = Some(PrinterAliases(std::sync::Arc::new(AliasState::recording())));
        }
        p.sink = Some(Box::new(sink));
        p.print_operation(op);
        p.out.push('\n');
        let missed =
            !scan_says_aliases && p.opts.aliases.take().and_then(|a| a.0.finish()).is_some();
        if missed {
            // Valid IR still (the attributes are written inline), but not
            // upstream's text: `may_use_aliases` must learn where it was.
            tracing::warn!("a custom printer wrote an affine map or integer set that `may_use_aliases` did not find; printed without aliases");
            debug_assert!(false, "may_use_aliases missed an aliasable attribute");
        }
        p.opts.aliases = None;
        p.print_resources();
        p.flush();
        match p.sink_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn name_slot(&mut self, v: Value) -> &mut ValueName {
        let i = crate::entity::EntityKey::index(v);
        if i >= self.names.len() {
            self.names.resize(
                i + 1,
                ValueName {
                    number: u32::MAX,
                    is_arg: false,
                    group_index: u32::MAX,
                },
            );
        }
        &mut self.names[i]
    }

    fn set_block_name(&mut self, b: BlockId, n: u32) {
        let i = crate::entity::EntityKey::index(b);
        if i >= self.block_names.len() {
            self.block_names.resize(i + 1, u32::MAX);
        }
        self.block_names[i] = n;
    }

    /// Numbers values and blocks in `root`'s regions as MLIR does.
    fn number_op_tree(&mut self, root: OpId) {
        // (region, next value id, next arg id)
        let mut stack: Vec<(RegionId, u32, u32)> = Vec::new();
        let ctx = self.ctx;
        self.number_results(root, &mut 0);
        for &r in ctx.regions(root).iter().rev() {
            stack.push((r, 0, 0));
        }
        while let Some((r, mut next_value, mut next_arg)) = stack.pop() {
            let blocks = ctx.region_blocks(r);
            for (bi, &b) in blocks.iter().enumerate() {
                self.set_block_name(b, bi as u32);
                for &a in ctx.block_args(b) {
                    let slot = self.name_slot(a);
                    if bi == 0 {
                        *slot = ValueName {
                            number: next_arg,
                            is_arg: true,
                            group_index: u32::MAX,
                        };
                        next_arg += 1;
                    } else {
                        *slot = ValueName {
                            number: next_value,
                            is_arg: false,
                            group_index: u32::MAX,
                        };
                        next_value += 1;
                    }
                }
                for op in ctx.block_ops(b) {
                    self.number_results(op, &mut next_value);
                }
            }
            let mut nested = Vec::new();
            for &b in blocks {
                for op in ctx.block_ops(b) {
                    let isolated = ctx.name(op).has_trait(Traits::ISOLATED_FROM_ABOVE);
                    for &nr in ctx.regions(op) {
                        nested.push((
                            nr,
                            if isolated { 0 } else { next_value },
                            if isolated { 0 } else { next_arg },
                        ));
                    }
                }
            }
            stack.extend(nested.into_iter().rev());
        }
    }

    fn number_results(&mut self, op: OpId, next_value: &mut u32) {
        let results = self.ctx.results(op);
        let n = results.len();
        let number = *next_value;
        for (i, &r) in results.iter().enumerate() {
            *self.name_slot(r) = ValueName {
                number,
                is_arg: false,
                group_index: if n > 1 { i as u32 } else { u32::MAX },
            };
        }
        if n > 0 {
            *next_value += 1;
        }
    }

    /// Writes the name of a value (`%3`, `%3#1`, `%arg0`).
    pub fn write_value(&mut self, v: Value) {
        let i = crate::entity::EntityKey::index(v);
        let name = self.names.get(i).copied().unwrap_or(ValueName {
            number: u32::MAX,
            is_arg: false,
            group_index: u32::MAX,
        });
        if name.number == u32::MAX {
            self.out.push_str("<<UNKNOWN SSA VALUE>>");
            return;
        }
        let _ = write!(
            self.out,
            "%{}{}",
            if name.is_arg { "arg" } else { "" },
            name.number
        );
        if name.group_index != u32::MAX {
            let _ = write!(self.out, "#{}", name.group_index);
        }
    }

    /// Writes a block label (`^bb0`).
    pub fn write_block_name(&mut self, b: BlockId) {
        let i = crate::entity::EntityKey::index(b);
        match self.block_names.get(i) {
            Some(&n) if n != u32::MAX => {
                let _ = write!(self.out, "^bb{n}");
            }
            _ => self.out.push_str("^INVALIDBLOCK"),
        }
    }

    /// Writes a type.
    pub fn write_type(&mut self, t: &Type) {
        write_type(&mut self.out, t, Some(&self.opts));
    }

    /// Writes an attribute, noting resources it refers to.
    pub fn write_attribute(&mut self, a: &Attribute) {
        self.note_resources(a);
        write_attribute(&mut self.out, a, &self.opts);
    }

    fn note_resources(&mut self, a: &Attribute) {
        match a.kind() {
            // Looked up before an owned name is made: most uses are repeats.
            AttrKind::DenseResource { resource, .. }
                if !self.seen_resources.contains(resource.name()) =>
            {
                self.seen_resources.insert(resource.name().to_string());
                self.resources.push(resource.clone());
            }
            AttrKind::Array(items) => {
                for i in items {
                    self.note_resources(i);
                }
            }
            AttrKind::Dictionary(d) => {
                for (_, v) in d.iter() {
                    self.note_resources(v);
                }
            }
            _ => {}
        }
    }

    /// Writes an attribute dictionary, skipping `elide`; nothing if empty.
    pub fn write_optional_attr_dict(&mut self, d: &Dictionary, elide: &[&str]) {
        if d.iter().all(|(k, _)| elide.contains(&k)) {
            return;
        }
        for (_, v) in d.iter() {
            self.note_resources(v);
        }
        self.out.push(' ');
        write_dictionary(&mut self.out, d, elide, &self.opts);
    }

    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    /// Prints an operation (custom form if available and allowed).
    pub fn print_operation(&mut self, op: OpId) {
        let ctx = self.ctx;
        let results = ctx.results(op);
        if !results.is_empty() {
            let n = self
                .names
                .get(crate::entity::EntityKey::index(results[0]))
                .map_or(u32::MAX, |n| n.number);
            let _ = write!(self.out, "%{n}");
            if results.len() > 1 {
                let _ = write!(self.out, ":{}", results.len());
            }
            self.out.push_str(" = ");
        }
        let def = ctx.name(op).def();
        let custom = if self.opts.generic {
            None
        } else {
            def.and_then(|d| d.print)
        };
        let default_dialect = def.and_then(|d| d.default_dialect);
        if let Some(d) = default_dialect {
            self.default_dialects.push(d);
        }
        match custom {
            Some(print) => {
                let name = ctx.name(op);
                let dialect = name.dialect();
                self.custom_start = self.flushed + self.out.len();
                let enclosing = self
                    .default_dialects
                    .len()
                    .checked_sub(1 + default_dialect.is_some() as usize)
                    .map_or("builtin", |i| self.default_dialects[i]);
                // The enclosing op's default dialect (`builtin` at top level) is elided.
                if dialect == enclosing {
                    self.out.push_str(&name.as_str()[dialect.len() + 1..]);
                } else {
                    self.out.push_str(name.as_str());
                }
                let mut p = OpPrinter { printer: self };
                let _ = print(&mut p, op);
            }
            None => self.print_generic_body(op),
        }
        if default_dialect.is_some() {
            self.default_dialects.pop();
        }
        if self.opts.debug_info {
            self.out.push(' ');
            write_location(&mut self.out, ctx.loc(op));
        }
    }

    fn print_generic_body(&mut self, op: OpId) {
        let ctx = self.ctx;
        write_escaped_string(&mut self.out, ctx.name_str(op));
        self.out.push('(');
        for (i, &v) in ctx.operands(op).iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.write_value(v);
        }
        self.out.push(')');
        let succs = ctx.successors(op);
        if !succs.is_empty() {
            self.out.push('[');
            for (i, &b) in succs.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.write_block_name(b);
            }
            self.out.push(']');
        }
        if let Some(p) = ctx.properties(op) {
            self.out.push_str(" <");
            for (_, v) in p.iter() {
                self.note_resources(v);
            }
            write_dictionary(&mut self.out, p, &[], &self.opts);
            self.out.push('>');
        }
        let regions = ctx.regions(op);
        if !regions.is_empty() {
            self.out.push_str(" (");
            for (i, &r) in regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.print_region(r, true);
            }
            self.out.push(')');
        }
        let attrs = ctx.attributes(op);
        self.write_optional_attr_dict(attrs, &[]);
        self.out.push_str(" : (");
        let operand_types: Vec<&Type> = ctx
            .operands(op)
            .iter()
            .map(|&v| ctx.value_type(v))
            .collect();
        for (i, t) in operand_types.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            write_type(&mut self.out, t, Some(&self.opts));
        }
        self.out.push_str(") -> ");
        let result_types: Vec<Type> = ctx.result_types(op);
        write_result_types(&mut self.out, &result_types, &self.opts);
    }

    /// Prints a region `{ ... }`; `print_entry_args`: print the entry block
    /// header when it has arguments.
    pub fn print_region(&mut self, r: RegionId, print_entry_args: bool) {
        let ctx = self.ctx;
        self.out.push('{');
        let blocks = ctx.region_blocks(r);
        for (i, &b) in blocks.iter().enumerate() {
            let has_args = !ctx.block_args(b).is_empty();
            let print_header = i > 0 || (print_entry_args && has_args);
            if print_header {
                self.newline();
                self.write_block_name(b);
                if has_args {
                    self.out.push('(');
                    for (j, &a) in ctx.block_args(b).iter().enumerate() {
                        if j > 0 {
                            self.out.push_str(", ");
                        }
                        self.write_value(a);
                        self.out.push_str(": ");
                        write_type(&mut self.out, ctx.value_type(a), Some(&self.opts));
                        if self.opts.debug_info {
                            if let Some(l) = ctx.value_loc(a) {
                                self.out.push(' ');
                                write_location(&mut self.out, l);
                            }
                        }
                    }
                    self.out.push(')');
                }
                self.out.push(':');
            }
            self.indent += 1;
            for op in ctx.block_ops(b) {
                self.newline();
                self.print_operation(op);
                self.maybe_flush();
            }
            self.indent -= 1;
        }
        self.newline();
        self.out.push('}');
    }

    /// Writes the `dialect_resources` section, the blobs in chunks (each
    /// flushed when streaming).
    fn print_resources(&mut self) {
        let resources = std::mem::take(&mut self.resources);
        let blobs: Vec<&Resource> = resources.iter().filter(|r| r.blob().is_some()).collect();
        if blobs.is_empty() {
            return;
        }
        self.out
            .push_str("\n{-#\n  dialect_resources: {\n    builtin: {\n");
        for (i, r) in blobs.iter().enumerate() {
            let blob = r.blob().expect("filtered");
            self.out.push_str("      ");
            write_keyword_or_string(&mut self.out, r.name());
            self.out.push_str(": \"");
            if self
                .opts
                .elide_resources_if_larger
                .is_some_and(|n| blob.data.len() as u64 > n)
            {
                self.out.push_str("__elided__");
            } else {
                self.out.push_str("0x");
                push_hex(&mut self.out, &blob.alignment.to_le_bytes());
                if self.sink.is_some() {
                    // Straight to the sink, bypassing `out`: no copy and no
                    // UTF-8 check of what is known to be ASCII.
                    self.flush();
                    let sink = self.sink.as_mut().expect("streaming");
                    let mut error = self.sink_error.take();
                    hex_pieces(&blob.data, |digits| {
                        if error.is_none() {
                            error = sink.write_all(digits).err();
                        }
                    });
                    self.sink_error = error;
                    self.flushed += 2 * blob.data.len();
                } else {
                    push_hex(&mut self.out, &blob.data);
                }
            }
            self.out.push('"');
            if i + 1 < blobs.len() {
                self.out.push(',');
            }
            self.out.push('\n');
        }
        self.out.push_str("    }\n  }\n#-}\n");
    }
}

/// The interface custom printers use.
pub struct OpPrinter<'a, 'c> {
    printer: &'a mut AsmPrinter<'c>,
}

impl<'a, 'c> OpPrinter<'a, 'c> {
    /// The context.
    pub fn ctx(&self) -> &Context {
        self.printer.ctx
    }
    /// Appends raw text.
    pub fn write_str(&mut self, s: &str) {
        self.printer.out.push_str(s);
    }
    /// Writes a value name.
    pub fn value(&mut self, v: Value) {
        self.printer.write_value(v);
    }
    /// Writes values separated by `, `.
    pub fn values(&mut self, vs: &[Value]) {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.write_str(", ");
            }
            self.value(v);
        }
    }
    /// Writes a type.
    pub fn ty(&mut self, t: &Type) {
        self.printer.write_type(t);
    }
    /// Writes types separated by `, `.
    pub fn types(&mut self, ts: &[Type]) {
        for (i, t) in ts.iter().enumerate() {
            if i > 0 {
                self.write_str(", ");
            }
            self.ty(t);
        }
    }
    /// Writes ` %a, %b : T, U`: the values, then their types (nothing
    /// when there are none), as `func.return` and
    /// `builtin.unrealized_conversion_cast` print their operands.
    pub fn values_with_types(&mut self, vs: &[Value]) {
        if vs.is_empty() {
            return;
        }
        self.write_str(" ");
        self.values(vs);
        self.write_str(" : ");
        let tys: Vec<Type> = vs
            .iter()
            .map(|&v| self.ctx().value_type(v).clone())
            .collect();
        self.types(&tys);
    }
    /// Writes function result types: `T` or `(T, U)`.
    pub fn result_types(&mut self, ts: &[Type]) {
        write_result_types(&mut self.printer.out, ts, &self.printer.opts);
    }
    /// Writes an attribute.
    pub fn attr(&mut self, a: &Attribute) {
        self.printer.write_attribute(a);
    }
    /// Writes ` {dict}` without the elided names; nothing if empty.
    pub fn attr_dict(&mut self, d: &Dictionary, elide: &[&str]) {
        self.printer.write_optional_attr_dict(d, elide);
    }
    /// [`OpPrinter::attr_dict`] of `attrs` with `props` merged in (a
    /// name in both shows `props`' value), without building the merge.
    pub fn merged_attr_dict(
        &mut self,
        attrs: &Dictionary,
        props: Option<&Dictionary>,
        elide: &[&str],
    ) {
        let entries = merged_entries(attrs, props);
        if entries.clone().all(|(k, _)| elide.contains(&k)) {
            return;
        }
        for (_, v) in entries.clone() {
            self.printer.note_resources(v);
        }
        self.printer.out.push(' ');
        write_dictionary_entries(&mut self.printer.out, entries, elide, &self.printer.opts);
    }
    /// Writes the types of `vs` separated by `, ` (no copies of them).
    pub fn value_types(&mut self, vs: &[Value]) {
        let ctx = self.printer.ctx;
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.write_str(", ");
            }
            self.printer.write_type(ctx.value_type(v));
        }
    }
    /// The context, for as long as the printer (so that what it lends can
    /// be printed).
    pub fn context(&self) -> &'c Context {
        self.printer.ctx
    }
    /// Writes ` attributes {dict}` without the elided names; nothing if empty.
    pub fn attr_dict_with_keyword(&mut self, d: &Dictionary, elide: &[&str]) {
        if d.iter().any(|(k, _)| !elide.contains(&k)) {
            self.write_str(" attributes");
            self.printer.write_optional_attr_dict(d, elide);
        }
    }
    /// Writes `@name`.
    pub fn symbol_name(&mut self, s: &str) {
        write_symbol_name(&mut self.printer.out, s);
    }
    /// Writes a block label.
    pub fn block(&mut self, b: BlockId) {
        self.printer.write_block_name(b);
    }
    /// Writes a region.
    pub fn region(&mut self, r: RegionId, print_entry_args: bool) {
        self.printer.print_region(r, print_entry_args);
    }
    /// Writes a block argument with its type (and location with debug info).
    pub fn block_arg_with_type(&mut self, a: Value) {
        self.value(a);
        self.write_str(": ");
        let t = self.ctx().value_type(a).clone();
        self.ty(&t);
    }
    /// Writes the location of a block argument if debug info is on.
    pub fn arg_location(&mut self, a: Value) {
        if self.printer.opts.debug_info {
            if let Some(l) = self.printer.ctx.value_loc(a) {
                self.printer.out.push(' ');
                write_location(&mut self.printer.out, l);
            }
        }
    }
    /// Writes the generic form of the op (fallback from a custom printer).
    /// Call it before printing any region of the op: a streaming printer
    /// may have written out the text before a nested op's end.
    pub fn generic(&mut self, op: OpId) {
        // Drop the custom op name (and anything printed after it).
        let start = self
            .printer
            .custom_start
            .checked_sub(self.printer.flushed)
            .expect("a custom printer falls back to the generic form before printing its regions");
        self.printer.out.truncate(start);
        self.printer.print_generic_body(op);
    }
}

/// Prints `op` with `opts` (including the resource section).
pub fn print_op(ctx: &Context, op: OpId, opts: &PrintOptions) -> String {
    AsmPrinter::new(ctx, opts.clone()).print_top_level(op)
}

/// Prints `op` with `opts` to `sink`, streaming resource blobs.
pub fn print_op_to(
    ctx: &Context,
    op: OpId,
    opts: &PrintOptions,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    AsmPrinter::new(ctx, opts.clone()).print_top_level_to(op, sink)
}
