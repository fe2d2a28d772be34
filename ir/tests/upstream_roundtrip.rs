//! Differential round trip against upstream MLIR: for every syntax form,
//! our generic printout of our parse must be accepted by `mlir-opt-22` and
//! mean the same IR as the original input, i.e. `mlir-opt(ours(x)) ==
//! mlir-opt(x)` with both printed by mlir-opt in the generic form.
//!
//! Skipped (with a message) when `mlir-opt-22` is not on PATH.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use ipuc_ir::{parse_source, print_op, Context, DialectRegistry, PrintOptions};

const MLIR_OPT: &str = "mlir-opt-22";

/// (name, input, compare locations too)
const CASES: &[(&str, &str, bool)] = &[
    (
        "integer and index types",
        r#"%0:7 = "t.ints"() {a = 0 : i1, b = -128 : i8, c = 65535 : ui16, d = -5 : si32, e = 9223372036854775807 : i64, f = 7 : index, g = -1 : i3} : () -> (i1, i8, ui16, si32, i64, index, i128)
"#,
        false,
    ),
    (
        "float types and special values",
        r#""t.floats"() {a = 1.5 : f16, b = -0.0 : bf16, c = 3.40282347E+38 : f32, d = 2.2250738585072014E-308 : f64, e = 0x7F800000 : f32, f = 0xFFF8000000000001 : f64, g = 0x7C00 : f16, h = 448.0 : f8E4M3FN, i = 57344.0 : f8E5M2, j = 0.1 : f8E4M3FNUZ, k = -2.5 : f8E5M2FNUZ, l = 1.0e-3 : f16, m = 0.1 : f32, n = 1.0e+20 : f64} : () -> ()
"#,
        false,
    ),
    (
        "shaped and composite types",
        r#"%0:12 = "t.types"() : () -> (tensor<2x?x3xf32>, tensor<*xi8>, tensor<0xf16>, tensor<4xf32, "enc">, memref<2x3xf32>, memref<?xi32, affine_map<(d0) -> (d0 * 2)>>, memref<4xf32, 1>, memref<*xf32>, vector<4xf32>, vector<[4]x2xf32>, complex<f64>, tuple<i1, tuple<index>, none>)
"t.more"() {f = (i32, f32) -> (), g = () -> i1, h = (tensor<2xf32>) -> (i1, i2), o = !foo.bar<"x", 1 -> (2)>, p = !foo<"opaque">, q = none} : () -> ()
"#,
        false,
    ),
    (
        "scalar attributes",
        r#""t.attrs"() {u, t = true, f = false, s = "esc\"\\\n\t\01\7F", e = "", ty = i32, arr = [1, "two", [3 : i8], {k = unit}], d = {a = 1 : i64, b = {c = "x"}}, i = 42, fl = 2.5 : f64, sym = @top, nested = @a::@b::@c, q = @"quoted name", qq = @"a"::@"b c", str_ty = "typed" : i32} : () -> ()
"#,
        false,
    ),
    (
        "dense elements",
        r#""t.dense"() {a = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>, b = dense<1.5> : tensor<4xf32>, c = dense<[true, false, true]> : tensor<3xi1>, d = dense<true> : tensor<2x2xi1>, e = dense<> : tensor<0xi8>, f = dense<"0x0000803F00000040"> : tensor<2xf32>, g = dense<-1> : vector<4xi16>, h = dense<[1.0, -2.5, 0x7FC00000]> : tensor<3xf32>, i = dense<"0x01020304"> : tensor<4xi8>, j = dense<[[0.5], [1.5]]> : tensor<2x1xf16>, k = dense<[255, 0]> : tensor<2xui8>, l = dense<7> : tensor<i64>, m = dense<[1, 2]> : tensor<2xindex>, n = dense<"0xFFFF"> : tensor<2xi8>} : () -> ()
"#,
        false,
    ),
    (
        "large dense elements print as hex",
        r#""t.big"() {a = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127]> : tensor<128xi32>} : () -> ()
"#,
        false,
    ),
    (
        "strided layouts",
        r#"%0:6 = "t.strided"() {s = strided<[4, 1], offset: ?>, t = strided<[]>, u = strided<[0x10],offset:0>} : () -> (memref<16x16xf32, strided<[16, 1], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: 5>>, memref<4xf32, strided<[2], offset: 0>>, memref<4x4xf32, strided<[4, 1], offset: ?>, 1>, memref<4xf32, strided<[ -1 ], offset : -3>>, memref<f32, strided<[], offset: 3>>)
"#,
        false,
    ),
    (
        "splats of more elements than memory holds",
        r#""t.splat"() {a = dense<1.0> : tensor<100000000000xf32>, b = dense<"0x0100"> : tensor<4611686018427387904xi16>} : () -> ()
"#,
        false,
    ),
    (
        "dense arrays",
        r#""t.arrays"() {a = array<i1: true, false>, b = array<i8: -1, 2>, c = array<i16: 300>, d = array<i32>, e = array<i64: 9223372036854775807, -9223372036854775808>, f = array<f32: 1.5, -0.0>, g = array<f64: 2.0e+10>} : () -> ()
"#,
        false,
    ),
    (
        "dense resources",
        r#""t.res"() {r = dense_resource<blob1> : tensor<2xi32>, s = dense_resource<"quoted blob"> : tensor<1xf32>} : () -> ()
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000",
      "quoted blob": "0x040000000000803F"
    }
  }
