//! The parser's hand-written reader against pest (the grammar of record)
//! with the real dialects registered: the reader also reads the custom
//! forms of ops whose declarative format is `operands attr-dict :
//! type(operands) -> type(results)` (every `nn` op but two), so every
//! `// -----` case of the lit tests, and seeded mutations of each, must
//! read to the same IR (or fail) both ways.

use ipuc_ir::{parse_source_with, Context, ParseOptions};

#[path = "../../ir/tests/support/readers.rs"]
mod readers;
use readers::check_readers_agree_in;

fn context() -> Context {
    let mut ctx = Context::new(ipuc_dialects::registry());
    ctx.allow_unregistered = true;
    ctx
}

/// Every `// -----` case of the lit tests of the dialects' layers.
fn lit_cases() -> Vec<(String, String)> {
    let root = format!("{}/../lit-tests", env!("CARGO_MANIFEST_DIR"));
    let mut cases = Vec::new();
    for dir in ["nn", "ir", "passes", "eqsat", "ipu"] {
        let mut files: Vec<_> = std::fs::read_dir(format!("{root}/{dir}"))
            .unwrap_or_else(|e| panic!("{root}/{dir}: {e}"))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "mlir"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("lit file");
            for (i, case) in text.split("// -----").enumerate() {
                cases.push((format!("{}#{i}", path.display()), case.to_string()));
            }
        }
    }
    cases
}

/// Every region body read item by item, so that the hand-written reader
/// sees every op of these small files (by default only bodies over 2 KiB
/// are).
fn item_by_item() -> ParseOptions {
    ParseOptions {
        stream_body_bytes: 0,
        hand_reader: true,
    }
}

/// Tokens whose insertion changes how a custom form reads.
const TOKENS: &[&str] = &[
    "{", "}", "(", ")", "<", ">", ":", ",", "->", "%0", "#1", "\n", "//", "loc(", " ", "dense<",
    "x", "?", "\"", "=", "-",
];

/// A deterministic xorshift stream: the mutations are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The generic printout of `module` (what the readers are compared on).
fn generic(ctx: &ipuc_ir::Context, module: ipuc_ir::OpId) -> String {
    let options = ipuc_ir::PrintOptions::generic();
    ipuc_ir::print_op(ctx, module, &options)
}

#[test]
fn lit_cases_read_the_same_both_ways() {
    let cases = lit_cases();
    assert!(cases.len() > 50, "found only {} lit cases", cases.len());
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut hand_read = 0;
    for (name, case) in &cases {
        check_readers_agree_in(context, case);
        let mut ctx = context();
        if let Ok(p) = parse_source_with(&mut ctx, name, case, &item_by_item()) {
            hand_read += p.hand_read_ops;
        }
        let bytes = case.as_bytes();
        for _ in 0..12 {
            let mut m = bytes.to_vec();
            let at = rng.next(m.len() + 1);
            match rng.next(3) {
                0 => {
                    let t = TOKENS[rng.next(TOKENS.len())].as_bytes();
                    m.splice(at..at, t.iter().copied());
                }
                1 if at < m.len() => {
                    m.remove(at);
                }
                _ => m.truncate(at),
            }
            check_readers_agree_in(context, &String::from_utf8_lossy(&m));
        }
    }
    // Were the reader to give everything to pest, the checks above would
    // compare pest with itself.
    assert!(
        hand_read > 300,
        "the hand-written reader read only {hand_read} ops"
    );
}

/// The custom forms the reader takes build exactly what pest builds,
/// inherent attributes as properties included.
#[test]
fn nn_custom_forms_are_hand_read() {
    let src = "func.func @f(%a: tensor<4x?xf32>, %b: tensor<4xi64>) -> tensor<4x?xf32> {
  %0 = nn.softmax %a {axis = 1 : i64, onnx.name = \"/s\"} : tensor<4x?xf32> -> tensor<4x?xf32>
  %1 = nn.add %0, %a : tensor<4x?xf32>, tensor<4x?xf32> -> tensor<4x?xf32>
  %2 = nn.gelu %1 {approximate = \"tanh\"} : tensor<4x?xf32> -> tensor<4x?xf32>
  return %2 : tensor<4x?xf32>
}
";
    check_readers_agree_in(context, src);
    let mut ctx = context();
    let parsed = parse_source_with(&mut ctx, "f.mlir", src, &item_by_item())
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(parsed.hand_read_ops, 3);
    let text = generic(&ctx, parsed.module);
    assert!(
        text.contains("<{axis = 1 : i64}> {onnx.name = \"/s\"}"),
        "{text}"
    );
}

/// A custom form runs to the end of its line: a second op there is an
/// error, for the hand-written reader as for pest (found by the mutations
/// above, which joined two lines).
#[test]
fn custom_forms_end_their_line() {
    let src = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.tanh %a : tensor<4xf32> -> tensor<4xf32>  %1 = nn.tanh %0 : tensor<4xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
";
    check_readers_agree_in(context, src);
    let mut ctx = context();
    let err = parse_source_with(&mut ctx, "f.mlir", src, &item_by_item())
        .err()
        .expect("two custom forms on one line");
    assert!(err.to_string().contains("2:53"), "{err}");
}

/// `nn.constant`'s form `attr-dict $value` is read by the hand-written
/// reader (it declares it with `attr_dict_value_form`), building what its
/// parse hook builds: `value` a property, `{attrs}` discardable. What the
/// reader leaves to pest (a hex string, a value over two lines, a trailing
/// location, a `value` in the dictionary, a value the declaration's check
/// refuses)
/// reads the same, or fails the same, both ways.
#[test]
fn nn_constant_is_hand_read() {
    let header = "func.func @f() -> tensor<2xf32> {\n";
    let hand_read = [
        "  %0 = nn.constant dense<[1.0, 2.5]> : tensor<2xf32>\n",
        "  %0 = nn.constant dense_resource<w0> : tensor<2xf32>  // a weight\n",
        "  %0 = nn.constant {onnx.name = \"/c\", k} dense<1.0> : tensor<2xf32>\n",
        "  %0 = nn.constant{}dense<2.0> : tensor<2xf32>\n",
    ];
    let left_to_pest = [
        "  %0 = nn.constant dense<\"0x0000803F00000040\"> : tensor<2xf32>\n",
        "  %0 = nn.constant dense<[1.0, 2.5]>\n    : tensor<2xf32>\n",
        "  %0 = nn.constant dense<1.0> : tensor<2xf32> loc(\"x\":1:2)\n",
        "  %0 = nn.constant {value = 1 : i64} dense<1.0> : tensor<2xf32>\n",
        "  %0 = nn.constant 1.0 : f32\n",
        "  %0 = nn.constant dense<1.0> : tensor<2xf32> %1\n",
        "  %0 = nn.constant {\n    k} dense<1.0> : tensor<2xf32>\n",
    ];
    for (line, expect_hand_read) in hand_read
        .iter()
        .map(|l| (l, 1))
        .chain(left_to_pest.iter().map(|l| (l, 0)))
    {
        let src = format!("{header}{line}  return %0 : tensor<2xf32>\n}}\n");
        check_readers_agree_in(context, &src);
        let mut ctx = context();
        match parse_source_with(&mut ctx, "c.mlir", &src, &item_by_item()) {
            Ok(parsed) => {
                assert_eq!(parsed.hand_read_ops, expect_hand_read, "{line}");
                let text = generic(&ctx, parsed.module);
                assert!(text.contains("\"nn.constant\"() <{value = dense"), "{text}");
            }
            Err(d) => assert_eq!(expect_hand_read, 0, "{line}: {d}"),
        }
    }
}
