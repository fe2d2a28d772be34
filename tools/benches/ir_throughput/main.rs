//! IR throughput benchmark (not a timed test): generates a module with
//! 1,000,000 operations across many functions and measures parse, verify,
//! print and `canonicalize,cse`; where `mlir-opt-22` is installed it times
//! upstream on the same file, both single-threaded, and prints the ratio.
//!
//! `cargo bench -p ipuc-tools --bench ir_throughput [-- --ops N] [--generic-only]`
//! (`--generic-only` stops after the generic-syntax parse/verify/print, for
//! profiling it alone.)

use std::process::Command;
use std::time::Instant;

use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions};
use ipuc_ir::{parse_source, print_op, verify, Context, PrintOptions};

/// A module of `funcs` functions with `per_func` ops each, in the custom
/// `func` syntax with generic-form unregistered body ops (which upstream
/// parses with --allow-unregistered-dialect too).
fn generate(total_ops: usize) -> String {
    let per_func = 100;
    let funcs = total_ops.div_ceil(per_func);
    let mut s = String::with_capacity(total_ops * 80);
    s.push_str("module {\n");
    for f in 0..funcs {
        s.push_str(&format!(
            "  func.func @f{f}(%arg0: i32, %arg1: i32) -> i32 {{\n"
        ));
        s.push_str("    %0 = \"test.add\"(%arg0, %arg1) : (i32, i32) -> i32\n");
        for i in 1..per_func - 1 {
            if i % 10 == 0 {
                s.push_str(&format!("    %{i} = \"test.mul\"(%{}, %arg1) {{scale = {i} : i64}} : (i32, i32) -> i32\n", i - 1));
            } else {
                s.push_str(&format!(
                    "    %{i} = \"test.add\"(%{}, %arg0) : (i32, i32) -> i32\n",
                    i - 1
                ));
            }
        }
        s.push_str(&format!("    return %{} : i32\n  }}\n", per_func - 2));
    }
    s.push_str("}\n");
    s
}

/// A module of registered, pure `nn` ops in which every tenth op repeats the
/// previous one (CSE has work to do) and every op feeds the next.
fn generate_nn(total_ops: usize) -> String {
    let per_func = 100;
    let funcs = total_ops.div_ceil(per_func);
    let t = "tensor<4xf32>";
    let mut s = String::with_capacity(total_ops * 90);
    s.push_str("module {\n");
    for f in 0..funcs {
        s.push_str(&format!(
            "  func.func @f{f}(%arg0: {t}, %arg1: {t}) -> {t} {{\n"
        ));
        s.push_str(&format!("    %0 = nn.add %arg0, %arg1 : {t}, {t} -> {t}\n"));
        for i in 1..per_func - 1 {
            let src = if i % 10 == 0 { i - 2 } else { i - 1 };
            let op = if i % 3 == 0 { "nn.mul" } else { "nn.add" };
            s.push_str(&format!(
                "    %{i} = {op} %{src}, %arg0 : {t}, {t} -> {t}\n"
            ));
        }
        s.push_str(&format!("    return %{} : {t}\n  }}\n", per_func - 2));
    }
    s.push_str("}\n");
    s
}

/// The same ops in one function (the shape of an imported model): its
/// body is parsed op by op, so memory stays bounded per op.
fn generate_single_function(total_ops: usize) -> String {
    let mut s = String::with_capacity(total_ops * 60);
    s.push_str("module {\n  func.func @f(%arg0: i32, %arg1: i32) -> i32 {\n");
    s.push_str("    %0 = \"test.add\"(%arg0, %arg1) : (i32, i32) -> i32\n");
    for i in 1..total_ops {
        s.push_str(&format!(
            "    %{i} = \"test.add\"(%{}, %arg0) : (i32, i32) -> i32\n",
            i - 1
        ));
    }
    s.push_str(&format!("    return %{} : i32\n  }}\n}}\n", total_ops - 1));
    s
}

