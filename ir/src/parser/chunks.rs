//! Splits source text into top-level items without tokenizing it, so that
//! the pest parser only ever holds the tokens of one operation at a time.
//!
//! pest keeps a token queue for its whole input; parsing a module with a
//! million operations in one call would hold every token at once. Instead
//! the module body is cut at newlines that sit outside any bracket and are
//! followed by the start of a new operation, and each piece is parsed on
//! its own.

/// A top-level item of a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    /// `#name = ...` or `!name = ...`.
    Alias,
    /// `{-# ... #-}`.
    Metadata,
    /// An operation.
    Operation,
}

/// Byte range of an item.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub kind: ItemKind,
    pub start: usize,
    pub end: usize,
}

/// Skips whitespace and `//` comments from `i`.
pub(crate) fn skip_trivia(text: &[u8], mut i: usize) -> usize {
    loop {
        while i < text.len() && matches!(text[i], b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        if i + 1 < text.len() && text[i] == b'/' && text[i + 1] == b'/' {
            while i < text.len() && text[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        return i;
    }
}

/// Scans from `start` to the end of one operation (or alias): the first
/// newline outside brackets that is followed by something that cannot
/// continue the operation. Returns the end offset (exclusive) and whether
/// an unbalanced closing bracket stopped the scan (the end of an enclosing
/// region).
pub(crate) fn scan_item_end(text: &[u8], start: usize) -> (usize, bool) {
    let mut depth: i64 = 0;
    // Every region body is scanned this way, so the scan is a pass over
    // most of the input.
    for i in significant(text, start, text.len(), &ITEM_SPECIAL) {
        match text[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return (i, true);
                }
            }
            b'\n' if depth == 0 && !line_continues(&text[start..i]) => {
                let next = skip_trivia(text, i);
                if next >= text.len() || starts_new_item(text, next) {
                    return (i, false);
                }
            }
            _ => {}
        }
    }
    (text.len(), false)
}

/// Whether a line ending `line` leaves the operation open: it ends with
/// `=`, `,`, `:` or `->` (`%0 =` followed by the op on the next line).
fn line_continues(line: &[u8]) -> bool {
    let trimmed = line.trim_ascii_end();
    match trimmed.last() {
        Some(b'=' | b',' | b':') => true,
        Some(b'>') => trimmed.len() >= 2 && trimmed[trimmed.len() - 2] == b'-',
        _ => false,
    }
}

/// Whether the text at `i` begins a new operation, alias or closing brace
/// rather than continuing the previous line.
fn starts_new_item(text: &[u8], i: usize) -> bool {
    let c = text[i];
    if c == b'}' || c == b'%' || c == b'"' || c == b'#' || c == b'!' || c == b'^' {
        return true;
    }
    if c == b'{' {
        return text[i..].starts_with(b"{-#");
    }
    if c.is_ascii_alphabetic() || c == b'_' {
        let word_end = text[i..]
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$')))
            .map_or(text.len(), |p| i + p);
        let word = &text[i..word_end];
        return !matches!(word, b"attributes" | b"loc" | b"to" | b"at");
    }
    false
}

/// Splits a whole file into top-level items.
pub(crate) fn split_top_level(text: &str) -> Result<Vec<Item>, usize> {
    let bytes = text.as_bytes();
    let mut items = Vec::new();
    let mut i = skip_trivia(bytes, 0);
    while i < bytes.len() {
        if bytes[i..].starts_with(b"{-#") {
            // memmem's SIMD search: a resource section is gigabytes of hex
            // (`str::find` was 3 % of reading one).
            let end = memchr::memmem::find(&bytes[i..], b"#-}")
                .map(|p| i + p + 3)
                .ok_or(i)?;
            items.push(Item {
                kind: ItemKind::Metadata,
                start: i,
                end,
            });
            i = skip_trivia(bytes, end);
            continue;
        }
        let kind = if (bytes[i] == b'#' || bytes[i] == b'!') && is_alias_def(bytes, i) {
            ItemKind::Alias
        } else {
            ItemKind::Operation
        };
        let (end, unbalanced) = scan_item_end(bytes, i);
        if unbalanced {
            return Err(end);
        }
        items.push(Item {
            kind,
            start: i,
            end,
        });
        i = skip_trivia(bytes, end);
    }
    Ok(items)
}

fn is_alias_def(text: &[u8], i: usize) -> bool {
    let mut j = i + 1;
    while j < text.len()
        && (text[j].is_ascii_alphanumeric() || matches!(text[j], b'_' | b'.' | b'$'))
    {
        j += 1;
    }
    while j < text.len() && matches!(text[j], b' ' | b'\t') {
        j += 1;
    }
    j < text.len() && text[j] == b'='
}

/// Deepest bracket nesting the parser accepts. pest descends recursively
/// (a few rule frames per bracket); without a bound, hostile input such as
/// `[[[[...` a hundred thousand deep would overflow the native stack.
pub(crate) const MAX_NESTING: usize = 1024;

/// Why a text's brackets keep it from being parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BracketError {
    /// An opener (at this offset) nests deeper than [`MAX_NESTING`].
    TooDeep(usize),
    /// A closer (at this offset) with no bracket open.
    Unopened(usize),
    /// A closer (at `at`) that does not match the innermost open bracket
    /// (at `opener`).
    Mismatched { at: usize, opener: usize },
}

