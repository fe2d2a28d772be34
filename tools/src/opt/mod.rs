//! The opt-style driver behind `ipu-opt`, with mlir-opt's flag spellings,
//! as a library: like MLIR's `MlirOptMain`, a tool outside this tree gets
//! every flag of `ipu-opt` with one call, adding its own dialects and
//! passes ([`opt_main`], [`OptTool`]). `examples/example-opt` is such a tool.
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! fn main() -> ExitCode {
//!     ipuc_tools::opt::opt_main("my-opt", |dialects, passes| {
//!         // dialects.register(my_dialect());
//!         // my_crate::register_passes(passes)?;
//!         let _ = (dialects, passes);
//!         Ok(())
//!     })
//! }
//! ```

mod cli;
mod verify_diagnostics;

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use ipuc_ir::pass::{
    parse_pipeline, parse_reproducer_config, write_reproducer, PassManager, PassManagerOptions,
    PassRegistry, PassTiming, PipelineError, RegistrationError, ReproducerConfig, TimingDisplay,
};
use ipuc_ir::{parse_source, print_op, verify, Context, Diagnostic, DialectRegistry, SourceMgr};

pub use cli::{Emit, OptArgs};

/// An opt-style tool: its name and the dialects and passes it knows
/// (what MLIR's `MlirOptMain` is given).
pub struct OptTool {
    /// The program name, used in `--help`, usage lines and hints (`ipu-opt`).
    pub name: &'static str,
    /// The dialects that inputs and passes may use.
    pub dialects: Arc<DialectRegistry>,
    /// The passes that pipelines and per-pass flags may name.
    pub passes: PassRegistry,
    /// Whether [`OptTool::run`] frees the IR it printed before returning.
    /// A process about to exit need not: freeing every operation,
    /// attribute and resource of a large module one by one was 3-4 % of
    /// `ipu-opt`'s time, for memory the kernel takes back at exit anyway
    /// (clang skips it too, `-disable-free`). [`opt_main`] turns it off
    /// unless `IPUC_TEARDOWN` is set (for leak checkers, and the test that
    /// both ways print the same). A tool that runs several times in one
    /// process keeps it on, as [`OptTool::ipuc`] gives it.
    pub teardown: bool,
}

impl OptTool {
    /// A tool that knows every ipuc dialect and pass, with the IPU's hook
    /// implementations (that is `ipu-opt`), plus what `extend` adds.
    pub fn ipuc(
        name: &'static str,
        extend: impl FnOnce(&mut DialectRegistry, &mut PassRegistry) -> Result<(), RegistrationError>,
    ) -> Result<OptTool, RegistrationError> {
        let mut dialects = crate::registry::dialect_registry();
        let mut passes = PassRegistry::new();
        crate::registry::register_passes(&mut passes)?;
        extend(&mut dialects, &mut passes)?;
        Ok(OptTool {
            name,
            dialects: Arc::new(dialects),
            passes,
            teardown: true,
        })
    }

    /// Runs the driver with `args` (without the program name); returns the
    /// exit status (0 on success, 1 on any error, reported on stderr).
    pub fn run(&self, args: Vec<String>) -> i32 {
        let parsed = match cli::parse(self.name, args, &self.passes) {
            Ok(a) => a,
            Err(code) => return code,
        };
        if parsed.list_passes {
            print!("{}", self.passes.help());
            return 0;
        }
        match run(&parsed, self) {
            Ok(()) => 0,
            Err(msg) => {
                if !msg.is_empty() {
                    eprint!("{msg}");
                    if !msg.ends_with('\n') {
                        eprintln!();
                    }
                }
                1
            }
        }
    }
}

/// The whole `main` of an opt tool: every ipuc dialect and pass plus those
/// `extend` registers, every flag of `ipu-opt`, logs through `tracing` as
/// `IPUC_LOG` selects (e.g. `IPUC_LOG=debug`), the process's arguments.
pub fn opt_main(
    name: &'static str,
    extend: impl FnOnce(&mut DialectRegistry, &mut PassRegistry) -> Result<(), RegistrationError>,
) -> ExitCode {
    crate::init_logging();
    let mut tool = match OptTool::ipuc(name, extend) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    tool.teardown = std::env::var_os(TEARDOWN_ENV).is_some();
    let code = tool.run(std::env::args().skip(1).collect());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Set (to anything) to make [`opt_main`] free the IR before exiting (see
/// [`OptTool::teardown`]).
pub const TEARDOWN_ENV: &str = "IPUC_TEARDOWN";

/// The input's bytes: a regular file mapped into memory, anything else
/// (standard input, a pipe) read.
enum Input {
    Read(String),
    Mapped(memmap2::Mmap),
}

impl Input {
    fn open(path: &str) -> Result<Input, String> {
        if path == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("error: cannot read standard input: {e}"))?;
            return Ok(Input::Read(s));
        }
        let cannot_open =
            |e: std::io::Error| format!("error: cannot open input file '{path}': {e}");
        let file = std::fs::File::open(path).map_err(cannot_open)?;
        if !file.metadata().map_err(cannot_open)?.is_file() {
            return std::io::read_to_string(file)
                .map(Input::Read)
                .map_err(cannot_open);
        }
        // Mapped, not read: reading copies the text into fresh memory,
        // whose page faults (the kernel zeroing every page first) were 6 %
        // of reading a weight-heavy file; mapped pages come straight from
        // the page cache, many per fault. Upstream maps its inputs too.
        // SAFETY: the mapping is only read, and only before any output is
        // written (so `-o` naming the input truncates it after its last
        // use). Another process changing the file while it is read could
        // change the text under the parser, as with upstream's mapping.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(cannot_open)?;
        Ok(Input::Mapped(map))
    }

    /// The text, checked to be UTF-8 (once: call it once).
    fn text(&self, path: &str) -> Result<&str, String> {
        match self {
            Input::Read(s) => Ok(s),
            Input::Mapped(m) => std::str::from_utf8(m).map_err(|e| {
                format!("error: cannot open input file '{path}': stream did not contain valid UTF-8 ({e})")
            }),
        }
    }
}

fn run(a: &OptArgs, tool: &OptTool) -> Result<(), String> {
    if a.emit == Emit::Exe {
        if a.split_input_file {
            return Err("error: --emit=exe writes one executable; it cannot be combined with --split-input-file\n".into());
        }
        match a.output.as_deref() {
            None => return Err("error: --emit=exe writes a binary executable: give the output file with -o FILE\n".into()),
            Some("-") if std::io::stdout().is_terminal() => return Err("error: refusing to write a binary executable to a terminal; redirect stdout or use -o FILE\n".into()),
            _ => {}
        }
    }
    if crate::import::is_onnx(&a.input) {
        if a.split_input_file || a.verify_diagnostics || a.run_reproducer {
            return Err(format!(
                "error: '{}' is an ONNX model; --split-input-file, --verify-diagnostics and \
                 --run-reproducer need MLIR text input\n",
                a.input
            ));
        }
        let out = process_chunk(a, tool, &a.input, Source::Onnx).map_err(|diags| {
            diags
                .iter()
                .map(|d| SourceMgr::new().render(d))
                .collect::<String>()
        })?;
        return write_output(a, &[out]);
    }
    let input = Input::open(&a.input)?;
    let text = input.text(&a.input)?;
    let name = if a.input == "-" {
        "<stdin>".to_string()
    } else {
        a.input.clone()
    };
    // No copies of the input: a model's text can be gigabytes.
    let pieces;
    let chunks: Vec<&str> = if a.split_input_file {
        pieces = split_input(text);
        pieces.iter().map(String::as_str).collect()
    } else {
        vec![text]
    };
    // The source manager (which holds its own copy) only once it renders.
    let source_mgr = std::cell::OnceCell::new();
    let sources = || {
        source_mgr.get_or_init(|| {
            let mut sources = SourceMgr::new();
            sources.add(&name, Arc::from(text));
            sources
        })
    };
    let mut outputs = Vec::new();
    let mut failed = false;
    let mut errors = String::new();
    for &chunk in &chunks {
        let result = process_chunk(a, tool, &name, Source::Text(chunk));
        if a.verify_diagnostics {
            let diags = match &result {
                Ok(_) => Vec::new(),
                Err(d) => d.clone(),
            };
            if let Err(msg) = verify_diagnostics::check(&name, chunk, &diags, sources()) {
                errors.push_str(&msg);
                failed = true;
            }
            continue;
        }
        match result {
            Ok(out) => outputs.push(out),
            Err(diags) => {
                for d in diags {
                    errors.push_str(&sources().render(&d));
                }
                failed = true;
            }
        }
    }
    if failed {
        return Err(errors);
    }
    if a.verify_diagnostics {
        return Ok(());
    }
    let written = write_output(a, &outputs);
    if !tool.teardown {
        // Written and flushed (or failed) by now: nothing left to do with
        // the IR but free it, which the process's exit does for nothing.
        std::mem::forget(outputs);
    }
    written
}

/// Writes the chunk results to `-o` (or stdout), separated by `// -----`.
fn write_output(a: &OptArgs, outputs: &[ChunkOutput]) -> Result<(), String> {
    let (mut sink, what): (Box<dyn Write>, String) = match &a.output {
        Some(path) if path != "-" => {
            let f = std::fs::File::create(path)
                .map_err(|e| format!("error: cannot write '{path}': {e}"))?;
            (Box::new(std::io::BufWriter::new(f)), format!("'{path}'"))
        }
        _ => (
            Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            "output".to_string(),
        ),
    };
    let result = (|| {
        for (i, o) in outputs.iter().enumerate() {
            if i > 0 {
                sink.write_all(b"// -----\n")?;
            }
            o.write_to(&mut sink)?;
        }
        sink.flush()
    })();
    result.map_err(|e| format!("error: cannot write {what}: {e}"))
}

/// Splits on `// -----` lines, keeping line numbers: each chunk is the whole
/// file with the other chunks blanked out to empty lines.
fn split_input(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut ranges = Vec::new();
    let mut start = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.trim_end() == "// -----" {
            ranges.push((start, i));
            start = i + 1;
        }
    }
    ranges.push((start, lines.len()));
    ranges
        .into_iter()
        .map(|(s, e)| {
            let mut out = String::with_capacity(text.len());
            for (i, l) in lines.iter().enumerate() {
                if i >= s && i < e {
                    out.push_str(l);
                } else {
                    out.push('\n');
                }
            }
            out
        })
        .collect()
}

