//! Command-line flags of `ipu-opt` (and of every tool on its driver), spelled as mlir-opt spells them, with the
//! short forms without `mlir-` as aliases, and one flag per registered pass.

use clap::{Arg, ArgAction, Command};

use ipuc_ir::pass::PassRegistry;
use ipuc_ir::PrintOptions;

/// Parsed `ipu-opt` arguments.
#[derive(Clone, Debug, Default)]
pub struct OptArgs {
    pub input: String,
    pub output: Option<String>,
    pub pass_pipeline: Option<String>,
    /// Per-pass flags in command-line order: (pass, options text).
    pub pass_flags: Vec<(String, String)>,
    pub split_input_file: bool,
    pub verify_diagnostics: bool,
    pub allow_unregistered_dialect: bool,
    pub print_op_generic: bool,
    pub print_debuginfo: bool,
    pub print_local_scope: bool,
    pub list_passes: bool,
    pub dump_pass_pipeline: bool,
    pub verify_each: bool,
    pub disable_threading: bool,
    pub print_ir_before_all: bool,
    pub print_ir_after_all: bool,
    pub print_ir_before: Vec<String>,
    pub print_ir_after: Vec<String>,
    pub print_ir_after_change: bool,
    pub print_ir_after_failure: bool,
    pub print_ir_tree_dir: Option<String>,
    pub timing: bool,
    pub timing_display: String,
    pub pass_statistics: bool,
    pub elide_elements_if_larger: Option<u64>,
    pub elide_resources_if_larger: Option<u64>,
    pub crash_reproducer: Option<String>,
    pub run_reproducer: bool,
    /// `--upstream`: upstream MLIR parses and verifies the input (`mlir` feature).
    pub upstream: bool,
    /// `--emit`: what to write after the pipeline.
    pub emit: Emit,
    /// `--extract KIND:N`: fuse, then cut one encoder block out before the pipeline.
    pub extract: Option<String>,
    /// `--precision fp16|fp8`: convert-precision after `--extract`, before the pipeline.
    pub precision: Option<String>,
    /// `--weights`, `--seed` and `--input-shape` for ONNX input.
    pub onnx: crate::import::OnnxFlags,
}

/// What `ipu-opt` writes after the pipeline (`--emit`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Emit {
    /// The IR as text.
    #[default]
    Mlir,
    /// The assembly of every tile of the module's `ipu.executable`, each
    /// after a `// tile N` line.
    Asm,
    /// The serialized executable (binary; needs `-o`).
    Exe,
    /// The `nn` function as TOSA in upstream's syntax, verified by
    /// upstream MLIR (`mlir` feature).
    Tosa,
}

impl OptArgs {
    /// Printer options from the flags.
    pub fn print_options(&self) -> PrintOptions {
        PrintOptions {
            generic: self.print_op_generic,
            debug_info: self.print_debuginfo,
            local_scope: self.print_local_scope,
            elide_elements_if_larger: self.elide_elements_if_larger,
            elide_resources_if_larger: self.elide_resources_if_larger,
            ..PrintOptions::default()
        }
    }
}

fn flag(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .help(help)
        .action(ArgAction::SetTrue)
}

