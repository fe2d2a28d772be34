//! ipuc IPU backend: target description, assembler, cost model, planners, codelets.

pub mod target;
