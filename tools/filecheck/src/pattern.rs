//! Check patterns: parsing the text after a directive into a fixed string or
//! a regex with variable definitions and substitutions, and matching it
//! against the input.

use crate::diagnostic::{BufferId, Span};
use crate::numeric::{self, EvalError, Expr, Format};
use crate::posix_regex;
use crate::variables::Variables;
use regex::Regex;
use std::sync::OnceLock;

/// The kind of a check directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// `CHECK:` (and `CHECK-COUNT-n:`).
    Plain,
    /// `CHECK-NEXT:`.
    Next,
    /// `CHECK-SAME:`.
    Same,
    /// `CHECK-NOT:` (and `--implicit-check-not`).
    Not,
    /// `CHECK-DAG:`.
    Dag,
    /// `CHECK-LABEL:`.
    Label,
    /// `CHECK-EMPTY:`.
    Empty,
    /// The implicit end-of-input check that carries trailing DAG/NOT checks.
    Eof,
}

/// A directive kind with its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckType {
    /// The kind.
    pub kind: CheckKind,
    /// Repetition count (`CHECK-COUNT-n`); 1 otherwise.
    pub count: usize,
    /// `{LITERAL}`: match the text literally.
    pub literal: bool,
}

impl CheckType {
    /// A type with count 1 and no modifiers.
    pub fn new(kind: CheckKind) -> Self {
        Self {
            kind,
            count: 1,
            literal: false,
        }
    }

    /// The directive's name for messages, e.g. `CHECK-NEXT`, `CHECK-COUNT`.
    pub fn description(&self, prefix: &str) -> String {
        let suffix = match self.kind {
            CheckKind::Plain if self.count > 1 => "-COUNT",
            CheckKind::Plain => "",
            CheckKind::Next => "-NEXT",
            CheckKind::Same => "-SAME",
            CheckKind::Not => "-NOT",
            CheckKind::Dag => "-DAG",
            CheckKind::Label => "-LABEL",
            CheckKind::Empty => "-EMPTY",
            CheckKind::Eof => return "implicit EOF".to_string(),
        };
        let modifiers = if self.literal { "{LITERAL}" } else { "" };
        format!("{prefix}{suffix}{modifiers}")
    }

    /// The short name used in input-dump labels (`check`, `next`, ...).
    pub fn dump_name(&self) -> &'static str {
        match self.kind {
            CheckKind::Plain if self.count > 1 => "count",
            CheckKind::Plain => "check",
            CheckKind::Next => "next",
            CheckKind::Same => "same",
            CheckKind::Not => "not",
            CheckKind::Dag => "dag",
            CheckKind::Label => "label",
            CheckKind::Empty => "empty",
            CheckKind::Eof => "eof",
        }
    }
}

/// An error in a pattern, at a location in the check file (or command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// Where.
    pub span: Span,
    /// What.
    pub message: String,
}

/// Why a pattern did not produce a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchError {
    /// The pattern does not occur in the searched text.
    NotFound,
    /// The pattern could not be matched at all (undefined variable, overflow).
    Invalid(Vec<PatternError>),
}

/// A successful match: position and length in the searched text, and the
/// ranges of the variables it defined (in text order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Start offset.
    pub pos: usize,
    /// Length.
    pub len: usize,
    /// (variable, start, end) of each definition.
    pub captures: Vec<(String, usize, usize)>,
}

impl Match {
    fn plain(pos: usize, len: usize) -> Self {
        Self {
            pos,
            len,
            captures: Vec::new(),
        }
    }
}

/// A substitution's current value, for `with "X" equal to "v"` notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstitutionValue {
    /// The substituted text as written (`X`, `N+1`).
    pub name: String,
    /// Its value, or `None` when undefined.
    pub value: Option<String>,
}

/// How the pattern matches.
#[derive(Debug, Clone)]
enum Body {
    Fixed(String),
    Regex(RegexPattern),
    Empty,
    Eof,
}

