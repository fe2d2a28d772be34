//! LLVM FileCheck-compatible pattern checker.
//!
//! Implements FileCheck's syntax and semantics (`CHECK`, `-NEXT`, `-SAME`,
//! `-DAG`, `-NOT`, `-LABEL`, `-EMPTY`, `-COUNT-n`, `{LITERAL}`, `{{regex}}`,
//! `[[VAR:regex]]`/`[[VAR]]`, `[[#numeric]]`, `--implicit-check-not`,
//! `--match-full-lines`, ...) and LLVM's diagnostics, as a library so tests
//! and the lit runner can call it in-process.
//!
//! ```
//! use ipuc_filecheck::{check, Options};
//! let checks = "// CHECK: %[[X:[0-9]+]] = add\n// CHECK-NEXT: return %[[X]]\n";
//! let output = "%1 = add %a, %b\nreturn %1\n";
//! assert!(check(checks, "test.mlir", output, &Options::default()).is_ok());
//!
//! let failure = check(checks, "test.mlir", "%1 = add\nreturn %2\n", &Options::default()).unwrap_err();
//! assert_eq!(failure.exit_code(), 1);
//! assert!(failure.report.starts_with("test.mlir:2:16: error: CHECK-NEXT: expected string not found in input"));
//! ```

pub mod diagnostic;
pub mod directive;
pub mod dump;
pub mod engine;
pub mod fuzzy;
pub mod numeric;
pub mod options;
pub mod pattern;
pub mod posix_regex;
pub mod source;
pub mod variables;

pub use diagnostic::{BufferId, Diagnostic, Severity, Span};
pub use options::{DumpInput, DumpInputFilter, Options};

use diagnostic::Buffers;
use source::{canonicalize, SourceBuffer};
use variables::Variables;

/// Why a check run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The input did not satisfy the checks (exit code 1).
    CheckFailed,
    /// The check file, the options or the input were unusable (exit code 2).
    Usage,
}

/// A failed run: its kind and the full report LLVM FileCheck would print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What failed.
    pub kind: FailureKind,
    /// Diagnostics, notes and (per `--dump-input`) the annotated input dump.
    pub report: String,
    /// The structured diagnostics behind the report.
    pub diagnostics: Vec<Diagnostic>,
    /// 1-based (line, column) of each error, with the buffer name, in order.
    pub error_locations: Vec<(String, usize, usize)>,
}

impl Failure {
    /// The process exit code LLVM FileCheck uses for this failure.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            FailureKind::CheckFailed => 1,
            FailureKind::Usage => 2,
        }
    }

    fn usage(report: String) -> Self {
        Self {
            kind: FailureKind::Usage,
            report,
            diagnostics: Vec::new(),
            error_locations: Vec::new(),
        }
    }
}

/// A successful run: warnings and, with `--dump-input=always`, the dump.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Success {
    /// Text to show on stderr (may be empty).
    pub report: String,
}

/// Checks `input` against the directives in `check_text` (named
/// `check_name` in messages). The input is named by
/// [`Options::input_name`].
pub fn check(
    check_text: &str,
    check_name: &str,
    input: &str,
    options: &Options,
) -> Result<Success, Failure> {
    let usage_error = |d: Diagnostic, buffers: Option<&Buffers>| {
        let (report, error_locations) = match (buffers, d.span) {
            (Some(b), Some(span)) => {
                let (line, col) = b.line_col(span);
                (
                    b.render(&d),
                    vec![(b.get(span.buffer).name.clone(), line, col)],
                )
            }
            _ => (format!("error: {}\n", d.message), Vec::new()),
        };
        Failure {
            diagnostics: vec![d],
            error_locations,
            ..Failure::usage(report)
        }
    };
    directive::validate_prefixes(options).map_err(|d| usage_error(d, None))?;

    let buffers = Buffers {
        check: SourceBuffer::new(
            check_name,
            canonicalize(check_text, options.strict_whitespace),
        ),
        input: SourceBuffer::new(
            options.input_name.clone(),
            canonicalize(input, options.strict_whitespace),
        ),
        command_line: directive::implicit_check_not_buffer(options),
    };
    let program = directive::read_check_file(&buffers.check, options).map_err(|e| {
        let mut failure = usage_error(e.error, Some(&buffers));
        failure
            .report
            .insert_str(0, &buffers.render_all(&e.warnings));
        failure
    })?;
    let warnings = buffers.render_all(&program.warnings);
    let vars =
        define_variables(&options.defines).map_err(|m| Failure::usage(format!("{warnings}{m}")))?;

    if input.is_empty() && !options.allow_empty {
        return Err(Failure::usage(format!(
            "{warnings}FileCheck error: '{}' is empty.\n",
            options.input_name
        )));
    }

    let mut engine = engine::Engine::new(&buffers, options, vars);
    let passed = engine.run(&program.checks);
    let mut report = warnings;
    report.push_str(&buffers.render_all(&engine.diagnostics));
    let want_dump = match options.dump_input {
        DumpInput::Always => true,
        DumpInput::Fail => !passed,
        DumpInput::Never => false,
    };
    if want_dump {
        let filter = options
            .dump_input_filter
            .unwrap_or(match options.dump_input {
                DumpInput::Always => DumpInputFilter::All,
                _ => DumpInputFilter::Error,
            });
        report.push_str(&dump::render(
            &buffers.input,
            check_name,
            &engine.records,
            filter,
            options.dump_input_context,
        ));
    }
    if passed {
        return Ok(Success { report });
    }
    let error_locations = engine
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .filter_map(|d| d.span)
        .map(|s| {
            let (line, col) = buffers.line_col(s);
            (buffers.get(s.buffer).name.clone(), line, col)
        })
        .collect();
    Err(Failure {
        kind: FailureKind::CheckFailed,
        report,
        diagnostics: engine.diagnostics,
        error_locations,
    })
}

/// Parses `-D NAME=VALUE` (string) and `-D #NAME=EXPR` (numeric) definitions.
fn define_variables(defines: &[String]) -> Result<Variables, String> {
    let mut vars = Variables::default();
    for def in defines {
        let Some((name, value)) = def.split_once('=') else {
            return Err(format!(
                "error: missing equal sign in command-line definition '-D{def}'\n"
            ));
        };
        if let Some(numeric_name) = name.strip_prefix('#') {
            let block = numeric::parse_block(&format!("{numeric_name}:{value}"), 0)
                .map_err(|(_, m)| format!("error: invalid numeric definition '-D{def}': {m}\n"))?;
            let (Some(var), Some(expr)) = (block.def, block.expr) else {
                return Err(format!("error: invalid numeric definition '-D{def}'\n"));
            };
            let (v, implied) = expr
                .eval(&vars, 0)
                .map_err(|_| format!("error: invalid numeric definition '-D{def}'\n"))?;
            vars.set_numeric(&var, v, block.format.or(implied).unwrap_or_default());
            continue;
        }
        let valid = {
            let mut chars = name.strip_prefix('$').unwrap_or(name).chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !valid {
            return Err(format!(
                "error: invalid name in string variable definition '-D{def}'\n"
            ));
        }
        vars.set_string(name, value);
    }
    Ok(vars)
}
