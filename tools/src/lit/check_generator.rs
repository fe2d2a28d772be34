//! Generating FileCheck lines from MLIR-style output, following MLIR's
//! `generate-test-checks.py`: a CHECK-LABEL (with a CHECK-SAME per
//! argument) for each top-level operation that opens a region, plain CHECK
//! lines for the rest, `%[[VAL_N:.*]]` captures on a value's first
//! occurrence and `%[[VAL_N]]` afterwards, `^[[BB_N:.*]]` for block names,
//! and `#[[$ATTR_N:.+]]` for attribute aliases.

use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

const SSA_NAME: &str = r"[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*";

fn ssa_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(&format!("^(?:{SSA_NAME})")).expect("constant regex"))
}

fn ssa_results_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r"^\s*(%(?:{SSA_NAME}))(\s*,\s*(%(?:{SSA_NAME})))*\s*="
        ))
        .expect("constant regex")
    })
}

fn attr_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"#[a-zA-Z._-][a-zA-Z0-9._-]*").expect("constant regex"))
}

fn attr_def_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^\s*(#[a-zA-Z._-][a-zA-Z0-9._-]*)\s*=").expect("constant regex"))
}

fn block_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\^([a-zA-Z0-9_$.-]+)").expect("constant regex"))
}

/// Scoped names for SSA values and block labels.
#[derive(Default)]
struct Namer {
    scopes: Vec<HashMap<String, String>>,
    counter: usize,
    used: std::collections::HashSet<String>,
    in_parent_scope_left: usize,
    blocks: HashMap<String, String>,
    block_counter: usize,
}

impl Namer {
    fn lookup(&self, ssa: &str) -> Option<&String> {
        self.scopes.iter().find_map(|s| s.get(ssa))
    }

    fn generate(&mut self, ssa: &str, use_ssa_name: bool) -> String {
        let mut name = if use_ssa_name && ssa.starts_with(|c: char| c.is_ascii_alphabetic()) {
            ssa.to_uppercase().replace(['$', '.', '-'], "_")
        } else {
            let n = format!("VAL_{}", self.counter);
            self.counter += 1;
            n
        };
        while self.used.contains(&name) {
            name = format!("VAL_{}", self.counter);
            self.counter += 1;
        }
        let depth = self.scopes.len();
        let scope = if self.in_parent_scope_left > 0 && depth >= 2 {
            self.in_parent_scope_left -= 1;
            depth - 2
        } else {
            depth.saturating_sub(1)
        };
        if self.scopes.is_empty() {
            self.scopes.push(HashMap::new());
        }
        self.scopes[scope].insert(ssa.to_string(), name.clone());
        self.used.insert(name.clone());
        name
    }

    fn clear(&mut self) {
        self.counter = 0;
        self.used.clear();
        self.blocks.clear();
        self.block_counter = 0;
    }

    /// Replaces block names with captures (first occurrence) or uses.
    fn blocks(&mut self, line: &str) -> String {
        block_name_re()
            .replace_all(line, |c: &regex::Captures| {
                let block = &c[1];
                match self.blocks.get(block) {
                    Some(v) => format!("^[[{v}]]"),
                    None => {
                        let v = format!("BB_{}", self.block_counter);
                        self.block_counter += 1;
                        self.blocks.insert(block.to_string(), v.clone());
                        format!("^[[{v}:.*]]")
                    }
                }
            })
            .into_owned()
    }
}

/// Turns SSA uses and definitions in the chunks after each `%` into
/// FileCheck variables.
fn process_chunks(chunks: &[&str], namer: &mut Namer, use_ssa_name: bool) -> String {
    let mut out = String::new();
    for chunk in chunks {
        let ssa = ssa_name_re().find(chunk).map_or("", |m| m.as_str());
        match namer.lookup(ssa).cloned() {
            Some(v) => out.push_str(&format!("%[[{v}]]")),
            None => {
                let v = namer.generate(ssa, use_ssa_name);
                out.push_str(&format!("%[[{v}:.*]]"));
            }
        }
        out.push_str(&chunk[ssa.len()..]);
    }
    out.trim_end().to_string()
}