/// A part of a regex pattern whose text may only be known at match time.
#[derive(Debug, Clone)]
enum Piece {
    Regex(String),
    StringUse {
        name: String,
        offset: usize,
    },
    NumericUse {
        text: String,
        expr: Expr,
        format: Option<Format>,
        offset: usize,
    },
}

#[derive(Debug, Clone)]
struct RegexPattern {
    /// The regex as LLVM spells it (used for fuzzy matching).
    display: String,
    pieces: Vec<Piece>,
    string_defs: Vec<(String, usize)>,
    numeric_defs: Vec<(String, usize, Format)>,
    /// (definition group, reuse group) pairs whose texts must be equal.
    same_line_uses: Vec<(usize, usize)>,
}

/// A parsed check pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The directive type.
    pub ty: CheckType,
    /// Where the pattern text starts.
    pub span: Span,
    /// Line of the directive in the check file (the value of `@LINE`).
    pub line: usize,
    body: Body,
}

/// Settings that affect how patterns are built.
#[derive(Debug, Clone, Copy)]
pub struct PatternSettings {
    /// `--match-full-lines`.
    pub match_full_lines: bool,
    /// `--strict-whitespace`.
    pub strict_whitespace: bool,
    /// `--ignore-case`.
    pub ignore_case: bool,
}

/// LLVM's `Regex::escape`.
fn llvm_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "()^$|*+?.[]\\{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Validates a regex fragment and counts its capture groups (parsing only;
/// compiling would cost far more on check files with many patterns).
fn count_groups(rust_regex: &str) -> Result<usize, String> {
    regex_syntax::Parser::new()
        .parse(rust_regex)
        .map(|hir| hir.properties().explicit_captures_len())
        .map_err(|e| describe_syntax_error(&e.to_string()))
}

/// Describes a regex error, in LLVM's regex library's words where there is
/// an equivalent.
fn describe_regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(s) => describe_syntax_error(s),
        regex::Error::CompiledTooBig(_) => "regular expression too big".to_string(),
        _ => e.to_string(),
    }
}

fn describe_syntax_error(s: &str) -> String {
    let message = s
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(s);
    match message {
        "unclosed group" | "unopened group" => "parentheses not balanced",
        "unclosed character class" => "brackets ([ ]) not balanced",
        m if m.starts_with("repetition operator missing expression") => {
            "repetition-operator operand invalid"
        }
        m if m.contains("counted repetition") => "invalid repetition count(s)",
        m => m,
    }
    .to_string()
}

/// Finds the `]]` closing a substitution block, skipping `\`-escapes and
/// nested `[...]`. Returns its byte offset in `s`.
fn find_block_end(s: &str) -> Result<Option<usize>, (usize, String)> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() {
        if depth == 0 && b[i..].starts_with(b"]]") {
            return Ok(Some(i));
        }
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'[' => depth += 1,
            b']' => {
                if depth == 0 {
                    return Err((i, "missing closing \"]\" for regex variable".into()));
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(None)
}

/// A variable name as LLVM parses it: `$`-global or `@`-pseudo prefix, then
/// `[a-zA-Z_][a-zA-Z0-9_]*`. Returns (name, is_pseudo, rest).
fn parse_variable(s: &str) -> Result<(&str, bool, &str), (usize, String)> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err((0, "empty variable name".into()));
    }
    let pseudo = b[0] == b'@';
    let mut i = usize::from(b[0] == b'$' || pseudo);
    if i == b.len() {
        let kind = if pseudo { "pseudo " } else { "global " };
        return Err((i, format!("empty {kind}variable name")));
    }
    if !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
        return Err((0, "invalid variable name".into()));
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    Ok((&s[..i], pseudo, &s[i..]))
}

/// Builds a regex pattern piece by piece, tracking capture groups.
struct RegexBuilder {
    display: String,
    pieces: Vec<Piece>,
    next_group: usize,
    string_defs: Vec<(String, usize)>,
    /// Rust regex text of each string variable defined so far on this line.
    local_string_defs: Vec<(String, usize, String)>,
    numeric_defs: Vec<(String, usize, Format)>,
    same_line_uses: Vec<(usize, usize)>,
}

