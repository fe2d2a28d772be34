//! The streaming printer (`print_op_to`) writes the same bytes as the
//! in-memory one (`print_op`), in pieces: modules many times
//! `FLUSH_BYTES` long, with custom forms, custom printers falling back to
//! the generic form after earlier text went out, aliases first used after
//! the first flush, and resource blobs.

use std::io::Write;
use std::sync::Arc;

use ipuc_ir::printer::{print_op_to, FLUSH_BYTES};
use ipuc_ir::{parse_source, print_op, Context, DialectRegistry, PrintOptions};

fn context() -> Context {
    let mut reg = DialectRegistry::new();
    reg.register(ipuc_ir::test_dialect::dialect());
    let mut ctx = Context::new(Arc::new(reg));
    ctx.allow_unregistered = true;
    ctx
}

/// A writer that keeps what it is given and the size of each call.
#[derive(Default)]
struct Recorder {
    bytes: Vec<u8>,
    calls: Vec<usize>,
}

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        self.calls.push(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `functions` functions of 100 ops each: `test.add` in its custom form,
/// a malformed `test.add` (one operand: its printer falls back to the
/// generic form) every 7th op, and `late` (an attribute text) on an op of
/// the last function only.
fn module(functions: usize, late: &str) -> String {
    let mut s = String::from("module {\n");
    for f in 0..functions {
        s.push_str(&format!(
            "  \"x.func\"() ({{\n  ^bb0(%a: i32):\n    %0 = test.add %a, %a {{k = {f} : i64}} : i32\n"
        ));
        for i in 1..100 {
            if i % 7 == 0 {
                s.push_str(&format!(
                    "    %{i} = \"test.add\"(%{}) : (i32) -> i32\n",
                    i - 1
                ));
            } else {
                s.push_str(&format!("    %{i} = test.add %{}, %a : i32\n", i - 1));
            }
        }
        if f + 1 == functions {
            s.push_str(&format!("    \"x.use\"() {{late = {late}}} : () -> ()\n"));
        }
        s.push_str("    \"x.return\"(%99) : (i32) -> ()\n  }) : () -> ()\n");
    }
    s.push_str("}\n");
    s
}

/// Prints `src` both ways with `opts`; returns the text and the writes.
fn both_ways(src: &str, opts: &PrintOptions) -> (String, Vec<usize>) {
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "in.mlir", src).unwrap_or_else(|d| panic!("{d}"));
    let text = print_op(&ctx, parsed.module, opts);
    let mut w = Recorder::default();
    print_op_to(&ctx, parsed.module, opts, &mut w).expect("a Vec takes every write");
    assert!(
        String::from_utf8(w.bytes).expect("UTF-8") == text,
        "streamed text differs from print_op's"
    );
    (text, w.calls)
}

#[test]
fn streams_large_modules_in_pieces_with_the_same_bytes() {
    for opts in [PrintOptions::default(), PrintOptions::generic()] {
        let (text, calls) = both_ways(&module(200, "1 : i32"), &opts);
        assert!(text.len() > 10 * FLUSH_BYTES, "{} bytes", text.len());
        // Written as it goes, in pieces of about FLUSH_BYTES (a piece ends
        // after the op that crossed the mark).
        assert!(calls.len() > 10, "{} writes", calls.len());
        assert!(calls.iter().all(|&n| n < FLUSH_BYTES + 4096), "{calls:?}");
    }
    // The fallback to the generic form happened after earlier flushes.
    let (text, _) = both_ways(&module(200, "1 : i32"), &PrintOptions::default());
    assert!(text.contains("%7 = \"test.add\"(%6) : (i32) -> i32"));
    assert!(text.contains("%8 = test.add %7, %arg0 : i32"));
}

#[test]
fn aliases_first_used_after_a_flush_are_defined_first() {
    let map = "affine_map<(d0) -> (d0 * 2)>";
    for opts in [PrintOptions::default(), PrintOptions::generic()] {
        let (text, _) = both_ways(&module(200, map), &opts);
        assert!(
            text.starts_with(&format!("#map = {map}\n")),
            "{}",
            &text[..80]
        );
        assert!(text.contains("{late = #map}"));
    }
    // Inside a type (a memref layout), and inline with a local scope.
    let layout = "memref<2x3xf32, affine_map<(d0, d1) -> (d1, d0)>>";
    let src = module(100, "1 : i32").replace(
        "\"x.use\"() {late = 1 : i32} : () -> ()",
        &format!("%m = \"x.make\"() : () -> {layout}"),
    );
    let (text, _) = both_ways(&src, &PrintOptions::default());
    assert!(text.starts_with("#map = affine_map<(d0, d1) -> (d1, d0)>\n"));
    let local = PrintOptions {
        local_scope: true,
        ..PrintOptions::default()
    };
    let (text, _) = both_ways(&src, &local);
    assert!(text.contains(layout) && !text.contains("#map"));
}

#[test]
fn resources_stream_after_the_ir() {
    let mut src = module(50, "dense_resource<blob> : tensor<40000xi32>");
    src.push_str("{-#\n  dialect_resources: {\n    builtin: {\n      blob: \"0x04000000");
    for i in 0..40_000u32 {
        src.push_str(&format!("{:08X}", i.swap_bytes()));
    }
    src.push_str("\"\n    }\n  }\n#-}\n");
    for opts in [PrintOptions::default(), PrintOptions::generic()] {
        let (text, calls) = both_ways(&src, &opts);
        assert!(text.contains("blob: \"0x0400000000000000010000000200"));
        assert!(calls.iter().all(|&n| n < FLUSH_BYTES + 4096), "{calls:?}");
    }
}

/// A writer that fails after `ok` bytes.
struct Failing {
    ok: usize,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.ok {
            return Err(std::io::Error::other("disk full"));
        }
        self.ok -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_is_an_error() {
    let mut ctx = context();
    let parsed = parse_source(&mut ctx, "in.mlir", &module(100, "1 : i32")).unwrap();
    for ok in [0, FLUSH_BYTES * 3] {
        let e = print_op_to(
            &ctx,
            parsed.module,
            &PrintOptions::default(),
            &mut Failing { ok },
        )
        .expect_err("the writer fails");
        assert_eq!(e.to_string(), "disk full");
    }
}
