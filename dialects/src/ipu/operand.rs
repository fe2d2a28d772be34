//! Instruction and directive operands of the `ipu` dialect, as structured
//! attributes that passes can inspect.
//!
//! | operand | attribute | custom form | assembly |
//! |---|---|---|---|
//! | register (group, post-increment) | `#ipu.reg<a0:1>`, `#ipu.reg<m2+=>` | `a0:1`, `m2+=` | `$a0:1`, `$m2+=` |
//! | control register | `#ipu.csr<INCOMING_MUX>` | `INCOMING_MUX` | `$INCOMING_MUX` |
//! | immediate | `5`, `-3` (i64) | `5`, `0x70000` | `5`, `0x70000` |
//! | symbol (label or assembler constant) | `@loop` | `@loop` | `loop` |
//! | assembler expression | `"(end - start) / 8 - 1"` | the same string | its text |
//! | symbol kind of `.type` | `#ipu.at<function>` | the same attribute | `@function` |
//!
//! In the custom form a bare word is a `$` name of the assembler: a register
//! when it is spelled like one ([`is_register_name`]), else a control
//! register. Which registers and control registers exist, and which operand
//! kinds an instruction takes, is the ISA's business (backend-ipu's
//! `ipu-verify-isa`); the dialect only checks the spelling.

use std::fmt;

use ipuc_ir::attributes::{AttrKind, Attribute};

/// Whether `name` is spelled like a tile register (`m0`..`m15`, `a0`..`a15`
/// or an ABI alias such as `mzero`, `sp`, `mvertex_base`): the target's own
/// register table decides.
pub fn is_register_name(name: &str) -> bool {
    ipuc_ipu_arch::registers::parse_register(name).is_some()
}

/// Why an operand's text or attribute is not an operand. Callers render
/// it at the location of the text they read (the attribute in the IR, the
/// operand in an assembly file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    /// A register group's last number that is not a register number.
    #[error("`{last}` in register `{text}` is not a register number below 16")]
    RegisterNumber {
        /// The number as written.
        last: String,
        /// The whole register text.
        text: String,
    },
    /// A name that is no register of the target.
    #[error("`{0}` is not a register name (expected m0..m15, a0..a15 or an alias such as mzero, azeros, sp, mvertex_base)")]
    NotARegister(String),
    /// A `$` name spelled neither as a register nor as a control register.
    #[error("`{0}` is neither a register nor a control register")]
    NotADollarName(String),
    /// A name that cannot be a control register.
    #[error("`{0}` is not a control register name")]
    NotAControlRegister(String),
    /// A name that cannot be a symbol kind.
    #[error("`{0}` is not a symbol kind such as `function`")]
    NotASymbolKind(String),
    /// An immediate outside `i64`.
    #[error("immediate {0} does not fit in 64 bits")]
    ImmediateRange(i128),
    /// An empty operand or expression.
    #[error("an operand may not be empty")]
    Empty,
    /// An expression with characters that would split the statement.
    #[error("expression \"{0}\" may not contain newlines, `,`, `;` or braces")]
    ExpressionCharacters(String),
    /// An `ipu` attribute that is no operand.
    #[error("`#ipu.{mnemonic}<{body}>` is not an operand")]
    NotAnOperandAttribute {
        /// Its mnemonic.
        mnemonic: String,
        /// Its parameters.
        body: String,
    },
    /// Any other attribute.
    #[error("expected a register (#ipu.reg<..>), control register (#ipu.csr<..>), integer, symbol (@name), expression string or #ipu.at<..>")]
    NotAnOperand,
}

impl From<OperandError> for ipuc_ir::dialect_symbols::ParamError {
    fn from(e: OperandError) -> Self {
        ipuc_ir::dialect_symbols::ParamError::invalid(e.to_string())
    }
}

/// A register operand: `$m0`, a group `$a0:3`, or post-incremented `$m2+=`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Register {
    /// The register name without `$` (`m0`, `a4`, `mzero`).
    pub name: String,
    /// The last register number of a group (`$a0:3` has 3).
    pub last: Option<u8>,
    /// Whether the register is post-incremented by the instruction (`+=`).
    pub inc: bool,
}

