//! ipuc command-line tools: ipu-opt, ipu-run, ipu-bench, ipu-lit, filecheck.

/// The `ipu-lit` test runner: lit-style RUN lines, features, parallel runs,
/// and regeneration of CHECK lines.
pub mod lit;
