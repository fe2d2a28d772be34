//! Checks the `lit-tests/nn` files against the dialect before `ipu-opt`
//! runs them: each function is rewritten into top-level ops (arguments
//! become `test.source` ops, `return` is dropped), then
//! - `invalid.mlir`: every `// -----` case must fail verification with
//!   exactly its `expected-error` message;
//! - `roundtrip.mlir`: every case must verify, and every `CHECK` line of an
//!   `nn` op must match a printed op up to SSA value names.

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, verify, Context, DialectRegistry, PrintOptions};

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
    // Each function is its own SSA scope: parse them one by one.
    let mut printed: Vec<String> = Vec::new();
    for (i, function) in text.split("\nfunc.func").enumerate().skip(1) {
        let src = flatten_functions(&format!("func.func{function}"));
        let mut ctx = context();
        let parsed = parse_source(&mut ctx, "roundtrip.mlir", &src)
            .unwrap_or_else(|d| panic!("function {i}: {}\n{src}", d.message));
        verify(&ctx, parsed.module).unwrap_or_else(|d| panic!("function {i}: {}", d.message));
        printed.extend(
            print_op(&ctx, parsed.module, &PrintOptions::default())
                .lines()
                .map(|l| strip_values(l.trim())),
        );
    }
    let mut checked = 0;
    for line in text.lines() {
        let Some((_, pattern)) = line.split_once("// CHECK-NEXT: ") else {
            continue;
        };
        if !pattern.contains(" = nn.") {
            continue;
        }
        let want = strip_values(pattern.trim());
        assert!(
            printed.contains(&want),
            "no printed op matches\n  {pattern}\nprinted:\n{}",
            printed.join("\n")
        );
        checked += 1;
    }
    assert!(checked >= 45, "{checked}");
}

#[test]
fn fold_cases_produce_their_checked_constants() {
    use ipuc_ir::rewrite::{apply_patterns_greedily, GreedyConfig, RewritePatternSet};
    let text = lit_file("fold.mlir");
    let mut printed: Vec<String> = Vec::new();
    for (i, function) in text.split("\nfunc.func").enumerate().skip(1) {
        let src = flatten_functions(&format!("func.func{function}"));
        let mut ctx = context();
        let parsed = parse_source(&mut ctx, "fold.mlir", &src)
            .unwrap_or_else(|d| panic!("function {i}: {}\n{src}", d.message));
        verify(&ctx, parsed.module).unwrap_or_else(|d| panic!("function {i}: {}", d.message));
        let stats = apply_patterns_greedily(
            &mut ctx,
            parsed.module,
            &RewritePatternSet::new().freeze(),
            &GreedyConfig::default(),
        );
        assert!(stats.converged);
        verify(&ctx, parsed.module).unwrap_or_else(|d| panic!("function {i}: {}", d.message));
        printed.extend(
            print_op(&ctx, parsed.module, &PrintOptions::default())
                .lines()
                .map(|l| strip_values(l.trim())),
        );
    }
    let mut checked = 0;
    for line in text.lines() {
        let Some((_, pattern)) = line
            .split_once(": ")
            .filter(|(k, _)| k.trim_start().starts_with("// CHECK"))
        else {
            continue;
        };
        if !pattern.contains("nn.constant") {
            continue;
        }
        let want = strip_values(&strip_filecheck(pattern.trim()));
        assert!(
            printed.contains(&want),
            "no printed op matches\n  {want}\nprinted:\n{}",
            printed.join("\n")
        );
        checked += 1;
    }
    assert!(checked >= 8, "{checked}");
}
