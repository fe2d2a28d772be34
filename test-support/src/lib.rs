//! What a test does when the independent oracle it compares with
//! (`mlir-opt-22`, `FileCheck-22`) or a shared fixture (`../shared/models`)
//! is missing.
//!
//! On a developer machine it skips, and says so on the real stdout (not the
//! captured test output), so `cargo test` shows the skip. In CI,
//! `.ci/run` sets [`REQUIRE_ENV`]`=1`, and a missing oracle fails the test:
//! a check that never ran must never pass quietly.
//!
//! ```no_run
//! if !std::path::Path::new("/usr/bin/mlir-opt-22").exists() {
//!     ipuc_test_support::missing("my_test", "mlir-opt-22 is not on PATH");
//!     return;
//! }
//! ```

use std::io::Write;

pub mod random;

/// The environment variable that turns a skip into a failure.
pub const REQUIRE_ENV: &str = "IPUC_REQUIRE_ORACLES";

/// Whether missing oracles and fixtures are failures here (CI).
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// Reports that `test` cannot check anything because `what` is missing:
/// panics when [`required`], else prints a `SKIPPED` line to stdout. The
/// caller returns right after.
pub fn missing(test: &str, what: &str) {
    if required() {
        panic!("{test}: {what}; {REQUIRE_ENV}=1 requires every oracle and fixture (install it, or unset {REQUIRE_ENV} to skip)");
    }
    // Straight to the process's stdout: libtest captures only print! output.
    let _ = writeln!(std::io::stdout().lock(), "SKIPPED {test}: {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test (not two) so no other test of this crate races on the variable.
    #[test]
    fn missing_skips_on_a_workstation_and_fails_in_ci() {
        std::env::remove_var(REQUIRE_ENV);
        assert!(!required());
        missing("t", "nothing");
        std::env::set_var(REQUIRE_ENV, "1");
        assert!(required());
        let caught = std::panic::catch_unwind(|| missing("t", "an oracle"));
        std::env::remove_var(REQUIRE_ENV);
        let message = *caught
            .expect_err("a failure in CI")
            .downcast::<String>()
            .unwrap();
        assert!(message.contains("t: an oracle"), "{message}");
    }
}