/// Current resident set size.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets the peak RSS (VmHWM) to the current RSS (Linux).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ops: usize = args
        .iter()
        .position(|a| a == "--ops")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let text = generate(ops);
    let path = std::env::temp_dir().join(format!("ipuc-bench-{ops}.mlir"));
    std::fs::write(&path, &text).expect("write benchmark input");
    let rss_before = peak_rss_kib().unwrap_or(0);
    println!(
        "input: {} ops (+ funcs/returns), {:.1} MB, {}",
        ops,
        text.len() as f64 / 1e6,
        path.display()
    );

    let mut ctx = Context::new(ipuc_dialects::registry());
    ctx.allow_unregistered = true;
    let t = Instant::now();
    let parsed = parse_source(&mut ctx, "bench.mlir", &text).expect("benchmark input parses");
    let parse_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    verify(&ctx, parsed.module).expect("benchmark input verifies");
    let verify_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let printed = print_op(&ctx, parsed.module, &PrintOptions::default());
    let print_s = t.elapsed().as_secs_f64();
    let peak = peak_rss_kib().unwrap_or(0);
    let text_ops = ctx.num_ops();
    assert!(
        printed.len() > text.len() / 2,
        "printed output is implausibly short"
    );
    drop(ctx);
    let total = parse_s + verify_s + print_s;
    println!("ipuc   parse {parse_s:.3} s  verify {verify_s:.3} s  print {print_s:.3} s  = {total:.3} s  ({:.2} M ops/s)", text_ops as f64 / total / 1e6);
    {
        let one = generate_single_function(ops);
        let base = rss_kib().unwrap_or(0);
        let reset = reset_peak_rss();
        let mut ctx = Context::new(ipuc_dialects::registry());
        ctx.allow_unregistered = true;
        let t = Instant::now();
        let parsed =
            parse_source(&mut ctx, "one.mlir", &one).expect("single-function input parses");
        let parse_s = t.elapsed().as_secs_f64();
        let peak = peak_rss_kib().unwrap_or(0);
        let n = ctx.num_ops();
        if reset {
            println!(
                "ipuc   same ops in one function: parse {parse_s:.3} s, {} region bodies parsed piece by piece, peak {:.0} bytes/op over the input text",
                parsed.streamed_bodies,
                peak.saturating_sub(base) as f64 * 1024.0 / n as f64
            );
        } else {
            println!("ipuc   same ops in one function: parse {parse_s:.3} s");
        }
    }
    if args.iter().any(|a| a == "--generic-only") {
        // For profiling the generic-syntax parse alone.
        return;
    }
    // The passes run on registered pure ops, where they have work to do.
    let nn_text = generate_nn(ops);
    let mut ctx = Context::new(ipuc_dialects::registry());
    let t = Instant::now();
    let parsed =
        parse_source(&mut ctx, "bench-nn.mlir", &nn_text).expect("nn benchmark input parses");
    let nn_parse_s = t.elapsed().as_secs_f64();
    let n_ops = ctx.num_ops();
    println!(
        "ipuc   parse of {n_ops} custom-form nn ops: {nn_parse_s:.3} s ({:.2} M ops/s)",
        n_ops as f64 / nn_parse_s / 1e6
    );
    let mut pm = PassManager::new(PassManagerOptions {
        verify_each: false,
        threading: false,
        verify_analyses: false,
    });
    let elems = parse_pipeline("builtin.module(func.func(canonicalize,cse))").expect("pipeline");
    let mut registry = ipuc_ir::pass::PassRegistry::new();
    ipuc_passes::register_passes(&mut registry).expect("distinct pass names");
    pm.add_pipeline(&registry, &elems).expect("pipeline builds");
    let t = Instant::now();
    pm.run(&mut ctx, parsed.module).expect("pipeline runs");
    let passes_s = t.elapsed().as_secs_f64();
    let after = ctx.num_ops();
    println!("ipuc   canonicalize,cse on {n_ops} nn ops: {passes_s:.3} s ({:.2} M ops/s), {} ops removed", n_ops as f64 / passes_s / 1e6, n_ops - after);
    println!(
        "ipuc   peak RSS {:.1} MB, {:.0} bytes/op over the input text",
        peak as f64 / 1024.0,
        (peak.saturating_sub(rss_before)) as f64 * 1024.0 / text_ops as f64
    );

    let have_mlir = Command::new("mlir-opt-22")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_mlir {
        println!("mlir-opt-22 not found: skipping the upstream comparison");
        return;
    }
    let t = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg("mlir-opt-22")
        .args([
            "--allow-unregistered-dialect",
            "--mlir-disable-threading",
            "-o",
            "/dev/null",
        ])
        .arg(&path)
        .output();
    let (mlir_s, mlir_kib) = match out {
        Ok(o) if o.status.success() => {
            let kib: u64 = String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .and_then(|l| l.trim().parse().ok())
                .unwrap_or(0);
            (t.elapsed().as_secs_f64(), kib)
        }
        _ => {
            let t = Instant::now();
            let o = Command::new("mlir-opt-22")
                .args([
                    "--allow-unregistered-dialect",
                    "--mlir-disable-threading",
                    "-o",
                    "/dev/null",
                ])
                .arg(&path)
                .output()
                .expect("run mlir-opt-22");
            assert!(
                o.status.success(),
                "mlir-opt-22 failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            (t.elapsed().as_secs_f64(), 0)
        }
    };
    println!(
        "mlir-opt-22 parse+verify+print {mlir_s:.3} s (process, incl. startup), peak RSS {:.1} MB",
        mlir_kib as f64 / 1024.0
    );
    println!(
        "ratio ipuc/mlir-opt (parse+verify+print): {:.2}",
        total / mlir_s
    );
}
