//! Reading a check file: finding directives (`PREFIX[-SUFFIX][{MODS}]:`),
//! parsing their patterns, and grouping CHECK-DAG/CHECK-NOT directives with
//! the positive directive that follows them.

use crate::diagnostic::{BufferId, Diagnostic, Span};
use crate::options::Options;
use crate::pattern::{CheckKind, CheckType, Pattern, PatternSettings};
use crate::source::SourceBuffer;
use regex::Regex;

/// A CHECK-DAG or CHECK-NOT pattern waiting for the next positive directive.
#[derive(Debug, Clone)]
pub struct DagNot {
    /// The pattern.
    pub pattern: Pattern,
    /// The prefix it was written with (`IMPLICIT-CHECK` for
    /// `--implicit-check-not`).
    pub prefix: String,
    /// 1-based index among `--implicit-check-not` patterns, if implicit.
    pub implicit_index: Option<usize>,
}

/// A positive directive with the DAG/NOT patterns that precede it.
#[derive(Debug, Clone)]
pub struct CheckString {
    /// The pattern.
    pub pattern: Pattern,
    /// The prefix it was written with.
    pub prefix: String,
    /// Preceding CHECK-DAG/CHECK-NOT patterns (including implicit ones).
    pub dag_nots: Vec<DagNot>,
}

/// What `find_check_type` recognized after a prefix.
enum Found {
    None,
    Comment(usize),
    Check(CheckType, usize),
    Misspelled(usize),
    BadNot(usize),
    BadCount(usize),
}

/// Classifies the text at `rest_offset` (just after `prefix`) the way LLVM's
/// `FindCheckType` does. Offsets returned are absolute.
fn find_check_type(text: &str, after_prefix: usize, is_comment: bool) -> Found {
    let rest = &text[after_prefix..];
    if rest.is_empty() {
        return Found::None;
    }
    let at = |r: &str| text.len() - r.len();
    if is_comment {
        return match rest.strip_prefix(':') {
            Some(r) => Found::Comment(at(r)),
            None => Found::None,
        };
    }
    let consume_modifiers = |mut ty: CheckType, r: &str| -> Found {
        if let Some(r) = r.strip_prefix(':') {
            return Found::Check(ty, at(r));
        }
        let Some(mut r) = r.strip_prefix('{') else {
            return Found::None;
        };
        loop {
            r = r.trim_start();
            let Some(after) = r.strip_prefix("LITERAL") else {
                return Found::None;
            };
            ty.literal = true;
            r = after.trim_start();
            match r.strip_prefix(',') {
                Some(after) => r = after,
                None => break,
            }
        }
        match r.strip_prefix("}:") {
            Some(r) => Found::Check(ty, at(r)),
            None => Found::None,
        }
    };
    if let Some(r) = rest.strip_prefix(':') {
        return Found::Check(CheckType::new(CheckKind::Plain), at(r));
    }
    if rest.starts_with('{') {
        return consume_modifiers(CheckType::new(CheckKind::Plain), rest);
    }
    let (misspelled, r) = if let Some(r) = rest.strip_prefix('_') {
        (true, r)
    } else if let Some(r) = rest.strip_prefix('-') {
        (false, r)
    } else {
        return Found::None;
    };
    let found = classify_suffix(r, &consume_modifiers, &at);
    match found {
        Found::Check(_, end) if misspelled => Found::Misspelled(end),
        other => other,
    }
}

