//! Types and attributes a dialect defines (`!dialect.mnemonic<params>`,
//! `#dialect.mnemonic<params>`), declared once as Rust types, like ops.
//!
//! A definition is a Rust type implementing [`SymbolParams`] (it names its
//! dialect and mnemonic, parses, prints and verifies its parameters) and
//! then [`TypeDef`] or [`AttrDef`], whose methods all have defaults. Registering it (`Dialect::type_def::<T>()`) makes the
//! parser check every `!dialect.mnemonic<...>` it reads against it (errors
//! point at the type in the source) and store the parameters in canonical
//! form, so equal parameters give equal IR types however they were spelled.
//! `T::from_type(&ty)` is the typed view of an IR type; `t.to_type()` builds
//! one.
//!
//! ```
//! use ipuc_ir::dialect_symbols::{split_params, ParamError, SymbolParams, TypeDef};
//! use ipuc_ir::Type;
//!
//! /// `!demo.vec<N>`: N > 0 lanes.
//! #[derive(Clone, Debug, PartialEq)]
//! struct Lanes(u32);
//! impl SymbolParams for Lanes {
//!     const DIALECT: &'static str = "demo";
//!     const MNEMONIC: &'static str = "vec";
//!     fn parse_params(params: &str) -> Result<Self, ParamError> {
//!         let [n] = split_params(params)[..] else {
//!             return Err(ParamError::Count { expected: "one parameter (a lane count)", found: split_params(params).len() });
//!         };
//!         n.parse().map(Lanes).map_err(|_| ParamError::invalid(format!("expected a lane count, found '{n}'")))
//!     }
//!     fn print_params(&self, out: &mut String) {
//!         out.push_str(&self.0.to_string());
//!     }
//!     fn verify(&self) -> Result<(), ParamError> {
//!         if self.0 == 0 { Err(ParamError::invalid("a vector needs at least one lane")) } else { Ok(()) }
//!     }
//! }
//! impl TypeDef for Lanes {}
//! let t = Lanes(4).to_type();
//! assert_eq!(Lanes::from_type(&t), Some(Lanes(4)));
//! ```

use std::sync::Arc;

use crate::attributes::{AttrKind, Attribute};
use crate::dialect::DialectRegistry;
use crate::types::{Type, TypeKind};
use crate::Context;

/// Why a dialect type's or attribute's parameters were refused (MLIR's
/// `getChecked` with its `emitError`): the parser renders it at the
/// symbol's location in the source.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The wrong number of parameters.
    #[error("expected {expected}, found {found}")]
    Count {
        /// What the symbol takes (`"2 parameters (lo, hi)"`).
        expected: &'static str,
        /// How many were written.
        found: usize,
    },
    /// A parameter that does not parse as a builtin attribute or type.
    #[error("invalid parameter '{text}' at '{rest}'")]
    Syntax {
        /// The parameter.
        text: String,
        /// Its text from the first character that does not parse.
        rest: String,
    },
    /// A parameter that should be a type is another attribute.
    #[error("expected a type, found '{0}'")]
    NotAType(String),
    /// A parameter spanning lines.
    #[error("a parameter must be on one line")]
    MultiLine,
    /// A value the dialect refuses; the text says what is allowed.
    #[error("{0}")]
    Invalid(String),
}

impl ParamError {
    /// A dialect-specific refusal.
    pub fn invalid(message: impl Into<String>) -> ParamError {
        ParamError::Invalid(message.into())
    }
}

/// What dialect types and attributes have in common: a name and
/// parameters that parse, print and verify.
pub trait SymbolParams: Sized {
    /// The dialect namespace.
    const DIALECT: &'static str;
    /// The mnemonic after the dot.
    const MNEMONIC: &'static str;
    /// Parses the parameter text between `<` and `>` (empty when written
    /// without them). The error says what is wrong; the parser reports it
    /// at the symbol's location.
    fn parse_params(params: &str) -> Result<Self, ParamError>;
    /// Writes the parameters, without `<>`, such that `parse_params` reads
    /// them back; nothing when there are none.
    fn print_params(&self, out: &mut String);
    /// Invariants beyond syntax.
    fn verify(&self) -> Result<(), ParamError> {
        Ok(())
    }
    /// The parameters as printed.
    fn params_text(&self) -> String {
        let mut out = String::new();
        self.print_params(&mut out);
        out
    }
    /// The typed view of a dialect symbol's parts, if they name this one.
    fn from_parts(dialect: &str, mnemonic: Option<&str>, body: &str) -> Option<Self> {
        (dialect == Self::DIALECT && mnemonic == Some(Self::MNEMONIC))
            .then(|| Self::parse_params(body).ok())
            .flatten()
    }
}

/// A type a dialect defines, `!DIALECT.MNEMONIC<params>`.
pub trait TypeDef: SymbolParams {
    /// The IR type.
    fn to_type(&self) -> Type {
        Type::new(TypeKind::Dialect {
            dialect: Self::DIALECT.into(),
            mnemonic: Some(Self::MNEMONIC.into()),
            body: self.params_text().into(),
        })
    }
    /// The typed view of `t`, if `t` is this type.
    fn from_type(t: &Type) -> Option<Self> {
        match t.kind() {
            TypeKind::Dialect {
                dialect,
                mnemonic,
                body,
            } => Self::from_parts(dialect, mnemonic.as_deref(), body),
            _ => None,
        }
    }
}

