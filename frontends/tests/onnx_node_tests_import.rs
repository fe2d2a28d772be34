//! Runs the ONNX backend node tests (`../shared/onnx-node-tests`) through the
//! real compile path: each folder's `model.onnx` is imported into `nn` IR by
//! the ONNX importer, the module is verified, run by the runtime's reference
//! interpreter on `test_data_set_0/input_K.pb`, and the results compared with
//! `output_K.pb` (floats: rtol 1e-3 / atol 1e-5, NaN where NaN is expected;
//! integers, bools and 8-bit floats: exact).
//! (The runner, with how shape-like inputs are bound, is `common/import_runner.rs`.)
//!
//! `onnx_node_tests_import.expected` lists every test with PASS or FAIL and a
//! reason (see `common/expectations.rs`; `IPUC_BLESS=1` rewrites it).
//! `IPUC_NODE_TRACE=1` prints each test's name before it runs.

mod common;

use common::expectations::run_node_tests;
use common::import_runner;

#[test]
fn onnx_backend_node_tests_through_import() {
    run_node_tests(
        "ONNX node tests through import + nn interpreter",
        "onnx-node-tests",
        "onnx_node_tests_import.expected",
        "ONNX backend node tests run by tests/onnx_node_tests_import.rs \
         (import -> nn -> reference interpreter): PASS, or FAIL with the reason.",
        import_runner::run_test,
    );
}