fn classify_suffix(
    r: &str,
    consume_modifiers: &dyn Fn(CheckType, &str) -> Found,
    at: &dyn Fn(&str) -> usize,
) -> Found {
    if let Some(num) = r.strip_prefix("COUNT-") {
        let digits = num.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Found::BadCount(at(num));
        }
        let after = &num[digits..];
        let count = match num[..digits].parse::<u64>() {
            Ok(c) if c > 0 && c <= i32::MAX as u64 => c as usize,
            _ => return Found::BadCount(at(after)),
        };
        if !after.starts_with([':', '{']) {
            return Found::BadCount(at(after));
        }
        let mut ty = CheckType::new(CheckKind::Plain);
        ty.count = count;
        return consume_modifiers(ty, after);
    }
    const BAD_NOT: [&str; 8] = [
        "DAG-NOT:",
        "NOT-DAG:",
        "NEXT-NOT:",
        "NOT-NEXT:",
        "SAME-NOT:",
        "NOT-SAME:",
        "EMPTY-NOT:",
        "NOT-EMPTY:",
    ];
    if BAD_NOT.iter().any(|b| r.starts_with(b)) {
        return Found::BadNot(at(r));
    }
    const SUFFIXES: [(&str, CheckKind); 6] = [
        ("NEXT", CheckKind::Next),
        ("SAME", CheckKind::Same),
        ("NOT", CheckKind::Not),
        ("DAG", CheckKind::Dag),
        ("LABEL", CheckKind::Label),
        ("EMPTY", CheckKind::Empty),
    ];
    for (name, kind) in SUFFIXES {
        if let Some(after) = r.strip_prefix(name) {
            return consume_modifiers(CheckType::new(kind), after);
        }
    }
    Found::None
}

fn is_part_of_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// Checks the prefix lists as LLVM does; an error means exit code 2.
pub fn validate_prefixes(options: &Options) -> Result<(), Diagnostic> {
    let mut seen: Vec<&str> = Vec::new();
    for prefix in options
        .effective_check_prefixes()
        .iter()
        .chain(&options.comment_prefixes)
    {
        let valid = !prefix.is_empty()
            && prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(Diagnostic::global_error(format!(
                "supplied check prefix must start with a letter and contain only alphanumeric characters, hyphens, and underscores: '{prefix}'"
            )));
        }
        if seen.contains(&prefix.as_str()) {
            return Err(Diagnostic::global_error(format!(
                "supplied check prefix must be unique among check and comment prefixes: '{prefix}'"
            )));
        }
        seen.push(prefix);
    }
    Ok(())
}

/// The result of reading a check file.
#[derive(Debug)]
pub struct CheckProgram {
    /// Positive directives in order (with a final implicit EOF check when
    /// DAG/NOT patterns trail).
    pub checks: Vec<CheckString>,
    /// Non-fatal warnings (suspicious directive-like words).
    pub warnings: Vec<Diagnostic>,
}

/// The synthetic buffer that `--implicit-check-not` diagnostics point into.
pub fn implicit_check_not_buffer(options: &Options) -> SourceBuffer {
    let text = options
        .implicit_check_not
        .iter()
        .map(|p| format!("-implicit-check-not='{p}'\n"))
        .collect();
    SourceBuffer::new("command line", text)
}

/// Reads `check` into a program; `--implicit-check-not` patterns point into
/// [`implicit_check_not_buffer`].
pub fn read_check_file(check: &SourceBuffer, options: &Options) -> Result<CheckProgram, ReadError> {
    let mut warnings = Vec::new();
    match read_checks(check, options, &mut warnings) {
        Ok(checks) => Ok(CheckProgram { checks, warnings }),
        Err(error) => Err(ReadError { error, warnings }),
    }
}

/// A check file that could not be read, with the warnings found before the
/// error.
#[derive(Debug)]
pub struct ReadError {
    /// The error.
    pub error: Diagnostic,
    /// Warnings preceding it.
    pub warnings: Vec<Diagnostic>,
}