/// An attribute a dialect defines, `#DIALECT.MNEMONIC<params>`.
pub trait AttrDef: SymbolParams {
    /// The IR attribute.
    fn to_attr(&self) -> Attribute {
        Attribute::new(AttrKind::Dialect {
            dialect: Self::DIALECT.into(),
            mnemonic: Some(Self::MNEMONIC.into()),
            body: self.params_text().into(),
        })
    }
    /// The typed view of `a`, if `a` is this attribute.
    fn from_attr(a: &Attribute) -> Option<Self> {
        match a.kind() {
            AttrKind::Dialect {
                dialect,
                mnemonic,
                body,
            } => Self::from_parts(dialect, mnemonic.as_deref(), body),
            _ => None,
        }
    }
}

/// Checks parameter text and returns it in canonical spelling.
pub type NormalizeFn = fn(&str) -> Result<String, ParamError>;

/// A registered type or attribute mnemonic.
#[derive(Clone, Copy, Debug)]
pub struct SymbolDef {
    /// The mnemonic.
    pub mnemonic: &'static str,
    /// Parses, verifies and re-prints the parameters.
    pub normalize: NormalizeFn,
}

impl SymbolDef {
    /// The definition of type `T`.
    pub fn of_type<T: TypeDef>() -> SymbolDef {
        SymbolDef {
            mnemonic: T::MNEMONIC,
            normalize: normalize::<T>,
        }
    }
    /// The definition of attribute `A`.
    pub fn of_attr<A: AttrDef>() -> SymbolDef {
        SymbolDef {
            mnemonic: A::MNEMONIC,
            normalize: normalize::<A>,
        }
    }
}

fn normalize<T: SymbolParams>(params: &str) -> Result<String, ParamError> {
    let t = T::parse_params(params)?;
    t.verify()?;
    Ok(t.params_text())
}

/// Splits parameter text at top-level commas (outside brackets and
/// strings), trimming blanks; empty text gives no parameters.
pub fn split_params(params: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = params.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = crate::parser::closing_quote(bytes, i),
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if !(i > 0 && bytes[i - 1] == b'-') => depth -= 1,
            b',' if depth == 0 => {
                out.push(params[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = params[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// Parses a builtin type from text (a parameter of a dialect type). Dialect
/// types inside it are kept opaque.
pub fn parse_type(text: &str) -> Result<Type, ParamError> {
    parse_attribute(text)?
        .as_type()
        .cloned()
        .ok_or_else(|| ParamError::NotAType(text.to_string()))
}

/// Parses an attribute from text (a parameter of a dialect symbol).
pub fn parse_attribute(text: &str) -> Result<Attribute, ParamError> {
    if text.contains('\n') {
        return Err(ParamError::MultiLine);
    }
    let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
    ctx.allow_unregistered = true;
    const PREFIX: &str = "\"p.p\"() {p = ";
    let src = format!("{PREFIX}{text}}} : () -> ()\n");
    let parsed = crate::parse_source(&mut ctx, "param", &src).map_err(|d| {
        // Columns are 1-based; the parameter starts after the prefix.
        let col = d.loc.file_line_col_of().map_or(0, |(_, _, c)| c as usize);
        let at = col.saturating_sub(PREFIX.len() + 1).min(text.len());
        ParamError::Syntax {
            text: text.to_string(),
            rest: text[at..].to_string(),
        }
    })?;
    let mut found = None;
    ctx.walk(parsed.module, crate::WalkOrder::PreOrder, &mut |c, o| {
        if c.name_str(o) == "p.p" {
            found = c.attributes(o).get("p").cloned();
        }
    });
    found.ok_or_else(|| ParamError::Syntax {
        text: text.to_string(),
        rest: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_split_at_top_level_commas() {
        assert_eq!(split_params(""), Vec::<&str>::new());
        assert_eq!(split_params(" i32 "), vec!["i32"]);
        assert_eq!(
            split_params("tensor<2x3xf32>, (i32, i8) -> i1, \"a,b\", [1, 2]"),
            vec!["tensor<2x3xf32>", "(i32, i8) -> i1", "\"a,b\"", "[1, 2]"]
        );
        assert_eq!(split_params("a,"), vec!["a", ""]);
    }

    #[test]
    fn parameters_parse_as_builtin_types_and_attributes() {
        assert_eq!(parse_type("i32").unwrap(), Type::i32());
        assert!(parse_type("tensor<2x?xf16>").is_ok());
        assert!(parse_type("!other.t<1>").is_ok());
        assert_eq!(
            parse_type("i32x").unwrap_err().to_string(),
            "invalid parameter 'i32x' at 'i32x'"
        );
        assert_eq!(
            parse_type("1 : i32").unwrap_err(),
            ParamError::NotAType("1 : i32".into())
        );
        assert_eq!(parse_attribute("7 : i8").unwrap().as_int(), Some(7));
        assert!(parse_attribute("i32\nx").is_err());
    }
}