impl RegexBuilder {
    fn new() -> Self {
        Self {
            display: String::new(),
            pieces: Vec::new(),
            next_group: 1,
            string_defs: Vec::new(),
            local_string_defs: Vec::new(),
            numeric_defs: Vec::new(),
            same_line_uses: Vec::new(),
        }
    }

    fn push_regex(&mut self, display: &str, rust: &str) {
        self.display.push_str(display);
        if let Some(Piece::Regex(last)) = self.pieces.last_mut() {
            last.push_str(rust);
        } else {
            self.pieces.push(Piece::Regex(rust.to_string()));
        }
    }

    /// Adds a user regex fragment (from `{{...}}` or `[[V:...]]`).
    fn push_user_regex(&mut self, src: &str) -> Result<String, String> {
        let rust = posix_regex::translate(src)?;
        self.next_group += count_groups(&rust)?;
        self.push_regex(src, &rust);
        Ok(rust)
    }
}

impl Pattern {
    /// Parses `text` (the pattern after the directive; `offset` is its
    /// position in `buffer`). `prefix` names the directive in messages.
    pub fn parse(
        text: &str,
        offset: usize,
        buffer: BufferId,
        ty: CheckType,
        prefix: &str,
        line: usize,
        settings: PatternSettings,
    ) -> Result<Pattern, PatternError> {
        let span = Span::point(buffer, offset);
        let err = |at: usize, message: String| PatternError {
            span: Span::point(buffer, at),
            message,
        };
        let full_lines = settings.match_full_lines && ty.kind != CheckKind::Not;
        let text = if settings.strict_whitespace && settings.match_full_lines {
            text
        } else {
            text.trim_end_matches([' ', '\t'])
        };
        let make = |body| Pattern {
            ty,
            span,
            line,
            body,
        };
        if ty.kind == CheckKind::Eof {
            return Ok(make(Body::Eof));
        }
        if text.is_empty() && ty.kind != CheckKind::Empty {
            return Err(err(
                offset,
                format!("found empty check string with prefix '{prefix}:'"),
            ));
        }
        if ty.kind == CheckKind::Empty {
            if !text.is_empty() {
                return Err(err(
                    offset,
                    format!("found non-empty check string for empty check with prefix '{prefix}:'"),
                ));
            }
            return Ok(make(Body::Empty));
        }
        if ty.literal {
            return Ok(make(Body::Fixed(text.to_string())));
        }
        if !full_lines && (text.len() < 2 || (!text.contains("{{") && !text.contains("[["))) {
            return Ok(make(Body::Fixed(text.to_string())));
        }

        let mut b = RegexBuilder::new();
        let ws = if settings.strict_whitespace { "" } else { " *" };
        if full_lines {
            b.push_regex(&format!("^{ws}"), &format!("^{ws}"));
        }
        let mut rest = text;
        let at = |rest: &str| offset + (text.len() - rest.len());
        while !rest.is_empty() {
            if rest.starts_with("{{") {
                let Some(end) = rest.find("}}") else {
                    return Err(err(
                        at(rest),
                        "found start of regex string with no end '}}'".into(),
                    ));
                };
                let alternation = rest[..end].contains('|');
                if alternation {
                    b.push_regex("(", "(");
                    b.next_group += 1;
                }
                b.push_user_regex(&rest[2..end])
                    .map_err(|m| err(at(rest) + 2, format!("invalid regex: {m}")))?;
                if alternation {
                    b.push_regex(")", ")");
                }
                rest = &rest[end + 2..];
                continue;
            }
            if rest.starts_with("[[") && !rest.starts_with("[[[") {
                let block_start = at(rest);
                let unparsed = &rest[2..];
                let end = match find_block_end(unparsed) {
                    Ok(Some(end)) => end,
                    Ok(None) => {
                        return Err(err(
                            block_start,
                            "Invalid substitution block, no ]] found".into(),
                        ));
                    }
                    Err((o, m)) => return Err(err(block_start + 2 + o, m)),
                };
                let body = &unparsed[..end];
                let body_offset = block_start + 2;
                rest = &unparsed[end + 2..];
                if let Some(numeric_body) = body.strip_prefix('#') {
                    Self::parse_numeric_block(
                        &mut b,
                        numeric_body,
                        body_offset + 1,
                        numeric_body,
                        buffer,
                    )?;
                } else {
                    Self::parse_string_block(&mut b, body, body_offset, buffer)?;
                }
                continue;
            }
            let fixed_end = [rest[1..].find("{{"), rest[1..].find("[[")]
                .into_iter()
                .flatten()
                .min()
                .map_or(rest.len(), |e| e + 1);
            let fixed = &rest[..fixed_end];
            b.push_regex(&llvm_escape(fixed), &regex::escape(fixed));
            rest = &rest[fixed_end..];
        }
        if full_lines {
            b.push_regex(&format!("{ws}$"), &format!("{ws}$"));
        }
        Ok(make(Body::Regex(RegexPattern {
            display: b.display,
            pieces: b.pieces,
            string_defs: b.string_defs,
            numeric_defs: b.numeric_defs,
            same_line_uses: b.same_line_uses,
        })))
    }

