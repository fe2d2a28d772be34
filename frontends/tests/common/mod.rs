//! Helpers shared by the integration tests.

pub mod node_runner;
