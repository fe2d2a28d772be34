//! Diagnostics: errors, warnings, notes and remarks with locations, rendered
//! as `file:line:col: error: message` plus the source line and a caret.

use std::fmt::{Display, Write};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::context::{Context, OpId};
use crate::location::{LocKind, Location};

/// Diagnostic severity.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A note attached to another diagnostic (or standalone).
    Note,
    /// A remark (informational).
    Remark,
    /// A warning.
    Warning,
    /// An error.
    Error,
}

impl Severity {
    /// The word printed before the message.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Remark => "remark",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A diagnostic with location and attached notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// Where it applies.
    pub loc: Location,
    /// The message.
    pub message: String,
    /// Attached notes.
    pub notes: Vec<Diagnostic>,
}

impl Diagnostic {
    /// An error at `loc`.
    pub fn error(loc: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            loc,
            message: message.into(),
            notes: Vec::new(),
        }
    }
    /// A warning at `loc`.
    pub fn warning(loc: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            loc,
            message: message.into(),
            notes: Vec::new(),
        }
    }
    /// A remark at `loc`.
    pub fn remark(loc: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Remark,
            loc,
            message: message.into(),
            notes: Vec::new(),
        }
    }
    /// An error about `op` at its location, in MLIR's `'dialect.op' op
    /// message` form (MLIR's `emitOpError`): how the verifier, the dialects'
    /// verifiers and the passes report what is wrong with an op.
    pub fn op_error(ctx: &Context, op: OpId, message: impl Display) -> Diagnostic {
        Diagnostic::op_error_at(ctx.name_str(op), ctx.loc(op), message)
    }
    /// [`Diagnostic::op_error`] for an op that does not exist yet (a builder
    /// refusing its operands): the op's name and the location it would have.
    pub fn op_error_at(name: &str, loc: &Location, message: impl Display) -> Diagnostic {
        Diagnostic::error(loc.clone(), format!("'{name}' op {message}"))
    }
    /// Attaches a note.
    pub fn with_note(mut self, loc: Location, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Diagnostic {
            severity: Severity::Note,
            loc,
            message: message.into(),
            notes: Vec::new(),
        });
        self
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&SourceMgr::default().render(self))
    }
}

impl std::error::Error for Diagnostic {}

/// Source buffers by file name, for rendering the offending line.
#[derive(Default, Clone)]
pub struct SourceMgr {
    files: FxHashMap<Arc<str>, Arc<str>>,
}

impl SourceMgr {
    /// A source manager with no files.
    pub fn new() -> SourceMgr {
        SourceMgr::default()
    }
    /// Registers a buffer.
    pub fn add(&mut self, name: &str, text: Arc<str>) {
        self.files.insert(name.into(), text);
    }
    /// The text of a registered buffer.
    pub fn get(&self, name: &str) -> Option<&Arc<str>> {
        self.files.get(name)
    }

    /// Renders a diagnostic and its notes.
    pub fn render(&self, d: &Diagnostic) -> String {
        let mut out = String::new();
        self.render_one(&mut out, d);
        for n in &d.notes {
            self.render_one(&mut out, n);
        }
        out
    }

    fn render_one(&self, out: &mut String, d: &Diagnostic) {
        let prefix = location_prefix(&d.loc);
        let _ = writeln!(out, "{prefix}: {}: {}", d.severity.as_str(), d.message);
        // Line 0 (e.g. the implicit module, `file:0:0`) has no source line.
        if let Some((file, line, col)) = d.loc.file_line_col_of().filter(|l| l.1 > 0) {
            if let Some(text) = self.files.get(file) {
                if let Some(src) = text.lines().nth(line as usize - 1) {
                    let _ = writeln!(out, "{src}");
                    let caret_col = (col.max(1) - 1) as usize;
                    let pad: String = src
                        .chars()
                        .take(caret_col)
                        .map(|c| if c == '\t' { '\t' } else { ' ' })
                        .collect();
                    let _ = writeln!(out, "{pad}^");
                }
            }
        }
    }
}

/// The `file:line:col` (or name) prefix of a rendered diagnostic.
pub fn location_prefix(loc: &Location) -> String {
    if let Some((file, line, col)) = loc.file_line_col_of() {
        let name = loc
            .name_of()
            .map(|n| format!(" ('{n}')"))
            .unwrap_or_default();
        return format!("{file}:{line}:{col}{name}");
    }
    match loc.kind() {
        LocKind::Unknown => "<unknown>".to_string(),
        _ => match loc.name_of() {
            Some(n) => format!("'{n}'"),
            None => "<unknown>".to_string(),
        },
    }
}

/// Converts a byte offset in `text` to 1-based line and column (columns count chars).
pub fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = text[line_start..offset].chars().count() as u32 + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_source, DialectRegistry};

    #[test]
    fn op_errors_name_the_op_at_its_location() {
        let mut ctx = Context::new(std::sync::Arc::new(DialectRegistry::new()));
        ctx.allow_unregistered = true;
        let src = "\"t.first\"() : () -> ()\n  \"t.second\"() : () -> ()\n";
        let module = parse_source(&mut ctx, "e.mlir", src).unwrap().module;
        let block = ctx.region_blocks(ctx.regions(module)[0])[0];
        let second = ctx.block_ops_vec(block)[1];
        let d = Diagnostic::op_error(&ctx, second, "is wrong");
        assert_eq!(d.severity, Severity::Error);
        assert_eq!(d.message, "'t.second' op is wrong");
        assert_eq!(location_prefix(&d.loc), "e.mlir:2:3");
        // A builder's error: the op does not exist yet.
        let d = Diagnostic::op_error_at("t.third", ctx.loc(second), 42);
        assert_eq!(d.message, "'t.third' op 42");
        assert_eq!(&d.loc, ctx.loc(second));
    }
}
