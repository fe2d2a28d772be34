//! `ipu-lit`: runs lit-style test files (see `ipuc_tools::lit`), or with
//! `--update-checks` regenerates their CHECK lines.

use clap::Parser;
use ipuc_tools::lit::{self, LitConfig};
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs lit-style tests: files, or directories searched for test suffixes.
#[derive(Parser)]
#[command(name = "ipu-lit", version)]
struct Cli {
    /// Test files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Parallel workers (default: number of CPUs).
    #[arg(short = 'j', long = "workers", value_name = "N")]
    jobs: Option<usize>,
    /// Show every command and its output, not only failures.
    #[arg(short, long)]
    verbose: bool,
    /// Directory of the ipuc binaries put first on PATH (default: the
    /// directory of this executable).
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Shell running RUN lines (default: /bin/bash with pipefail, else /bin/sh).
    #[arg(long, value_name = "PATH")]
    shell: Option<PathBuf>,
    /// Make a feature available: `--param NAME` or `--param NAME=VALUE`
    /// (a VALUE of 0, false or off leaves it unavailable).
    #[arg(long = "param", short = 'D', value_name = "NAME[=VALUE]")]
    params: Vec<String>,
    /// Comma-separated suffixes of test files found in directories.
    #[arg(long, value_delimiter = ',', value_name = "SUFFIXES")]
    suffixes: Option<Vec<String>>,
    /// Regenerate the CHECK lines of the given tests instead of running them.
    #[arg(long)]
    update_checks: bool,
    /// Print the available features and exit.
    #[arg(long)]
    show_features: bool,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::WARN)
        .init();
    let cli = Cli::parse();
    let bin_dir = cli.bin_dir.clone().or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(PathBuf::from))
    });
    let Some(bin_dir) = bin_dir else {
        eprintln!("ipu-lit: cannot locate the binaries directory; pass --bin-dir");
        return ExitCode::from(2);
    };
    let mut config = LitConfig::new(bin_dir);
    config.verbose = cli.verbose;
    if let Some(jobs) = cli.jobs {
        config.jobs = jobs.max(1);
    }
    if let Some(shell) = cli.shell {
        config.shell = shell;
    }
    if let Some(suffixes) = cli.suffixes {
        config.suffixes = suffixes;
    }
    for param in &cli.params {
        let (name, value) = param.split_once('=').unwrap_or((param, "1"));
        if !matches!(
            value.to_ascii_lowercase().as_str(),
            "0" | "false" | "off" | "no"
        ) {
            config.features.insert(name);
        }
    }
    if cli.show_features {
        for f in config.features.iter() {
            println!("{f}");
        }
        return ExitCode::SUCCESS;
    }
    let tests = match lit::discover(&cli.paths, &config.suffixes) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ipu-lit: {e}");
            return ExitCode::from(2);
        }
    };
    if cli.update_checks {
        let mut failed = false;
        for path in &tests {
            match lit::update_checks(path, &config) {
                Ok(r) => println!(
                    "updated {}: {} {} lines",
                    path.display(),
                    r.check_lines,
                    r.prefix
                ),
                Err(e) => {
                    eprintln!("ipu-lit: {e}");
                    failed = true;
                }
            }
        }
        return if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
    }
    let named: Vec<(PathBuf, String)> = tests
        .iter()
        .map(|p| (p.clone(), p.display().to_string()))
        .collect();
    let stdout = std::io::stdout();
    match lit::run_all(&named, &config, &mut stdout.lock()) {
        Ok(summary) if summary.failed == 0 => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ipu-lit: {e}");
            ExitCode::from(2)
        }
    }
}
