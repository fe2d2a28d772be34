//! Emission from the `ipu` dialect: the assembly view of each tile
//! ([`asm_view`], a view for people and for `--emit=asm`), the executable
//! encoded from the ops' assembler statements without text
//! ([`statements`], [`executable`]), the reverse reading of assembly into `ipu` ops
//! ([`reader`], used by tests and for importing hand-written code), and the
//! `ipu-verify-isa` pass ([`verify_isa`]).

pub mod asm_view;
pub mod executable;
pub mod reader;
pub mod statements;
pub mod verify_isa;

pub use asm_view::{executable_asm, tile_asm, TileAsm};
pub use executable::{
    build_executable, build_executable_on, compile_threads, find_executable, COMPILE_THREADS_ENV,
    CONSTANT_SECTION_PREFIX,
};
pub use reader::{read_executable, read_tile};
pub use statements::{tile_statements, TileStatements};
pub use verify_isa::VerifyIsa;
