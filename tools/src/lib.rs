//! ipuc command-line tools: the shared driver code behind `ipu-opt`,
//! `ipu-run`, `ipu-bench`, `ipu-lit` and `filecheck`.

/// `ipu-bench`: AMP throughput and simulator speed, measured on the simulator.
pub mod bench;
pub mod import;
/// The `ipu-lit` test runner: lit-style RUN lines, features, parallel runs,
/// and regeneration of CHECK lines.
pub mod lit;
pub mod opt;
pub mod registry;
pub mod run;
pub mod upstream;
