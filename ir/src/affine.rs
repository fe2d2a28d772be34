//! Affine maps and integer sets (`affine_map<...>`, `affine_set<...>`).
//!
//! Expressions are kept as written (subtraction is stored as `a + b * -1`, as
//! MLIR does) and printed with MLIR's precedence, so printing is a fixed point.

use std::fmt::{self, Write};
use std::sync::Arc;

/// An affine expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AffineExpr {
    /// `dN`.
    Dim(u32),
    /// `sN`.
    Symbol(u32),
    /// A constant.
    Const(i64),
    /// `a + b`.
    Add(Arc<AffineExpr>, Arc<AffineExpr>),
    /// `a * b`.
    Mul(Arc<AffineExpr>, Arc<AffineExpr>),
    /// `a mod b`.
    Mod(Arc<AffineExpr>, Arc<AffineExpr>),
    /// `a floordiv b`.
    FloorDiv(Arc<AffineExpr>, Arc<AffineExpr>),
    /// `a ceildiv b`.
    CeilDiv(Arc<AffineExpr>, Arc<AffineExpr>),
}

impl AffineExpr {
    /// Evaluates with the given dimension and symbol values.
    pub fn eval(&self, dims: &[i64], syms: &[i64]) -> Option<i64> {
        Some(match self {
            AffineExpr::Dim(i) => *dims.get(*i as usize)?,
            AffineExpr::Symbol(i) => *syms.get(*i as usize)?,
            AffineExpr::Const(c) => *c,
            AffineExpr::Add(a, b) => a.eval(dims, syms)?.checked_add(b.eval(dims, syms)?)?,
            AffineExpr::Mul(a, b) => a.eval(dims, syms)?.checked_mul(b.eval(dims, syms)?)?,
            AffineExpr::Mod(a, b) => a
                .eval(dims, syms)?
                .checked_rem_euclid(b.eval(dims, syms)?)?,
            AffineExpr::FloorDiv(a, b) => {
                let (x, y) = (a.eval(dims, syms)?, b.eval(dims, syms)?);
                floor_div(x, y)?
            }
            AffineExpr::CeilDiv(a, b) => {
                let (x, y) = (a.eval(dims, syms)?, b.eval(dims, syms)?);
                -floor_div(x.checked_neg()?, y)?
            }
        })
    }

    fn precedence(&self) -> u8 {
        match self {
            AffineExpr::Add(..) => 1,
            AffineExpr::Mul(..)
            | AffineExpr::Mod(..)
            | AffineExpr::FloorDiv(..)
            | AffineExpr::CeilDiv(..) => 2,
            _ => 3,
        }
    }

    fn write(&self, out: &mut String, parent_prec: u8) {
        let prec = self.precedence();
        let paren = prec < parent_prec;
        if paren {
            out.push('(');
        }
        match self {
            AffineExpr::Dim(i) => write!(out, "d{i}").unwrap(),
            AffineExpr::Symbol(i) => write!(out, "s{i}").unwrap(),
            AffineExpr::Const(c) => write!(out, "{c}").unwrap(),
            AffineExpr::Add(a, b) => {
                a.write(out, 1);
                // `a + b * -1` prints as `a - b`; `a + -c` as `a - c`.
                match &**b {
                    AffineExpr::Mul(x, y) if **y == AffineExpr::Const(-1) => {
                        out.push_str(" - ");
                        x.write(out, 2);
                    }
                    AffineExpr::Const(c) if *c < 0 && *c != i64::MIN => {
                        write!(out, " - {}", -c).unwrap()
                    }
                    _ => {
                        out.push_str(" + ");
                        b.write(out, 2);
                    }
                }
            }
            AffineExpr::Mul(a, b) => Self::write_binary(out, a, " * ", b),
            AffineExpr::Mod(a, b) => Self::write_binary(out, a, " mod ", b),
            AffineExpr::FloorDiv(a, b) => Self::write_binary(out, a, " floordiv ", b),
            AffineExpr::CeilDiv(a, b) => Self::write_binary(out, a, " ceildiv ", b),
        }
        if paren {
            out.push(')');
        }
    }

    fn write_binary(out: &mut String, a: &AffineExpr, op: &str, b: &AffineExpr) {
        a.write(out, 2);
        out.push_str(op);
        b.write(out, 3);
    }
}

impl fmt::Display for AffineExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s, 0);
        f.write_str(&s)
    }
}

fn write_dims_syms(out: &mut String, num_dims: u32, num_symbols: u32) {
    out.push('(');
    write_ids(out, 'd', num_dims);
    out.push(')');
    if num_symbols > 0 {
        out.push('[');
        write_ids(out, 's', num_symbols);
        out.push(']');
    }
}

/// `{prefix}0, {prefix}1, ...`: `n` dimension or symbol identifiers.
fn write_ids(out: &mut String, prefix: char, n: u32) {
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        write!(out, "{prefix}{i}").unwrap();
    }
}

/// `(d0, d1)[s0] -> (exprs)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffineMap {
    /// Number of dimension identifiers.
    pub num_dims: u32,
    /// Number of symbol identifiers.
    pub num_symbols: u32,
    /// Result expressions.
    pub results: Vec<AffineExpr>,
}

impl AffineMap {
    /// Writes the map body (without `affine_map<...>`).
    pub fn write_body(&self, out: &mut String) {
        write_dims_syms(out, self.num_dims, self.num_symbols);
        out.push_str(" -> (");
        for (i, e) in self.results.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            e.write(out, 0);
        }
        out.push(')');
    }
}

/// `(d0)[s0] : (d0 - s0 >= 0, d0 == 0)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntegerSet {
    /// Number of dimension identifiers.
    pub num_dims: u32,
    /// Number of symbol identifiers.
    pub num_symbols: u32,
    /// Constraints: expression and whether it is an equality (`== 0`) rather than `>= 0`.
    pub constraints: Vec<(AffineExpr, bool)>,
}

impl IntegerSet {
    /// Writes the set body (without `affine_set<...>`).
    pub fn write_body(&self, out: &mut String) {
        write_dims_syms(out, self.num_dims, self.num_symbols);
        out.push_str(" : (");
        for (i, (e, eq)) in self.constraints.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            e.write(out, 0);
            out.push_str(if *eq { " == 0" } else { " >= 0" });
        }
        out.push(')');
    }
}

/// Floor division, `None` on division by zero or overflow.
fn floor_div(x: i64, y: i64) -> Option<i64> {
    let q = x.checked_div(y)?;
    Some(if x % y != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    })
}
