//! Runs every lit test under the workspace's `lit-tests/` directory as its
//! own libtest test, named by its path (`lit-tests/lit/not.test`), so
//! `cargo test -p ipuc-tools --test lit -- lit-tests/filecheck` filters.
//! RUN lines use the binaries Cargo built for this package (`filecheck`,
//! `not`, `ipu-lit`, ...). Tests whose REQUIRES/UNSUPPORTED rule them out are
//! reported as ignored.

use ipuc_tools::lit::{self, LitConfig, Status};
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether the feature directives of `path` rule the test out.
fn statically_unsupported(path: &Path, config: &LitConfig) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(d) = lit::test_file::parse(&text) else {
        return false;
    };
    let holds = |e: &String| config.features.eval(e).unwrap_or(false);
    !d.requires.iter().all(holds) || d.unsupported.iter().any(holds)
}

fn main() {
    let args = Arguments::from_args();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tools/ has a parent");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ipu-lit"))
        .parent()
        .expect("binary directory")
        .to_path_buf();
    let mut config = LitConfig::new(bin_dir);
    // libtest runs trials on its own threads.
    config.jobs = 1;
    let config = Arc::new(config);

    let root = workspace.join("lit-tests");
    let tests: Vec<PathBuf> = lit::discover(std::slice::from_ref(&root), &config.suffixes)
        .expect("lit-tests/ is readable");
    let trials = tests
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(workspace)
                .unwrap_or(&path)
                .display()
                .to_string();
            let ignored = statically_unsupported(&path, &config);
            let config = Arc::clone(&config);
            Trial::test(name.clone(), move || {
                let result = lit::run_test(&path, &name, &config);
                match result.status {
                    Status::Pass | Status::XFail | Status::Unsupported => Ok(()),
                    Status::Fail | Status::XPass => {
                        let mut report = Vec::new();
                        lit::write_result(&mut report, &result, true)
                            .map_err(|e| Failed::from(e.to_string()))?;
                        Err(Failed::from(String::from_utf8_lossy(&report).into_owned()))
                    }
                }
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
