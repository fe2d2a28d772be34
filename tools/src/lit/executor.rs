//! Running one test: evaluating its feature directives, then its RUN lines
//! one after another through the shell, stopping at the first failure.

use super::config::LitConfig;
use super::substitution::Substitutions;
use super::test_file;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// The outcome of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Every RUN line succeeded.
    Pass,
    /// A RUN line failed (or the test file is malformed).
    Fail,
    /// A `REQUIRES:` did not hold or an `UNSUPPORTED:` did.
    Unsupported,
    /// Failed as `XFAIL:` expected.
    XFail,
    /// Passed although `XFAIL:` expected a failure.
    XPass,
}

impl Status {
    /// The word lit prints for this status.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Unsupported => "UNSUPPORTED",
            Status::XFail => "XFAIL",
            Status::XPass => "XPASS",
        }
    }
}

/// The result of one test: its status and the report to show.
#[derive(Debug, Clone)]
pub struct TestResult {
    /// The test's display name.
    pub name: String,
    /// Outcome.
    pub status: Status,
    /// Commands and their output (the failing one for failures; every one
    /// with `-v`), or why the test was not run.
    pub details: String,
}

/// What one shell command did.
struct CommandRun {
    line: usize,
    command: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl CommandRun {
    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "RUN: at line {}: {}", self.line, self.command);
        match self.code {
            Some(c) => {
                let _ = writeln!(out, "# exit code: {c}");
            }
            None => out.push_str("# terminated by a signal\n"),
        }
        for (name, text) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if !text.is_empty() {
                let _ = writeln!(out, "# {name}:");
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
}

/// Runs `command` through the configured shell in `cwd`, with the ipuc
/// binaries first on PATH.
pub fn run_shell(
    config: &LitConfig,
    command: &str,
    cwd: &Path,
) -> std::io::Result<std::process::Output> {
    let mut cmd = Command::new(&config.shell);
    if config.shell.file_name().is_some_and(|n| n == "bash") {
        // A failure anywhere in a pipeline fails the RUN line, as in lit.
        cmd.args(["-o", "pipefail"]);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![config.bin_dir.clone()];
    dirs.extend(std::env::split_paths(&path));
    let joined = std::env::join_paths(dirs).map_err(std::io::Error::other)?;
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .env("PATH", joined)
        .output()
}

/// Runs the test at `path`, displayed as `name`.
pub fn run_test(path: &Path, name: &str, config: &LitConfig) -> TestResult {
    let result = |status, details: String| TestResult {
        name: name.to_string(),
        status,
        details,
    };
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            return result(
                Status::Fail,
                format!("cannot read {}: {e}\n", path.display()),
            )
        }
    };
    let directives = match test_file::parse(&text) {
        Ok(d) => d,
        Err(e) => return result(Status::Fail, format!("{name}:{}: {}\n", e.line, e.message)),
    };
    let eval_all = |exprs: &[String]| -> Result<Vec<(String, bool)>, String> {
        exprs
            .iter()
            .map(|e| config.features.eval(e).map(|v| (e.clone(), v)))
            .collect()
    };
    let (requires, unsupported, xfail) = match (
        eval_all(&directives.requires),
        eval_all(&directives.unsupported),
        eval_all(&directives.xfail),
    ) {
        (Ok(r), Ok(u), Ok(x)) => (r, u, x),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            return result(Status::Fail, format!("{name}: {e}\n"))
        }
    };
    let missing: Vec<&str> = requires
        .iter()
        .filter(|(_, v)| !v)
        .map(|(e, _)| e.as_str())
        .collect();
    if !missing.is_empty() {
        return result(
            Status::Unsupported,
            format!("missing required features: {}\n", missing.join(", ")),
        );
    }
    if let Some((e, _)) = unsupported.iter().find(|(_, v)| *v) {
        return result(
            Status::Unsupported,
            format!("unsupported with feature expression: {e}\n"),
        );
    }
    let expect_failure = xfail.iter().any(|(_, v)| *v);
    if directives.run_lines.is_empty() {
        return result(Status::Fail, format!("{name}: test has no 'RUN:' line\n"));
    }

    let temp = match tempfile::Builder::new().prefix("ipu-lit-").tempdir() {
        Ok(t) => t,
        Err(e) => {
            return result(
                Status::Fail,
                format!("cannot create a temporary directory: {e}\n"),
            )
        }
    };
    let source = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let subst = Substitutions {
        source: &source,
        temp_dir: temp.path(),
    };
    let mut log = String::new();
    let mut failed = false;
    for run in &directives.run_lines {
        let command = subst.apply(&run.command);
        tracing::debug!(test = name, line = run.line, %command, "running");
        let outcome = match run_shell(config, &command, temp.path()) {
            Ok(o) => CommandRun {
                line: run.line,
                command,
                code: o.status.code(),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            },
            Err(e) => CommandRun {
                line: run.line,
                command,
                code: None,
                stdout: String::new(),
                stderr: format!("cannot run {}: {e}\n", config.shell.display()),
            },
        };
        let ok = outcome.code == Some(0);
        if !ok || config.verbose {
            outcome.render(&mut log);
        }
        if !ok {
            failed = true;
            break;
        }
    }
    let status = match (failed, expect_failure) {
        (false, false) => Status::Pass,
        (true, false) => Status::Fail,
        (true, true) => Status::XFail,
        (false, true) => Status::XPass,
    };
    if status == Status::XPass {
        log.push_str("test passed but XFAIL expected it to fail\n");
    }
    result(status, log)
}
