//! `ipu-lit`: a runner for lit-style test files.
//!
//! A test is a file with `// RUN:` lines (or `#`/`;` comments). Each RUN
//! line, after substituting `%s`, `%S`, `%t`, `%T` and `%%`, runs through
//! the shell with the ipuc binaries (`ipu-opt`, `filecheck`, `not`) first on
//! PATH; a test passes when every RUN line exits 0. `REQUIRES:`,
//! `UNSUPPORTED:` and `XFAIL:` take feature expressions. Results print as
//! `PASS:`/`FAIL:`/`UNSUPPORTED:`/`XFAIL:`/`XPASS:` lines in input order,
//! followed by `N passed, N failed[, N skipped]`.

pub mod check_generator;
pub mod config;
pub mod discovery;
pub mod executor;
pub mod features;
pub mod harness;
pub mod runner;
pub mod substitution;
pub mod test_file;
pub mod update_checks;

pub use config::LitConfig;
pub use discovery::{discover, DEFAULT_SUFFIXES};
pub use executor::{run_test, Status, TestResult};
pub use features::Features;
pub use runner::{run_all, write_result, Summary};
pub use update_checks::update_checks;
