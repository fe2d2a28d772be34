//! Assembly errors and warnings: values with file:line:col and a
//! caret-rendered message.

use std::fmt;

/// A source position (1-based line and column, columns in characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
    /// Characters the caret underlines (at least 1).
    pub len: u32,
}

/// Whether a message stops the assembly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// The input assembles, but runs worse than it reads (a pipeline stall).
    Warning,
}

/// One assembly error or warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    /// Error or warning.
    pub severity: Severity,
    /// File name as given to the assembler.
    pub file: String,
    /// Where.
    pub pos: Pos,
    /// What is wrong.
    pub message: String,
    /// The offending source line (for the caret rendering).
    pub source_line: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}:{}:{}: {}: {}",
            self.file,
            self.pos.line,
            self.pos.col,
            match self.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            self.message
        )?;
        writeln!(f, "{}", self.source_line)?;
        // Keep tabs so the caret lines up under tab-indented source.
        let pad: String = self
            .source_line
            .chars()
            .take(self.pos.col.saturating_sub(1) as usize)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(
            f,
            "{pad}^{}",
            "~".repeat(self.pos.len.saturating_sub(1) as usize)
        )
    }
}

/// All errors of one assembly, in source order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmErrors(pub Vec<AsmError>);

impl fmt::Display for AsmErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for AsmErrors {}

/// Collects the errors and warnings of one assembly (at most
/// [`super::MAX_ERRORS`] of each), each with its source line when there is
/// source text.
pub(super) struct Diag<'a> {
    pub(super) file: &'a str,
    pub(super) lines: Vec<&'a str>,
    pub(super) errors: Vec<AsmError>,
    pub(super) warnings: Vec<AsmError>,
}

impl<'a> Diag<'a> {
    /// Errors in `file`, whose text (if any) is `text`.
    pub(super) fn new(file: &'a str, text: &'a str) -> Self {
        Diag {
            file,
            lines: if text.is_empty() {
                Vec::new()
            } else {
                text.split('\n').collect()
            },
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn message(&self, severity: Severity, pos: Pos, message: String) -> AsmError {
        let source_line = self
            .lines
            .get(pos.line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or("")
            .trim_end_matches('\r')
            .to_string();
        AsmError {
            severity,
            file: self.file.to_string(),
            pos,
            message,
            source_line,
        }
    }

    pub(super) fn error(&mut self, pos: Pos, message: impl Into<String>) {
        if self.errors.len() < super::MAX_ERRORS {
            let e = self.message(Severity::Error, pos, message.into());
            self.errors.push(e);
        }
    }

    pub(super) fn warning(&mut self, pos: Pos, message: impl Into<String>) {
        if self.warnings.len() < super::MAX_ERRORS {
            let w = self.message(Severity::Warning, pos, message.into());
            self.warnings.push(w);
        }
    }

    /// The warnings, or the errors if there are any.
    pub(super) fn into_result(self) -> Result<Vec<AsmError>, AsmErrors> {
        if self.errors.is_empty() {
            Ok(self.warnings)
        } else {
            Err(AsmErrors(self.errors))
        }
    }
}
