//! Parse errors land on the offending character: each case gives the
//! source, the `line:col` the error must point at, and its message. Where
//! upstream reports the same input, the position is upstream's too.

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, Context, DialectRegistry, PrintOptions};

fn ctx() -> Context {
    let mut c = Context::new(Arc::new(DialectRegistry::new()));
    c.allow_unregistered = true;
    c
}

/// `(source, "line:col", message)`.
const CASES: &[(&str, &str, &str)] = &[
    // A stray closer after an op, inside a function body: upstream points at
    // it (2:39); the brace it leaves unbalanced is at the end of the file.
    (
        "\"f.f\"() ({\n  %0 = \"test.op\"() : () -> f32 ]\n  \"f.r\"() : () -> ()\n}) : () -> ()\n",
        "2:32",
        "unexpected ']': the innermost open bracket is the '{' at 1:10, which '}' closes",
    ),
    (
        "\"f.f\"() ({\n  %0 = \"test.op\"() : () -> f32 )\n}) : () -> ()\n",
        "2:32",
        "unexpected ')': the innermost open bracket is the '{' at 1:10, which '}' closes",
    ),
    (
        "\"a.b\"(%x] : (i32) -> ()\n",
        "1:9",
        "unexpected ']': the innermost open bracket is the '(' at 1:6, which ')' closes",
    ),
    (
        "\"a.b\"() : () -> ()\n}\n",
        "2:1",
        "unexpected '}': no bracket is open here",
    ),
    // A stray word after an op is no operation of its own.
    (
        "\"a.b\"() : () -> f32 foo\n",
        "1:21",
        "invalid operation: expected a location or end of input, found 'foo'",
    ),
    // Brackets inside strings and comments do not count.
    (
        "\"a.b\"() {s = \"]\"} : () -> () // )\n\"a.c\"() : () -> () ]\n",
        "2:20",
        "unexpected ']': no bracket is open here",
    ),
    // Element counts that overflow 64 bits.
    (
        "\"a.b\"() {v = dense<1.0> : tensor<9223372036854775807x3xf32>} : () -> ()\n",
        "1:27",
        "tensor<9223372036854775807x3xf32> has more elements than a 64-bit count holds",
    ),
    (
        "\"a.b\"() {v = dense<[1.0]> : tensor<4611686018427387904xf32>} : () -> ()\n",
        "1:20",
        "expected 4611686018427387904 elements in dimension, found 1",
    ),
    (
        "\"a.b\"() {v = dense<\"0x0000000000000000\"> : tensor<4611686018427387904xf32>} : () -> ()\n",
        "1:20",
        "hex dense literal has 8 bytes but tensor<4611686018427387904xf32> needs more than memory holds",
    ),
    // A bool in a float array (it used to panic), where upstream reports it.
    (
        "\"t.a\"() {a = array<f32: true>} : () -> ()\n",
        "1:25",
        "expected floating point literal",
    ),
    // Strided layouts, checked as upstream checks them.
    (
        "\"a.b\"() : () -> memref<4x4xf32, strided<[1]>>\n",
        "1:17",
        "expected the number of strides to match the rank",
    ),
    (
        "\"a.b\"() {x = strided<[9223372036854775808]>} : () -> ()\n",
        "1:23",
        "expected a 64-bit signed integer or '?'",
    ),
    (
        "\"a.b\"() {x = strided<[1], offset: -9223372036854775808>} : () -> ()\n",
        "1:35",
        "expected a 64-bit signed integer or '?'",
    ),
    (
        "\"a.b\"() {x = strided<[1.5]>} : () -> ()\n",
        "1:23",
        "expected a 64-bit signed integer or '?'",
    ),
];

#[test]
fn errors_point_at_the_offending_character() {
    for (src, at, message) in CASES {
        let mut c = ctx();
        let err = match parse_source(&mut c, "in.mlir", src) {
            Ok(_) => panic!("{src:?} parsed"),
            Err(d) => d,
        };
        let rendered = err.to_string();
        let expected = format!("in.mlir:{at}: error: {message}");
        assert!(
            rendered.starts_with(&expected),
            "{src:?}\n  expected: {expected}\n  got:      {rendered}"
        );
    }
}

/// A splat stores one element: a type of more elements than memory holds
/// parses (as upstream's does) without allocating them.
#[test]
fn huge_splats_are_not_allocated() {
    let src = "\"a.b\"() {a = dense<1.0> : tensor<100000000000xf32>, b = dense<\"0x0100\"> : tensor<4611686018427387904xi16>} : () -> ()\n";
    let mut c = ctx();
    let parsed = parse_source(&mut c, "in.mlir", src).unwrap_or_else(|d| panic!("{d}"));
    let text = print_op(&c, parsed.module, &PrintOptions::default());
    assert!(
        text.contains("{a = dense<1.000000e+00> : tensor<100000000000xf32>, b = dense<1> : tensor<4611686018427387904xi16>}"),
        "{text}"
    );
}

/// `strided` layouts print as upstream prints them: `?` for dynamic
/// values, no offset when it is zero.
#[test]
fn strided_layouts_print_as_upstream() {
    let src = "\"a.b\"() {s = strided<[ ? , 0x10 ],offset:0>} : () -> (memref<16x16xf32, strided<[16, 1], offset: ?>>, memref<4xf32, strided<[-1], offset: -3>, 1>)\n";
    let mut c = ctx();
    let parsed = parse_source(&mut c, "in.mlir", src).unwrap_or_else(|d| panic!("{d}"));
    let text = print_op(&c, parsed.module, &PrintOptions::default());
    assert!(
        text.contains("\"a.b\"() {s = strided<[?, 16]>} : () -> (memref<16x16xf32, strided<[16, 1], offset: ?>>, memref<4xf32, strided<[-1], offset: -3>, 1>)"),
        "{text}"
    );
}