#-}
"#,
        false,
    ),
    (
        "affine maps and sets",
        r#"#map = affine_map<(d0, d1)[s0] -> (d0 + s0, d1 - 1, d0 floordiv 2, d1 mod 3, d0 ceildiv 4, -d0, d0 * 3 + s0 * 2)>
"t.affine"() {m = #map, e = affine_map<() -> ()>, c = affine_map<(d0) -> (0)>, s = affine_set<(d0)[s0] : (d0 - s0 >= 0, d0 == 0, -d0 + 10 >= 0)>, t = affine_set<() : (0 == 0)>, sym = affine_map<()[s0, s1] -> (s0 * s1, s1 mod 2)>} : () -> ()
"#,
        false,
    ),
    (
        "opaque dialect attributes and aliases",
        r#"#a = #foo.attr<[1, 2] -> {x}>
!t = tensor<4x?xf32>
"t.opaque"() {x = #a, y = #foo<"bare">, z = !t, w = #foo.nest<<a>, (b)>} : () -> ()
"#,
        false,
    ),
    (
        "regions, blocks, successors and multiple results",
        r#"%0:2 = "t.pair"() : () -> (i32, f32)
"t.cfg"(%0#1, %0#0) ({
^bb0(%a: f32, %b: i32):
  "t.br"(%b)[^bb2] : (i32) -> ()
^bb1(%c: i32):
  "t.cond"(%c, %c)[^bb2, ^bb1] : (i32, i32) -> ()
^bb2(%d: i32):
  "t.ret"(%d, %a) : (i32, f32) -> ()
}, {
}, {
  "t.inner"() ({
    %x = "t.def"() : () -> index
    "t.use"(%x, %0#0) : (index, i32) -> ()
  }) : () -> ()
}) : (f32, i32) -> ()
"#,
        false,
    ),
    (
        "graph regions allow forward references",
        r#""t.use"(%1) : (i64) -> ()
%1 = "t.def"(%1) : (i64) -> i64
"#,
        false,
    ),
    (
        "conversion casts (custom form when not generic)",
        r#"%0 = "t.def"() : () -> i32
%1 = builtin.unrealized_conversion_cast %0 : i32 to i64
%2:2 = "builtin.unrealized_conversion_cast"(%0, %1) : (i32, i64) -> (f32, f16)
%3 = builtin.unrealized_conversion_cast to index
"#,
        false,
    ),
    (
        "results need not be bound",
        r#""t.unbound"() : () -> (i32, tuple<tuple<>>)
"t.unbound1"() : () -> f32
"#,
        false,
    ),
    (
        "properties",
        r#""t.props"() <{p = 1 : i64, q = "s", r = [i32]}> {d = unit} : () -> ()
%0 = "t.props2"() <{}> : () -> i1
"#,
        false,
    ),
    (
        "named module with attributes",
        r#"module @m attributes {t.foo = 1 : i32, t.attr = "x"} {
  "t.op"() : () -> ()
  module @inner {
    "t.op2"() : () -> ()
  }
}
"#,
        false,
    ),
    (
        "locations",
        r#"module {
  %0 = "t.a"() : () -> i32 loc("file.mlir":3:4)
  "t.b"(%0) ({
  ^bb0(%arg0: i32 loc("arg.mlir":1:1)):
    "t.c"() : () -> () loc("name")
    "t.d"() : () -> () loc("name"("f":1:2))
    "t.e"() : () -> () loc(callsite("callee":1:1 at "caller":2:2))
    "t.f"() : () -> () loc(fused["a":1:1, "b":2:2])
    "t.g"() : () -> () loc(fused<"meta">["a":1:1])
    "t.h"() : () -> () loc(unknown)
    "t.i"() : () -> () loc(#l)
    "t.j"() {l = loc("attr":9:9)} : () -> () loc("r.mlir":1:2 to 3:4)
    "t.k"() : () -> () loc("r.mlir":1:2 to :9)
    "t.l"() : () -> () loc("r.mlir":1:2 to 1:2)
  }) : (i32) -> () loc("b":1:1)
} loc("m":0:0)
#l = loc("aliased":5:6)
"#,
        true,
    ),
];

