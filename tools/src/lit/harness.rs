//! Lit tests as a `cargo test` target: every test file under a folder
//! becomes its own libtest test named by its path, so `cargo test --test lit
//! -- lit-tests/filecheck` filters. Tests whose REQUIRES/UNSUPPORTED rule
//! them out are reported as ignored. Used by `tools/tests/lit.rs` and by
//! tools built outside this tree on the `ipu-opt` driver
//! (`examples/example-opt/tests/lit.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};

use super::{discover, run_test, test_file, write_result, LitConfig, Status};

/// Whether the feature directives of `path` rule the test out.
fn statically_unsupported(path: &Path, config: &LitConfig) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(d) = test_file::parse(&text) else {
        return false;
    };
    let holds = |e: &String| config.features.eval(e).unwrap_or(false);
    !d.requires.iter().all(holds) || d.unsupported.iter().any(holds)
}

/// Runs the lit tests under `root` with the binaries of `config.bin_dir`
/// and exits. Test names are paths relative to `base`. Every binary named
/// in `tools` must exist in the bin directory; if one is missing (e.g.
/// `filecheck` when only one package was built), every test fails saying
/// how to build it, rather than failing on a confusing shell error.
pub fn libtest_main(root: &Path, base: &Path, mut config: LitConfig, tools: &[&str]) -> ! {
    let args = Arguments::from_args();
    // libtest runs trials on its own threads.
    config.jobs = 1;
    let missing: Vec<String> = tools
        .iter()
        .filter(|t| !config.bin_dir.join(t).exists())
        .map(|t| t.to_string())
        .collect();
    let config = Arc::new(config);
    let tests: Vec<PathBuf> =
        match discover(std::slice::from_ref(&root.to_path_buf()), &config.suffixes) {
            Ok(t) => t,
            Err(e) => {
                eprintln!(
                    "error: cannot read the lit tests under {}: {e}",
                    root.display()
                );
                std::process::exit(1);
            }
        };
    let trials = tests
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(base).unwrap_or(&path).display().to_string();
            let ignored = statically_unsupported(&path, &config);
            let config = Arc::clone(&config);
            let missing = missing.clone();
            Trial::test(name.clone(), move || {
                if !missing.is_empty() {
                    return Err(Failed::from(format!(
                        "{} not built in {}: build them first (cargo build --workspace --bins; cargo test --workspace builds them)",
                        missing.join(", "),
                        config.bin_dir.display()
                    )));
                }
                let result = run_test(&path, &name, &config);
                match result.status {
                    Status::Pass | Status::XFail | Status::Unsupported => Ok(()),
                    Status::Fail | Status::XPass => {
                        let mut report = Vec::new();
                        write_result(&mut report, &result, true)
                            .map_err(|e| Failed::from(e.to_string()))?;
                        Err(Failed::from(String::from_utf8_lossy(&report).into_owned()))
                    }
                }
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit()
}