fn command(tool: &'static str, registry: &PassRegistry) -> Command {
    let mut cmd = Command::new(tool)
        .about("ipuc modular optimizer driver (mlir-opt compatible flags)")
        .override_usage(format!("{tool} [options] <input file>"))
        .arg(
            Arg::new("input")
                .default_value("-")
                .help("Input file ('-' for stdin)"),
        )
        .arg(
            Arg::new("output")
                .short('o')
                .value_name("FILE")
                .help("Output file ('-' for stdout)"),
        )
        .arg(
            Arg::new("emit")
                .long("emit")
                .value_name("mlir|asm|exe|tosa")
                .value_parser(["mlir", "asm", "exe", "tosa"])
                .default_value("mlir")
                .help("What to write after the pipeline: the IR (mlir); the assembly of every tile of the module's ipu.executable, each after a '// tile N' line (asm); the serialized executable (exe, binary: needs -o FILE, and '-o -' only when stdout is not a terminal); or the nn function as TOSA, verified by upstream MLIR (tosa; needs the mlir feature)"),
        )
        .arg(
            Arg::new("extract")
                .long("extract")
                .value_name("KIND:N|head")
                .value_parser(|s: &str| {
                    s.parse::<ipuc_passes::extract::BlockSpec>()
                        .map(|b| b.to_string())
                })
                .help("Before the pipeline, fuse the model (eqsat-fuse, canonicalize) and replace its function by one block of encoder layer N, found through the ONNX node scopes in op locations: mlp:N (LayerNorm, MLP, residual add), attention:N (LayerNorm, attention, residual add) or layer:N; or by the model's tail after its last layer: head (the post-LayerNorm and the attention-pooling head, returning both of the model's outputs). Without fusing: --extract-block=block=KIND:N"),
        )
        .arg(
            Arg::new("precision")
                .long("precision")
                .value_name("fp16|fp8")
                .value_parser(["fp16", "fp8"])
                .help("Before the pipeline (after --extract), convert every function with convert-precision: fp16 (f16 values, f32 accumulation in LayerNorm, softmax and attention) or fp8 (f8E4M3FNUZ weights with power-of-two scales, the activations they multiply cast to f8E4M3FNUZ, f16 elsewhere)"),
        )
        .arg(flag(
            "upstream",
            "Parse and verify the input with upstream MLIR (custom or generic syntax; tosa, func, arith and tensor ops, which convert-tosa-to-nn turns into nn); needs the mlir feature",
        ))
        .arg(
            Arg::new("pass-pipeline")
                .long("pass-pipeline")
                .value_name("PIPELINE")
                .help("A textual pass pipeline, e.g. builtin.module(func.func(canonicalize,cse))"),
        )
        .arg(flag(
            "split-input-file",
            "Split the input on '// -----' and process each chunk independently",
        ))
        .arg(flag(
            "verify-diagnostics",
            "Check that emitted diagnostics match expected-* annotations",
        ))
        .arg(flag(
            "allow-unregistered-dialect",
            "Allow operations of unregistered dialects",
        ))
        .arg(
            flag(
                "mlir-print-op-generic",
                "Print operations in the generic form",
            )
            .visible_alias("print-op-generic"),
        )
        .arg(flag("mlir-print-debuginfo", "Print locations").visible_alias("print-debuginfo"))
        .arg(
            flag(
                "mlir-print-local-scope",
                "Print affine maps and integer sets inline instead of as #map/#set aliases",
            )
            .visible_alias("print-local-scope"),
        )
        .arg(flag(
            "list-passes",
            "List registered passes and their options",
        ))
        .arg(flag(
            "dump-pass-pipeline",
            "Print the pass pipeline to stderr before running it",
        ))
        .arg(
            Arg::new("verify-each")
                .long("verify-each")
                .value_name("BOOL")
                .num_args(0..=1)
                .require_equals(true)
                .default_value("true")
                .default_missing_value("true")
                .value_parser(clap::value_parser!(bool))
                .help("Verify the IR after each pass"),
        )
        .arg(
            flag("mlir-disable-threading", "Run passes on one thread")
                .visible_alias("disable-threading"),
        )
        .arg(
            flag("mlir-print-ir-before-all", "Print IR before each pass")
                .visible_alias("print-ir-before-all"),
        )
        .arg(
            flag("mlir-print-ir-after-all", "Print IR after each pass")
                .visible_alias("print-ir-after-all"),
        )
        .arg(
            Arg::new("mlir-print-ir-before")
                .long("mlir-print-ir-before")
                .visible_alias("print-ir-before")
                .value_name("PASS")
                .action(ArgAction::Append)
                .value_delimiter(',')
                .help("Print IR before the named passes"),
        )
        .arg(
            Arg::new("mlir-print-ir-after")
                .long("mlir-print-ir-after")
                .visible_alias("print-ir-after")
                .value_name("PASS")
                .action(ArgAction::Append)
                .value_delimiter(',')
                .help("Print IR after the named passes"),
        )
        .arg(
            flag(
                "mlir-print-ir-after-change",
                "Print IR after a pass only if it changed the IR",
            )
            .visible_alias("print-ir-after-change"),
        )
        .arg(
            flag(
                "mlir-print-ir-after-failure",
                "Print IR after a pass failed",
            )
            .visible_alias("print-ir-after-failure"),
        )
        .arg(
            Arg::new("mlir-print-ir-tree-dir")
                .long("mlir-print-ir-tree-dir")
                .visible_alias("print-ir-tree-dir")
                .value_name("DIR")
                .help("Write the IR after each pass to DIR/<op path>/<N>_<pass>.mlir"),
        )
        .arg(flag("mlir-timing", "Report pass execution times").visible_alias("timing"))
        .arg(
            Arg::new("mlir-timing-display")
                .long("mlir-timing-display")
                .visible_alias("timing-display")
                .value_name("list|tree")
                .value_parser(["list", "tree"])
                .default_value("list")
                .help("How to show the timing report"),
        )
        .arg(
            flag("mlir-pass-statistics", "Report pass statistics").visible_alias("pass-statistics"),
        )
        .arg(
            Arg::new("mlir-elide-elementsattrs-if-larger")
                .long("mlir-elide-elementsattrs-if-larger")
                .visible_alias("elide-elementsattrs-if-larger")
                .value_name("N")
                .value_parser(clap::value_parser!(u64))
                .help("Elide dense elements with more than N elements"),
        )
        .arg(
            Arg::new("mlir-elide-resource-strings-if-larger")
                .long("mlir-elide-resource-strings-if-larger")
                .visible_alias("elide-resource-strings-if-larger")
                .value_name("N")
                .value_parser(clap::value_parser!(u64))
                .help("Elide resource blobs larger than N bytes"),
        )
        .arg(
            Arg::new("mlir-pass-pipeline-crash-reproducer")
                .long("mlir-pass-pipeline-crash-reproducer")
                .visible_alias("crash-reproducer")
                .value_name("FILE")
                .help("Write a reproducer to FILE when a pass fails or crashes"),
        )
        .arg(flag(
            "run-reproducer",
            "Run the pipeline stored in the input's mlir_reproducer configuration",
        ))
        .arg(
            Arg::new("weights")
                .long("weights")
                .value_name("POLICY")
                .value_parser(["require", "zeros", "random"])
                .default_value("require")
                .help_heading("ONNX input")
                .help("Missing external weight files of an ONNX input: fail, or synthesise zeros or seeded random values"),
        )
        .arg(
            Arg::new("save-weights")
                .long("save-weights")
                .value_name("DIR")
                .help_heading("ONNX input")
                .help("Write the weights the model is compiled with as the external data file(s) its graph expects, into DIR"),
        )
        .arg(
            Arg::new("seed")
                .long("seed")
                .value_name("N")
                .value_parser(clap::value_parser!(u64))
                .default_value("0")
                .help_heading("ONNX input")
                .help("Seed of --weights=random"),
        )
        .arg(
            Arg::new("input-shape")
                .long("input-shape")
                .value_name("NAME=D0xD1x...")
                .action(ArgAction::Append)
                .value_parser(crate::import::parse_input_shape)
                .help_heading("ONNX input")
                .help("Static shape of an ONNX graph input, e.g. pixel_values=1x3x384x384 (repeatable)"),
        )
        .arg(
            Arg::new("batch")
                .long("batch")
                .value_name("N")
                .value_parser(crate::import::parse_batch_images)
                .help_heading("ONNX input")
                .help("Images per run: the size of the inputs' symbolic batch dimensions (default 1); the lowering runs them as one program"),
        );
    for p in registry.iter() {
        cmd = cmd.arg(
            Arg::new(p.name)
                .long(p.name)
                .help(p.summary)
                .value_name("OPTIONS")
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("")
                .action(ArgAction::Append)
                .help_heading("Passes"),
        );
    }
    cmd
}

