//! Test features and the boolean feature expressions of `REQUIRES:`,
//! `UNSUPPORTED:` and `XFAIL:` (`a && !b || (c)`, as in LLVM lit).

use std::collections::BTreeSet;
use std::path::Path;

/// The features available to tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features(BTreeSet<String>);

impl Features {
    /// Features detected on this machine: `mlir-opt` when `mlir-opt-22` is
    /// on PATH, `filecheck-llvm` when `FileCheck-22` is, `upstream-mlir`
    /// when the tools link upstream MLIR (the `mlir` feature).
    pub fn detect() -> Self {
        let mut f = Self::default();
        if cfg!(feature = "mlir") {
            f.insert("upstream-mlir");
        }
        if on_path("mlir-opt-22") {
            f.insert("mlir-opt");
        }
        if on_path("FileCheck-22") {
            f.insert("filecheck-llvm");
        }
        f
    }

    /// Adds a feature.
    pub fn insert(&mut self, name: &str) {
        self.0.insert(name.to_string());
    }

    /// Whether `name` is available.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// The features, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Evaluates a feature expression; `*` is true.
    pub fn eval(&self, expr: &str) -> Result<bool, String> {
        if expr.trim() == "*" {
            return Ok(true);
        }
        let tokens = tokenize(expr)?;
        let mut p = ExprParser {
            tokens: &tokens,
            pos: 0,
            features: self,
        };
        let v = p.or()?;
        if p.pos != tokens.len() {
            return Err(format!(
                "unexpected '{}' in feature expression '{expr}'",
                tokens[p.pos]
            ));
        }
        Ok(v)
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program)))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn tokenize(expr: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut chars = expr.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            ' ' | '\t' => {
                chars.next();
            }
            '(' | ')' | '!' => {
                tokens.push(c.to_string());
                chars.next();
            }
            '&' | '|' => {
                chars.next();
                if chars.next() != Some(c) {
                    return Err(format!("expected '{c}{c}' in feature expression '{expr}'"));
                }
                tokens.push(format!("{c}{c}"));
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_alphanumeric() || "-_.=+/:*".contains(c) {
                        word.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if word.is_empty() {
                    return Err(format!("unexpected '{c}' in feature expression '{expr}'"));
                }
                tokens.push(word);
            }
        }
    }
    if tokens.is_empty() {
        return Err("empty feature expression".into());
    }
    Ok(tokens)
}

struct ExprParser<'a> {
    tokens: &'a [String],
    pos: usize,
    features: &'a Features,
}

impl<'a> ExprParser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.tokens.get(self.pos).map(String::as_str)
    }
    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.peek() == Some("||") {
            self.pos += 1;
            v |= self.and()?;
        }
        Ok(v)
    }
    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.not()?;
        while self.peek() == Some("&&") {
            self.pos += 1;
            v &= self.not()?;
        }
        Ok(v)
    }
    fn not(&mut self) -> Result<bool, String> {
        match self.peek() {
            Some("!") => {
                self.pos += 1;
                Ok(!self.not()?)
            }
            Some("(") => {
                self.pos += 1;
                let v = self.or()?;
                if self.peek() != Some(")") {
                    return Err("missing ')' in feature expression".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(t) if !matches!(t, ")" | "&&" | "||") => {
                self.pos += 1;
                Ok(self.features.contains(t))
            }
            other => Err(format!(
                "expected a feature name, found {}",
                other.unwrap_or("end of expression")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_boolean_expressions() {
        let mut f = Features::default();
        f.insert("a");
        f.insert("b");
        assert_eq!(f.eval("a && b"), Ok(true));
        assert_eq!(f.eval("a && !b"), Ok(false));
        assert_eq!(f.eval("c || (a && !c)"), Ok(true));
        assert_eq!(f.eval("*"), Ok(true));
        assert!(f.eval("a &").is_err());
        assert!(f.eval("(a").is_err());
    }
}
