//! Configuration of a lit run.

use super::features::Features;
use std::path::PathBuf;

/// How tests are run.
#[derive(Debug, Clone)]
pub struct LitConfig {
    /// Directory put first on PATH (holds `ipu-opt`, `filecheck`, `not`).
    pub bin_dir: PathBuf,
    /// Shell that runs RUN lines (`/bin/bash` with pipefail when present,
    /// else `/bin/sh`).
    pub shell: PathBuf,
    /// Available features.
    pub features: Features,
    /// Parallel workers.
    pub jobs: usize,
    /// Show every command and its output, not only failures.
    pub verbose: bool,
    /// File-name suffixes of tests found in directories.
    pub suffixes: Vec<String>,
}

impl LitConfig {
    /// A configuration with detected features and default shell and
    /// suffixes, using the binaries in `bin_dir`.
    pub fn new(bin_dir: PathBuf) -> Self {
        let bash = PathBuf::from("/bin/bash");
        Self {
            bin_dir,
            shell: if bash.exists() {
                bash
            } else {
                PathBuf::from("/bin/sh")
            },
            features: Features::detect(),
            jobs: std::thread::available_parallelism().map_or(1, usize::from),
            verbose: false,
            suffixes: super::discovery::DEFAULT_SUFFIXES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}
