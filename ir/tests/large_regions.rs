//! Operations larger than a megabyte have their region body parsed op by
//! op (pest's token queue then holds one operation at a time): the result,
//! locations and diagnostics must be exactly those of a whole parse.

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, Context, Diagnostic, DialectRegistry, PrintOptions};

fn context() -> Context {
    let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
    ctx.allow_unregistered = true;
    ctx
}

/// The error of parsing `text` (named `file`), which must not parse.
fn parse_error(file: &str, text: &str) -> Diagnostic {
    let mut ctx = context();
    match parse_source(&mut ctx, file, text) {
        Err(err) => err,
        Ok(_) => panic!("{file}: the broken input parsed"),
    }
}

/// A generic op whose region holds `n` ops in two blocks (the second with
/// an argument, branched to from the first), printed as the printer prints
/// it, so that parse + print must give back the same text.
fn big_region_op(n: usize, indent: &str, nested: Option<&str>) -> String {
    let mut s = format!("{indent}\"t.big\"() ({{\n");
    s.push_str(&format!("{indent}  %0 = \"t.src\"() : () -> i32\n"));
    for i in 1..n / 2 {
        s.push_str(&format!(
            "{indent}  %{i} = \"t.add\"(%{}, %0) {{k = {i} : i64}} : (i32, i32) -> i32\n",
            i - 1
        ));
    }
    if let Some(inner) = nested {
        s.push_str(inner);
    }
    s.push_str(&format!(
        "{indent}  \"t.br\"(%{})[^bb1] : (i32) -> ()\n",
        n / 2 - 1
    ));
    s.push_str(&format!("{indent}^bb1(%{}: i32):  // pred: ^bb0\n", n / 2));
    for i in n / 2 + 1..n {
        s.push_str(&format!(
            "{indent}  %{i} = \"t.mul\"(%{}, %{}) : (i32, i32) -> i32\n",
            i - 1,
            n / 2
        ));
    }
    s.push_str(&format!("{indent}  \"t.end\"(%{}) : (i32) -> ()\n", n - 1));
    s.push_str(&format!(
        "{indent}}}) {{tag = \"after the body\"}} : () -> ()\n"
    ));
    s
}

#[test]
fn a_large_region_parses_op_by_op_into_the_same_ir() {
    let text = big_region_op(30_000, "", None);
    assert!(
        text.len() > 1 << 20,
        "the op must be large enough to stream"
    );
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "big.mlir", &text).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(parsed.streamed_bodies, 1);
    let printed = print_op(&ctx, parsed.module, &PrintOptions::generic());
    // The printer indents inside the module and drops the comment.
    let expected: String = text
        .lines()
        .map(|l| format!("  {}\n", l.trim_end_matches("  // pred: ^bb0")))
        .collect();
    let body = printed
        .strip_prefix("\"builtin.module\"() ({\n")
        .and_then(|p| p.strip_suffix("}) : () -> ()\n"))
        .unwrap_or_else(|| panic!("unexpected module form:\n{}", &printed[..200]));
    if let Some((i, _)) = body
        .lines()
        .zip(expected.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!(
            "printed IR differs from the input at line {i}:\n{}\n{}",
            body.lines().nth(i).unwrap(),
            expected.lines().nth(i).unwrap()
        );
    }
    assert_eq!(body, expected);
}

#[test]
fn nested_large_regions_and_locations_match_the_source() {
    let inner = big_region_op(24_000, "  ", None);
    let text = big_region_op(24_000, "", Some(&inner));
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "big.mlir", &text).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(parsed.streamed_bodies, 2, "the inner op is large too");
    let printed = print_op(
        &ctx,
        parsed.module,
        &PrintOptions {
            debug_info: true,
            ..PrintOptions::default()
        },
    );
    // Every op is located at its name, on its source line.
    let printed_locs: std::collections::HashSet<&str> = printed
        .match_indices("loc(\"big.mlir\":")
        .map(|(i, _)| {
            let rest = &printed[i..];
            &rest[..rest.find(')').expect("closing paren") + 1]
        })
        .collect();
    for (n, line) in text.lines().enumerate() {
        let Some(col) = line.find("\"t.") else {
            continue;
        };
        let want = format!("loc(\"big.mlir\":{}:{})", n + 1, col + 1);
        assert!(
            printed_locs.contains(want.as_str()),
            "missing {want} (source line: {line})"
        );
    }
    // The outer op's trailing attribute (after the cut-out body) is kept.
    assert_eq!(printed.matches("tag = \"after the body\"").count(), 2);
}

#[test]
fn errors_in_and_after_a_streamed_body_point_at_the_source() {
    let good = big_region_op(30_000, "", None);
    let lines: Vec<&str> = good.lines().collect();
    // In the body: an undefined value on line 20001.
    let mut bad = lines.clone();
    let broken = lines[20_000].replacen("(%", "(%nope", 1);
    bad[20_000] = &broken;
    let text = bad.join("\n") + "\n";
    let err = parse_error("big.mlir", &text);
    let (file, line, _) = err.loc.file_line_col_of().expect("located");
    assert_eq!((file, line), ("big.mlir", 20_001), "{err}");
    assert!(err.message.contains("%nope"), "{}", err.message);
    // After the body: a malformed attribute on the last line.
    let text = good.replace(
        "{tag = \"after the body\"}",
        "{tag = \"after the body\", = 1}",
    );
    let err = parse_error("big.mlir", &text);
    let last = text.lines().count();
    let col = text.lines().last().unwrap().find(", = 1").unwrap() + 3;
    assert_eq!(
        err.loc.file_line_col_of(),
        Some(("big.mlir", last as u32, col as u32)),
        "{err}"
    );
}

/// Resource blobs longer than a few KiB are kept from pest (it would index
/// the lines of gigabytes of hex): their bytes, and the locations of
/// errors after them, are as if pest had read them.
#[test]
fn large_resource_blobs_decode_and_errors_after_them_are_located() {
    let blob: String = (0..5000u32).map(|i| format!("{:02X}", i % 251)).collect();
    let module = |tail: &str| {
        format!(
            "\"a.y\"() {{r = dense_resource<big> : tensor<5000xi8>}} : () -> ()\n\
             {{-#\n  dialect_resources: {{\n    builtin: {{\n      big: \"0x04000000{blob}\",\n      \
             small: \"0x0400000001\"{tail}\n    }}\n  }}\n#-}}\n"
        )
    };
    let text = module("");
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "res.mlir", &text).unwrap_or_else(|d| panic!("{d}"));
    let printed = print_op(&ctx, parsed.module, &PrintOptions::default());
    assert!(
        printed.contains(&format!("big: \"0x04000000{blob}\"")),
        "blob lost"
    );
    let rejected_at = |text: &str, message: &str, line: u32, col: u32| {
        let err = parse_error("res.mlir", text);
        assert_eq!(err.message, message);
        assert_eq!(
            err.loc.file_line_col_of(),
            Some(("res.mlir", line, col)),
            "{err}"
        );
    };
    // An entry after the long blob with a bad alignment word.
    let text = module(",\n      bad: \"0x03000000FF\"");
    rejected_at(&text, "resource alignment 3 is not a power of two", 7, 12);
    // A bad digit inside the long blob is reported at the blob.
    let text = module("")
        .replacen(&blob[..4], "0G", 1)
        .replacen("0x040000000G", "0x04000000G0", 1);
    rejected_at(&text, "invalid hex digit", 5, 12);
}
