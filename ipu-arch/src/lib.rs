//! The target description of the IPU21 (Mk2 + FP8) tile: the machine model,
//! the instruction set table, our binary encoding, the assembler and
//! assembly printer, the tile image, and the executable format.
//!
//! This crate is the bottom of the backend: the simulator in `ipuc-runtime`,
//! the `ipu` IR dialect and `ipuc-backend-ipu` are built on it, never the
//! reverse. It knows no IR: it takes text or instructions and gives bytes.

pub mod asm;
pub mod csr;
pub mod encoding;
pub mod exe;
pub mod float8;
pub mod image;
pub mod isa;
pub mod machine;
pub mod pipeline;
pub mod printer;
pub mod registers;

pub use asm::{assemble, assemble_with_warnings, AsmError, AsmErrors, AsmOptions, Assembled};
pub use encoding::{decode, encode, Instr};
pub use exe::{ExeError, Executable, HostStream, StreamDirection, TensorBinding, TileProgram};
pub use image::{ContextKind, Section, StackRegion, Symbol, TileImage};
pub use isa::{Category, ContextClass, InstrDesc, Opcode, OperandKind, SlotClass, ISA};
pub use machine::{MachineModel, TranscendentalIssues};
pub use printer::print_image;