/// What `process_chunk` reads: MLIR text, or the ONNX model named by the input path.
enum Source<'a> {
    Text(&'a str),
    Onnx,
}

fn process_chunk(
    a: &OptArgs,
    tool: &OptTool,
    name: &str,
    source: Source<'_>,
) -> Result<ChunkOutput, Vec<Diagnostic>> {
    let (mut ctx, module, external_resources) = match source {
        Source::Text(text) => {
            let mut ctx = Context::new(tool.dialects.clone());
            ctx.allow_unregistered = a.allow_unregistered_dialect;
            if a.upstream {
                let module = crate::upstream::read(&mut ctx, name, text.into())?;
                (ctx, module, Default::default())
            } else {
                let parsed = parse_source(&mut ctx, name, text).map_err(|d| vec![d])?;
                (ctx, parsed.module, parsed.external_resources)
            }
        }
        Source::Onnx => {
            let (ctx, module) = crate::import::import_onnx(name, &a.onnx, tool.dialects.clone())
                .map_err(|d| vec![d])?;
            (ctx, module, Default::default())
        }
    };
    if a.verify_each || a.verify_diagnostics {
        verify(&ctx, module).map_err(|d| vec![d])?;
    }
    // The pipeline: a reproducer's configuration, --pass-pipeline, or per-pass flags.
    let mut pipeline_text = a.pass_pipeline.clone();
    let mut options = PassManagerOptions {
        verify_each: a.verify_each,
        threading: !a.disable_threading,
        ..PassManagerOptions::default()
    };
    if a.run_reproducer {
        let config = parse_reproducer_config(&external_resources).ok_or_else(|| {
            vec![Diagnostic::error(
                ctx.loc(module).clone(),
                "--run-reproducer: the input has no mlir_reproducer configuration",
            )]
        })?;
        pipeline_text = Some(config.pipeline.clone());
        options.threading = !config.disable_threading;
        options.verify_each = config.verify_each;
    }
    let mut pm = PassManager::new(options.clone());
    let invalid = |msg: String| vec![Diagnostic::error(ipuc_ir::Location::unknown(), msg)];
    let before = [
        a.extract
            .as_deref()
            .map(ipuc_passes::extract::extract_pipeline),
        a.precision
            .as_deref()
            .map(ipuc_passes::precision::precision_pipeline),
    ];
    for p in before.into_iter().flatten() {
        let elems = parse_pipeline(&p).map_err(|(_, msg)| invalid(format!("{p}: {msg}")))?;
        pm.add_pipeline(&tool.passes, &elems)
            .map_err(|e| invalid(pipeline_error_text(&e)))?;
    }
    if let Some(p) = &pipeline_text {
        let elems = parse_pipeline(p).map_err(|(off, msg)| {
            invalid(format!(
                "invalid pass pipeline at offset {off}: {msg}\n  {p}\n  {}^",
                " ".repeat(off)
            ))
        })?;
        pm.add_pipeline(&tool.passes, &elems)
            .map_err(|e| invalid(pipeline_error_text(&e)))?;
    }
    for (pass_name, opts) in &a.pass_flags {
        let elems = parse_pipeline(&format!(
            "{pass_name}{}",
            if opts.is_empty() {
                String::new()
            } else {
                format!("{{{opts}}}")
            }
        ))
        .map_err(|(_, msg)| invalid(format!("invalid options for --{pass_name}: {msg}")))?;
        pm.add_pipeline(&tool.passes, &elems)
            .map_err(|e| invalid(pipeline_error_text(&e)))?;
    }
    if a.dump_pass_pipeline {
        eprintln!(
            "Pass Manager with {} passes:\n{}",
            count_passes(&pm),
            pm.pipeline_text()
        );
    }
    let print_options = a.print_options();
    let wants_ir_printing = a.print_ir_before_all
        || a.print_ir_after_all
        || !a.print_ir_before.is_empty()
        || !a.print_ir_after.is_empty()
        || a.print_ir_after_change
        || a.print_ir_after_failure
        || a.print_ir_tree_dir.is_some();
    if wants_ir_printing {
        let mut p = ipuc_ir::pass::IrPrinting::new(print_options.clone());
        p.before = filter(a.print_ir_before_all, &a.print_ir_before);
        p.after = filter(
            a.print_ir_after_all || a.print_ir_after_change || a.print_ir_tree_dir.is_some(),
            &a.print_ir_after,
        );
        p.after_change = a.print_ir_after_change;
        p.after_failure = a.print_ir_after_failure;
        p.tree_dir = a.print_ir_tree_dir.clone().map(Into::into);
        pm.add_instrumentation(Box::new(p));
    }
    if a.timing {
        pm.add_instrumentation(Box::new(PassTiming::new(if a.timing_display == "tree" {
            TimingDisplay::Tree
        } else {
            TimingDisplay::List
        })));
    }
    let input_for_reproducer = a.crash_reproducer.as_ref().map(|_| {
        print_op(
            &ctx,
            module,
            &ipuc_ir::PrintOptions {
                generic: true,
                debug_info: true,
                ..Default::default()
            },
        )
    });
    if let Err(e) = pm.run(&mut ctx, module) {
        let mut diags = Vec::new();
        if let (Some(path), Some(ir)) = (&a.crash_reproducer, &input_for_reproducer) {
            let config = ReproducerConfig {
                pipeline: pm.pipeline_text(),
                disable_threading: !options.threading,
                verify_each: options.verify_each,
            };
            match write_reproducer(Path::new(path), ir, &config) {
                Ok(()) => eprintln!(
                    "note: reproducer written to {path} (run it with: {} {path} --run-reproducer)",
                    tool.name
                ),
                Err(err) => eprintln!("error: cannot write reproducer {path}: {err}"),
            }
        }
        match e {
            PipelineError::PassFailed { diagnostic, .. } => diags.push(diagnostic),
            PipelineError::VerifyFailed { pass, diagnostic } => diags.push(diagnostic.with_note(
                ipuc_ir::Location::unknown(),
                format!("verification failed after running pass '{pass}'"),
            )),
            other => diags.push(Diagnostic::error(
                ipuc_ir::Location::unknown(),
                pipeline_error_text(&other),
            )),
        }
        return Err(diags);
    }
    if a.pass_statistics {
        eprint!("{}", pm.statistics_report());
    }
    if a.emit == Emit::Mlir && crate::upstream::check_requested() {
        crate::upstream::check_printout(&ctx, module, name)?;
    }
    emit(a, ctx, module, print_options, tool.teardown)
}