    fn parse_string_block(
        b: &mut RegexBuilder,
        body: &str,
        body_offset: usize,
        buffer: BufferId,
    ) -> Result<(), PatternError> {
        let err = |at: usize, message: String| PatternError {
            span: Span::point(buffer, at),
            message,
        };
        let colon = body.find(':');
        if let Some(space) = body[..colon.unwrap_or(body.len())].find([' ', '\t']) {
            return Err(err(body_offset + space, "unexpected whitespace".into()));
        }
        let (name, pseudo, after) =
            parse_variable(body).map_err(|(o, m)| err(body_offset + o, m))?;
        if colon.is_some() {
            let Some(regex_src) = (!pseudo).then(|| after.strip_prefix(':')).flatten() else {
                return Err(err(
                    body_offset,
                    "invalid name in string variable definition".into(),
                ));
            };
            let group = b.next_group;
            b.push_regex("(", "(");
            b.next_group += 1;
            let regex_offset = body_offset + name.len() + 1;
            let rust = if regex_src.is_empty() {
                String::new()
            } else {
                b.push_user_regex(regex_src)
                    .map_err(|m| err(regex_offset, format!("invalid regex: {m}")))?
            };
            b.push_regex(")", ")");
            b.string_defs.push((name.to_string(), group));
            b.local_string_defs.push((name.to_string(), group, rust));
            return Ok(());
        }
        if pseudo {
            let expr = numeric::parse_legacy_line(body, body_offset).map_err(|(o, m)| err(o, m))?;
            b.pieces.push(Piece::NumericUse {
                text: body.to_string(),
                expr,
                format: None,
                offset: body_offset,
            });
            return Ok(());
        }
        if !after.is_empty() {
            return Err(err(
                body_offset,
                "invalid name in string variable use".into(),
            ));
        }
        if let Some((_, def_group, rust)) = b
            .local_string_defs
            .iter()
            .rev()
            .find(|(n, _, _)| n == name)
            .cloned()
        {
            // LLVM emits a back-reference; the regex crate has none, so the
            // definition's regex is repeated and the texts compared after
            // matching.
            let use_group = b.next_group;
            b.display.push_str(&format!("\\{def_group}"));
            if let Some(Piece::Regex(last)) = b.pieces.last_mut() {
                last.push_str(&format!("({rust})"));
            } else {
                b.pieces.push(Piece::Regex(format!("({rust})")));
            }
            b.next_group += 1 + count_groups(&rust).unwrap_or(0);
            b.same_line_uses.push((def_group, use_group));
            return Ok(());
        }
        b.pieces.push(Piece::StringUse {
            name: name.to_string(),
            offset: body_offset,
        });
        Ok(())
    }