/// Parses arguments; on `--help` or a usage error prints and returns the exit code.
pub fn parse(
    tool: &'static str,
    args: Vec<String>,
    registry: &PassRegistry,
) -> Result<OptArgs, i32> {
    let m = match command(tool, registry)
        .try_get_matches_from(std::iter::once(tool.to_string()).chain(args))
    {
        Ok(m) => m,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return Err(code);
        }
    };
    let s = |n: &str| m.get_one::<String>(n).cloned();
    let b = |n: &str| m.get_flag(n);
    let list = |n: &str| {
        m.get_many::<String>(n)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    let mut pass_flags: Vec<(usize, String, String)> = Vec::new();
    for p in registry.iter() {
        if let (Some(vals), Some(idx)) = (m.get_many::<String>(p.name), m.indices_of(p.name)) {
            for (v, i) in vals.zip(idx) {
                pass_flags.push((i, p.name.to_string(), v.trim_matches('"').to_string()));
            }
        }
    }
    pass_flags.sort_by_key(|(i, _, _)| *i);
    Ok(OptArgs {
        input: s("input").unwrap_or_else(|| "-".into()),
        output: s("output"),
        pass_pipeline: s("pass-pipeline"),
        pass_flags: pass_flags.into_iter().map(|(_, n, o)| (n, o)).collect(),
        split_input_file: b("split-input-file"),
        verify_diagnostics: b("verify-diagnostics"),
        allow_unregistered_dialect: b("allow-unregistered-dialect"),
        print_op_generic: b("mlir-print-op-generic"),
        print_debuginfo: b("mlir-print-debuginfo"),
        print_local_scope: b("mlir-print-local-scope"),
        list_passes: b("list-passes"),
        dump_pass_pipeline: b("dump-pass-pipeline"),
        verify_each: *m.get_one::<bool>("verify-each").unwrap_or(&true),
        disable_threading: b("mlir-disable-threading"),
        print_ir_before_all: b("mlir-print-ir-before-all"),
        print_ir_after_all: b("mlir-print-ir-after-all"),
        print_ir_before: list("mlir-print-ir-before"),
        print_ir_after: list("mlir-print-ir-after"),
        print_ir_after_change: b("mlir-print-ir-after-change"),
        print_ir_after_failure: b("mlir-print-ir-after-failure"),
        print_ir_tree_dir: s("mlir-print-ir-tree-dir"),
        timing: b("mlir-timing"),
        timing_display: s("mlir-timing-display").unwrap_or_else(|| "list".into()),
        pass_statistics: b("mlir-pass-statistics"),
        elide_elements_if_larger: m
            .get_one::<u64>("mlir-elide-elementsattrs-if-larger")
            .copied(),
        elide_resources_if_larger: m
            .get_one::<u64>("mlir-elide-resource-strings-if-larger")
            .copied(),
        crash_reproducer: s("mlir-pass-pipeline-crash-reproducer"),
        run_reproducer: b("run-reproducer"),
        upstream: b("upstream"),
        extract: s("extract"),
        precision: s("precision"),
        emit: match s("emit").as_deref() {
            Some("asm") => Emit::Asm,
            Some("exe") => Emit::Exe,
            Some("tosa") => Emit::Tosa,
            _ => Emit::Mlir,
        },
        onnx: crate::import::OnnxFlags {
            weights: s("weights").unwrap_or_default(),
            seed: m.get_one::<u64>("seed").copied().unwrap_or(0),
            save_weights: s("save-weights"),
            input_shapes: m
                .get_many::<(String, Vec<i64>)>("input-shape")
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
            batch: m.get_one::<u32>("batch").map(|&n| i64::from(n)),
        },
    })
}
