//! The matching engine: LLVM FileCheck's algorithm. CHECK-LABEL directives
//! first split the input into blocks; within a block each positive directive
//! matches after the previous one, after its CHECK-DAG groups, with its
//! CHECK-NOT patterns checked in the skipped text, and CHECK-NEXT/SAME/EMPTY
//! verifying line adjacency. A failure in one block does not stop checking
//! later blocks.

use crate::diagnostic::{BufferId, Buffers, Diagnostic, Span};
use crate::directive::{CheckString, DagNot};
use crate::fuzzy;
use crate::options::Options;
use crate::pattern::{CheckKind, Match, MatchError, Pattern};
use crate::variables::Variables;

/// How a match result is marked in the input dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// `^~~`: a successful match (shown with `-v`).
    Good,
    /// `!~~`: an excluded string that was found.
    Excluded,
    /// `!~~`: a match on the wrong line.
    WrongLine,
    /// `X~~`: the search range of a failed match.
    NoMatch,
    /// `X~~`: the search range of a pattern that could not be matched.
    Invalid,
    /// `?`: the possible intended match.
    Fuzzy,
    /// No marker: an explanatory note.
    Note(String),
    /// The range a variable captured, in a good (`^`) or excluded (`!`)
    /// match.
    CapturedVar {
        /// Variable name.
        name: String,
        /// Whether the match was an excluded one.
        excluded: bool,
    },
}

impl Mark {
    /// Whether the error filter of the dump keeps lines with this mark: an
    /// error, or a note or fuzzy match that explains one (as in LLVM).
    pub fn filters_as_error(&self) -> bool {
        !matches!(
            self,
            Mark::Good
                | Mark::CapturedVar {
                    excluded: false,
                    ..
                }
        )
    }
}

/// One annotation of the input dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchRecord {
    /// `check:12`, `not:imp1`, ...
    pub label: String,
    /// The mark.
    pub mark: Mark,
    /// Input range start.
    pub start: usize,
    /// Input range end.
    pub end: usize,
}

/// Runs a check program over the input.
pub struct Engine<'a> {
    buffers: &'a Buffers,
    options: &'a Options,
    vars: Variables,
    /// Diagnostics in the order LLVM prints them.
    pub diagnostics: Vec<Diagnostic>,
    /// Dump annotations.
    pub records: Vec<MatchRecord>,
}

/// Identifies a pattern for messages and dump labels.
struct Who<'p> {
    pattern: &'p Pattern,
    prefix: &'p str,
    implicit_index: Option<usize>,
}

impl Who<'_> {
    fn label(&self, buffers: &Buffers) -> String {
        let name = self.pattern.ty.dump_name();
        match self.implicit_index {
            Some(i) => format!("{name}:imp{i}"),
            None => format!("{name}:{}", buffers.line_col(self.pattern.span).0),
        }
    }
}

impl<'a> Engine<'a> {
    /// An engine over `buffers` with variables pre-set from `vars`.
    pub fn new(buffers: &'a Buffers, options: &'a Options, vars: Variables) -> Self {
        Self {
            buffers,
            options,
            vars,
            diagnostics: Vec::new(),
            records: Vec::new(),
        }
    }