fn mlir_opt_available() -> bool {
    Command::new(MLIR_OPT)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs mlir-opt on `input`, printing the generic form.
fn mlir_opt(input: &str, debuginfo: bool) -> Result<String, String> {
    let mut args = vec!["--mlir-print-op-generic"];
    if debuginfo {
        args.push("--mlir-print-debuginfo");
    }
    mlir_opt_with(input, &args)
}

fn ours(input: &str, debuginfo: bool, generic: bool) -> Result<String, String> {
    let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
    ctx.allow_unregistered = true;
    let parsed = parse_source(&mut ctx, "in.mlir", input).map_err(|d| d.to_string())?;
    Ok(print_op(
        &ctx,
        parsed.module,
        &PrintOptions {
            generic,
            debug_info: debuginfo,
            ..PrintOptions::default()
        },
    ))
}

#[test]
fn generic_printout_means_the_same_ir_to_upstream_mlir() {
    if !mlir_opt_available() {
        ipuc_test_support::missing(module_path!(), &format!("{MLIR_OPT} is not on PATH"));
        return;
    }
    let mut failures = Vec::new();
    for (name, input, debuginfo) in CASES {
        let reference = match mlir_opt(input, *debuginfo) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("[{name}] upstream rejects the input itself:\n{e}"));
                continue;
            }
        };
        // The generic form, and our default (custom forms where defined).
        for generic in [true, false] {
            let printed = match ours(input, *debuginfo, generic) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("[{name}] we fail to parse:\n{e}"));
                    break;
                }
            };
            match mlir_opt(&printed, *debuginfo) {
                Err(e) => failures.push(format!(
                    "[{name}, generic={generic}] upstream rejects our printout:\n{e}\n--- ours:\n{printed}"
                )),
                Ok(r) if r != reference => failures.push(format!(
                    "[{name}, generic={generic}] different IR:\n--- upstream(input):\n{reference}\n--- upstream(ours):\n{r}\n--- ours:\n{printed}"
                )),
                Ok(_) => {}
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n\n")
    );
}

/// Inputs upstream rejects; we must reject them too (each was accepted by
/// an earlier version of our parser).
const REJECTED: &[(&str, &str)] = &[
    (
        "unbalanced '[' in a dialect attribute body",
        "\"t.u\"() {x = #a.attr<[1, 2>} : () -> ()\n",
    ),
    (
        "'>' closing inside '(' in a dialect attribute body",
        "\"t.u\"() {x = #a.attr<(a>b)>} : () -> ()\n",
    ),
    (
        "mismatched brackets in a dialect type body",
        "\"t.u\"() : () -> !a.ty<{x]}>\n",
    ),
    (
        "location range end without ':'",
        "\"t.u\"() : () -> () loc(\"f\":1:2 to 7)\n",
    ),
    (
        "result count mismatch",
        "%0:2 = \"a.b\"() : () -> (i32, i32, i32)\n",
    ),
];

