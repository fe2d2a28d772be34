//! ipuc IPU backend: target description, assembler, cost model, planners, codelets.

pub mod codelets;
pub mod cost_model;
pub mod emit;
pub mod target;
