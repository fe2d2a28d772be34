//! Options of a FileCheck run (the command-line flags of LLVM FileCheck).

/// When to print the annotated input dump after checking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpInput {
    /// Only when a check failed (LLVM's default).
    #[default]
    Fail,
    /// After every run.
    Always,
    /// Never.
    Never,
}

/// Which input lines the dump shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpInputFilter {
    /// Every input line.
    All,
    /// Lines with any annotation, plus context.
    AnnotationFull,
    /// Lines where an annotation starts, plus context.
    Annotation,
    /// Lines with error annotations, plus context (LLVM's default).
    #[default]
    Error,
}

/// Options controlling how check files are parsed and matched.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directive prefixes (`--check-prefix`/`--check-prefixes`); `CHECK` when empty.
    pub check_prefixes: Vec<String>,
    /// Comment prefixes (`--comment-prefixes`); `COM` and `RUN` by default.
    pub comment_prefixes: Vec<String>,
    /// Patterns that must not occur anywhere between matches (`--implicit-check-not`).
    pub implicit_check_not: Vec<String>,
    /// Require each positive pattern to match a whole line (`--match-full-lines`).
    pub match_full_lines: bool,
    /// Do not canonicalize horizontal whitespace (`--strict-whitespace`).
    pub strict_whitespace: bool,
    /// Case-insensitive matching (`--ignore-case`).
    pub ignore_case: bool,
    /// Accept an empty input (`--allow-empty`).
    pub allow_empty: bool,
    /// Do not complain about prefixes that never occur (`--allow-unused-prefixes`).
    pub allow_unused_prefixes: bool,
    /// Clear local (non-`$`) variables at each CHECK-LABEL (`--enable-var-scope`).
    pub enable_var_scope: bool,
    /// Variables defined up front (`-D NAME=VALUE`); `#NAME=VALUE` defines a
    /// numeric variable.
    pub defines: Vec<String>,
    /// When to print the annotated input dump.
    pub dump_input: DumpInput,
    /// Which lines the dump shows; by default every line with
    /// `--dump-input=always` and error lines otherwise, as in LLVM.
    pub dump_input_filter: Option<DumpInputFilter>,
    /// Lines of context around shown lines in the dump.
    pub dump_input_context: usize,
    /// Annotate successful matches in the dump too (`-v`).
    pub verbose: bool,
    /// Warn about directive-like words that are not directives (`CHECK-NXT:`).
    pub warn_suspicious_directives: bool,
    /// Name of the input in messages (`<stdin>` or the `--input-file` path).
    pub input_name: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            check_prefixes: Vec::new(),
            comment_prefixes: vec!["COM".into(), "RUN".into()],
            implicit_check_not: Vec::new(),
            match_full_lines: false,
            strict_whitespace: false,
            ignore_case: false,
            allow_empty: false,
            allow_unused_prefixes: false,
            enable_var_scope: false,
            defines: Vec::new(),
            dump_input: DumpInput::Fail,
            dump_input_filter: None,
            dump_input_context: 5,
            verbose: false,
            warn_suspicious_directives: true,
            input_name: "<stdin>".to_string(),
        }
    }
}

impl Options {
    /// The effective check prefixes (`CHECK` when none were given).
    pub fn effective_check_prefixes(&self) -> Vec<String> {
        if self.check_prefixes.is_empty() {
            vec!["CHECK".to_string()]
        } else {
            self.check_prefixes.clone()
        }
    }
}
