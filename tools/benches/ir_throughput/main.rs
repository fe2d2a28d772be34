//! IR text throughput against upstream (not a timed test).
//!
//! For each IR shape of [`shapes`] it writes a module in the generic form
//! and the same module in the custom forms of `func` and `nn`, then runs,
//! as whole processes, single-threaded, `-o /dev/null`:
//!
//! - `mlir-opt-22 --allow-unregistered-dialect --mlir-print-op-generic
//!   --mlir-disable-threading` on the generic file;
//! - `ipu-opt` with the same flags on the generic file;
//! - `ipu-opt --allow-unregistered-dialect --mlir-disable-threading` on the
//!   custom file (parsed and printed in the custom forms).
//!
//! Runs are interleaved (one of each per repetition, so machine load hits
//! all three alike) and the table gives medians of each process's CPU time
//! (user + system; wall time in brackets) and peak RSS; the ratio is
//! ipuc's time over mlir-opt-22's on the generic file. CPU time is the
//! figure to quote on a shared machine: wall time also counts waiting for
//! a core. In-process phase times (parse, verify, print) come first, to
//! show where ipuc's time goes.
//!
//! `cargo bench -p ipuc-tools --bench ir_throughput -- [--ops N] [--reps N]
//! [--shapes scalar,tensor,...] [--before PATH] [--extras]`. `--ops` is per
//! shape (default 300,000); `--before` also runs another `ipu-opt` build
//! (say, main's, copied aside) in the same interleaving, for before/after
//! tables; `--extras` adds the one-function streamed parse and
//! `canonicalize,cse` on `nn` ops.

mod shapes;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions};
use ipuc_ir::{parse_source, print_op, verify, Context, PrintOptions};
use shapes::{Form, Shape};

/// Times and peak RSS of one process run.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// Wall-clock time.
    seconds: f64,
    /// User plus system CPU time: what the run itself cost, whatever else
    /// the (shared) machine was doing.
    cpu_seconds: f64,
    peak_kib: u64,
}