    fn parse_numeric_block(
        b: &mut RegexBuilder,
        body: &str,
        body_offset: usize,
        text: &str,
        buffer: BufferId,
    ) -> Result<(), PatternError> {
        let err = |at: usize, message: String| PatternError {
            span: Span::point(buffer, at),
            message,
        };
        let block = numeric::parse_block(body, body_offset).map_err(|(o, m)| err(o, m))?;
        if let Some(expr) = &block.expr {
            for (name, _, _) in &b.numeric_defs {
                if expr.uses(name) {
                    return Err(err(
                        body_offset,
                        format!(
                            "numeric variable '{name}' defined earlier in the same CHECK directive"
                        ),
                    ));
                }
            }
        }
        let format = block.format;
        match (block.def, block.expr) {
            (Some(name), expr) => {
                let group = b.next_group;
                b.push_regex("(", "(");
                b.next_group += 1;
                let def_format = format.unwrap_or_default();
                match expr {
                    None => {
                        let r = def_format.regex();
                        b.push_regex(&r, &r);
                    }
                    Some(expr) => {
                        b.pieces.push(Piece::NumericUse {
                            text: text.split(':').nth(1).unwrap_or(text).trim().to_string(),
                            expr,
                            format,
                            offset: body_offset,
                        });
                    }
                }
                b.push_regex(")", ")");
                b.numeric_defs.push((name, group, def_format));
            }
            (None, Some(expr)) => {
                let shown = text.rsplit(',').next().unwrap_or(text).trim().to_string();
                b.pieces.push(Piece::NumericUse {
                    text: shown,
                    expr,
                    format,
                    offset: body_offset,
                });
            }
            // parse_block rejects blocks with neither a definition nor an
            // expression.
            (None, None) => {}
        }
        Ok(())
    }

    /// Whether the pattern defines or uses any variable.
    pub fn has_variable(&self) -> bool {
        match &self.body {
            Body::Regex(r) => {
                // Numeric definitions alone do not count, as in LLVM.
                !r.string_defs.is_empty()
                    || !r.same_line_uses.is_empty()
                    || r.pieces.iter().any(|p| !matches!(p, Piece::Regex(_)))
            }
            _ => false,
        }
    }

    /// The text fuzzy matching compares against: the fixed string, or the
    /// regex source as LLVM builds it.
    pub fn example_text(&self) -> &str {
        match &self.body {
            Body::Fixed(s) => s,
            Body::Regex(r) => &r.display,
            Body::Empty => "(\n$)",
            Body::Eof => "",
        }
    }

