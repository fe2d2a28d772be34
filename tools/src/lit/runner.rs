//! Running many tests on parallel workers while printing results in input
//! order, and the closing summary.

use super::config::LitConfig;
use super::executor::{run_test, Status, TestResult};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// PASS and XFAIL.
    pub passed: usize,
    /// FAIL and XPASS.
    pub failed: usize,
    /// UNSUPPORTED.
    pub skipped: usize,
}

impl Summary {
    fn add(&mut self, status: Status) {
        match status {
            Status::Pass | Status::XFail => self.passed += 1,
            Status::Fail | Status::XPass => self.failed += 1,
            Status::Unsupported => self.skipped += 1,
        }
    }

    /// The closing line: `N passed, N failed` (`, N skipped` when any were).
    pub fn line(&self) -> String {
        let mut s = format!("{} passed, {} failed", self.passed, self.failed);
        if self.skipped > 0 {
            s.push_str(&format!(", {} skipped", self.skipped));
        }
        s
    }
}

/// Writes one result as lit does: the status line, then (for failures, or
/// with `-v`) a framed report.
pub fn write_result(
    out: &mut dyn Write,
    result: &TestResult,
    verbose: bool,
) -> std::io::Result<()> {
    writeln!(out, "{}: {}", result.status.label(), result.name)?;
    let show = matches!(result.status, Status::Fail | Status::XPass)
        || (verbose && !result.details.is_empty());
    if show {
        let stars = "*".repeat(20);
        writeln!(
            out,
            "{stars} TEST '{}' {} {stars}",
            result.name,
            result.status.label()
        )?;
        write!(out, "{}", result.details)?;
        writeln!(out, "{stars}")?;
    }
    Ok(())
}

/// Runs `tests` (path, display name) on `config.jobs` workers, writing each
/// result to `out` in input order as soon as it and its predecessors are
/// done, then the summary line.
pub fn run_all(
    tests: &[(PathBuf, String)],
    config: &LitConfig,
    out: &mut dyn Write,
) -> std::io::Result<Summary> {
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel::<(usize, TestResult)>();
    let mut summary = Summary::default();
    std::thread::scope(|scope| -> std::io::Result<()> {
        for _ in 0..config.jobs.clamp(1, tests.len().max(1)) {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((path, name)) = tests.get(i) else {
                    break;
                };
                if sender.send((i, run_test(path, name, config))).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        let mut pending = BTreeMap::new();
        let mut printed = 0;
        for (i, result) in receiver {
            pending.insert(i, result);
            while let Some(result) = pending.remove(&printed) {
                summary.add(result.status);
                write_result(out, &result, config.verbose)?;
                printed += 1;
            }
        }
        Ok(())
    })?;
    writeln!(out, "{}", summary.line())?;
    Ok(summary)
}
