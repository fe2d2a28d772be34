//! ipuc command-line tools: the shared driver code behind `ipu-opt`,
//! `ipu-run`, `ipu-bench`, `ipu-lit` and `filecheck`.

pub mod opt;
pub mod registry;
