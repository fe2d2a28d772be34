//! Runs `lit-tests/` with `example-opt` (and the `filecheck` that
//! `ipuc-tools` builds into the same target directory) through the lit
//! harness.

use std::path::Path;

use ipuc_tools::lit::{harness, LitConfig};

fn main() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_example-opt"))
        .parent()
        .expect("binary directory")
        .to_path_buf();
    harness::libtest_main(
        &crate_dir.join("lit-tests"),
        crate_dir,
        LitConfig::new(bin_dir),
        &["example-opt", "filecheck", "not", "ipu-run"],
    )
}
