//! The crate layering of DESIGN.md, checked on the real dependency graph
//! (`cargo tree`, normal dependencies only): a dependency that points the
//! wrong way fails here, not in review.

use std::process::Command;

mod common;

/// The normal (non-dev) dependency closure of `package`, as crate names.
fn closure(package: &str) -> Vec<String> {
    let mut tree = Command::new(env!("CARGO"));
    tree.args([
        "tree",
        "--offline",
        "-p",
        package,
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ])
    .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let out = common::output_ok(&mut tree, &format!("cargo tree -p {package} failed"));
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(
        !names.is_empty(),
        "cargo tree printed no crates for {package}"
    );
    names
}

fn assert_excludes(package: &str, forbidden: &[&str]) {
    let deps = closure(package);
    assert!(
        deps.iter().any(|d| d == package),
        "{package} missing from its own tree: {deps:?}"
    );
    for f in forbidden {
        assert!(
            !deps.iter().any(|d| d == f),
            "{package} must not depend on {f} (DESIGN.md layering), but its tree has it"
        );
    }
}

#[test]
fn the_simulator_needs_no_backend_passes_or_egraphs() {
    assert_excludes("ipuc-runtime", &["ipuc-backend-ipu", "ipuc-passes", "egg"]);
}

#[test]
fn the_target_description_knows_no_ir() {
    assert_excludes(
        "ipuc-ipu-arch",
        &[
            "ipuc-ir",
            "ipuc-dialects",
            "ipuc-passes",
            "ipuc-backend-ipu",
        ],
    );
}

#[test]
fn the_ir_core_knows_no_dialect_or_target() {
    assert_excludes(
        "ipuc-ir",
        &["ipuc-dialects", "ipuc-ipu-arch", "ipuc-passes", "egg"],
    );
}

#[test]
fn passes_are_target_independent() {
    // (The `ipu` dialect builds on `ipu-arch`, so the passes see it through
    // `ipuc-dialects`; target knowledge enters passes only through traits.)
    assert_excludes("ipuc-passes", &["ipuc-backend-ipu", "ipuc-runtime"]);
}
