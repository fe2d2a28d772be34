//! The annotated input dump (`--dump-input`), in LLVM FileCheck's layout:
//! numbered input lines, each followed by the annotations of the match
//! results that touch it.

use crate::engine::{Mark, MatchRecord};
use crate::options::DumpInputFilter;
use crate::source::SourceBuffer;
use std::collections::HashMap;
use std::fmt::Write as _;

/// One annotation line under an input line.
struct Annotation {
    label: String,
    /// 0-based input column where the marker starts.
    column: usize,
    marker: String,
    text: String,
    is_error: bool,
    /// Whether this is the first line of the record (not a continuation).
    is_first: bool,
}

/// Renders the dump of `input` with `records` (header included).
pub fn render(
    input: &SourceBuffer,
    check_name: &str,
    records: &[MatchRecord],
    filter: DumpInputFilter,
    context: usize,
) -> String {
    let labels = numbered_labels(records);
    // The empty line after a final newline is shown only when an
    // annotation starts there.
    let mut line_count = input.dump_line_count().max(1);
    let text_len = input.text.len();
    if text_len > 0 && input.text.ends_with('\n') && records.iter().any(|r| r.start >= text_len) {
        line_count += 1;
    }
    let mut per_line: Vec<Vec<Annotation>> = (0..line_count).map(|_| Vec::new()).collect();
    for (record, label) in records.iter().zip(&labels) {
        annotate(input, record, label, line_count, &mut per_line);
    }

    let label_width = labels.iter().map(String::len).max().unwrap_or(0);
    let width = label_width.max(line_count.to_string().len()) + 3;
    let shown = shown_lines(&per_line, filter, context);

    let mut out = String::new();
    let _ = write!(
        out,
        "\nInput file: {}\nCheck file: {}\n\n-dump-input=help explains the following input dump.\n\nInput was:\n<<<<<<\n",
        input.name, check_name
    );
    let mut elided = false;
    for (line, annotations) in per_line.iter().enumerate() {
        if !shown[line] {
            if !elided {
                for _ in 0..ELLIPSIS_LINES {
                    let _ = writeln!(out, "{:>width$}", ".");
                }
            }
            elided = true;
            continue;
        }
        elided = false;
        let line_text = input.line_text(line);
        // A trailing space stands for the line's newline, if it has one.
        let newline = if input.line_start(line) + line_text.len() < input.text.len() {
            " "
        } else {
            ""
        };
        let _ = writeln!(out, "{:>width$}: {line_text}{newline}", line + 1);
        // Annotation texts start after both the marker and the input line
        // (plus its newline column).
        let columns = line_text.len() + 1;
        for a in annotations {
            let mut l = format!("{:<width$}  {}{}", a.label, " ".repeat(a.column), a.marker);
            if !a.text.is_empty() {
                let marker_end = a.column + a.marker.chars().count();
                l.push_str(&" ".repeat(columns.max(marker_end) - marker_end + 1));
                l.push_str(&a.text);
            }
            let _ = writeln!(out, "{l}");
        }
    }
    out.push_str(">>>>>>\n");
    out
}