    /// Current values of the variables and expressions this pattern
    /// substitutes, for notes.
    pub fn substitution_values(&self, vars: &Variables) -> Vec<SubstitutionValue> {
        let Body::Regex(r) = &self.body else {
            return Vec::new();
        };
        r.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Regex(_) => None,
                Piece::StringUse { name, .. } => Some(SubstitutionValue {
                    name: name.clone(),
                    value: vars.string(name).map(str::to_string),
                }),
                Piece::NumericUse {
                    text, expr, format, ..
                } => Some(SubstitutionValue {
                    name: text.clone(),
                    value: expr
                        .eval(vars, self.line)
                        .ok()
                        .and_then(|(v, f)| format.or(f).unwrap_or_default().render(v).ok()),
                }),
            })
            .collect()
    }

    /// Finds the first match in `buf` and records the variables it defines
    /// in `vars`.
    pub fn find(
        &self,
        buf: &str,
        vars: &mut Variables,
        ignore_case: bool,
    ) -> Result<Match, MatchError> {
        match &self.body {
            Body::Eof => Ok(Match::plain(buf.len(), 0)),
            Body::Fixed(s) => find_fixed(buf, s, ignore_case)
                .map(|p| Match::plain(p, s.len()))
                .ok_or(MatchError::NotFound),
            Body::Empty => {
                static EMPTY_LINE: OnceLock<Regex> = OnceLock::new();
                let re = EMPTY_LINE.get_or_init(|| Regex::new(r"(?m)\n$").expect("constant regex"));
                // The match starts after the newline the pattern consumes.
                re.find(buf)
                    .map(|m| Match::plain(m.start() + 1, 0))
                    .ok_or(MatchError::NotFound)
            }
            Body::Regex(r) => self.find_regex(r, buf, vars, ignore_case),
        }
    }

    fn find_regex(
        &self,
        r: &RegexPattern,
        buf: &str,
        vars: &mut Variables,
        ignore_case: bool,
    ) -> Result<Match, MatchError> {
        let flags = if ignore_case { "(?mi)" } else { "(?m)" };
        let invalid = |offset: usize, message: String| PatternError {
            span: Span::point(self.span.buffer, offset),
            message,
        };
        // Compiled per match, not cached: check files can hold tens of
        // thousands of patterns, and each compiled regex carries its own
        // matching caches.
        let mut src = String::from(flags);
        let mut errors = Vec::new();
        for piece in &r.pieces {
            match piece {
                Piece::Regex(s) => src.push_str(s),
                Piece::StringUse { name, offset } => match vars.string(name) {
                    Some(v) => src.push_str(&regex::escape(v)),
                    None => errors.push(invalid(*offset, format!("undefined variable: {name}"))),
                },
                Piece::NumericUse {
                    expr,
                    format,
                    offset,
                    ..
                } => match expr.eval(vars, self.line) {
                    Ok((v, implied)) => match format.or(implied).unwrap_or_default().render(v) {
                        Ok(text) => src.push_str(&regex::escape(&text)),
                        Err(m) => errors.push(invalid(*offset, m)),
                    },
                    Err(EvalError::Undefined(name, at)) => {
                        errors.push(invalid(at, format!("undefined variable: {name}")))
                    }
                    Err(EvalError::Arithmetic(m)) => errors.push(invalid(*offset, m)),
                },
            }
        }
        if !errors.is_empty() {
            return Err(MatchError::Invalid(errors));
        }
        // LLVM's regex library cannot compile an empty regex (e.g. a lone use
        // of a variable holding ""), so such a pattern never matches.
        if src.len() == flags.len() {
            return Err(MatchError::NotFound);
        }
        let regex = Regex::new(&src).map_err(|e| {
            MatchError::Invalid(vec![invalid(
                self.span.start,
                format!("invalid regex: {}", describe_regex_error(&e)),
            )])
        })?;

        let mut start = 0;
        let caps = loop {
            let Some(caps) = regex.captures_at(buf, start) else {
                return Err(MatchError::NotFound);
            };
            let consistent = r
                .same_line_uses
                .iter()
                .all(|&(d, u)| caps.get(d).map(|m| m.as_str()) == caps.get(u).map(|m| m.as_str()));
            if consistent {
                break caps;
            }
            let m = caps.get(0).map_or(start, |m| m.start());
            start = m + buf[m..].chars().next().map_or(1, char::len_utf8);
            if start > buf.len() {
                return Err(MatchError::NotFound);
            }
        };
        let whole = caps.get(0).map_or((0, 0), |m| (m.start(), m.len()));
        let mut captures: Vec<(String, usize, usize)> = r
            .string_defs
            .iter()
            .map(|(name, group)| (name, *group))
            .chain(r.numeric_defs.iter().map(|(name, group, _)| (name, *group)))
            .filter_map(|(name, group)| caps.get(group).map(|m| (name.clone(), m.start(), m.end())))
            .collect();
        captures.sort_by_key(|c| (c.1, c.2));
        let mut pending_numeric = Vec::new();
        for (name, group, format) in &r.numeric_defs {
            let text = caps.get(*group).map_or("", |m| m.as_str());
            match format.parse(text) {
                Some(v) => pending_numeric.push((name, v, *format)),
                None => {
                    return Err(MatchError::Invalid(vec![invalid(
                        self.span.start,
                        format!("unable to represent numeric value '{text}'"),
                    )]))
                }
            }
        }
        for (name, group) in &r.string_defs {
            vars.set_string(name, caps.get(*group).map_or("", |m| m.as_str()));
        }
        for (name, v, f) in pending_numeric {
            vars.set_numeric(name, v, f);
        }
        Ok(Match {
            pos: whole.0,
            len: whole.1,
            captures,
        })
    }
}

