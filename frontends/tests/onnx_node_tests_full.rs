//! Runs the whole ONNX backend node suite (`../shared/onnx-node-tests-full`,
//! 1,564 cases of onnx 1.23.2's generators, every op and every `_expanded`
//! function body) through the real compile path: import into `nn` IR,
//! verify, run on the reference interpreter, compare with the stored outputs
//! (the runner is `common/import_runner.rs`, shared with the SigLIP subset).
//!
//! `onnx_node_tests_full.expected` lists every case with PASS or FAIL and a
//! one-line reason (`IPUC_BLESS=1` rewrites it, keeping hand-written reasons);
//! a case that panics fails the harness whatever the file says.
//! `IPUC_NODE_FILTER=substring` runs the matching cases only and prints
//! their results.

mod common;

use common::expectations::run_node_tests;
use common::import_runner;

#[test]
fn onnx_backend_node_suite_through_import() {
    run_node_tests(
        "whole ONNX node suite through import + nn interpreter",
        "onnx-node-tests-full",
        "onnx_node_tests_full.expected",
        "The whole ONNX backend node suite run by tests/onnx_node_tests_full.rs \
         (import -> nn -> reference interpreter): PASS, or FAIL with the reason.",
        import_runner::run_test,
    );
}