impl Register {
    /// Parses the attribute body / custom text `m2`, `a0:1`, `m0:1+=`.
    pub fn parse(text: &str) -> Result<Register, OperandError> {
        let (rest, inc) = match text.strip_suffix("+=") {
            Some(r) => (r, true),
            None => (text, false),
        };
        let (name, last) = match rest.split_once(':') {
            Some((n, l)) => {
                let last: u8 = l.parse().ok().filter(|&v| v < 16).ok_or_else(|| {
                    OperandError::RegisterNumber {
                        last: l.to_string(),
                        text: text.to_string(),
                    }
                })?;
                (n, Some(last))
            }
            None => (rest, None),
        };
        if !is_register_name(name) {
            return Err(OperandError::NotARegister(name.to_string()));
        }
        Ok(Register {
            name: name.to_string(),
            last,
            inc,
        })
    }
}

impl fmt::Display for Register {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(l) = self.last {
            write!(f, ":{l}")?;
        }
        if self.inc {
            f.write_str("+=")?;
        }
        Ok(())
    }
}

/// One operand of an `ipu.inst` or `ipu.directive`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A register or register group.
    Reg(Register),
    /// A control register by name (without `$`).
    Csr(String),
    /// An integer.
    Imm(i64),
    /// A label or named assembler constant.
    Symbol(String),
    /// An assembler expression kept as text (`(end - start) / 8 - 1`).
    Expr(String),
    /// A symbol kind (`@function` in `.type f, @function`).
    At(String),
}

/// Whether `s` is a plain identifier of the assembler (letters, digits, `_`, `.`, `$`).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '.')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
}

/// An immediate as it is printed in the custom form and in assembly: decimal,
/// or hexadecimal from 0x1000 up (addresses read better in hex).
pub fn format_imm(v: i64) -> String {
    if v >= 0x1000 {
        format!("0x{v:x}")
    } else {
        v.to_string()
    }
}

impl Operand {
    /// The structured view of an operand attribute.
    pub fn from_attr(a: &Attribute) -> Result<Operand, OperandError> {
        match a.kind() {
            AttrKind::Integer { value, .. } => i64::try_from(*value)
                .map(Operand::Imm)
                .map_err(|_| OperandError::ImmediateRange(*value)),
            AttrKind::SymbolRef { root, nested } if nested.is_empty() => {
                Ok(Operand::Symbol(root.to_string()))
            }
            AttrKind::String { value, ty: None } => {
                if value.trim().is_empty() {
                    Err(OperandError::Empty)
                } else if value.contains(['\n', ',', ';', '{', '}']) {
                    Err(OperandError::ExpressionCharacters(value.to_string()))
                } else {
                    Ok(Operand::Expr(value.to_string()))
                }
            }
            AttrKind::Dialect {
                dialect,
                mnemonic: Some(m),
                body,
            } if dialect.as_ref() == "ipu" => match m.as_ref() {
                "reg" => Register::parse(body).map(Operand::Reg),
                "csr" if is_identifier(body) && !is_register_name(body) => {
                    Ok(Operand::Csr(body.to_string()))
                }
                "at" if is_identifier(body) => Ok(Operand::At(body.to_string())),
                _ => Err(OperandError::NotAnOperandAttribute {
                    mnemonic: m.to_string(),
                    body: body.to_string(),
                }),
            },
            _ => Err(OperandError::NotAnOperand),
        }
    }

    /// The array attribute of `operands` (as `ipu.inst` and `ipu.directive`
    /// hold their operand lists).
    pub fn list_attr(operands: &[Operand]) -> Attribute {
        Attribute::array(operands.iter().map(Operand::to_attr).collect())
    }
    /// The attribute that stores this operand.
    pub fn to_attr(&self) -> Attribute {
        let dialect = |m: &str, body: String| {
            Attribute::new(AttrKind::Dialect {
                dialect: "ipu".into(),
                mnemonic: Some(m.into()),
                body: body.into(),
            })
        };
        match self {
            Operand::Reg(r) => dialect("reg", r.to_string()),
            Operand::Csr(n) => dialect("csr", n.clone()),
            Operand::Imm(v) => Attribute::i64(*v),
            Operand::Symbol(s) => Attribute::symbol_ref(s),
            Operand::Expr(e) => Attribute::string(e),
            Operand::At(n) => dialect("at", n.clone()),
        }
    }

