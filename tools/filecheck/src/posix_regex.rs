//! Translation of POSIX extended regular expressions (the dialect LLVM
//! FileCheck's `{{...}}` and `[[VAR:...]]` use, with LLVM's newline-sensitive
//! flag) into the `regex` crate's syntax.
//!
//! The differences that matter in check files: a backslash before a letter
//! or digit is that literal character (`\d` is `d`); a backslash inside a
//! bracket expression is literal; `[^...]` never matches a newline; empty
//! (sub)expressions are errors. Leftmost-longest alternation (POSIX) versus
//! leftmost-first (`regex`) is not emulated.

/// Translates `src` (POSIX ERE) into `regex` crate syntax, or explains why it
/// is invalid (in the words of LLVM's regex library where it has them).
pub fn translate(src: &str) -> Result<String, String> {
    check_no_empty_subexpression(src)?;
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let Some(&c) = chars.get(i + 1) else {
                    return Err("trailing backslash (\\)".into());
                };
                if c.is_ascii_digit() && c != '0' {
                    return Err("invalid backreference number".into());
                }
                out.push_str(&regex::escape(&c.to_string()));
                i += 2;
            }
            '[' => i = translate_bracket(&chars, i, &mut out)?,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Translates the bracket expression starting at `chars[start] == '['`,
/// returning the index just past its closing `]`.
fn translate_bracket(chars: &[char], start: usize, out: &mut String) -> Result<usize, String> {
    let unbalanced = || "brackets ([ ]) not balanced".to_string();
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push_str("^\\n");
        i += 1;
    }
    let first = i;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(unbalanced());
        };
        match c {
            ']' if i != first => {
                out.push(']');
                return Ok(i + 1);
            }
            '[' if matches!(chars.get(i + 1), Some(':' | '=' | '.')) => {
                let kind = chars[i + 1];
                let body_start = i + 2;
                let mut j = body_start;
                while j + 1 < chars.len() && !(chars[j] == kind && chars[j + 1] == ']') {
                    j += 1;
                }
                if j + 1 >= chars.len() {
                    return Err(unbalanced());
                }
                let body: String = chars[body_start..j].iter().collect();
                if kind == ':' {
                    out.push_str(&format!("[:{body}:]"));
                } else {
                    for b in body.chars() {
                        push_class_literal(b, out);
                    }
                }
                i = j + 2;
            }
            '-' if i != first && chars.get(i + 1).is_some_and(|&n| n != ']') => {
                out.push('-');
                i += 1;
            }
            _ => {
                push_class_literal(c, out);
                i += 1;
            }
        }
    }
}

fn push_class_literal(c: char, out: &mut String) {
    if matches!(c, '\\' | '[' | ']' | '^' | '&' | '~' | '-') {
        out.push('\\');
    }
    out.push(c);
}

/// LLVM's regex library rejects empty expressions and empty alternatives.
fn check_no_empty_subexpression(src: &str) -> Result<(), String> {
    let err = || Err("empty (sub)expression".to_string());
    if src.is_empty() {
        return err();
    }
    let bytes = src.as_bytes();
    let mut i = 0;
    let mut in_bracket = false;
    let mut prev: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if in_bracket {
            if b == b']' && prev != Some(b'[') && prev != Some(b'^') {
                in_bracket = false;
            }
            prev = Some(b);
            i += 1;
            continue;
        }
        match b {
            b'\\' => {
                prev = Some(b'a');
                i += 2;
                continue;
            }
            b'[' => in_bracket = true,
            b'|' | b')' if matches!(prev, None | Some(b'(') | Some(b'|')) => return err(),
            b'|' if i + 1 == bytes.len() => return err(),
            _ => {}
        }
        prev = Some(b);
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn escapes_of_letters_are_literal() {
        assert_eq!(translate(r"a\db").unwrap(), "adb");
        assert_eq!(translate(r"a\.b").unwrap(), r"a\.b");
    }

    #[test]
    fn negated_classes_exclude_newline() {
        assert_eq!(translate("[^x]*").unwrap(), r"[^\nx]*");
        assert_eq!(translate(r"[\.]").unwrap(), r"[\\.]");
        assert_eq!(translate("[]a]").unwrap(), r"[\]a]");
        assert_eq!(translate("[[:space:]]").unwrap(), "[[:space:]]");
        assert_eq!(translate("[a-z-]").unwrap(), r"[a-z\-]");
    }

    #[test]
    fn rejects_empty_and_unbalanced() {
        assert!(translate("").is_err());
        assert!(translate("a|").is_err());
        assert!(translate("(|a)").is_err());
        assert!(translate("[abc").is_err());
        assert!(translate(r"(a)\1").is_err());
    }
}
