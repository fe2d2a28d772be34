//! Assembly errors: values with file:line:col and a caret-rendered message.

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

/// One assembly error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
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
            "{}:{}:{}: error: {}",
            self.file, self.pos.line, self.pos.col, self.message
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

/// Collects the errors of one assembly (at most [`super::MAX_ERRORS`]),
/// each with its source line when there is source text.
pub(super) struct Diag<'a> {
    pub(super) file: &'a str,
    pub(super) lines: Vec<&'a str>,
    pub(super) errors: Vec<AsmError>,
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
        }
    }

    pub(super) fn error(&mut self, pos: Pos, message: impl Into<String>) {
        if self.errors.len() >= super::MAX_ERRORS {
            return;
        }
        let source_line = self
            .lines
            .get(pos.line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or("")
            .trim_end_matches('\r')
            .to_string();
        self.errors.push(AsmError {
            file: self.file.to_string(),
            pos,
            message: message.into(),
            source_line,
        });
    }

    /// The errors so far, if any.
    pub(super) fn into_result(self) -> Result<(), AsmErrors> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(AsmErrors(self.errors))
        }
    }
}