/// The deepest bracket nesting in `text`, or where its brackets go wrong:
/// a closer that closes nothing or does not match the innermost opener is
/// reported where it stands (a stray `]` after an op would otherwise only
/// show as an unbalanced brace at the end of the file). Counts `(`, `[`,
/// `{` and `<` outside strings and comments; a `>` closes only an open `<`
/// (and is no closer in `->` or `>=`), so stray `>` tokens cannot hide
/// depth, and angles are not matched against the other brackets. Every
/// recursive grammar rule consumes one of these openers first, so the
/// depth bounds the parser's recursion.
pub(crate) fn nesting_depth(text: &[u8]) -> Result<usize, BracketError> {
    // Offsets of the open `(`, `[` and `{`, innermost last.
    let mut open: Vec<usize> = Vec::new();
    let mut angles: usize = 0;
    let mut deepest = 0;
    // This scan runs over the whole input.
    for i in significant(text, 0, text.len(), &SPECIAL) {
        match text[i] {
            c @ (b'(' | b'[' | b'{' | b'<') => {
                if c == b'<' {
                    angles += 1;
                } else {
                    open.push(i);
                }
                if open.len() + angles > deepest {
                    deepest = open.len() + angles;
                    if deepest > MAX_NESTING {
                        return Err(BracketError::TooDeep(i));
                    }
                }
            }
            c @ (b')' | b']' | b'}') => {
                let Some(opener) = open.pop() else {
                    return Err(BracketError::Unopened(i));
                };
                if closer_of(text[opener]) != c {
                    return Err(BracketError::Mismatched { at: i, opener });
                }
            }
            b'>' if angles > 0
                && !(i > 0 && text[i - 1] == b'-')
                && text.get(i + 1) != Some(&b'=') =>
            {
                angles -= 1
            }
            _ => {}
        }
    }
    Ok(deepest)
}

/// The closing bracket of an opening one.
pub(crate) fn closer_of(opener: u8) -> u8 {
    match opener {
        b'(' => b')',
        b'[' => b']',
        _ => b'}',
    }
}

/// The offsets in `from..end` of the bytes in `set` that stand outside string
/// literals and `//` comments: the walk every bracket scan here makes (each
/// set holds `"` and `/`, so literals are seen and skipped). Most bytes are in
/// no set and are passed in a tight loop, as the scans cover the whole input.
fn significant<'t>(
    text: &'t [u8],
    from: usize,
    end: usize,
    set: &'static [bool; 256],
) -> impl Iterator<Item = usize> + 't {
    let mut i = from;
    std::iter::from_fn(move || loop {
        while i < end && !set[text[i] as usize] {
            i += 1;
        }
        if i >= end {
            return None;
        }
        let at = i;
        match text[at] {
            b'"' | b'/' if let Some(next) = skip_literal(text, at, end) => i = next,
            _ => {
                i = at + 1;
                return Some(at);
            }
        }
    })
}

/// The bytes [`nesting_depth`] looks at.
static SPECIAL: [bool; 256] = byte_set(b"\"/([{<)]}>");

/// The bytes [`scan_item_end`] looks at.
static ITEM_SPECIAL: [bool; 256] = byte_set(b"\"/([{)]}\n");

/// The bytes [`matching_brace`] and [`region_body`] look at.
static BRACE_SPECIAL: [bool; 256] = byte_set(b"\"/([{)]}");

