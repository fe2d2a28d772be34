//! Runs every lit test under the workspace's `lit-tests/` directory as its
//! own libtest test, named by its path (`lit-tests/lit/not.test`), so
//! `cargo test -p ipuc-tools --test lit -- lit-tests/filecheck` filters.
//! RUN lines use the binaries Cargo built for this package (`filecheck`,
//! `not`, `ipu-lit`, ...). Tests whose REQUIRES/UNSUPPORTED rule them out are
//! reported as ignored; in CI (`IPUC_REQUIRE_ORACLES=1`) the oracle
//! features must be present.

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
    // With upstream MLIR linked in, every IR `ipu-opt` prints in a RUN line
    // is also parsed and verified by upstream (generic form) before it is
    // written.
    if cfg!(feature = "mlir") {
        std::env::set_var(ipuc_tools::upstream::CHECK_ENV, "1");
    }
    let config = LitConfig::new(bin_dir);
    // The oracle features: in CI (IPUC_REQUIRE_ORACLES=1) a missing one is a
    // failure, not a quietly unsupported test.
    for (feature, tool) in [
        ("mlir-opt", "mlir-opt-22"),
        ("filecheck-llvm", "FileCheck-22"),
    ] {
        if !config.features.contains(feature) {
            ipuc_test_support::missing(
                "lit",
                &format!("{tool} is not on PATH: tests that REQUIRE `{feature}` are unsupported"),
            );
        }
    }
    harness::libtest_main(&workspace.join("lit-tests"), workspace, config, &[])
}
