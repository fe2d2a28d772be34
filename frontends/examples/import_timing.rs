//! Measures importing an ONNX model: load + import wall time and the
//! process's peak resident memory (Linux `VmHWM`), without printing the IR.
//!
//! `cargo run --release -p ipuc-frontends --example import_timing -- MODEL.onnx [require|zeros|random]`

use std::path::Path;
use std::time::Instant;

use ipuc_frontends::onnx::import::{import_file, ImportOptions};
use ipuc_frontends::onnx::{LoadOptions, WeightsPolicy};
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::{Context, WalkOrder};

fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: import_timing MODEL.onnx [require|zeros|random]");
        std::process::exit(2);
    };
    let weights = match args.get(1).map(String::as_str).unwrap_or("require") {
        "require" => WeightsPolicy::Require,
        "zeros" => WeightsPolicy::Zeros,
        "random" => WeightsPolicy::Random { seed: 0 },
        other => {
            eprintln!("unknown weights policy '{other}'");
            std::process::exit(2);
        }
    };
    let load = LoadOptions { weights };
    let mut ctx = Context::new(ipuc_dialects::registry());
    let start = Instant::now();
    let module = match import_file(&mut ctx, Path::new(path), &load, &ImportOptions::default()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let total = start.elapsed();
    // The weights the module holds: every constant's bytes.
    let mut weight_bytes = 0u64;
    ctx.walk(module, WalkOrder::PreOrder, &mut |c, op| {
        if let Some(a) = c.attr(op, "value") {
            weight_bytes += match a.kind() {
                AttrKind::DenseResource { resource, .. } => {
                    resource.blob().map_or(0, |b| b.data.len() as u64)
                }
                AttrKind::DenseElements(d) => d.data.len() as u64,
                _ => 0,
            };
        }
    });
    let ops = ctx.collect_ops(module, WalkOrder::PreOrder).len();
    println!("model            {path}");
    println!("weight bytes     {weight_bytes}");
    println!("load + import    {:.3} s ({ops} ops)", total.as_secs_f64());
    if let Some(peak) = peak_rss_bytes() {
        println!(
            "peak RSS         {peak} bytes = {:.3} x weight bytes",
            peak as f64 / weight_bytes as f64
        );
    }
}
