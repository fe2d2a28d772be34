//! Diagnostics in LLVM's `file:line:col: severity: message` form, with the
//! source line and a caret (and `~` under the rest of a range).

use crate::source::SourceBuffer;
use std::fmt::Write as _;

/// Severity of a diagnostic, printed as LLVM prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// A failed check or an invalid check file.
    Error,
    /// Suspicious but accepted input.
    Warning,
    /// Context for the preceding error.
    Note,
}

impl Severity {
    fn label(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// Which buffer a location points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferId {
    /// The check file.
    Check,
    /// The input being checked.
    Input,
    /// The synthetic buffer of command-line patterns (`--implicit-check-not`).
    CommandLine,
}

/// A location: a buffer and a byte range in its canonicalized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The buffer.
    pub buffer: BufferId,
    /// Start byte offset.
    pub start: usize,
    /// End byte offset (equal to `start` for a point).
    pub end: usize,
}

impl Span {
    /// A zero-width location.
    pub fn point(buffer: BufferId, offset: usize) -> Self {
        Self {
            buffer,
            start: offset,
            end: offset,
        }
    }
}

/// One diagnostic message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Severity.
    pub severity: Severity,
    /// Where it points; `None` for messages about the whole run.
    pub span: Option<Span>,
    /// The message text.
    pub message: String,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            span: Some(span),
            message: message.into(),
        }
    }

    /// A note at `span`.
    pub fn note(span: Span, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Note,
            span: Some(span),
            message: message.into(),
        }
    }

    /// A warning at `span`.
    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            span: Some(span),
            message: message.into(),
        }
    }

    /// An error without a location.
    pub fn global_error(message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            span: None,
            message: message.into(),
        }
    }
}

/// The buffers diagnostics can point into.
#[derive(Debug, Clone)]
pub struct Buffers {
    /// The check file (canonicalized).
    pub check: SourceBuffer,
    /// The input (canonicalized).
    pub input: SourceBuffer,
    /// Command-line patterns, one per line.
    pub command_line: SourceBuffer,
}

impl Buffers {
    /// The buffer `id` refers to.
    pub fn get(&self, id: BufferId) -> &SourceBuffer {
        match id {
            BufferId::Check => &self.check,
            BufferId::Input => &self.input,
            BufferId::CommandLine => &self.command_line,
        }
    }

    /// 1-based (line, column) of `span`'s start.
    pub fn line_col(&self, span: Span) -> (usize, usize) {
        self.get(span.buffer).line_col(span.start)
    }

    /// Renders `diag` as LLVM's SourceMgr does.
    pub fn render(&self, diag: &Diagnostic) -> String {
        let mut out = String::new();
        let Some(span) = diag.span else {
            let _ = writeln!(out, "{}: {}", diag.severity.label(), diag.message);
            return out;
        };
        let buffer = self.get(span.buffer);
        let (line, col) = buffer.line_col(span.start);
        let _ = writeln!(
            out,
            "{}:{}:{}: {}: {}",
            buffer.name,
            line,
            col,
            diag.severity.label(),
            diag.message
        );
        let line_index = buffer.line_of(span.start.min(buffer.text.len()));
        let line_start = buffer.line_start(line_index);
        let text = buffer.line_text(line_index);
        let caret_start = span.start.saturating_sub(line_start).min(text.len());
        let caret_end = span
            .end
            .saturating_sub(line_start)
            .clamp(caret_start, text.len());
        let (shown, caret) = caret_line(text, caret_start, caret_end);
        let _ = writeln!(out, "{shown}");
        let _ = writeln!(out, "{}", caret.trim_end());
        out
    }

    /// Renders every diagnostic in order.
    pub fn render_all(&self, diags: &[Diagnostic]) -> String {
        diags.iter().map(|d| self.render(d)).collect()
    }
}

/// The source line with tabs expanded to 8-column stops, and the caret line
/// under byte range `start..end` of it.
fn caret_line(text: &str, start: usize, end: usize) -> (String, String) {
    let mut shown = String::with_capacity(text.len());
    let mut caret = String::with_capacity(text.len() + 1);
    let mut column = 0usize;
    for (offset, c) in text.char_indices() {
        let width = if c == '\t' { 8 - column % 8 } else { 1 };
        let mark = if offset == start {
            '^'
        } else if offset > start && offset < end {
            '~'
        } else {
            ' '
        };
        for k in 0..width {
            shown.push(if c == '\t' { ' ' } else { c });
            caret.push(if k == 0 || mark == '~' { mark } else { ' ' });
        }
        column += width;
    }
    if start >= text.len() {
        caret.push('^');
    }
    (shown, caret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffers(check: &str) -> Buffers {
        Buffers {
            check: SourceBuffer::new("c.txt", check.to_string()),
            input: SourceBuffer::new("<stdin>", String::new()),
            command_line: SourceBuffer::new("command line", String::new()),
        }
    }

    #[test]
    fn renders_caret_under_column() {
        let b = buffers("x\n// CHECK: foo\n");
        let d = Diagnostic::error(Span::point(BufferId::Check, 12), "boom");
        assert_eq!(
            b.render(&d),
            "c.txt:2:11: error: boom\n// CHECK: foo\n          ^\n"
        );
    }

    #[test]
    fn renders_ranges_and_end_of_line() {
        let b = buffers("abcdef");
        let range = Span {
            buffer: BufferId::Check,
            start: 1,
            end: 4,
        };
        assert_eq!(
            b.render(&Diagnostic::note(range, "n")),
            "c.txt:1:2: note: n\nabcdef\n ^~~\n"
        );
        let eol = Span::point(BufferId::Check, 6);
        assert_eq!(
            b.render(&Diagnostic::note(eol, "n")),
            "c.txt:1:7: note: n\nabcdef\n      ^\n"
        );
    }
}
