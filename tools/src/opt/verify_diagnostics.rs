//! `--verify-diagnostics`: matches emitted diagnostics against
//! `// expected-error {{...}}` annotations (`@+N`, `@-N`, `@above`, `@below`),
//! as mlir-opt does.

use ipuc_ir::{Diagnostic, Severity, SourceMgr};
use regex::Regex;

struct Expected {
    severity: Severity,
    line: u32,
    text: String,
    annotation_line: u32,
    matched: bool,
}

fn parse_expected(text: &str) -> Result<Vec<Expected>, String> {
    let re = Regex::new(
        r"expected-(error|warning|note|remark) *(?:@(above|below|[+-]?\d+))? *\{\{(.*?)\}\}",
    )
    .expect("valid regex");
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let this = i as u32 + 1;
        for c in re.captures_iter(l) {
            let severity = match &c[1] {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                "note" => Severity::Note,
                _ => Severity::Remark,
            };
            let line = match c.get(2).map(|m| m.as_str()) {
                None => this,
                Some("above") => (1..this)
                    .rev()
                    .find(|&k| !is_annotation_only(lines[k as usize - 1]))
                    .unwrap_or(this.saturating_sub(1)),
                Some("below") => (this + 1..=lines.len() as u32)
                    .find(|&k| !is_annotation_only(lines[k as usize - 1]))
                    .unwrap_or(this + 1),
                Some(off) if off.starts_with('+') || off.starts_with('-') => {
                    let d: i64 = off
                        .parse()
                        .map_err(|_| format!("invalid line offset '{off}' on line {this}"))?;
                    (this as i64 + d).max(1) as u32
                }
                Some(abs) => abs
                    .parse()
                    .map_err(|_| format!("invalid line '{abs}' on line {this}"))?,
            };
            out.push(Expected {
                severity,
                line,
                text: c[3].to_string(),
                annotation_line: this,
                matched: false,
            });
        }
    }
    Ok(out)
}

fn is_annotation_only(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("//") && t.contains("expected-")
}

/// Checks `diags` (and their notes) against the annotations in `text`.
pub fn check(
    file: &str,
    text: &str,
    diags: &[Diagnostic],
    sources: &SourceMgr,
) -> Result<(), String> {
    let mut expected = parse_expected(text)?;
    let mut errors = String::new();
    let mut all: Vec<&Diagnostic> = Vec::new();
    for d in diags {
        all.push(d);
        all.extend(d.notes.iter());
    }
    for d in all {
        if d.severity == Severity::Note && d.loc.file_line_col_of().is_none() {
            continue;
        }
        let line = d.loc.file_line_col_of().map(|(_, l, _)| l);
        let hit = expected.iter_mut().find(|e| {
            !e.matched
                && e.severity == d.severity
                && Some(e.line) == line
                && d.message.contains(&e.text)
        });
        match hit {
            Some(e) => e.matched = true,
            None => {
                // As mlir-opt: `file:line:col: error: unexpected error: ...`
                // with the source line, or just the file when unlocated.
                let message = format!("unexpected {}: {}", d.severity.as_str(), d.message);
                if line.is_some() {
                    errors.push_str(&sources.render(&Diagnostic {
                        severity: Severity::Error,
                        message,
                        notes: Vec::new(),
                        ..d.clone()
                    }));
                } else {
                    errors.push_str(&format!("{file}: error: {message}\n"));
                }
            }
        }
    }
    for e in expected.iter().filter(|e| !e.matched) {
        errors.push_str(&format!(
            "{file}:{}: error: expected {} \"{}\" was not produced (expected on line {})\n",
            e.annotation_line,
            e.severity.as_str(),
            e.text,
            e.line
        ));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
