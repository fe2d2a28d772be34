//! A codelet instantiated as IR: an `ipu.executable` holding one `ipu.tile`
//! whose ops the codelet emitted, in a context of its own. From it come the
//! executable (encoded from the ops, no text) and the assembly view.
//!
//! [`Codelet`] is what every codelet implements: it emits its launch and
//! turns what the emitter counted into cycles; building the program and the
//! estimate come with it.

use std::fmt::Debug;

use ipuc_ipu_arch::{Executable, MachineModel};
use ipuc_ir::{Context, Location, OpId};

use super::emitter::Emitter;
use super::CodeletError;
use crate::emit::{build_executable, tile_asm};

/// One tile program built by a codelet.
pub struct CodeletProgram {
    /// The context holding the ops.
    pub ctx: Context,
    /// The `ipu.executable`.
    pub executable: OpId,
    /// Its one `ipu.tile`.
    pub tile: OpId,
}

impl CodeletProgram {
    /// Builds tile `index` for `machine` by running `emit` on a fresh emitter;
    /// returns the program and what `emit` returned (e.g. its issue counts).
    pub fn build<T>(
        index: u32,
        machine: &MachineModel,
        emit: impl FnOnce(&mut Emitter) -> Result<T, CodeletError>,
    ) -> Result<(CodeletProgram, T), CodeletError> {
        let mut ctx = Context::new(ipuc_dialects::registry());
        let loc = Location::unknown();
        let (executable, exe_body) =
            ipuc_dialects::ipu::build::executable(&mut ctx, &machine.name, loc.clone());
        let (tile, tile_body) = ipuc_dialects::ipu::build::tile(&mut ctx, index, None, loc.clone());
        ctx.append_op(exe_body, tile);
        let out = emit(&mut Emitter::new(&mut ctx, tile_body, loc))?;
        Ok((
            CodeletProgram {
                ctx,
                executable,
                tile,
            },
            out,
        ))
    }

    /// The executable, encoded from the ops.
    pub fn executable(&self) -> Result<Executable, CodeletError> {
        build_executable(&self.ctx, self.executable).map_err(|diags| {
            let messages: Vec<String> = diags.iter().map(|d| d.message.clone()).collect();
            CodeletError::new("codelet program", messages.join("; "))
        })
    }

    /// The tile's assembly, printed from the ops.
    pub fn assembly(&self) -> String {
        tile_asm(&self.ctx, self.tile).text
    }
}

/// A codelet: parameters that emit one launch (supervisor entry `main`, six
/// workers) and estimate its cycles from the issue counts of that code.
pub trait Codelet {
    /// What the emitter counted, as the estimate needs it.
    type Counts;

    /// Emits the launch into `e` (checking the parameters first).
    fn emit(&self, e: &mut Emitter) -> Result<Self::Counts, CodeletError>;

    /// Tile cycles of these parameters from the emitted `counts`.
    fn cycles(&self, counts: &Self::Counts) -> u64;

    /// The codelet as a program on `tile` of `machine`, with its counts.
    fn program(
        &self,
        tile: u32,
        machine: &MachineModel,
    ) -> Result<(CodeletProgram, Self::Counts), CodeletError> {
        CodeletProgram::build(tile, machine, |e| self.emit(e))
    }

    /// The issue counts of the emitted code.
    fn counts(&self) -> Result<Self::Counts, CodeletError> {
        Ok(self.program(0, &MachineModel::c600())?.1)
    }

    /// Estimated tile cycles from the instruction counts of the emitted code,
    /// memoized for the process ([`super::estimate::memoized_estimate`],
    /// keyed by the codelet's type and `Debug` form): a lowering asks
    /// for the same launch on every tile of a product, and each answer
    /// otherwise emits the launch into a context of its own.
    fn estimate_cycles(&self) -> Result<u64, CodeletError>
    where
        Self: Sized + Debug + 'static,
    {
        super::estimate::memoized_estimate(self, || Ok(self.cycles(&self.counts()?)))
    }
}