/// Labels with `'N` suffixes where one directive has several records.
fn numbered_labels(records: &[MatchRecord]) -> Vec<String> {
    let mut totals: HashMap<&str, usize> = HashMap::new();
    for r in records {
        *totals.entry(&r.label).or_default() += 1;
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    records
        .iter()
        .map(|r| {
            if totals[r.label.as_str()] == 1 {
                return r.label.clone();
            }
            let n = seen.entry(&r.label).or_default();
            let label = format!("{}'{}", r.label, n);
            *n += 1;
            label
        })
        .collect()
}

fn annotate(
    input: &SourceBuffer,
    record: &MatchRecord,
    label: &str,
    line_count: usize,
    per_line: &mut [Vec<Annotation>],
) {
    let (marker, text) = match &record.mark {
        Mark::Good => ('^', String::new()),
        Mark::Excluded => ('!', "error: no match expected".to_string()),
        Mark::WrongLine => ('!', "error: match on wrong line".to_string()),
        Mark::NoMatch => ('X', "error: no match found".to_string()),
        Mark::Invalid => ('X', "error: match failed for invalid pattern".to_string()),
        Mark::Fuzzy => ('?', "possible intended match".to_string()),
        Mark::Note(n) => (' ', n.clone()),
        Mark::CapturedVar { name, excluded } => {
            // An empty capture has no range to mark.
            let marker = match (record.start == record.end, excluded) {
                (true, _) => ' ',
                (false, true) => '!',
                (false, false) => '^',
            };
            (marker, format!("captured var \"{name}\""))
        }
    };
    let is_error = record.mark.filters_as_error();
    let first_line = input.line_of(record.start).min(line_count - 1);
    let mut line = first_line;
    loop {
        let line_start = input.line_start(line);
        // Each line has one extra column standing for its newline.
        let line_len = input.line_text(line).len() + 1;
        let from = record.start.max(line_start) - line_start;
        let from = from.min(line_len.saturating_sub(1));
        let to = record.end.saturating_sub(line_start).min(line_len);
        let first = line == first_line;
        let width = to.saturating_sub(from);
        if first || width > 0 {
            let marker = if first {
                let mut m = marker.to_string();
                if marker != ' ' && marker != '?' {
                    m.push_str(&"~".repeat(width.saturating_sub(1)));
                }
                m
            } else {
                "~".repeat(width)
            };
            per_line[line].push(Annotation {
                label: label.to_string(),
                column: from,
                marker,
                text: if first { text.clone() } else { String::new() },
                is_error,
                is_first: first,
            });
        }
        line += 1;
        if line >= line_count || input.line_start(line) >= record.end {
            break;
        }
    }
}

fn shown_lines(per_line: &[Vec<Annotation>], filter: DumpInputFilter, context: usize) -> Vec<bool> {
    let n = per_line.len();
    let keep: Vec<bool> = per_line
        .iter()
        .map(|anns| match filter {
            DumpInputFilter::All => true,
            DumpInputFilter::AnnotationFull => !anns.is_empty(),
            DumpInputFilter::Annotation => anns.iter().any(|a| a.is_first),
            DumpInputFilter::Error => anns.iter().any(|a| a.is_error && a.is_first),
        })
        .collect();
    let mut shown = vec![false; n];
    for (i, &k) in keep.iter().enumerate() {
        if k {
            for s in shown
                .iter_mut()
                .take((i + context + 1).min(n))
                .skip(i.saturating_sub(context))
            {
                *s = true;
            }
        }
    }
    // Eliding a run no longer than the ellipsis itself would save nothing.
    let mut start = 0;
    while start < n {
        if shown[start] {
            start += 1;
            continue;
        }
        let end = (start..n).find(|&i| shown[i]).unwrap_or(n);
        let printed_lines: usize = per_line[start..end].iter().map(|a| 1 + a.len()).sum();
        if printed_lines <= ELLIPSIS_LINES {
            shown[start..end].iter_mut().for_each(|s| *s = true);
        }
        start = end;
    }
    shown
}

/// Lines of `.` that stand for elided input lines.
const ELLIPSIS_LINES: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_llvm() {
        let input = SourceBuffer::new("<stdin>", "abc = 1\nuse abd\n".to_string());
        let records = vec![
            MatchRecord {
                label: "check:2".into(),
                mark: Mark::NoMatch,
                start: 7,
                end: 16,
            },
            MatchRecord {
                label: "check:2".into(),
                mark: Mark::Note("with \"X\" equal to \"abc\"".into()),
                start: 7,
                end: 7,
            },
            MatchRecord {
                label: "check:2".into(),
                mark: Mark::Fuzzy,
                start: 8,
                end: 8,
            },
        ];
        let dump = render(&input, "c2.txt", &records, DumpInputFilter::Error, 5);
        let expected = [
            "           1: abc = 1 ",
            "check:2'0            X error: no match found",
            "check:2'1              with \"X\" equal to \"abc\"",
            "           2: use abd ",
            "check:2'0     ~~~~~~~~",
            "check:2'2     ?        possible intended match",
            ">>>>>>\n",
        ]
        .join("\n");
        assert!(dump.ends_with(&expected), "{dump}");
    }
}