fn read_checks(
    check: &SourceBuffer,
    options: &Options,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Vec<CheckString>, Diagnostic> {
    let settings = PatternSettings {
        match_full_lines: options.match_full_lines,
        strict_whitespace: options.strict_whitespace,
        ignore_case: options.ignore_case,
    };
    let check_prefixes = options.effective_check_prefixes();
    let pattern_error = |e: crate::pattern::PatternError| Diagnostic::error(e.span, e.message);

    let mut implicit = Vec::new();
    let mut line_start = 0;
    for (index, raw) in options.implicit_check_not.iter().enumerate() {
        // The command-line buffer holds `-implicit-check-not='PATTERN'` lines
        // (see `implicit_check_not_buffer`); a pattern ends at a line break.
        const LEAD: &str = "-implicit-check-not='";
        let start = line_start + LEAD.len();
        line_start += LEAD.len() + raw.len() + 2;
        let text = &raw[..raw.find(['\n', '\r']).unwrap_or(raw.len())];
        let pattern = Pattern::parse(
            text,
            start,
            BufferId::CommandLine,
            CheckType::new(CheckKind::Not),
            "IMPLICIT-CHECK",
            0,
            settings,
        )
        .map_err(pattern_error)?;
        implicit.push(DagNot {
            pattern,
            prefix: "IMPLICIT-CHECK".into(),
            implicit_index: Some(index + 1),
        });
    }

    let mut all_prefixes: Vec<(&str, bool)> = check_prefixes
        .iter()
        .map(|p| (p.as_str(), false))
        .chain(options.comment_prefixes.iter().map(|p| (p.as_str(), true)))
        .collect();
    // Longest first, so the regex alternation finds the longest prefix at the
    // earliest position.
    all_prefixes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    let alternation: Vec<String> = all_prefixes.iter().map(|(p, _)| regex::escape(p)).collect();
    let prefix_re =
        Regex::new(&alternation.join("|")).map_err(|e| Diagnostic::global_error(e.to_string()))?;
    let suspicious = Regex::new(r"^-[A-Z]+:").expect("constant regex");

    let text = check.text.as_str();
    let bytes = text.as_bytes();
    let mut checks: Vec<CheckString> = Vec::new();
    let mut dag_nots = implicit.clone();
    let mut used_prefixes: Vec<&str> = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let Some(m) = prefix_re.find_at(text, pos) else {
            break;
        };
        let prefix = m.as_str();
        let is_comment = all_prefixes.iter().any(|(p, c)| *p == prefix && *c);
        // As in LLVM, the prefix must not continue a word of the text
        // skipped since the last search position.
        let word_start = m.start() == pos || !is_part_of_word(bytes[m.start() - 1]);
        let found = if word_start {
            find_check_type(text, m.end(), is_comment)
        } else {
            Found::None
        };
        let directive_start = m.start();
        let after = match found {
            Found::None => {
                if word_start && !is_comment && options.warn_suspicious_directives {
                    if let Some(s) = suspicious.find(&text[m.end()..]) {
                        warnings.push(Diagnostic::warning(
                            Span::point(BufferId::Check, directive_start),
                            format!(
                                "'{}{}' looks like a directive but is not one; ignored",
                                prefix,
                                s.as_str()
                            ),
                        ));
                    }
                }
                pos = m.start() + text[m.start()..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            Found::Misspelled(end) => {
                return Err(Diagnostic::error(
                    Span::point(BufferId::Check, directive_start),
                    format!("misspelled directive '{}'", &text[directive_start..end]),
                ));
            }
            Found::BadNot(at) => {
                return Err(Diagnostic::error(
                    Span::point(BufferId::Check, at),
                    format!("unsupported -NOT combo on prefix '{prefix}'"),
                ));
            }
            Found::BadCount(at) => {
                return Err(Diagnostic::error(
                    Span::point(BufferId::Check, at),
                    format!("invalid count in -COUNT specification on prefix '{prefix}'"),
                ));
            }
            Found::Comment(after) => {
                pos = line_end(text, after);
                continue;
            }
            Found::Check(ty, after) => (ty, after),
        };
        let (ty, mut start) = after;
        if !used_prefixes.contains(&prefix) {
            used_prefixes.push(prefix);
        }
        if !(options.strict_whitespace && options.match_full_lines) {
            while start < text.len() && matches!(bytes[start], b' ' | b'\t') {
                start += 1;
            }
        }
        let end = line_end(text, start);
        pos = end;
        let line = check.line_col(directive_start).0;
        let pattern = Pattern::parse(
            &text[start..end],
            start,
            BufferId::Check,
            ty,
            prefix,
            line,
            settings,
        )
        .map_err(pattern_error)?;
        let directive_span = Span::point(BufferId::Check, directive_start);
        if ty.kind == CheckKind::Label && pattern.has_variable() {
            return Err(Diagnostic::error(
                directive_span,
                format!("found '{prefix}-LABEL:' with variable definition or use"),
            ));
        }
        if matches!(
            ty.kind,
            CheckKind::Next | CheckKind::Same | CheckKind::Empty
        ) && checks.is_empty()
        {
            let name = match ty.kind {
                CheckKind::Next => "NEXT",
                CheckKind::Empty => "EMPTY",
                _ => "SAME",
            };
            return Err(Diagnostic::error(
                directive_span,
                format!("found '{prefix}-{name}' without previous '{prefix}: line"),
            ));
        }
        if matches!(ty.kind, CheckKind::Dag | CheckKind::Not) {
            dag_nots.push(DagNot {
                pattern,
                prefix: prefix.to_string(),
                implicit_index: None,
            });
            continue;
        }
        checks.push(CheckString {
            pattern,
            prefix: prefix.to_string(),
            dag_nots: std::mem::replace(&mut dag_nots, implicit.clone()),
        });
    }

    let unused: Vec<&String> = check_prefixes
        .iter()
        .filter(|p| !used_prefixes.contains(&p.as_str()))
        .collect();
    let none_found = used_prefixes.is_empty();
    let some_unused = !options.allow_unused_prefixes && !unused.is_empty();
    if (none_found || some_unused) && (implicit.is_empty() || !options.check_prefixes.is_empty()) {
        let names: Vec<String> = unused.iter().map(|p| format!("'{p}:'")).collect();
        let plural = if unused.len() > 1 { "es" } else { "" };
        return Err(Diagnostic::global_error(format!(
            "no check strings found with prefix{plural} {}",
            names.join(", ")
        )));
    }
    if !dag_nots.is_empty() {
        let eof = Pattern::parse(
            "",
            text.len(),
            BufferId::Check,
            CheckType::new(CheckKind::Eof),
            &check_prefixes[0],
            0,
            settings,
        )
        .map_err(pattern_error)?;
        checks.push(CheckString {
            pattern: eof,
            prefix: check_prefixes[0].clone(),
            dag_nots,
        });
    }
    Ok(checks)
}

/// Offset of the first `\n` or `\r` at or after `from` (or the text end).
fn line_end(text: &str, from: usize) -> usize {
    text[from..]
        .find(['\n', '\r'])
        .map_or(text.len(), |e| from + e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(check: &str, options: &Options) -> Result<CheckProgram, Diagnostic> {
        let check = SourceBuffer::new("c", check.to_string());
        read_check_file(&check, options).map_err(|e| e.error)
    }

    #[test]
    fn groups_dag_and_not_before_positive_checks() {
        let p = read(
            "CHECK-DAG: a\nCHECK-NOT: b\nCHECK: c\nCHECK-NOT: d\n",
            &Options::default(),
        )
        .unwrap();
        assert_eq!(p.checks.len(), 2);
        assert_eq!(p.checks[0].dag_nots.len(), 2);
        assert_eq!(p.checks[1].pattern.ty.kind, CheckKind::Eof);
    }

    #[test]
    fn ignores_prefixes_inside_words_and_comments() {
        let p = read(
            "XCHECK: a\nCHECKCHECK: b\nCOM: CHECK: c\nRUN: x | CHECK: y\nCHECK: d\n",
            &Options::default(),
        )
        .unwrap();
        assert_eq!(p.checks.len(), 1);
        assert_eq!(p.checks[0].pattern.example_text(), "d");
    }

    #[test]
    fn reports_bad_directives() {
        let o = Options::default();
        assert!(read("CHECK-NEXT: a\n", &o)
            .unwrap_err()
            .message
            .contains("without previous 'CHECK: line"));
        assert!(read("CHECK_NEXT: a\n", &o)
            .unwrap_err()
            .message
            .starts_with("misspelled directive 'CHECK_NEXT:'"));
        assert!(read("CHECK-COUNT-0: a\n", &o)
            .unwrap_err()
            .message
            .starts_with("invalid count"));
        assert!(read("CHECK-NOT-DAG: a\n", &o)
            .unwrap_err()
            .message
            .starts_with("unsupported -NOT combo"));
        assert!(read("nothing\n", &o)
            .unwrap_err()
            .message
            .contains("no check strings found with prefix 'CHECK:'"));
        let p = read("CHECK: a\nCHECK-NXT: b\n", &o).unwrap();
        assert_eq!(p.warnings.len(), 1);
    }

    #[test]
    fn parses_count_and_literal_modifiers() {
        let p = read(
            "CHECK-COUNT-3: a\nCHECK-NEXT{LITERAL}: [[x]]\n",
            &Options::default(),
        )
        .unwrap();
        assert_eq!(p.checks[0].pattern.ty.count, 3);
        assert!(p.checks[1].pattern.ty.literal);
    }
}