    /// The operand in Graphcore assembler syntax.
    pub fn asm_text(&self) -> String {
        match self {
            Operand::Reg(r) => format!("${r}"),
            Operand::Csr(n) => format!("${n}"),
            Operand::Imm(v) => format_imm(*v),
            Operand::Symbol(s) => s.clone(),
            Operand::Expr(e) => e.clone(),
            Operand::At(n) => format!("@{n}"),
        }
    }

    /// Reads one operand written in assembler syntax (the inverse of
    /// [`Operand::asm_text`]): `$` names, integers, identifiers, `@kind`, and
    /// anything else as an expression.
    pub fn from_asm(text: &str) -> Result<Operand, OperandError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(OperandError::Empty);
        }
        if let Some(name) = t.strip_prefix('$') {
            let base = name.split([':', '+']).next().unwrap_or("");
            if is_register_name(base) {
                return Register::parse(name).map(Operand::Reg);
            }
            if is_identifier(name) {
                return Ok(Operand::Csr(name.to_string()));
            }
            return Err(OperandError::NotADollarName(t.to_string()));
        }
        if let Some(kind) = t.strip_prefix('@') {
            if is_identifier(kind) {
                return Ok(Operand::At(kind.to_string()));
            }
        }
        if let Some(v) = parse_int(t) {
            return Ok(Operand::Imm(v));
        }
        if is_identifier(t) && t != "." {
            return Ok(Operand::Symbol(t.to_string()));
        }
        Ok(Operand::Expr(t.to_string()))
    }
}

/// A decimal or `0x` hexadecimal integer, optionally negative.
fn parse_int(t: &str) -> Option<i64> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t),
    };
    let v = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(h, 16).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -v } else { v })
}

/// Verifies the body of an `#ipu.reg<..>` attribute.
pub fn verify_reg_body(body: &str) -> Result<(), OperandError> {
    Register::parse(body).map(|_| ())
}

/// Verifies the body of an `#ipu.csr<..>` attribute.
pub fn verify_csr_body(body: &str) -> Result<(), OperandError> {
    if is_identifier(body) && !is_register_name(body) {
        Ok(())
    } else {
        Err(OperandError::NotAControlRegister(body.to_string()))
    }
}

/// Verifies the body of an `#ipu.at<..>` attribute.
pub fn verify_at_body(body: &str) -> Result<(), OperandError> {
    if is_identifier(body) {
        Ok(())
    } else {
        Err(OperandError::NotASymbolKind(body.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembler_operands_read_back_from_their_text() {
        for text in [
            "$m0",
            "$a0:1",
            "$m2+=",
            "$m0:1+=",
            "$mzero",
            "$azeros",
            "$INCOMING_MUX",
            "5",
            "-3",
            "0x70000",
            "loop",
            ".Lend",
            "@function",
            "(end - start) / 8 - 1",
        ] {
            let op = Operand::from_asm(text).unwrap();
            assert_eq!(op.asm_text(), text, "{op:?}");
            assert_eq!(Operand::from_attr(&op.to_attr()).unwrap(), op);
        }
    }

    #[test]
    fn register_spelling_is_checked() {
        assert!(is_register_name("m15") && is_register_name("a0") && is_register_name("sp"));
        assert!(!is_register_name("m16") && !is_register_name("m01") && !is_register_name("TAS"));
        assert!(Register::parse("a0:16")
            .unwrap_err()
            .to_string()
            .contains("below 16"));
        assert_eq!(
            Register::parse("q1").unwrap_err(),
            OperandError::NotARegister("q1".into())
        );
        assert!(Operand::from_asm("$1x").is_err());
        assert_eq!(
            Operand::from_asm("$TAS").unwrap(),
            Operand::Csr("TAS".into())
        );
    }
}
