//! Numeric substitution blocks: `[[#%x,VAR:]]`, `[[#VAR+1]]`,
//! `[[#@LINE-2]]`, `[[#add(A,B)]]`, and the legacy `[[@LINE+1]]`.

use crate::variables::Variables;

/// How a numeric value is written in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatKind {
    /// `%u`: unsigned decimal (the default).
    Unsigned,
    /// `%d`: signed decimal.
    Signed,
    /// `%x`: lower-case hexadecimal.
    HexLower,
    /// `%X`: upper-case hexadecimal.
    HexUpper,
}

/// A numeric format: kind, `#` (0x prefix for hex), and `.N` precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// The kind.
    pub kind: FormatKind,
    /// Whether hex values carry a `0x` prefix.
    pub alternate: bool,
    /// Minimum number of digits.
    pub precision: usize,
}

impl Default for Format {
    fn default() -> Self {
        Self {
            kind: FormatKind::Unsigned,
            alternate: false,
            precision: 0,
        }
    }
}

impl Format {
    /// A regex matching any value written in this format.
    pub fn regex(&self) -> String {
        let digits = match self.kind {
            FormatKind::Unsigned | FormatKind::Signed => "[0-9]",
            FormatKind::HexLower => "[0-9a-f]",
            FormatKind::HexUpper => "[0-9A-F]",
        };
        let sign = if self.kind == FormatKind::Signed {
            "-?"
        } else {
            ""
        };
        let prefix = if self.alternate { "0x" } else { "" };
        let count = if self.precision > 0 {
            format!("{{{},}}", self.precision)
        } else {
            "+".to_string()
        };
        format!("{sign}{prefix}{digits}{count}")
    }

    /// Writes `value` in this format.
    pub fn render(&self, value: i128) -> Result<String, String> {
        if value < 0 && self.kind != FormatKind::Signed {
            return Err(format!(
                "unable to represent numeric value {value} in unsigned format"
            ));
        }
        let magnitude = value.unsigned_abs();
        let digits = match self.kind {
            FormatKind::Unsigned | FormatKind::Signed => magnitude.to_string(),
            FormatKind::HexLower => format!("{magnitude:x}"),
            FormatKind::HexUpper => format!("{magnitude:X}"),
        };
        let padded = format!("{digits:0>width$}", width = self.precision);
        let sign = if value < 0 { "-" } else { "" };
        let prefix = if self.alternate { "0x" } else { "" };
        Ok(format!("{sign}{prefix}{padded}"))
    }

    /// Reads a value matched by [`Format::regex`].
    pub fn parse(&self, text: &str) -> Option<i128> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let rest = if self.alternate {
            rest.strip_prefix("0x")?
        } else {
            rest
        };
        let radix = match self.kind {
            FormatKind::Unsigned | FormatKind::Signed => 10,
            FormatKind::HexLower | FormatKind::HexUpper => 16,
        };
        let magnitude = i128::from_str_radix(rest, radix).ok()?;
        Some(if negative { -magnitude } else { magnitude })
    }
}

/// A numeric expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// An integer literal.
    Literal(i128),
    /// A numeric variable; `offset` locates it in the check file.
    Var {
        /// Variable name.
        name: String,
        /// Byte offset of the name in its buffer.
        offset: usize,
    },
    /// `@LINE`: the check directive's own line number.
    Line,
    /// A call of `add`, `sub`, `mul`, `div`, `max` or `min` (also `+`/`-`).
    Call(Function, Box<Expr>, Box<Expr>),
}

/// Binary functions of numeric expressions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// Addition.
    Add,
    /// Subtraction.
    Sub,
    /// Multiplication.
    Mul,
    /// Division (error on zero).
    Div,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// A variable without a value; the offset of its use.
    Undefined(String, usize),
    /// Overflow or division by zero.
    Arithmetic(String),
}

