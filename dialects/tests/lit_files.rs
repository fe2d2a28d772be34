//! Checks the `lit-tests/nn` files against the dialect before `ipu-opt`
//! runs them: each function is rewritten into top-level ops (arguments
//! become `test.source` ops, `return` is dropped), then
//! - `invalid.mlir`: every `// -----` case must fail verification with
//!   exactly its `expected-error` message;
//! - `roundtrip.mlir`: every case must verify, and every `CHECK` line of an
//!   `nn` op must match a printed op up to SSA value names.

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, verify, Context, DialectRegistry, OpId, PrintOptions};

fn lit_file(name: &str) -> String {
    let path = format!("{}/../lit-tests/nn/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Rewrites `func.func` bodies into top-level ops.
fn flatten_functions(src: &str) -> String {
    let mut out = String::new();
    for line in src.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("func.func @") {
            let open = rest.find('(').expect("argument list");
            let close = rest
                .find(") ->")
                .or_else(|| rest.find(") {"))
                .expect("end of arguments");
            let args = &rest[open + 1..close];
            for arg in args.split(", %").filter(|a| !a.is_empty()) {
                let (name, ty) = arg
                    .trim_start_matches('%')
                    .split_once(": ")
                    .expect("name: type");
                out.push_str(&format!("%{name} = \"test.source\"() : () -> {ty}\n"));
            }
        } else if let Some(values) = l.strip_prefix("return ") {
            // Keep returned values alive with an opaque user.
            let (names, types) = values.split_once(" : ").expect("return values : types");
            out.push_str(&format!("\"test.use\"({names}) : ({types}) -> ()\n"));
        } else if line == "}" {
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn context() -> Context {
    let mut registry = DialectRegistry::new();
    registry.register(ipuc_dialects::nn::dialect());
    let mut ctx = Context::new(Arc::new(registry));
    ctx.allow_unregistered = true;
    ctx
}

/// Replaces FileCheck variables (`[[C:%.*]]`, `[[C]]`) and `{{\[\[}}` by plain text.
fn strip_filecheck(s: &str) -> String {
    let s = s.replace("{{\\[\\[}}", "[[");
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(i) = rest.find("[[") {
        // `[[` that opens a dense literal is followed by a digit or `-`.
        let is_var = rest[i + 2..].starts_with(|c: char| c.is_ascii_uppercase());
        if !is_var {
            out.push_str(&rest[..i + 2]);
            rest = &rest[i + 2..];
            continue;
        }
        out.push_str(&rest[..i]);
        out.push('%');
        let end = rest[i..].find("]]").expect("closing ]]");
        rest = &rest[i + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Removes SSA value names (`%0`, `%arg1`, `%3#2`) so that ops compare by shape.
fn strip_values(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            while chars
                .peek()
                .is_some_and(|c| c.is_alphanumeric() || *c == '#' || *c == '_')
            {
                chars.next();
            }
            out.push('%');
        } else {
            out.push(c);
        }
    }
    out
}

/// Each function of `text` (`file`) parsed alone, as its own SSA scope,
/// verified and handed to `then` (with its index, to rewrite it); the ops
/// of all of them as `then` left them, printed, trimmed and without value
/// names.
fn printed_per_function(
    text: &str,
    file: &str,
    mut then: impl FnMut(&mut Context, OpId, usize),
) -> Vec<String> {
    let mut printed = Vec::new();
    for (i, function) in text.split("\nfunc.func").enumerate().skip(1) {
        let src = flatten_functions(&format!("func.func{function}"));
        let mut ctx = context();
        let parsed = parse_source(&mut ctx, file, &src)
            .unwrap_or_else(|d| panic!("function {i}: {}\n{src}", d.message));
        verify(&ctx, parsed.module).unwrap_or_else(|d| panic!("function {i}: {}", d.message));
        then(&mut ctx, parsed.module, i);
        printed.extend(
            print_op(&ctx, parsed.module, &PrintOptions::default())
                .lines()
                .map(|l| strip_values(l.trim())),
        );
    }
    printed
}

/// Asserts that every op a line of `text` asks for (`wanted` of the line:
/// a `CHECK`ed op in printed form) is among `printed`; returns how many.
fn assert_printed(
    text: &str,
    printed: &[String],
    wanted: impl Fn(&str) -> Option<String>,
) -> usize {
    let mut checked = 0;
    for want in text.lines().filter_map(wanted) {
        assert!(
            printed.contains(&want),
            "no printed op matches\n  {want}\nprinted:\n{}",
            printed.join("\n")
        );
        checked += 1;
    }
    checked
}

#[test]
fn invalid_cases_report_their_expected_errors() {
    let text = lit_file("invalid.mlir");
    let mut cases = 0;
    for case in text.split("// -----") {
        let expected = case
            .lines()
            .find_map(|l| {
                l.split_once("expected-error @+1 {{")
                    .map(|(_, r)| r.trim_end().trim_end_matches("}}").to_string())
            })
            .unwrap_or_else(|| panic!("case without expected-error:\n{case}"));
        let src = flatten_functions(case);
        let mut ctx = context();
        let parsed = parse_source(&mut ctx, "invalid.mlir", &src)
            .unwrap_or_else(|d| panic!("{}\n{src}", d.message));
        let err = verify(&ctx, parsed.module).expect_err(&src);
        assert_eq!(err.message, expected, "in\n{src}");
        cases += 1;
    }
    assert!(cases >= 25, "{cases}");
}

#[test]
fn roundtrip_cases_verify_and_match_their_checks() {
    let text = lit_file("roundtrip.mlir");
    let printed = printed_per_function(&text, "roundtrip.mlir", |_, _, _| {});
    let checked = assert_printed(&text, &printed, |line| {
        let (_, pattern) = line.split_once("// CHECK-NEXT: ")?;
        pattern
            .contains(" = nn.")
            .then(|| strip_values(pattern.trim()))
    });
    assert!(checked >= 45, "{checked}");
}

#[test]
fn fold_cases_produce_their_checked_constants() {
    use ipuc_ir::rewrite::{apply_patterns_greedily, GreedyConfig, RewritePatternSet};
    let text = lit_file("fold.mlir");
    let printed = printed_per_function(&text, "fold.mlir", |ctx, module, i| {
        let stats = apply_patterns_greedily(
            ctx,
            module,
            &RewritePatternSet::new().freeze(),
            &GreedyConfig::default(),
        );
        assert!(stats.converged);
        verify(ctx, module).unwrap_or_else(|d| panic!("function {i}: {}", d.message));
    });
    let checked = assert_printed(&text, &printed, |line| {
        let (_, pattern) = line
            .split_once(": ")
            .filter(|(k, _)| k.trim_start().starts_with("// CHECK"))?;
        pattern
            .contains("nn.constant")
            .then(|| strip_values(&strip_filecheck(pattern.trim())))
    });
    assert!(checked >= 8, "{checked}");
}
