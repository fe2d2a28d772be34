//! Helpers shared by the integration tests.
// Each test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

pub mod expectations;
pub mod graph_builder;
pub mod import_runner;
pub mod memory;
pub mod node_runner;