impl Expr {
    /// Evaluates the expression. Returns the value and the format implied by
    /// the variables it reads (if any).
    pub fn eval(&self, vars: &Variables, line: usize) -> Result<(i128, Option<Format>), EvalError> {
        match self {
            Expr::Literal(v) => Ok((*v, None)),
            Expr::Line => Ok((line as i128, None)),
            Expr::Var { name, offset } => match vars.numeric(name) {
                Some((v, f)) => Ok((v, Some(f))),
                None => Err(EvalError::Undefined(name.clone(), *offset)),
            },
            Expr::Call(f, a, b) => {
                let (a, fa) = a.eval(vars, line)?;
                let (b, fb) = b.eval(vars, line)?;
                let overflow = || EvalError::Arithmetic("overflow error".into());
                let v = match f {
                    Function::Add => a.checked_add(b).ok_or_else(overflow)?,
                    Function::Sub => a.checked_sub(b).ok_or_else(overflow)?,
                    Function::Mul => a.checked_mul(b).ok_or_else(overflow)?,
                    Function::Div => {
                        if b == 0 {
                            return Err(EvalError::Arithmetic("division by zero".into()));
                        }
                        a / b
                    }
                    Function::Max => a.max(b),
                    Function::Min => a.min(b),
                };
                Ok((v, fa.or(fb)))
            }
        }
    }

    /// Whether the expression reads variable `name`.
    pub fn uses(&self, name: &str) -> bool {
        match self {
            Expr::Var { name: n, .. } => n == name,
            Expr::Call(_, a, b) => a.uses(name) || b.uses(name),
            _ => false,
        }
    }
}

/// A parsed `[[#...]]` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumericBlock {
    /// Explicit format (`%x,`).
    pub format: Option<Format>,
    /// Variable defined by the block (`VAR:`).
    pub def: Option<String>,
    /// The expression to match (absent for a bare definition).
    pub expr: Option<Expr>,
}

/// A parse error: byte offset (absolute) and message.
pub type ParseError = (usize, String);

/// Parses the body of `[[#...]]` (without `#`); `base` is the absolute offset
/// of `body` in its buffer.
pub fn parse_block(body: &str, base: usize) -> Result<NumericBlock, ParseError> {
    let mut p = Parser {
        s: body,
        pos: 0,
        base,
    };
    p.skip_ws();
    let mut format = None;
    if p.peek() == Some('%') {
        format = Some(p.format()?);
        p.skip_ws();
        if !p.eat(',') {
            return Err(p.error("invalid matching format specification in expression"));
        }
    }
    p.skip_ws();
    // A definition is `NAME:` (a `:` after the first identifier).
    let mut def = None;
    if let Some(colon) = body[p.pos..].find(':') {
        let name = body[p.pos..p.pos + colon].trim();
        if !is_identifier(name) {
            return Err((base + p.pos, "invalid variable name".into()));
        }
        def = Some(name.to_string());
        p.pos += colon + 1;
    }
    p.skip_ws();
    if p.s[p.pos..].starts_with("==") {
        p.pos += 2;
        p.skip_ws();
    }
    let expr = if p.at_end() {
        None
    } else {
        let e = p.expr()?;
        p.skip_ws();
        if !p.at_end() {
            return Err(p.error(&format!(
                "unexpected characters at end of expression '{}'",
                &p.s[p.pos..]
            )));
        }
        Some(e)
    };
    if def.is_none() && expr.is_none() {
        return Err((
            base,
            "empty numeric expression should be followed by a definition".into(),
        ));
    }
    Ok(NumericBlock { format, def, expr })
}

/// Parses a legacy `@LINE`, `@LINE+N` or `@LINE-N` expression.
pub fn parse_legacy_line(body: &str, base: usize) -> Result<Expr, ParseError> {
    let rest = body
        .strip_prefix("@LINE")
        .ok_or((base, "invalid pseudo variable".to_string()))?;
    if rest.is_empty() {
        return Ok(Expr::Line);
    }
    let (f, digits) = match rest.as_bytes()[0] {
        b'+' => (Function::Add, &rest[1..]),
        b'-' => (Function::Sub, &rest[1..]),
        _ => {
            return Err((
                base + 5,
                format!("unexpected characters at end of expression '{rest}'"),
            ))
        }
    };
    let n: i128 = digits.parse().map_err(|_| {
        (
            base + 6,
            format!("invalid offset in @LINE expression '{digits}'"),
        )
    })?;
    Ok(Expr::Call(
        f,
        Box::new(Expr::Line),
        Box::new(Expr::Literal(n)),
    ))
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    base: usize,
}

