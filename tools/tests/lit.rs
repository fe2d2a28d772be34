//! Runs every lit test under the workspace's `lit-tests/` directory as its
//! own libtest test, named by its path (`lit-tests/lit/not.test`), so
//! `cargo test -p ipuc-tools --test lit -- lit-tests/filecheck` filters.
//! RUN lines use the binaries Cargo built for this package (`filecheck`,
//! `not`, `ipu-lit`, ...).

use std::path::Path;

use ipuc_tools::lit::{harness, LitConfig};

fn main() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tools/ has a parent");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ipu-lit"))
        .parent()
        .expect("binary directory")
        .to_path_buf();
    harness::libtest_main(
        &workspace.join("lit-tests"),
        workspace,
        LitConfig::new(bin_dir),
        &[],
    )
}
