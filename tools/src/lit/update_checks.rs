//! `--update-checks`: regenerates a test's CHECK lines from the current
//! output of its first RUN line that pipes into `filecheck`, keeping RUN
//! lines and the input in place. Checks for each function go right before
//! that function in the test file (as `generate-test-checks.py --source -i`
//! places them).

use super::check_generator;
use super::config::LitConfig;
use super::executor::run_shell;
use super::substitution::Substitutions;
use super::test_file;
use regex::Regex;
use std::path::Path;

/// What an update did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateReport {
    /// Number of CHECK lines written.
    pub check_lines: usize,
    /// The prefix used.
    pub prefix: String,
}

/// Splits a RUN command at its last `| filecheck ...` pipe; returns the
/// producer command and the check prefix named in filecheck's arguments.
fn split_filecheck_pipe(command: &str) -> Option<(String, String)> {
    let re = Regex::new(r"\|\s*filecheck\b([^|]*)$").expect("constant regex");
    let m = re.captures(command)?;
    let producer = command[..m.get(0)?.start()].trim().to_string();
    let args = m.get(1).map_or("", |a| a.as_str());
    let prefix = args
        .split_whitespace()
        .zip(args.split_whitespace().skip(1).chain(std::iter::once("")))
        .find_map(|(a, next)| {
            let value = a
                .strip_prefix("--check-prefix=")
                .or_else(|| a.strip_prefix("-check-prefix="))
                .or_else(|| a.strip_prefix("--check-prefixes="))
                .or_else(|| a.strip_prefix("-check-prefixes="))
                .or_else(|| {
                    matches!(a, "--check-prefix" | "-check-prefix" | "--check-prefixes")
                        .then_some(next)
                })?;
            value.split(',').next().map(str::to_string)
        })
        .unwrap_or_else(|| "CHECK".to_string());
    Some((producer, prefix))
}

/// Regenerates the CHECK lines of the test at `path` in place.
pub fn update_checks(path: &Path, config: &LitConfig) -> Result<UpdateReport, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let directives =
        test_file::parse(&text).map_err(|e| format!("{shown}:{}: {}", e.line, e.message))?;
    let (run, (producer, prefix)) = directives
        .run_lines
        .iter()
        .find_map(|r| split_filecheck_pipe(&r.command).map(|s| (r, s)))
        .ok_or_else(|| format!("{shown}: no RUN: line pipes into filecheck"))?;

    let temp =
        tempfile::tempdir().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let source = std::path::absolute(path).map_err(|e| format!("{shown}: {e}"))?;
    let subst = Substitutions {
        source: &source,
        temp_dir: temp.path(),
    };
    let command = subst.apply(&producer);
    let output = run_shell(config, &command, temp.path())
        .map_err(|e| format!("cannot run '{command}': {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{shown}:{}: '{command}' failed ({}):\n{}",
            run.line,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let generated = check_generator::generate(&String::from_utf8_lossy(&output.stdout), &prefix);

    let directive_re = Regex::new(&format!(
        r"\b{}(-[A-Z]+|-COUNT-[0-9]+)?(\{{LITERAL\}})?:",
        regex::escape(&prefix)
    ))
    .map_err(|e| e.to_string())?;
    let delimiter = Regex::new(r"func @|func\.func @").expect("constant regex");
    let mut source_segments: Vec<Vec<&str>> = vec![Vec::new()];
    for line in text.lines() {
        if directive_re.is_match(line) && !line.contains("RUN:") {
            continue;
        }
        if delimiter.is_match(line) {
            source_segments.push(Vec::new());
        }
        source_segments.last_mut().expect("non-empty").push(line);
    }
    if source_segments.len() != generated.len() {
        return Err(format!(
            "{shown}: the output has {} function(s) but the test file has {}; cannot place the checks",
            generated.len() - 1,
            source_segments.len() - 1
        ));
    }
    let mut out = String::new();
    let mut check_lines = 0;
    for (index, (checks, source_lines)) in generated.iter().zip(&source_segments).enumerate() {
        check_lines += checks.len();
        let emit = |lines: &[String], out: &mut String| {
            for l in lines {
                out.push_str(l);
                out.push('\n');
            }
        };
        // The header (RUN lines) stays first; other checks precede their function.
        if index > 0 {
            emit(checks, &mut out);
        }
        for l in source_lines {
            out.push_str(l);
            out.push('\n');
        }
        if index == 0 && !checks.is_empty() {
            emit(checks, &mut out);
        }
    }
    std::fs::write(path, out).map_err(|e| format!("{shown}: {e}"))?;
    Ok(UpdateReport {
        check_lines,
        prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::split_filecheck_pipe;

    #[test]
    fn finds_the_filecheck_pipe_and_prefix() {
        assert_eq!(
            split_filecheck_pipe("ipu-opt %s | filecheck %s --check-prefix=OPT"),
            Some(("ipu-opt %s".to_string(), "OPT".to_string()))
        );
        assert_eq!(
            split_filecheck_pipe("cat %s | sort | filecheck %s"),
            Some(("cat %s | sort".to_string(), "CHECK".to_string()))
        );
        assert_eq!(split_filecheck_pipe("ipu-opt %s"), None);
    }
}