impl Parser<'_> {
    fn error(&self, msg: &str) -> ParseError {
        (self.base + self.pos, msg.to_string())
    }
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn format(&mut self) -> Result<Format, ParseError> {
        self.eat('%');
        let mut f = Format::default();
        if self.eat('#') {
            f.alternate = true;
        }
        if self.eat('.') {
            let start = self.pos;
            while matches!(self.peek(), Some('0'..='9')) {
                self.pos += 1;
            }
            f.precision = self.s[start..self.pos].parse().map_err(|_| {
                (
                    self.base + start,
                    "invalid precision in format specifier".to_string(),
                )
            })?;
        }
        f.kind = match self.peek() {
            Some('u') => FormatKind::Unsigned,
            Some('d') => FormatKind::Signed,
            Some('x') => FormatKind::HexLower,
            Some('X') => FormatKind::HexUpper,
            _ => return Err(self.error("invalid format specifier in expression")),
        };
        self.pos += 1;
        if f.alternate && matches!(f.kind, FormatKind::Unsigned | FormatKind::Signed) {
            return Err(self.error("alternate form only supported for hex values"));
        }
        Ok(f)
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.operand()?;
        loop {
            self.skip_ws();
            let f = match self.peek() {
                Some('+') => Function::Add,
                Some('-') => Function::Sub,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            self.skip_ws();
            let rhs = self.operand()?;
            lhs = Expr::Call(f, Box::new(lhs), Box::new(rhs));
        }
    }

    fn operand(&mut self) -> Result<Expr, ParseError> {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                let e = self.expr()?;
                self.skip_ws();
                if !self.eat(')') {
                    return Err(self.error("missing ')' at end of nested expression"));
                }
                Ok(e)
            }
            Some('@') => {
                if self.s[self.pos..].starts_with("@LINE") {
                    self.pos += 5;
                    Ok(Expr::Line)
                } else {
                    Err(self.error("invalid pseudo numeric variable"))
                }
            }
            Some('-') | Some('0'..='9') => {
                let negative = self.eat('-');
                let digits_start = self.pos;
                let radix = if self.s[self.pos..].starts_with("0x") {
                    self.pos += 2;
                    16
                } else {
                    10
                };
                let num_start = self.pos;
                while self.peek().is_some_and(|c| c.is_digit(radix)) {
                    self.pos += 1;
                }
                let v =
                    i128::from_str_radix(&self.s[num_start..self.pos], radix).map_err(|_| {
                        (
                            self.base + digits_start,
                            "invalid operand format".to_string(),
                        )
                    })?;
                Ok(Expr::Literal(if negative { -v } else { v }))
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                let name = &self.s[start..self.pos];
                self.skip_ws();
                if self.peek() == Some('(') {
                    return self.call(name, start);
                }
                Ok(Expr::Var {
                    name: name.to_string(),
                    offset: self.base + start,
                })
            }
            _ => Err(self.error("invalid operand format")),
        }
    }

    fn call(&mut self, name: &str, start: usize) -> Result<Expr, ParseError> {
        let f = match name {
            "add" => Function::Add,
            "sub" => Function::Sub,
            "mul" => Function::Mul,
            "div" => Function::Div,
            "max" => Function::Max,
            "min" => Function::Min,
            _ => {
                return Err((
                    self.base + start,
                    format!("call to undefined function '{name}'"),
                ))
            }
        };
        self.eat('(');
        let a = self.expr()?;
        self.skip_ws();
        if !self.eat(',') {
            return Err(self.error(&format!("function '{name}' takes 2 arguments")));
        }
        let b = self.expr()?;
        self.skip_ws();
        if !self.eat(')') {
            return Err(self.error("missing ')' at end of call expression"));
        }
        Ok(Expr::Call(f, Box::new(a), Box::new(b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_definitions_and_expressions() {
        let b = parse_block("%x,ADDR:", 0).unwrap();
        assert_eq!(b.def.as_deref(), Some("ADDR"));
        assert_eq!(b.format.unwrap().kind, FormatKind::HexLower);
        assert!(b.expr.is_none());
        let b = parse_block("N+1", 0).unwrap();
        assert!(b.def.is_none());
        assert!(b.expr.unwrap().uses("N"));
        assert!(parse_block("", 0).is_err());
        assert!(parse_block("foo(1,2)", 0).is_err());
    }

    #[test]
    fn evaluates_and_formats() {
        let mut vars = Variables::default();
        vars.set_numeric("N", 41, Format::default());
        let e = parse_block("add(N, 1) - @LINE", 0).unwrap().expr.unwrap();
        assert_eq!(e.eval(&vars, 2).unwrap().0, 40);
        let hex = Format {
            kind: FormatKind::HexUpper,
            alternate: true,
            precision: 4,
        };
        assert_eq!(hex.render(255).unwrap(), "0x00FF");
        assert_eq!(hex.parse("0x00FF"), Some(255));
        assert!(Format::default().render(-1).is_err());
    }
}
