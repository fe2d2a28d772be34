//! Constructors of `ipu` ops: one function per op, each creating the op
//! detached (a container gets its region with one empty block, returned
//! beside it). The assembly reader and the codelet emitter build programs
//! through these, so the ops' attribute spelling lives in one place.
//!
//! ```
//! use ipuc_dialects::ipu::{build, Operand, Register, SectionKind};
//! use ipuc_ir::{Context, Location};
//!
//! let mut ctx = Context::new(ipuc_dialects::registry());
//! let loc = Location::unknown();
//! let (exe, exe_body) = build::executable(&mut ctx, "c600", loc.clone());
//! let (tile, tile_body) = build::tile(&mut ctx, 0, None, loc.clone());
//! ctx.append_op(exe_body, tile);
//! let (section, body) =
//!     build::section(&mut ctx, ".text", Some("ax"), SectionKind::Supervisor, loc.clone());
//! ctx.append_op(tile_body, section);
//! let main = build::label(&mut ctx, "main", loc.clone());
//! ctx.append_op(body, main);
//! let zero = Operand::Reg(Register::parse("mzero").unwrap());
//! let exit = build::inst(&mut ctx, "exitz", &[zero], loc);
//! ctx.append_op(body, exit);
//! ipuc_ir::verify(&ctx, exe).unwrap();
//! ```

use ipuc_ir::attributes::Attribute;
use ipuc_ir::{BlockId, Context, Location, OpId, OperationState};

use super::{Operand, BUNDLE, DIRECTIVE, EXECUTABLE, INST, LABEL, SECTION, TILE};

/// The context an `ipu.section`'s code runs in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    /// The tile's supervisor thread.
    Supervisor,
    /// Worker threads.
    Worker,
}

impl SectionKind {
    /// The keyword (`supervisor`, `worker`): the `kind` attribute and the
    /// assembler directive without its dot.
    pub fn as_str(self) -> &'static str {
        match self {
            SectionKind::Supervisor => "supervisor",
            SectionKind::Worker => "worker",
        }
    }
}

/// Creates an op with one region holding one empty block.
pub fn container(ctx: &mut Context, state: OperationState) -> (OpId, BlockId) {
    let r = ctx.create_region();
    let b = ctx.create_block(&[]);
    ctx.append_block(r, b);
    let op = ctx.create_op(state.region(r));
    (op, b)
}

/// `ipu.executable` for `machine` (`c600`, `bow`).
pub fn executable(ctx: &mut Context, machine: &str, loc: Location) -> (OpId, BlockId) {
    let state = OperationState::new(ctx.op_name(EXECUTABLE), loc)
        .attr("machine", Attribute::string(machine));
    container(ctx, state)
}

/// `ipu.tile` number `index`, entering at `entry` (default `main`).
pub fn tile(ctx: &mut Context, index: u32, entry: Option<&str>, loc: Location) -> (OpId, BlockId) {
    let mut state =
        OperationState::new(ctx.op_name(TILE), loc).attr("tile", Attribute::i64(i64::from(index)));
    if let Some(e) = entry {
        state = state.attr("entry", Attribute::symbol_ref(e));
    }
    container(ctx, state)
}

/// `ipu.section` `name` with assembler `flags`, running in `kind`.
pub fn section(
    ctx: &mut Context,
    name: &str,
    flags: Option<&str>,
    kind: SectionKind,
    loc: Location,
) -> (OpId, BlockId) {
    let mut state = OperationState::new(ctx.op_name(SECTION), loc)
        .attr("name", Attribute::string(name))
        .attr("kind", Attribute::string(kind.as_str()));
    if let Some(f) = flags {
        state = state.attr("flags", Attribute::string(f));
    }
    container(ctx, state)
}

/// `ipu.label` `name`.
pub fn label(ctx: &mut Context, name: &str, loc: Location) -> OpId {
    let state =
        OperationState::new(ctx.op_name(LABEL), loc).attr("sym_name", Attribute::string(name));
    ctx.create_op(state)
}

/// `ipu.inst` `mnemonic operands`.
pub fn inst(ctx: &mut Context, mnemonic: &str, operands: &[Operand], loc: Location) -> OpId {
    let state = OperationState::new(ctx.op_name(INST), loc)
        .attr("mnemonic", Attribute::string(mnemonic))
        .attr("operands", Operand::list_attr(operands));
    ctx.create_op(state)
}

/// `ipu.bundle { main ; aux }` of two detached `ipu.inst`.
pub fn bundle(ctx: &mut Context, main: OpId, aux: OpId, loc: Location) -> OpId {
    let state = OperationState::new(ctx.op_name(BUNDLE), loc);
    let (op, body) = container(ctx, state);
    ctx.append_op(body, main);
    ctx.append_op(body, aux);
    op
}

/// `ipu.directive` `.name args` (`name` without the dot).
pub fn directive(ctx: &mut Context, name: &str, args: &[Operand], loc: Location) -> OpId {
    let state = OperationState::new(ctx.op_name(DIRECTIVE), loc)
        .attr("name", Attribute::string(name))
        .attr("args", Operand::list_attr(args));
    ctx.create_op(state)
}

/// `ipu.tensor` `direction` `@name : ty pieces [...]`.
pub fn tensor(
    ctx: &mut Context,
    name: &str,
    ty: ipuc_ir::Type,
    direction: super::TensorDirection,
    pieces: &[super::TensorPiece],
    loc: Location,
) -> OpId {
    let state = OperationState::new(ctx.op_name(super::TENSOR), loc)
        .attr("sym_name", Attribute::string(name))
        .attr("tensor_type", Attribute::type_attr(ty))
        .attr("direction", Attribute::string(direction.as_str()))
        .attr(
            "pieces",
            Attribute::array(pieces.iter().map(|p| p.to_attr()).collect()),
        );
    ctx.create_op(state)
}
