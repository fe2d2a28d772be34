//! A codelet instantiated as IR: an `ipu.executable` holding one `ipu.tile`
//! whose ops the codelet emitted, in a context of its own. From it come the
//! executable (encoded from the ops, no text) and the assembly view.
//!
//! [`Codelet`] is what every codelet implements: it emits its launch and
//! turns what the emitter counted into cycles; building the program and the
//! estimate come with it.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{LazyLock, Mutex};

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
    /// memoized for the process ([`memoized_estimate`]): a lowering asks
    /// for the same launch on every tile of a product, and each answer
    /// otherwise emits the launch into a context of its own.
    fn estimate_cycles(&self) -> Result<u64, CodeletError>
    where
        Self: Sized + Debug + 'static,
    {
        memoized_estimate(self, || Ok(self.cycles(&self.counts()?)))
    }
}

type EstimateMemo = Mutex<HashMap<(TypeId, String), Result<u64, CodeletError>>>;

static ESTIMATES: LazyLock<EstimateMemo> = LazyLock::new(EstimateMemo::default);

/// `estimate()` of `codelet`, computed once per distinct codelet: keyed by
/// its type and its `Debug` form, which prints every parameter (every
/// codelet derives it), so two codelets share an answer only when they
/// would emit the same code. The answer is the same whichever thread asks
/// first, so the memo keeps compiles deterministic.
pub fn memoized_estimate<C: Debug + 'static>(
    codelet: &C,
    estimate: impl FnOnce() -> Result<u64, CodeletError>,
) -> Result<u64, CodeletError> {
    let key = (TypeId::of::<C>(), format!("{codelet:?}"));
    if let Some(known) = ESTIMATES.lock().expect("estimate memo poisoned").get(&key) {
        return known.clone();
    }
    // Estimated outside the lock: another thread may do the same work,
    // and both store the same answer.
    let answer = estimate();
    ESTIMATES
        .lock()
        .expect("estimate memo poisoned")
        .insert(key, answer.clone());
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codelets::elementwise::{Binary, BinaryOp, VecType};

    /// The memo answers per codelet, not per type: codelets that differ in
    /// a size or an address each get their own emitted code's estimate,
    /// the first time and from the memo after.
    #[test]
    fn estimates_are_memoized_per_codelet() {
        let add = |len, op, out| Binary {
            op,
            ty: VecType::F16,
            len,
            x: 0,
            y: 0x1_0000,
            out,
        };
        let codelets = [
            add(64, BinaryOp::Add, 0x2_0000),
            add(4096, BinaryOp::Add, 0x2_0000),
            add(64, BinaryOp::Mul, 0x2_0000),
            add(64, BinaryOp::Add, 0x2_0008),
        ];
        for b in &codelets {
            let direct = b.cycles(&b.counts().unwrap());
            assert_eq!(b.estimate_cycles().unwrap(), direct, "{b:?}");
            assert_eq!(b.estimate_cycles().unwrap(), direct, "{b:?}, memoized");
        }
        assert!(
            codelets[1].estimate_cycles().unwrap() > 4 * codelets[0].estimate_cycles().unwrap(),
            "64 times the elements"
        );
        // An invalid codelet's error is memoized as an error.
        let odd = add(3, BinaryOp::Add, 0x2_0000);
        assert!(odd.estimate_cycles().is_err());
        assert!(odd.estimate_cycles().is_err());
    }
}