/// Finds `needle` in `hay`, ASCII-case-insensitively when asked.
fn find_fixed(hay: &str, needle: &str, ignore_case: bool) -> Option<usize> {
    if !ignore_case {
        return hay.find(needle);
    }
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() {
        return Some(0);
    }
    (0..=h.len().checked_sub(n.len())?)
        .find(|&i| hay.is_char_boundary(i) && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> PatternSettings {
        PatternSettings {
            match_full_lines: false,
            strict_whitespace: false,
            ignore_case: false,
        }
    }

    fn parse(text: &str) -> Result<Pattern, PatternError> {
        Pattern::parse(
            text,
            0,
            BufferId::Check,
            CheckType::new(CheckKind::Plain),
            "CHECK",
            1,
            settings(),
        )
    }

    #[test]
    fn fixed_strings_stay_fixed() {
        let p = parse("a.b*c").unwrap();
        assert_eq!(p.example_text(), "a.b*c");
        let mut v = Variables::default();
        assert_eq!(
            p.find("xxa.b*c", &mut v, false).map(|m| (m.pos, m.len)),
            Ok((2, 5))
        );
        assert_eq!(p.find("aXb*c", &mut v, false), Err(MatchError::NotFound));
        let def = parse("x [[V:[a-z]+]]").unwrap();
        let m = def.find("x abc", &mut v, false).unwrap();
        assert_eq!(m.captures, vec![("V".to_string(), 2, 5)]);
    }

    #[test]
    fn regex_blocks_and_variables() {
        let mut v = Variables::default();
        let def = parse("%[[X:[a-z]+]] = add {{%[0-9]+}}").unwrap();
        assert_eq!(
            def.find("  %foo = add %3\n", &mut v, false)
                .map(|m| (m.pos, m.len)),
            Ok((2, 13))
        );
        assert_eq!(v.string("X"), Some("foo"));
        let uses = parse("use [[X]]").unwrap();
        assert!(uses.has_variable());
        assert_eq!(
            uses.find("use fo\nuse foo", &mut v, false)
                .map(|m| (m.pos, m.len)),
            Ok((7, 7))
        );
        let undefined = parse("[[Y]]").unwrap();
        assert!(matches!(
            undefined.find("x", &mut v, false),
            Err(MatchError::Invalid(_))
        ));
    }

    #[test]
    fn same_line_reuse_requires_equal_text() {
        let mut v = Variables::default();
        let p = parse("[[A:[a-z]+]] [[A]]").unwrap();
        assert_eq!(
            p.find("ab cd\nx y x x\n", &mut v, false)
                .map(|m| (m.pos, m.len)),
            Ok((10, 3))
        );
        assert_eq!(v.string("A"), Some("x"));
    }

    #[test]
    fn numeric_blocks() {
        let mut v = Variables::default();
        let p = parse("[[#%x,ADDR:]] [[#ADDR+1]]").unwrap_err();
        assert!(p
            .message
            .contains("defined earlier in the same CHECK directive"));
        let def = parse("at [[#%x,ADDR:]]").unwrap();
        assert!(def.find("at ff", &mut v, false).is_ok());
        let next = parse("next [[#ADDR+1]] line [[@LINE]]").unwrap();
        assert_eq!(
            next.find("next 100 line 1", &mut v, false)
                .map(|m| (m.pos, m.len)),
            Ok((0, 15))
        );
    }

    #[test]
    fn parse_errors_point_at_the_problem() {
        let e = parse("a {{b").unwrap_err();
        assert_eq!(
            (e.span.start, e.message.as_str()),
            (2, "found start of regex string with no end '}}'")
        );
        let e = parse("a [[b").unwrap_err();
        assert_eq!(e.message, "Invalid substitution block, no ]] found");
        let e = parse("[[0, 1]]").unwrap_err();
        assert_eq!(
            (e.span.start, e.message.as_str()),
            (4, "unexpected whitespace")
        );
        let e = parse("x{{(}}").unwrap_err();
        assert!(e.message.starts_with("invalid regex"), "{}", e.message);
    }
}