const fn byte_set(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

/// The `}` that closes the `{` at `open` (before `end`), skipping strings
/// and comments; `None` if it is not there. The caller has checked the
/// brackets with [`nesting_depth`], so counting all three kinds together
/// finds it.
pub(crate) fn matching_brace(text: &[u8], open: usize, end: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in significant(text, open + 1, end, &BRACE_SPECIAL) {
        match text[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.checked_sub(1)?,
            b'}' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return Some(i),
            },
            _ => {}
        }
    }
    None
}

/// The region body worth parsing op by op in the operation at
/// `start..end`: the first `{` that ends its line (a region opener, not a
/// dictionary: the next line does not start `key =` or `key,`), with its
/// matching `}`, if the body is most of the operation's text.
pub(crate) fn region_body(text: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    let mut depth: i64 = 0;
    let mut open: Option<(usize, i64)> = None;
    for i in significant(text, start, end, &BRACE_SPECIAL) {
        match text[i] {
            b'{' if open.is_none() && ends_line(text, i + 1, end) => {
                if starts_dictionary_entry(text, skip_trivia(text, i + 1)) {
                    return None;
                }
                open = Some((i, depth));
                depth += 1;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if let Some((o, d)) = open {
                    if depth == d {
                        let big = (i - o) * 2 > end - start;
                        return big.then_some((o, i));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether only blanks (and a comment) follow `i` up to the end of its line.
fn ends_line(text: &[u8], mut i: usize, end: usize) -> bool {
    while i < end && matches!(text[i], b' ' | b'\t' | b'\r') {
        i += 1;
    }
    i >= end || text[i] == b'\n' || text[i..end].starts_with(b"//")
}

/// Whether the text at `i` reads `key =`, `key,` or `"key" =` (a
/// dictionary entry rather than an operation).
fn starts_dictionary_entry(text: &[u8], mut i: usize) -> bool {
    if i < text.len() && text[i] == b'"' {
        i += 1;
        while i < text.len() && text[i] != b'"' && text[i] != b'\n' {
            i += if text[i] == b'\\' { 2 } else { 1 };
        }
        i += 1;
    } else if i < text.len() && (text[i].is_ascii_alphabetic() || text[i] == b'_') {
        while i < text.len()
            && (text[i].is_ascii_alphanumeric() || matches!(text[i], b'_' | b'$' | b'.'))
        {
            i += 1;
        }
    } else {
        return false;
    }
    while i < text.len() && matches!(text[i], b' ' | b'\t') {
        i += 1;
    }
    i < text.len() && matches!(text[i], b'=' | b',')
}

/// If a string literal or a `//` comment starts at `i` (before `end`), the
/// offset to continue scanning from: just past the string's closing quote
/// (or at the line end of an unterminated one), or at the comment's newline.
fn skip_literal(text: &[u8], mut i: usize, end: usize) -> Option<usize> {
    match text[i] {
        b'"' => {
            i += 1;
            // Strings can be huge (hex resource blobs): jump between the
            // bytes that matter.
            while i < end {
                match memchr::memchr3(b'"', b'\\', b'\n', &text[i..end]) {
                    Some(k) if text[i + k] == b'\\' => i += k + 2,
                    Some(k) => {
                        i += k;
                        break;
                    }
                    None => i = end,
                }
            }
            Some(if i < end && text[i] == b'"' {
                i + 1
            } else {
                i.min(end)
            })
        }
        b'/' if i + 1 < end && text[i + 1] == b'/' => {
            while i < end && text[i] != b'\n' {
                i += 1;
            }
            Some(i)
        }
        _ => None,
    }
}

/// The hex string literals (`"0x..."`) of `text` longer than `min_len`
/// bytes that are entry values (`key: "0x..."`), as offsets of their
/// opening and closing quotes (comments skipped).
pub(crate) fn long_strings(text: &[u8], min_len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match memchr::memchr2(b'"', b'/', &text[i..]) {
            None => break,
            Some(k) => i += k,
        }
        match skip_literal(text, i, text.len()) {
            Some(next) => {
                let is_entry_value = text[..i].trim_ascii_end().last() == Some(&b':');
                if text[i] == b'"'
                    && next > i + 1
                    && text[next - 1] == b'"'
                    && next - i - 2 > min_len
                    && text[i + 1..].starts_with(b"0x")
                    && is_entry_value
                {
                    out.push((i, next - 1));
                }
                i = next.max(i + 1);
            }
            None => i += 1,
        }
    }
    out
}