/// The result of one input chunk, written once every chunk succeeded.
enum ChunkOutput {
    /// Assembly text or an executable.
    Bytes(Vec<u8>),
    /// IR, printed straight to the output so that large weight resources
    /// stream out instead of being held as text.
    Ir {
        ctx: Box<Context>,
        module: ipuc_ir::OpId,
        print: ipuc_ir::PrintOptions,
    },
}

impl ChunkOutput {
    fn write_to(&self, w: &mut dyn Write) -> std::io::Result<()> {
        match self {
            ChunkOutput::Bytes(b) => w.write_all(b),
            ChunkOutput::Ir { ctx, module, print } => {
                ipuc_ir::printer::print_op_to(ctx, *module, print, w)
            }
        }
    }
}

/// The output `--emit` asks for. Without `teardown` the IR is not freed
/// once the bytes are made (so400m's tile programs: two seconds of
/// freeing that the process's exit does for nothing).
fn emit(
    a: &OptArgs,
    mut ctx: Context,
    module: ipuc_ir::OpId,
    print: ipuc_ir::PrintOptions,
    teardown: bool,
) -> Result<ChunkOutput, Vec<Diagnostic>> {
    use ipuc_backend_ipu::emit;
    let bytes = |ctx: Context, b: Vec<u8>| {
        if !teardown {
            std::mem::forget(ctx);
        }
        Ok(ChunkOutput::Bytes(b))
    };
    match a.emit {
        Emit::Mlir => Ok(ChunkOutput::Ir {
            ctx: Box::new(ctx),
            module,
            print,
        }),
        Emit::Asm => {
            let exe = emit::find_executable(&ctx, module).map_err(|d| vec![d])?;
            let asm = emit::executable_asm(&ctx, exe).into_bytes();
            bytes(ctx, asm)
        }
        Emit::Exe => {
            let exe = emit::find_executable(&ctx, module).map_err(|d| vec![d])?;
            let encoded = emit::build_executable(&ctx, exe)?.to_bytes();
            bytes(ctx, encoded)
        }
        Emit::Tosa => {
            let tosa = crate::upstream::write_tosa(&mut ctx, module)?.into_bytes();
            bytes(ctx, tosa)
        }
    }
}