    fn text(&self) -> &'a str {
        &self.buffers.input.text
    }

    /// Checks the whole input; returns whether every directive matched.
    pub fn run(&mut self, checks: &[CheckString]) -> bool {
        let end = self.text().len();
        let mut failed = false;
        let (mut i, mut j) = (0, 0);
        let mut buffer_start = 0;
        loop {
            let region = if j == checks.len() {
                (buffer_start, end)
            } else {
                if checks[j].pattern.ty.kind != CheckKind::Label {
                    j += 1;
                    continue;
                }
                let Some((pos, len)) = self.check(&checks[j], buffer_start, end, true) else {
                    // Without the label's position nothing else can be checked.
                    return false;
                };
                let region = (buffer_start, pos + len);
                buffer_start = pos + len;
                j += 1;
                region
            };
            if i != 0 && self.options.enable_var_scope {
                self.vars.clear_locals();
            }
            let mut cursor = region.0;
            while i != j {
                match self.check(&checks[i], cursor, region.1, false) {
                    Some((pos, len)) => cursor = pos + len,
                    None => {
                        failed = true;
                        i = j;
                        break;
                    }
                }
                i += 1;
            }
            if j == checks.len() {
                break;
            }
        }
        !failed
    }

    /// Matches one positive directive in `start..end`; returns the absolute
    /// position and length of its match.
    fn check(
        &mut self,
        cs: &CheckString,
        start: usize,
        end: usize,
        label_scan: bool,
    ) -> Option<(usize, usize)> {
        let mut nots: Vec<&DagNot> = Vec::new();
        let last_pos = if label_scan {
            start
        } else {
            self.check_dag(cs, start, end, &mut nots)?
        };
        let who = Who {
            pattern: &cs.pattern,
            prefix: &cs.prefix,
            implicit_index: None,
        };
        let mut last_match_end = last_pos;
        let mut first_match = last_pos;
        for n in 1..=cs.pattern.ty.count {
            match self.find(&cs.pattern, last_match_end, end) {
                Ok(m) => {
                    if n == 1 {
                        first_match = m.pos;
                    }
                    // Like LLVM, -v records a label both when scanning for it and
                    // when re-checking it within its block.
                    self.record_good(&who, &m);
                    last_match_end = m.pos + m.len;
                }
                Err(e) => {
                    self.report_missing(&who, n, last_match_end, end, e, true);
                    return None;
                }
            }
        }
        let match_len = last_match_end - first_match;
        if !label_scan {
            if self.check_adjacency(cs, last_pos, first_match, match_len) {
                return None;
            }
            if self.check_not(&nots, last_pos, first_match) {
                return None;
            }
        }
        Some((first_match, match_len))
    }

    /// Finds `pattern` in `start..end`, returning absolute offsets.
    fn find(&mut self, pattern: &Pattern, start: usize, end: usize) -> Result<Match, MatchError> {
        let text = self.text();
        let mut m = pattern.find(&text[start..end], &mut self.vars, self.options.ignore_case)?;
        m.pos += start;
        for capture in &mut m.captures {
            capture.1 += start;
            capture.2 += start;
        }
        Ok(m)
    }

    /// Matches the CHECK-DAG groups preceding `cs`, checking CHECK-NOTs
    /// between groups; NOTs after the last group are left in `nots`.
    /// Returns where the directive itself starts searching.
    fn check_dag<'c>(
        &mut self,
        cs: &'c CheckString,
        start: usize,
        end: usize,
        nots: &mut Vec<&'c DagNot>,
    ) -> Option<usize> {
        let mut start_pos = start;
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for (index, dn) in cs.dag_nots.iter().enumerate() {
            if dn.pattern.ty.kind == CheckKind::Not {
                nots.push(dn);
                continue;
            }
            let who = Who {
                pattern: &dn.pattern,
                prefix: &dn.prefix,
                implicit_index: dn.implicit_index,
            };
            let mut match_pos = start_pos;
            let mut next_range = 0;
            let found = loop {
                let m = match self.find(&dn.pattern, match_pos, end) {
                    Ok(m) => m,
                    Err(e) => {
                        self.report_missing(&who, 1, match_pos, end, e, true);
                        return None;
                    }
                };
                // Matches of one DAG group may not overlap: retry after any
                // earlier match this one overlaps.
                let (pos, len) = (m.pos, m.len);
                let mut overlap = false;
                while next_range < ranges.len() {
                    if pos < ranges[next_range].1 {
                        overlap = ranges[next_range].0 < pos + len;
                        break;
                    }
                    next_range += 1;
                }
                if !overlap {
                    ranges.insert(next_range, (pos, pos + len));
                    break m;
                }
                match_pos = ranges[next_range].1;
                next_range += 1;
            };
            self.record_good(&who, &found);
            let group_ends = cs
                .dag_nots
                .get(index + 1)
                .is_none_or(|next| next.pattern.ty.kind == CheckKind::Not);
            if group_ends {
                if !nots.is_empty() {
                    if self.check_not(nots, start_pos, ranges[0].0) {
                        return None;
                    }
                    nots.clear();
                }
                start_pos = ranges.last().map_or(start_pos, |r| r.1);
                ranges.clear();
            }
        }
        Some(start_pos)
    }

    /// Reports every CHECK-NOT of `nots` found in `start..end`; returns
    /// whether any was.
    fn check_not(&mut self, nots: &[&DagNot], start: usize, end: usize) -> bool {
        let mut failed = false;
        for dn in nots {
            let who = Who {
                pattern: &dn.pattern,
                prefix: &dn.prefix,
                implicit_index: dn.implicit_index,
            };
            match self.find(&dn.pattern, start, end) {
                Err(MatchError::NotFound) => {}
                Err(MatchError::Invalid(errors)) => {
                    failed = true;
                    self.report_missing(&who, 1, start, end, MatchError::Invalid(errors), false);
                }
                Ok(m) => {
                    failed = true;
                    let desc = dn.pattern.ty.description(&dn.prefix);
                    self.diagnostics.push(Diagnostic::error(
                        dn.pattern.span,
                        format!("{desc}: excluded string found in input"),
                    ));
                    let range = |start, end| Span {
                        buffer: BufferId::Input,
                        start,
                        end,
                    };
                    self.diagnostics
                        .push(Diagnostic::note(range(m.pos, m.pos + m.len), "found here"));
                    self.record(&who, Mark::Excluded, m.pos, m.pos + m.len);
                    for (name, start, end) in m.captures {
                        self.diagnostics.push(Diagnostic::note(
                            range(start, end),
                            format!("captured var \"{name}\""),
                        ));
                        self.record(
                            &who,
                            Mark::CapturedVar {
                                name,
                                excluded: true,
                            },
                            start,
                            end,
                        );
                    }
                }
            }
        }
        failed
    }

    /// CHECK-NEXT/EMPTY must match on the line after the previous match,
    /// CHECK-SAME on the same line. Returns whether that failed.
    fn check_adjacency(
        &mut self,
        cs: &CheckString,
        prev_end: usize,
        match_pos: usize,
        match_len: usize,
    ) -> bool {
        let kind = cs.pattern.ty.kind;
        if !matches!(kind, CheckKind::Next | CheckKind::Empty | CheckKind::Same) {
            return false;
        }
        let skipped = &self.text()[prev_end..match_pos];
        let (newlines, first_line_after) = count_newlines(skipped);
        let point = |o: usize| Span::point(BufferId::Input, o);
        let message = match kind {
            CheckKind::Same if newlines != 0 => "is not on the same line as the previous match",
            CheckKind::Same => return false,
            _ if newlines == 0 => "is on the same line as previous match",
            _ if newlines != 1 => "is not on the line after the previous match",
            _ => return false,
        };
        let suffix = match kind {
            CheckKind::Same => "-SAME",
            CheckKind::Empty => "-EMPTY",
            _ => "-NEXT",
        };
        self.diagnostics.push(Diagnostic::error(
            cs.pattern.span,
            format!("{}{suffix}: {message}", cs.prefix),
        ));
        self.diagnostics
            .push(Diagnostic::note(point(match_pos), "'next' match was here"));
        self.diagnostics.push(Diagnostic::note(
            point(prev_end),
            "previous match ended here",
        ));
        if kind != CheckKind::Same && newlines > 1 {
            self.diagnostics.push(Diagnostic::note(
                point(prev_end + first_line_after),
                "non-matching line after previous match is here",
            ));
        }
        let who = Who {
            pattern: &cs.pattern,
            prefix: &cs.prefix,
            implicit_index: None,
        };
        // With -v the match was recorded as good (with its captures); LLVM
        // turns those records into wrong-line ones rather than adding more.
        let label = who.label(self.buffers);
        let mut adjusted = false;
        for r in self.records.iter_mut().rev() {
            if r.label != label {
                break;
            }
            match &mut r.mark {
                Mark::Good => {
                    r.mark = Mark::WrongLine;
                    r.start = match_pos;
                    r.end = match_pos + match_len;
                    adjusted = true;
                    break;
                }
                Mark::CapturedVar { excluded, .. } => *excluded = true,
                _ => break,
            }
        }
        if !adjusted {
            self.record(&who, Mark::WrongLine, match_pos, match_pos + match_len);
        }
        true
    }

    fn record(&mut self, who: &Who, mark: Mark, start: usize, end: usize) {
        let label = who.label(self.buffers);
        self.records.push(MatchRecord {
            label,
            mark,
            start,
            end,
        });
    }

    fn record_good(&mut self, who: &Who, m: &Match) {
        // The implicit end-of-input check is not a match of its own.
        if self.options.verbose && who.pattern.ty.kind != CheckKind::Eof {
            self.record(who, Mark::Good, m.pos, m.pos + m.len);
            for (name, start, end) in &m.captures {
                let mark = Mark::CapturedVar {
                    name: name.clone(),
                    excluded: false,
                };
                self.record(who, mark, *start, *end);
            }
        }
    }

    /// Reports a pattern that could not be matched in `start..end`: one
    /// that was not found (the `n`-th repetition), or an invalid one (its
    /// errors stand in for "expected string not found"). Like LLVM, also
    /// notes the values of substituted variables and, for expected
    /// patterns, the possible intended match.
    fn report_missing(
        &mut self,
        who: &Who,
        n: usize,
        start: usize,
        end: usize,
        error: MatchError,
        expected: bool,
    ) {
        let pattern = who.pattern;
        let here = Span::point(BufferId::Input, start);
        let errors = match error {
            MatchError::Invalid(errors) => {
                for e in &errors {
                    self.diagnostics
                        .push(Diagnostic::error(e.span, e.message.clone()));
                }
                self.record(who, Mark::Invalid, start, end);
                errors
            }
            MatchError::NotFound => {
                let mut message = format!(
                    "{}: expected string not found in input",
                    pattern.ty.description(who.prefix)
                );
                if pattern.ty.count > 1 {
                    message.push_str(&format!(" ({n} out of {})", pattern.ty.count));
                }
                self.diagnostics
                    .push(Diagnostic::error(pattern.span, message));
                self.diagnostics
                    .push(Diagnostic::note(here, "scanning from here"));
                self.record(who, Mark::NoMatch, start, end);
                Vec::new()
            }
        };
        // Undefined variables were reported as errors above.
        for s in pattern.substitution_values(&self.vars) {
            let Some(value) = s.value else { continue };
            let note = format!("with \"{}\" equal to \"{}\"", s.name, escape_note(&value));
            self.diagnostics.push(Diagnostic::note(here, note.clone()));
            self.record(who, Mark::Note(note), start, start);
        }
        for e in errors {
            self.record(who, Mark::Note(e.message), start, start);
        }
        if !expected {
            return;
        }
        let text = self.text();
        if let Some(best) =
            fuzzy::possible_intended_match(pattern.example_text(), &text[start..end])
        {
            let at = start + best;
            self.diagnostics.push(Diagnostic::note(
                Span::point(BufferId::Input, at),
                "possible intended match here",
            ));
            self.record(who, Mark::Fuzzy, at, at);
        }
    }
}

/// LLVM escapes non-printable characters in substitution notes.
fn escape_note(value: &str) -> String {
    value.escape_debug().to_string().replace("\\'", "'")
}

/// Counts line breaks (`\n`, `\r`, `\r\n`, `\n\r` each count once) and
/// returns the offset just after the first one.
fn count_newlines(text: &str) -> (usize, usize) {
    let b = text.as_bytes();
    let (mut count, mut first, mut i) = (0, 0, 0);
    while i < b.len() {
        if b[i] != b'\n' && b[i] != b'\r' {
            i += 1;
            continue;
        }
        if i + 1 < b.len() && (b[i + 1] == b'\n' || b[i + 1] == b'\r') && b[i] != b[i + 1] {
            i += 1;
        }
        i += 1;
        count += 1;
        if count == 1 {
            first = i;
        }
    }
    (count, first)
}

#[cfg(test)]
mod tests {
    use super::count_newlines;

    #[test]
    fn newline_pairs_count_once() {
        assert_eq!(count_newlines("a\r\nb\nc"), (2, 3));
        assert_eq!(count_newlines("\n\n"), (2, 1));
        assert_eq!(count_newlines("abc"), (0, 0));
    }
}