#[test]
fn what_upstream_rejects_we_reject() {
    if !mlir_opt_available() {
        ipuc_test_support::missing(module_path!(), &format!("{MLIR_OPT} is not on PATH"));
        return;
    }
    for (name, input) in REJECTED {
        assert!(
            mlir_opt(input, false).is_err(),
            "[{name}] upstream accepts it; fix the case"
        );
        assert!(ours(input, false, true).is_err(), "[{name}] we accept it");
    }
}

/// Runs mlir-opt on `input` with `args`, returning its stdout.
fn mlir_opt_with(input: &str, args: &[&str]) -> Result<String, String> {
    let mut child = Command::new(MLIR_OPT)
        .arg("--allow-unregistered-dialect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Where both print the same thing, we print it byte for byte as upstream
/// does: `#map`/`#set` aliases numbered by first use (also inside types),
/// inline with `--mlir-print-local-scope`, zero-width signed integers and
/// strings that are not UTF-8 (trailing newlines aside: upstream adds a
/// blank line unless printing with local scope).
#[test]
fn printout_matches_upstream_byte_for_byte() {
    if !mlir_opt_available() {
        ipuc_test_support::missing(module_path!(), &format!("{MLIR_OPT} is not on PATH"));
        return;
    }
    let inputs = [
        "\"a.b\"() {s = affine_set<(d0) : (d0 >= 0)>, m = affine_map<(d0) -> (d0 * 3)>} : () -> ()\n\
         \"a.c\"() {m = affine_map<(d0) -> (d0 * 2)>, q = [affine_map<(d0) -> (d0 * 3)>]} : () -> ()\n\
         \"a.d\"() {t = memref<2xf32, affine_map<(d0)[s0] -> (d0 * s0)>>, u = affine_map<(d0, d1) -> (d1, d0)>} : () -> ()\n",
        "#m = affine_map<(d0) -> (d0 + 1)>\n\
         %0 = \"a.c\"() : () -> memref<2xf32, #m>\n\
         \"a.e\"(%0) ({\n  \"a.f\"() {m = affine_map<(d0) -> (d0 * 2)>} : () -> ()\n}) {m = #m} : (memref<2xf32, #m>) -> ()\n",
        "\"a.d\"() {x = 0 : si0, y = 0 : ui0, z = \"\\FF\\00ab\", w = \"\\FE\" : i32} : () -> ()\n",
        // Block arguments without `loc(...)` are located where written; the
        // implicit module at `file:0:0`.
        "\"a.f\"() ({\n^bb0(%a: i32, %b: f32 loc(\"x\":1:1)):\n  \"a.r\"() ({\n  ^bb0(%c: i32):\n    \"a.t\"(%a) : (i32) -> ()\n  }) : () -> ()\n}) : () -> ()\n",
    ];
    let mut failures = Vec::new();
    for input in inputs {
        for args in [
            &[][..],
            &["--mlir-print-op-generic"][..],
            &["--mlir-print-local-scope"][..],
            &["--mlir-print-local-scope", "--mlir-print-debuginfo"][..],
            &[
                "--mlir-print-local-scope",
                "--mlir-print-debuginfo",
                "--mlir-print-op-generic",
            ][..],
        ] {
            let reference = mlir_opt_with(input, args).expect("upstream accepts the input");
            let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
            ctx.allow_unregistered = true;
            let parsed = parse_source(&mut ctx, "<stdin>", input).unwrap_or_else(|d| panic!("{d}"));
            let opts = PrintOptions {
                generic: args.contains(&"--mlir-print-op-generic"),
                local_scope: args.contains(&"--mlir-print-local-scope"),
                debug_info: args.contains(&"--mlir-print-debuginfo"),
                ..PrintOptions::default()
            };
            let ours = print_op(&ctx, parsed.module, &opts);
            if ours.trim_end_matches('\n') != reference.trim_end_matches('\n') {
                failures.push(format!(
                    "{args:?}\n--- upstream:\n{reference}--- ours:\n{ours}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
