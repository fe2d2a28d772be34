//! End-to-end tests of the `ipu-opt` driver.

use std::io::Write;
use std::process::{Command, Stdio};

fn ipu_opt(args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ipu-opt"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ipu-opt");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const MODULE: &str = r#"module {
  func.func @f(%a: i32) -> i32 {
    return %a : i32
  }
  func.func private @dead() {
    return
  }
  func.func private @used() {
    return
  }
  func.func @g() {
    call @used() : () -> ()
    return
  }
}
"#;

#[test]
fn prints_custom_and_generic_forms() {
    let (code, out, err) = ipu_opt(&[], MODULE);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("func.func @f(%arg0: i32) -> i32 {\n    return %arg0 : i32\n  }"),
        "{out}"
    );
    let (code, out, _) = ipu_opt(&["--mlir-print-op-generic"], MODULE);
    assert_eq!(code, 0);
    assert!(
        out.contains("\"func.func\"() <{function_type = (i32) -> i32, sym_name = \"f\"}> ({"),
        "{out}"
    );
}

#[test]
fn symbol_dce_removes_only_unused_private_functions() {
    let (code, out, err) = ipu_opt(&["--pass-pipeline=builtin.module(symbol-dce)"], MODULE);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("@dead"), "{out}");
    assert!(out.contains("@used"), "{out}");
    // The per-pass flag spelling does the same.
    let (_, out2, _) = ipu_opt(&["--symbol-dce"], MODULE);
    assert_eq!(out, out2);
}

#[test]
fn threading_does_not_change_output() {
    let mut src = String::from("module {\n");
    for i in 0..40 {
        src.push_str(&format!(
            "  func.func @f{i}(%a: i32) -> i32 {{\n    return %a : i32\n  }}\n"
        ));
    }
    src.push_str("}\n");
    let p = "--pass-pipeline=builtin.module(func.func(canonicalize,cse),symbol-dce)";
    let (c1, a, _) = ipu_opt(&[p], &src);
    let (c2, b, _) = ipu_opt(&[p, "--mlir-disable-threading"], &src);
    assert_eq!((c1, c2), (0, 0));
    assert_eq!(a, b);
}

#[test]
fn bad_pipeline_is_a_clear_error() {
    let (code, _, err) = ipu_opt(&["--pass-pipeline=builtin.module(cse"], MODULE);
    assert_eq!(code, 1);
    assert!(err.contains("expected ')'"), "{err}");
    let (code, _, err) = ipu_opt(&["--pass-pipeline=builtin.module(csee)"], MODULE);
    assert_eq!(code, 1);
    assert!(err.contains("did you mean 'cse'"), "{err}");
}

#[test]
fn verify_diagnostics_matches_annotations() {
    let src = "func.func @f() -> i32 {\n  // expected-error @+1 {{has 0 operands, but enclosing function (@f) returns 1}}\n  return\n}\n";
    let (code, _, err) = ipu_opt(&["--verify-diagnostics"], src);
    assert_eq!(code, 0, "{err}");
    let wrong = src.replace("has 0 operands", "has 7 operands");
    let (code, _, err) = ipu_opt(&["--verify-diagnostics"], &wrong);
    assert_eq!(code, 1);
    // As mlir-opt: located, with the source line and a caret.
    assert!(
        err.contains("<stdin>:3:3: error: unexpected error: 'func.return' op has 0 operands"),
        "{err}"
    );
    assert!(err.contains("  return\n  ^\n"), "{err}");
}

#[test]
fn parse_errors_show_file_line_col_and_caret() {
    let (code, _, err) = ipu_opt(&[], "func.func @f() {\n  return %x : i32\n}\n");
    assert_eq!(code, 1);
    assert!(
        err.starts_with("<stdin>:2:10: error: use of undeclared SSA value name '%x'"),
        "{err}"
    );
}

#[test]
fn split_input_file_keeps_line_numbers() {
    let src = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  return %y : i32\n}\n";
    let (code, _, err) = ipu_opt(&["--split-input-file"], src);
    assert_eq!(code, 1);
    assert!(err.contains("<stdin>:6:10: error"), "{err}");
}

/// A function larger than a megabyte is parsed op by op (its body is cut
/// out of the text pest sees): the printout is still the input, entry
/// arguments, nested regions, and the `func.func` custom form included.
#[test]
fn a_very_large_function_round_trips() {
    let n = 25_000;
    let mut src = String::from("module {\n  func.func @big(%arg0: i32, %arg1: i32) -> i32 {\n");
    src.push_str("    %0 = \"t.add\"(%arg0, %arg1) : (i32, i32) -> i32\n");
    for i in 1..n {
        if i == n / 2 {
            src.push_str(&format!(
                "    \"t.scope\"() ({{\n      \"t.use\"(%{}) : (i32) -> ()\n    }}) : () -> ()\n",
                i - 1
            ));
        }
        src.push_str(&format!(
            "    %{i} = \"t.add\"(%{}, %arg0) : (i32, i32) -> i32\n",
            i - 1
        ));
    }
    src.push_str(&format!("    return %{} : i32\n  }}\n}}\n", n - 1));
    assert!(src.len() > 1 << 20);
    let (code, out, err) = ipu_opt(&["--allow-unregistered-dialect"], &src);
    assert_eq!(code, 0, "{err}");
    assert!(out == src, "the printout differs from the input");
}

