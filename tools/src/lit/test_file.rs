//! Parsing the lit directives of a test file: `RUN:` (with `\` line
//! continuation), `REQUIRES:`, `UNSUPPORTED:` and `XFAIL:`, written after a
//! `//`, `#` or `;` comment leader.

use regex::Regex;
use std::sync::OnceLock;

/// A RUN command and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLine {
    /// 1-based line of the first `RUN:` of this command.
    pub line: usize,
    /// The command with continuations joined (before substitution).
    pub command: String,
}

/// The lit directives of one test file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestDirectives {
    /// RUN commands in order.
    pub run_lines: Vec<RunLine>,
    /// `REQUIRES:` expressions; all must hold.
    pub requires: Vec<String>,
    /// `UNSUPPORTED:` expressions; any that holds makes the test unsupported.
    pub unsupported: Vec<String>,
    /// `XFAIL:` expressions (`*` matches always); any that holds means the
    /// test is expected to fail.
    pub xfail: Vec<String>,
}

/// A malformed directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectiveError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn directive_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^\s*(?://+|#+|;+)\s*(RUN|REQUIRES|UNSUPPORTED|XFAIL|END)\s*:(.*)$")
            .expect("constant regex")
    })
}

/// Reads the directives of `text`.
pub fn parse(text: &str) -> Result<TestDirectives, DirectiveError> {
    let mut d = TestDirectives::default();
    let mut pending: Option<RunLine> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let Some(caps) = directive_re().captures(line) else {
            continue;
        };
        let keyword = &caps[1];
        let body = caps[2].trim();
        if keyword == "END" {
            break;
        }
        if keyword == "RUN" {
            let (piece, continues) = match body.strip_suffix('\\') {
                Some(p) => (p.trim_end(), true),
                None => (body, false),
            };
            let run = pending.get_or_insert_with(|| RunLine {
                line: number,
                command: String::new(),
            });
            if !run.command.is_empty() && !piece.is_empty() {
                run.command.push(' ');
            }
            run.command.push_str(piece);
            if !continues {
                d.run_lines.extend(pending.take());
            }
            continue;
        }
        if let Some(run) = &pending {
            return Err(DirectiveError {
                line: number,
                message: format!(
                    "RUN: line {} ends with '\\' but the next line is not a RUN: line",
                    run.line
                ),
            });
        }
        if body.is_empty() {
            return Err(DirectiveError {
                line: number,
                message: format!("{keyword}: needs at least one feature expression"),
            });
        }
        let items = body
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        match keyword {
            "REQUIRES" => d.requires.extend(items),
            "UNSUPPORTED" => d.unsupported.extend(items),
            _ => d.xfail.extend(items),
        }
    }
    if let Some(run) = pending {
        return Err(DirectiveError {
            line: run.line,
            message: "RUN: line ends with '\\' at the end of the file".into(),
        });
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comment_styles_and_continuations() {
        let text = "// RUN: a %s \\\n// RUN:   | b\n# RUN: c\n; REQUIRES: x, y\n// XFAIL: *\nint x; // RUN: not-a-directive\n";
        let d = parse(text).unwrap();
        assert_eq!(
            d.run_lines,
            vec![
                RunLine {
                    line: 1,
                    command: "a %s | b".into()
                },
                RunLine {
                    line: 3,
                    command: "c".into()
                },
            ]
        );
        assert_eq!(d.requires, vec!["x", "y"]);
        assert_eq!(d.xfail, vec!["*"]);
    }

    #[test]
    fn reports_dangling_continuation() {
        assert_eq!(parse("// RUN: a \\\n").unwrap_err().line, 1);
        assert_eq!(parse("// RUN: a \\\n// REQUIRES: x\n").unwrap_err().line, 2);
    }
}
