//! Text buffers with line/column lookup, and FileCheck's whitespace
//! canonicalization.

/// One named text buffer (check file, input, or the synthetic command line
/// buffer holding `--implicit-check-not` patterns).
#[derive(Debug, Clone)]
pub struct SourceBuffer {
    /// Name shown in diagnostics (`<stdin>`, a path, `command line`).
    pub name: String,
    /// The (possibly canonicalized) text that positions refer to.
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceBuffer {
    /// Wraps `text` under `name`, indexing its line starts.
    pub fn new(name: impl Into<String>, text: String) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 1-based line and byte column of byte offset `offset` (clamped to the
    /// buffer end).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_of(offset);
        (line + 1, offset - self.line_starts[line] + 1)
    }

    /// 0-based index of the line containing `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// Byte offset where 0-based line `line` starts.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts[line.min(self.line_starts.len() - 1)]
    }

    /// Text of 0-based line `line`, without its line terminator.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_start(line);
        let end = self.text[start..]
            .find(['\n', '\r'])
            .map_or(self.text.len(), |e| start + e);
        &self.text[start..end]
    }

    /// Number of lines as FileCheck's input dump counts them (a trailing
    /// newline does not open a new line).
    pub fn dump_line_count(&self) -> usize {
        if self.text.ends_with('\n') {
            self.line_starts.len() - 1
        } else {
            self.line_starts.len()
        }
    }
}

/// Canonicalizes a buffer as LLVM FileCheck does: drops the `\r` of `\r\n`
/// and, unless `strict_whitespace`, folds each run of spaces and tabs into a
/// single space.
pub fn canonicalize(text: &str, strict_whitespace: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if strict_whitespace || (c != ' ' && c != '\t') {
            out.push(c);
            continue;
        }
        out.push(' ');
        while matches!(chars.peek(), Some(' ' | '\t')) {
            chars.next();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonicalize_folds_horizontal_whitespace() {
        assert_eq!(canonicalize("a \t  b\r\nc\t", false), "a b\nc ");
        assert_eq!(canonicalize("a \t b\r\n", true), "a \t b\n");
    }

    #[test]
    fn line_col_is_one_based() {
        let b = SourceBuffer::new("x", "ab\ncd\n".to_string());
        assert_eq!(b.line_col(0), (1, 1));
        assert_eq!(b.line_col(4), (2, 2));
        assert_eq!(b.line_col(6), (3, 1));
        assert_eq!(b.line_text(1), "cd");
        assert_eq!(b.dump_line_count(), 2);
    }
}
