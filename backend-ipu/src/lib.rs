//! ipuc IPU backend: the codelet library, the IPU cost model, emission from
//! the `ipu` dialect to assembly and executables, and (to come) the planners
//! and lowering passes. The target description itself (machine models, ISA,
//! encoding, assembler, executable format) is the `ipuc-ipu-arch` crate.

pub mod codelets;
pub mod cost_model;
pub mod emit;