/// Runs `program args input -o /dev/null` to completion under GNU time,
/// which reports the CPU time and peak RSS of that process alone (a child
/// spawned by this process would count this process's own peak: Linux
/// folds the memory of the process that execs into the new program's
/// maximum). Panics on failure: the inputs are valid IR, so a failure is a
/// bug to see, not a number.
fn run(program: &Path, args: &[&str], input: &Path) -> Run {
    let report = std::env::temp_dir().join("ipuc-ir-throughput-time.txt");
    let t = Instant::now();
    let out = Command::new(TIME)
        .args(["-f", "%U %S %M", "-o"])
        .arg(&report)
        .arg(program)
        .args(args)
        .arg(input)
        .args(["-o", "/dev/null"])
        .stdout(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {TIME} (GNU time, Debian package `time`): {e}"));
    let seconds = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{} {args:?} {} failed: {}",
        program.display(),
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(&report).expect("GNU time's report");
    let fields: Vec<f64> = report
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let [user, system, peak_kib] = fields[..] else {
        panic!("unexpected GNU time report {report:?}");
    };
    Run {
        seconds,
        cpu_seconds: user + system,
        peak_kib: peak_kib as u64,
    }
}

/// GNU time.
const TIME: &str = "/usr/bin/time";

/// CPU time of the calling thread, in seconds (the in-process phases are
/// timed by it: wall time on a shared machine counts others' work too).
fn thread_cpu_seconds() -> f64 {
    let t = ipuc_runtime::sim::bench::thread_cpu_seconds();
    assert!(!t.is_nan(), "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    t
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn median_run(runs: &[Run]) -> Run {
    Run {
        seconds: median(runs.iter().map(|r| r.seconds).collect()),
        cpu_seconds: median(runs.iter().map(|r| r.cpu_seconds).collect()),
        peak_kib: median(runs.iter().map(|r| r.peak_kib as f64).collect()) as u64,
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

struct Args {
    ops: usize,
    reps: usize,
    shapes: Vec<Shape>,
    before: Option<PathBuf>,
    extras: bool,
}

fn parse_args() -> Args {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let shapes = match value("--shapes") {
        Some(list) => list
            .split(',')
            .map(|s| Shape::from_name(s).unwrap_or_else(|| panic!("unknown shape '{s}'")))
            .collect(),
        None => Shape::ALL.to_vec(),
    };
    Args {
        ops: value("--ops")
            .and_then(|v| v.parse().ok())
            .unwrap_or(300_000),
        reps: value("--reps").and_then(|v| v.parse().ok()).unwrap_or(3),
        shapes,
        before: value("--before").map(PathBuf::from),
        extras: args.iter().any(|a| a == "--extras"),
    }
}

/// One row of the table.
struct Row {
    shape: Shape,
    ops: usize,
    generic_mb: f64,
    custom_mb: f64,
    mlir: Option<Run>,
    generic: Run,
    custom: Run,
    /// The `--before` build's runs (generic, custom).
    before: Option<(Run, Run)>,
}

fn main() {
    let args = parse_args();
    let ipu_opt = PathBuf::from(env!("CARGO_BIN_EXE_ipu-opt"));
    let mlir_opt = Command::new("mlir-opt-22")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        .then(|| PathBuf::from("mlir-opt-22"));
    if mlir_opt.is_none() {
        println!("mlir-opt-22 not found: ipuc's times only, no ratios");
    }
    let dir = std::env::temp_dir().join("ipuc-ir-throughput");
    std::fs::create_dir_all(&dir).expect("create the benchmark folder");
    let generic_flags = [
        "--allow-unregistered-dialect",
        "--mlir-print-op-generic",
        "--mlir-disable-threading",
    ];
    let custom_flags = ["--allow-unregistered-dialect", "--mlir-disable-threading"];
    let mut rows = Vec::new();
    for &shape in &args.shapes {
        let generic_path = dir.join(format!("{}-{}-generic.mlir", shape.name(), args.ops));
        let custom_path = dir.join(format!("{}-{}-custom.mlir", shape.name(), args.ops));
        let generic = shapes::generate(shape, Form::Generic, args.ops);
        let custom = shapes::generate(shape, Form::Custom, args.ops);
        std::fs::write(&generic_path, &generic).expect("write the generic input");
        std::fs::write(&custom_path, &custom).expect("write the custom input");
        let ops = phases(shape, &generic, &custom);
        let (mut mlir_runs, mut generic_runs, mut custom_runs) =
            (Vec::new(), Vec::new(), Vec::new());
        let (mut before_generic, mut before_custom) = (Vec::new(), Vec::new());
        for _ in 0..args.reps {
            if let Some(m) = &mlir_opt {
                mlir_runs.push(run(m, &generic_flags, &generic_path));
            }
            generic_runs.push(run(&ipu_opt, &generic_flags, &generic_path));
            custom_runs.push(run(&ipu_opt, &custom_flags, &custom_path));
            if let Some(b) = &args.before {
                before_generic.push(run(b, &generic_flags, &generic_path));
                before_custom.push(run(b, &custom_flags, &custom_path));
            }
        }
        rows.push(Row {
            shape,
            ops,
            generic_mb: generic.len() as f64 / 1e6,
            custom_mb: custom.len() as f64 / 1e6,
            mlir: (!mlir_runs.is_empty()).then(|| median_run(&mlir_runs)),
            generic: median_run(&generic_runs),
            custom: median_run(&custom_runs),
            before: args
                .before
                .is_some()
                .then(|| (median_run(&before_generic), median_run(&before_custom))),
        });
    }
    print_table(&rows, args.reps);
    if args.extras {
        extras(args.ops);
    }
}

/// Parses, verifies and prints both texts in process, printing the time
/// of each phase; returns the number of operations.
fn phases(shape: Shape, generic: &str, custom: &str) -> usize {
    let mut ops = 0;
    let mut as_generic = Vec::new();
    for (form, text, print_generic) in [("generic", generic, true), ("custom", custom, false)] {
        let mut ctx = Context::new(ipuc_dialects::registry());
        ctx.allow_unregistered = true;
        let t = thread_cpu_seconds();
        let parsed = parse_source(&mut ctx, "bench.mlir", text)
            .unwrap_or_else(|d| panic!("{} {form} input does not parse: {d}", shape.name()));
        let parse_s = thread_cpu_seconds() - t;
        let t = thread_cpu_seconds();
        verify(&ctx, parsed.module)
            .unwrap_or_else(|d| panic!("{} {form} input does not verify: {d}", shape.name()));
        let verify_s = thread_cpu_seconds() - t;
        let t = thread_cpu_seconds();
        let options = PrintOptions {
            generic: print_generic,
            ..PrintOptions::default()
        };
        let printed = print_op(&ctx, parsed.module, &options);
        let print_s = thread_cpu_seconds() - t;
        ops = ctx.num_ops();
        assert!(
            printed.len() > text.len() / 2,
            "printed output is implausibly short"
        );
        // Both files must hold the same IR.
        let generic_options = PrintOptions::generic();
        as_generic.push(print_op(&ctx, parsed.module, &generic_options));
        println!(
            "{:<9} {form:<7} in process, CPU: parse {parse_s:.3} s, verify {verify_s:.3} s, print {print_s:.3} s ({ops} ops)",
            shape.name()
        );
    }
    assert!(
        as_generic[0] == as_generic[1],
        "the {} generic and custom inputs differ",
        shape.name()
    );
    ops
}

fn print_table(rows: &[Row], reps: usize) {
    println!(
        "\nmedians of {reps} interleaved runs; seconds of CPU (wall), ratio of CPU \
         (wall) times, peak RSS in MiB:\n"
    );
    println!("| shape | ops | form (MB) | ipuc s | mlir-opt-22 s (generic) | ratio | ipuc MiB | mlir-opt-22 MiB | before: s, ratio, MiB |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        for (form, mb, ipuc, before) in [
            ("generic", r.generic_mb, r.generic, r.before.map(|b| b.0)),
            ("custom", r.custom_mb, r.custom, r.before.map(|b| b.1)),
        ] {
            let (mlir_s, ratio, mlir_mib) = match r.mlir {
                Some(m) => (
                    format!("{:.2} ({:.2})", m.cpu_seconds, m.seconds),
                    format!(
                        "{:.2} ({:.2})",
                        ipuc.cpu_seconds / m.cpu_seconds,
                        ipuc.seconds / m.seconds
                    ),
                    format!("{:.0}", mib(m.peak_kib)),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            let before = match (before, r.mlir) {
                (Some(b), Some(m)) => format!(
                    "{:.2}, {:.2}, {:.0}",
                    b.cpu_seconds,
                    b.cpu_seconds / m.cpu_seconds,
                    mib(b.peak_kib)
                ),
                (Some(b), None) => format!("{:.2}, -, {:.0}", b.cpu_seconds, mib(b.peak_kib)),
                (None, _) => "-".into(),
            };
            println!(
                "| {} | {} | {form} ({mb:.0}) | {:.2} ({:.2}) | {mlir_s} | {ratio} | {:.0} | {mlir_mib} | {before} |",
                r.shape.name(),
                r.ops,
                ipuc.cpu_seconds,
                ipuc.seconds,
                mib(ipuc.peak_kib),
            );
        }
    }
}

/// Current resident set size.
fn rss_kib() -> Option<u64> {
    proc_status_kib("VmRSS:")
}

fn peak_rss_kib() -> Option<u64> {
    proc_status_kib("VmHWM:")
}

fn proc_status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets the peak RSS (VmHWM) to the current RSS (Linux).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The same scalar ops in one function (the shape of an imported model,
/// whose body is parsed in pieces), and `canonicalize,cse` on `nn` ops.
fn extras(ops: usize) {
    let mut one = String::with_capacity(ops * 60);
    one.push_str("module {\n  func.func @f(%arg0: i32, %arg1: i32) -> i32 {\n");
    one.push_str("    %0 = \"test.add\"(%arg0, %arg1) : (i32, i32) -> i32\n");
    for i in 1..ops {
        one.push_str(&format!(
            "    %{i} = \"test.add\"(%{}, %arg0) : (i32, i32) -> i32\n",
            i - 1
        ));
    }
    one.push_str(&format!("    return %{} : i32\n  }}\n}}\n", ops - 1));
    let base = rss_kib().unwrap_or(0);
    let reset = reset_peak_rss();
    let mut ctx = Context::new(ipuc_dialects::registry());
    ctx.allow_unregistered = true;
    let t = Instant::now();
    let parsed = parse_source(&mut ctx, "one.mlir", &one).expect("single-function input parses");
    let parse_s = t.elapsed().as_secs_f64();
    let peak = peak_rss_kib().unwrap_or(0);
    let n = ctx.num_ops();
    print!(
        "\none function of {n} ops: parse {parse_s:.3} s, {} region bodies parsed piece by piece",
        parsed.streamed_bodies
    );
    if reset {
        print!(
            ", peak {:.0} bytes/op over the input text",
            peak.saturating_sub(base) as f64 * 1024.0 / n as f64
        );
    }
    println!();
    drop(ctx);

    // The passes run on registered pure ops, where they have work to do:
    // every tenth op repeats the one before it (CSE has work to do).
    let t = "tensor<4xf32>";
    let mut nn = String::with_capacity(ops * 90);
    nn.push_str("module {\n");
    for f in 0..ops.div_ceil(100) {
        nn.push_str(&format!(
            "  func.func @f{f}(%arg0: {t}, %arg1: {t}) -> {t} {{\n"
        ));
        nn.push_str(&format!("    %0 = nn.add %arg0, %arg1 : {t}, {t} -> {t}\n"));
        for i in 1..99 {
            let src = if i % 10 == 0 { i - 2 } else { i - 1 };
            let op = if i % 3 == 0 { "nn.mul" } else { "nn.add" };
            nn.push_str(&format!(
                "    %{i} = {op} %{src}, %arg0 : {t}, {t} -> {t}\n"
            ));
        }
        nn.push_str(&format!("    return %98 : {t}\n  }}\n"));
    }
    nn.push_str("}\n");
    let mut ctx = Context::new(ipuc_dialects::registry());
    let parsed = parse_source(&mut ctx, "bench-nn.mlir", &nn).expect("nn input parses");
    let n_ops = ctx.num_ops();
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
    println!(
        "canonicalize,cse on {n_ops} nn ops: {passes_s:.3} s ({:.2} M ops/s), {} ops removed",
        n_ops as f64 / passes_s / 1e6,
        n_ops - ctx.num_ops()
    );
}