/// Escapes text FileCheck would read as regex or variable blocks.
fn preprocess(line: &str) -> String {
    line.replace("{{", r"{{\{\{}}")
        .replace("[[", r"{{\[\[}}")
        .replace("[%", r"{{\[}}%")
}

/// Generates check lines (with prefix `prefix`) for `output`, grouped in
/// segments: segment 0 holds checks before the first top-level operation
/// with a region; each further segment starts at one such operation.
pub fn generate(output: &str, prefix: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    // Output wrapped in `module {` starts one scope deeper.
    let starts_from_scope = usize::from(
        lines
            .first()
            .is_some_and(|l| l.starts_with("module") && l.ends_with('{')),
    );
    let mut segments: Vec<Vec<String>> = vec![Vec::new()];
    let mut namer = Namer::default();
    let mut attributes: HashMap<String, String> = HashMap::new();
    for raw in lines {
        if raw.starts_with("// -----") {
            continue;
        }
        if let Some(m) = attr_def_re().captures(raw) {
            let name = format!("$ATTR_{}", attributes.len());
            attributes.insert(m[1].to_string(), name.clone());
            let rest = &raw[m.get(0).map_or(0, |m| m.end())..];
            segments[0].push(format!("// {prefix}: #[[{name}:.+]] ={rest}"));
            continue;
        }
        let trimmed = raw.trim_start();
        let mut line = raw.to_string();
        if trimmed.starts_with('^') {
            if let Some((code, _comment)) = line.rsplit_once("//") {
                line = code.trim_end().to_string();
            }
        }
        let mut level = namer.scopes.len();
        if trimmed.starts_with('}') {
            namer.scopes.pop();
            level = namer.scopes.len();
        }
        if line.ends_with('{') {
            namer.scopes.push(HashMap::new());
            if level == starts_from_scope {
                segments.push(Vec::new());
            }
            namer.in_parent_scope_left = ssa_results_re()
                .find(&line)
                .map_or(0, |m| m.as_str().matches('%').count());
        }
        if level < starts_from_scope {
            continue;
        }
        let segment_start = segments.last().is_some_and(Vec::is_empty);
        if segment_start {
            namer.clear();
        }
        let line = preprocess(&line);
        let line = attr_re()
            .replace_all(&line, |c: &regex::Captures| match attributes.get(&c[0]) {
                Some(name) => format!("#[[{name}]]"),
                None => c[0].to_string(),
            })
            .into_owned();
        let line = namer.blocks(&line);
        let chunks: Vec<&str> = line.split('%').collect();
        let segment = segments.last_mut().expect("segments start non-empty");
        if !segment.is_empty() || chunks[0].is_empty() {
            let body = format!(
                "{}{}",
                chunks[0],
                process_chunks(&chunks[1..], &mut namer, false)
            );
            segment.push(format!("// {prefix}:       {}", body.trim_end()));
        } else {
            segment.push(format!("// {prefix}-LABEL: {}", chunks[0].trim_end()));
            let pad = if chunks[0].len() < 21 {
                chunks[0].len()
            } else {
                4
            };
            for argument in &chunks[1..] {
                let body = process_chunks(&[argument], &mut namer, true);
                segment.push(format!("// {prefix}-SAME:  {}{body}", " ".repeat(pad)));
            }
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_labels_captures_and_uses() {
        let output = "module {\n  func.func @f(%arg0: i32) -> i32 {\n    %0 = arith.addi %arg0, %arg0 : i32\n    cf.br ^bb1\n  ^bb1:  // pred: ^bb0\n    return %0 : i32\n  }\n}\n";
        let segments = generate(output, "CHECK");
        assert_eq!(segments.len(), 2);
        assert!(segments[0].is_empty());
        assert_eq!(
            segments[1],
            vec![
                "// CHECK-LABEL:   func.func @f(",
                "// CHECK-SAME:                 %[[ARG0:.*]]: i32) -> i32 {",
                "// CHECK:           %[[VAL_0:.*]] = arith.addi %[[ARG0]], %[[ARG0]] : i32",
                "// CHECK:           cf.br ^[[BB_0:.*]]",
                "// CHECK:         ^[[BB_0]]:",
                "// CHECK:           return %[[VAL_0]] : i32",
                "// CHECK:         }",
            ]
        );
    }
}
