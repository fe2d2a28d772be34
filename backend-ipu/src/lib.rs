//! ipuc IPU backend: the codelet library, the IPU cost model, emission from
//! the `ipu` dialect to assembly and executables, and (to come) the planners
//! and lowering passes. The target description itself (machine models, ISA,
//! encoding, assembler, executable format) is the `ipuc-ipu-arch` crate.

pub mod codelets;
pub mod cost_model;
pub mod emit;
pub mod lower;

use ipuc_ir::pass::{PassRegistry, RegistrationError};

/// Registers every pass of this crate. The IPU cost model is not a pass:
/// tools install it on `eqsat-fuse`'s cost-model hook
/// ([`cost_model::IpuCostModel`]).
pub fn register_passes(r: &mut PassRegistry) -> Result<(), RegistrationError> {
    r.register::<emit::verify_isa::VerifyIsa>()?;
    r.register::<lower::passes::PlanGemms>()?;
    r.register::<lower::passes::LowerToIpu>()
}
