//! `filecheck`: LLVM FileCheck-compatible command-line driver over the
//! `ipuc-filecheck` library. Exit codes: 0 success, 1 check failure, 2 usage
//! error. Accepts LLVM's single-dash long options (`-check-prefix=X`) and
//! extra options from the `FILECHECK_OPTS` environment variable.

use clap::{Parser, ValueEnum};
use ipuc_filecheck::{DumpInput, DumpInputFilter, Options};
use std::io::Read;
use std::process::ExitCode;

#[derive(Clone, Copy, ValueEnum)]
enum DumpArg {
    Help,
    Fail,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
enum FilterArg {
    All,
    AnnotationFull,
    Annotation,
    Error,
}

/// Checks that the input (stdin or --input-file) matches the CHECK
/// directives of CHECK_FILE, with LLVM FileCheck's syntax and semantics.
#[derive(Parser)]
#[command(name = "filecheck", version)]
struct Cli {
    /// The file holding the check directives.
    check_file: Option<String>,
    /// Read the input from this file instead of stdin.
    #[arg(long, value_name = "FILE")]
    input_file: Option<String>,
    /// A directive prefix (repeatable); `CHECK` by default.
    #[arg(long, value_name = "PREFIX")]
    check_prefix: Vec<String>,
    /// Comma-separated directive prefixes (repeatable).
    #[arg(long, value_name = "P1,P2", value_delimiter = ',')]
    check_prefixes: Vec<String>,
    /// Comma-separated comment prefixes (default COM,RUN).
    #[arg(long, value_name = "P1,P2", value_delimiter = ',')]
    comment_prefixes: Option<Vec<String>>,
    /// A pattern that must not occur between any two matches (repeatable).
    #[arg(long, value_name = "PATTERN")]
    implicit_check_not: Vec<String>,
    /// Require every positive pattern to match a whole line.
    #[arg(long)]
    match_full_lines: bool,
    /// Do not canonicalize runs of horizontal whitespace.
    #[arg(long)]
    strict_whitespace: bool,
    /// Match case-insensitively.
    #[arg(long)]
    ignore_case: bool,
    /// Accept an empty input.
    #[arg(long)]
    allow_empty: bool,
    /// Do not fail when some prefix has no directive.
    #[arg(long)]
    allow_unused_prefixes: bool,
    /// Forget local (non-`$`) variables at each CHECK-LABEL.
    #[arg(long)]
    enable_var_scope: bool,
    /// Define a variable: `-D NAME=VALUE`, or numeric `-D '#NAME=EXPR'`.
    #[arg(short = 'D', value_name = "NAME=VALUE")]
    define: Vec<String>,
    /// When to dump the annotated input.
    #[arg(long, value_enum, default_value = "fail")]
    dump_input: DumpArg,
    /// Which input lines the dump shows.
    /// (default: all with --dump-input=always, error otherwise).
    #[arg(long, value_enum)]
    dump_input_filter: Option<FilterArg>,
    /// Lines of context shown around filtered lines.
    #[arg(long, default_value_t = 5)]
    dump_input_context: usize,
    /// Annotate good matches in the dump too.
    #[arg(short = 'v')]
    verbose: bool,
    /// Do not warn about directive-like words such as `CHECK-NXT:`.
    #[arg(long)]
    no_suspicious_directive_warnings: bool,
}

const DUMP_HELP: &str = "\
The input dump printed by filecheck (as LLVM FileCheck's) shows:
  - L:     line number L of the input (an extra space stands for the newline)
  - T:L    the match result of a pattern of type T from check-file line L
           (T:impN for the N-th --implicit-check-not pattern)
  - T:L'N  the N-th match result of that pattern
  - ^~~    a good match (with -v)
  - !~~    a bad match: CHECK-NOT found, or CHECK-NEXT/SAME/EMPTY on the wrong line
  - X~~    the search range of a pattern that was not found
  - ?      the possible intended match
  - .      elided input lines (see --dump-input-filter, --dump-input-context)
";

/// Rewrites LLVM-style single-dash long options (`-check-prefix=X`) into
/// the double-dash form.
fn normalize_args(args: impl Iterator<Item = String>) -> Vec<String> {
    args.map(|a| {
        let single_dash_long =
            a.len() > 2 && a.starts_with('-') && !a.starts_with("--") && !a.starts_with("-D");
        if single_dash_long && a != "-vv" {
            format!("-{a}")
        } else if a == "-vv" {
            "-v".to_string()
        } else {
            a
        }
    })
    .collect()
}

fn main() -> ExitCode {
    let mut raw: Vec<String> = std::env::args().collect();
    if let Ok(extra) = std::env::var("FILECHECK_OPTS") {
        raw.extend(extra.split_whitespace().map(str::to_string));
    }
    let cli = match Cli::try_parse_from(normalize_args(raw.into_iter())) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    if matches!(cli.dump_input, DumpArg::Help) {
        print!("{DUMP_HELP}");
        return ExitCode::SUCCESS;
    }
    let Some(check_file) = cli.check_file.clone() else {
        eprintln!("filecheck: <check-file> not specified");
        return ExitCode::from(2);
    };
    let check_text = match std::fs::read(&check_file) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            eprintln!("Could not open check file '{check_file}': {e}");
            return ExitCode::from(2);
        }
    };
    let (input, input_name) = match &cli.input_file {
        Some(path) if path != "-" => match std::fs::read(path) {
            Ok(b) => (b, path.clone()),
            Err(e) => {
                eprintln!("Could not open input file '{path}': {e}");
                return ExitCode::from(2);
            }
        },
        _ => {
            let mut b = Vec::new();
            if let Err(e) = std::io::stdin().read_to_end(&mut b) {
                eprintln!("Could not read stdin: {e}");
                return ExitCode::from(2);
            }
            (b, "<stdin>".to_string())
        }
    };
    let options = Options {
        check_prefixes: cli
            .check_prefix
            .iter()
            .chain(&cli.check_prefixes)
            .cloned()
            .collect(),
        comment_prefixes: cli
            .comment_prefixes
            .clone()
            .unwrap_or_else(|| Options::default().comment_prefixes),
        implicit_check_not: cli.implicit_check_not.clone(),
        match_full_lines: cli.match_full_lines,
        strict_whitespace: cli.strict_whitespace,
        ignore_case: cli.ignore_case,
        allow_empty: cli.allow_empty,
        allow_unused_prefixes: cli.allow_unused_prefixes,
        enable_var_scope: cli.enable_var_scope,
        defines: cli.define.clone(),
        dump_input: match cli.dump_input {
            DumpArg::Always => DumpInput::Always,
            DumpArg::Never => DumpInput::Never,
            DumpArg::Fail | DumpArg::Help => DumpInput::Fail,
        },
        dump_input_filter: cli.dump_input_filter.map(|f| match f {
            FilterArg::All => DumpInputFilter::All,
            FilterArg::AnnotationFull => DumpInputFilter::AnnotationFull,
            FilterArg::Annotation => DumpInputFilter::Annotation,
            FilterArg::Error => DumpInputFilter::Error,
        }),
        dump_input_context: cli.dump_input_context,
        verbose: cli.verbose,
        warn_suspicious_directives: !cli.no_suspicious_directive_warnings,
        input_name,
    };
    let input = String::from_utf8_lossy(&input);
    match ipuc_filecheck::check(&check_text, &check_file, &input, &options) {
        Ok(success) => {
            eprint!("{}", success.report);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprint!("{}", failure.report);
            ExitCode::from(failure.exit_code() as u8)
        }
    }
}
