//! Codelet library: parameterised assembly templates with Rust references
//! and cycle estimates.

pub mod amp_f16;