fn count_passes(pm: &PassManager) -> usize {
    pm.pipeline_text().matches([',', '(']).count()
}

fn filter(all: bool, names: &[String]) -> ipuc_ir::pass::PassFilter {
    use ipuc_ir::pass::PassFilter;
    if all {
        PassFilter::All
    } else if names.is_empty() {
        PassFilter::Never
    } else {
        PassFilter::Names(names.to_vec())
    }
}

fn pipeline_error_text(e: &PipelineError) -> String {
    match e {
        PipelineError::Invalid(m) => m.clone(),
        PipelineError::Create(e) => e.to_string(),
        PipelineError::PassFailed { pass, diagnostic } => {
            format!("pass '{pass}' failed: {}", diagnostic.message)
        }
        PipelineError::VerifyFailed { pass, diagnostic } => format!(
            "verification failed after pass '{pass}': {}",
            diagnostic.message
        ),
        PipelineError::Panicked { pass, message } => format!("pass '{pass}' crashed: {message}"),
        PipelineError::StaleAnalyses { pass, analyses } => format!(
            "pass '{pass}' declared {} preserved, but {} no longer what recomputing gives: the pass must not preserve {}",
            analyses.join(", "),
            if analyses.len() == 1 { "it is" } else { "they are" },
            if analyses.len() == 1 { "it" } else { "them" },
        ),
    }
}