/// `ipu-opt` leaves the IR to the process's exit instead of freeing it
/// (`OptTool::teardown`); the output must still be complete, flushed to
/// `-o` files and stdout alike, and the same as with `IPUC_TEARDOWN` set.
/// The module is larger than the writer's buffer and the printer's
/// pieces, and holds a resource blob (streamed apart from the text).
#[test]
fn skipping_teardown_still_writes_everything() {
    let mut src =
        String::from("module {\n  func.func @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n");
    src.push_str("    %0 = nn.constant dense_resource<w> : tensor<4xf32>\n");
    let n = 20_000;
    for i in 1..n {
        src.push_str(&format!(
            "    %{i} = nn.add %{}, %arg0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n",
            i - 1
        ));
    }
    src.push_str(&format!(
        "    return %{} : tensor<4xf32>\n  }}\n}}\n\n{{-#\n  dialect_resources: {{\n    builtin: {{\n      w: \"0x04000000{}\"\n    }}\n  }}\n#-}}\n",
        n - 1,
        "0000803F".repeat(4)
    ));
    assert!(src.len() > 1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.mlir");
    std::fs::write(&input, &src).unwrap();
    let run = |teardown: bool, to_file: bool| {
        let out_file = dir.path().join(format!("out-{teardown}.mlir"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ipu-opt"));
        cmd.arg(&input);
        if to_file {
            cmd.arg("-o").arg(&out_file);
        }
        cmd.env_remove(ipuc_tools::opt::TEARDOWN_ENV);
        if teardown {
            cmd.env(ipuc_tools::opt::TEARDOWN_ENV, "1");
        }
        let out = cmd.output().expect("run ipu-opt");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if to_file {
            std::fs::read_to_string(&out_file).unwrap()
        } else {
            String::from_utf8(out.stdout).unwrap()
        }
    };
    for to_file in [false, true] {
        let quick = run(false, to_file);
        assert!(
            quick == src,
            "the printout (to_file: {to_file}) differs from the input"
        );
        assert!(quick == run(true, to_file), "teardown changes the output");
    }
}

/// `IPUC_LOG=ipu-lower=trace` breaks every tile's exchange code (every
/// tile with some) down by block (the link after a block counted with
/// it), the shares adding up to the tile's bytes; debug names the
/// busiest tile the same way.
#[test]
fn trace_logs_every_tiles_exchange_code_by_block() {
    let stderr = compile_tiny_logging("ipu-lower=trace");
    let mut tiles = std::collections::BTreeMap::new();
    for line in stderr.lines() {
        let Some(rest) = line.split("exchange code of tile ").nth(1) else {
            continue;
        };
        let (tile, rest) = rest.split_once(": ").unwrap();
        let (bytes, shares) = rest.split_once(" bytes: ").unwrap();
        let bytes: u64 = bytes.parse().unwrap();
        // `block K (kind) N` each.
        let sum: u64 = shares
            .split(", ")
            .map(|s| s.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, bytes, "{line}");
        assert!(
            shares.contains("(attention)") && shares.contains("(mlp)"),
            "{line}"
        );
        tiles.insert(tile.parse::<u32>().unwrap(), bytes);
    }
    // siglip-tiny's blocks leave some tiles without exchange code.
    assert!(tiles.len() > 1000 && tiles.len() <= 1472, "{stderr}");
    let most = tiles.values().max().unwrap();
    assert!(
        stderr.contains(&format!("the most exchange code, {most} bytes, is tile")),
        "{stderr}"
    );
}

/// Compiles siglip-tiny at fp16 to an executable with `IPUC_LOG=filter`;
/// returns the log (stderr), the compile having succeeded.
fn compile_tiny_logging(filter: &str) -> String {
    let model = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/models/siglip-tiny/model.onnx");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ipu-opt"))
        .arg(&model)
        .arg("--pass-pipeline=builtin.module(func.func(eqsat-fuse,canonicalize,convert-precision{precision=fp16}),ipu-lower)")
        .args(["--emit", "exe", "-o"])
        .arg(dir.path().join("tiny.exe"))
        .env("IPUC_LOG", filter)
        .env("NO_COLOR", "1")
        .output()
        .expect("run ipu-opt");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// `IPUC_LOG=...=info` times the compiler's phases: each span logs its
/// time when it closes (the import, the chain's planning, each block's
/// emission, the executable's encoding).
#[test]
fn info_logs_time_the_compile_phases() {
    let stderr = compile_tiny_logging("ipu-lower=info,ipu-import=info");
    for phase in [
        "import the ONNX model",
        "plan the chain",
        "emit a block{block=0}",
        "encode the executable",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(phase) && l.contains("close") && l.contains("time.busy")),
            "no timing of `{phase}` in:\n{stderr}"
        );
    }
}
