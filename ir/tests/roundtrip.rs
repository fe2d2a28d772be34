//! Round-trip tests: print(parse(x)) is a fixed point after one step.

use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, verify, Context, DialectRegistry, PrintOptions};

fn ctx() -> Context {
    let mut c = Context::new(Arc::new(DialectRegistry::new()));
    c.allow_unregistered = true;
    c
}

fn roundtrip(src: &str) -> String {
    let mut c = ctx();
    let p = parse_source(&mut c, "in.mlir", src)
        .unwrap_or_else(|d| panic!("{}", ipuc_ir::SourceMgr::default().render(&d)));
    verify(&c, p.module).unwrap_or_else(|d| panic!("{d}"));
    let once = print_op(&c, p.module, &PrintOptions::default());
    let mut c2 = ctx();
    let p2 = parse_source(&mut c2, "once.mlir", &once)
        .unwrap_or_else(|d| panic!("reparse failed: {d}\n{once}"));
    let twice = print_op(&c2, p2.module, &PrintOptions::default());
    assert_eq!(once, twice, "not a fixed point");
    once
}

#[test]
fn generic_ops_types_and_attributes() {
    let out = roundtrip(
        r#"
#map = affine_map<(d0, d1)[s0] -> (d0 + s0, d1 - 1, d0 floordiv 2)>
"test.a"() {m = #map, s = affine_set<(d0)[s0] : (d0 - s0 >= 0, d0 == 0)>, f = 0x7FC00000 : f32, h = 1.0e-3 : f16, i = -1 : i8, u = 255 : ui8, sym = @a::@b, t = tensor<*xf32>, str = "a\nb\"c", arr = array<i64: 1, 2>, d = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>, sp = dense<1.5> : tensor<4xf32>, b = true, un, x = [1, "two", i32]} : () -> ()
%0:2 = "test.b"() : () -> (i32, f8E4M3FNUZ)
"test.c"(%0#1, %0#0) ({
^bb0(%a: i32):
  "test.d"(%a) [^bb1] : (i32) -> ()
^bb1:
  "test.e"() : () -> ()
}) : (f8E4M3FNUZ, i32) -> ()
"#,
    );
    assert!(
        out.contains("%0:2 = \"test.b\"() : () -> (i32, f8E4M3FNUZ)"),
        "{out}"
    );
    assert!(out.contains("\"test.c\"(%0#1, %0#0)"), "{out}");
    assert!(out.contains("str = \"a\\0Ab\\22c\""), "{out}");
    assert!(out.contains("h = 1.000400e-03 : f16"), "{out}");
    assert!(
        out.contains("d = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>"),
        "{out}"
    );
    assert!(out.contains("^bb0(%arg0: i32):"), "{out}");
}

#[test]
fn module_custom_form_and_resources() {
    let out = roundtrip(
        r#"module @m attributes {foo = 1 : i32} {
  "test.y"() {r = dense_resource<blob1> : tensor<2xi32>} : () -> ()
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000"
    }
  }
#-}
"#,
    );
    assert!(
        out.starts_with("module @m attributes {foo = 1 : i32} {"),
        "{out}"
    );
    assert!(
        out.contains("blob1: \"0x040000000100000002000000\""),
        "{out}"
    );
}

#[test]
fn errors_have_locations() {
    let mut c = ctx();
    let err = parse_source(&mut c, "bad.mlir", "\"test.a\"(%x) : (i32) -> ()\n")
        .err()
        .unwrap();
    assert_eq!(err.message, "use of undeclared SSA value name '%x'");
    let mut c = ctx();
    let err = parse_source(&mut c, "bad.mlir", "\"test.a\"() : () -> (i32\n")
        .err()
        .unwrap();
    let rendered = ipuc_ir::SourceMgr::default().render(&err);
    assert!(rendered.starts_with("bad.mlir:1:"), "{rendered}");
}

#[test]
fn generic_form_module_is_the_top_level() {
    let src = "module {\n  \"test.a\"() : () -> ()\n}\n";
    let mut c = ctx();
    let p = parse_source(&mut c, "in.mlir", src).unwrap();
    let generic = print_op(&c, p.module, &PrintOptions::generic());
    let mut c2 = ctx();
    let p2 = parse_source(&mut c2, "generic.mlir", &generic).unwrap();
    assert_eq!(print_op(&c2, p2.module, &PrintOptions::default()), src);
}

#[test]
fn streaming_printer_matches_the_string_printer() {
    let src = r#"module {
  "test.y"() {a = dense_resource<blob1> : tensor<2xi32>, b = dense_resource<blob2> : tensor<1xi8>} : () -> ()
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000",
      blob2: "0x0100000007"
    }
  }
#-}
"#;
    let mut c = ctx();
    let p = parse_source(&mut c, "in.mlir", src).unwrap();
    for opts in [PrintOptions::default(), PrintOptions::generic()] {
        let text = print_op(&c, p.module, &opts);
        let mut streamed = Vec::new();
        ipuc_ir::printer::print_op_to(&c, p.module, &opts, &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), text);
    }
}
