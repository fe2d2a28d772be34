//! The "possible intended match" heuristic of LLVM FileCheck: the input
//! position (within 4 KiB) whose text is closest, by edit distance, to the
//! pattern, slightly preferring earlier lines.

/// Returns the byte offset (relative to `buffer`) of the best fuzzy match
/// for `example`, or `None` when nothing is close enough or the best match
/// is the buffer start (already shown as "scanning from here").
pub fn possible_intended_match(example: &str, buffer: &str) -> Option<usize> {
    let bytes = buffer.as_bytes();
    let example = example.as_bytes();
    let mut lines_forward = 0usize;
    let mut best: Option<(usize, f64)> = None;
    for i in 0..bytes.len().min(4096) {
        if bytes[i] == b'\n' {
            lines_forward += 1;
        }
        if bytes[i] == b' ' || bytes[i] == b'\t' {
            continue;
        }
        let window = &bytes[i..bytes.len().min(i + example.len())];
        let window = window.split(|&b| b == b'\n').next().unwrap_or(window);
        let quality = edit_distance(window, example) as f64 + lines_forward as f64 / 100.0;
        if best.is_none_or(|(_, q)| quality < q) {
            best = Some((i, quality));
        }
    }
    match best {
        Some((pos, quality)) if pos != 0 && quality < 50.0 => Some(pos),
        _ => None,
    }
}

/// Levenshtein distance with replacements (LLVM's `StringRef::edit_distance`).
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits() {
        assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
        assert_eq!(edit_distance(b"", b"abc"), 3);
    }

    #[test]
    fn finds_near_miss_on_later_line() {
        assert_eq!(
            possible_intended_match("use abc", "x = 1\nuse abd\n"),
            Some(6)
        );
        assert_eq!(possible_intended_match("foo", "hello"), Some(2));
        assert_eq!(possible_intended_match("foo", "foa"), None);
    }
}
