//! Shared by the codelet tests.
#![allow(dead_code)]

use ipuc_backend_ipu::codelets::program::CodeletProgram;
use ipuc_ipu_arch::Executable;

/// The codelet's executable, encoded from its ops; checked to be exactly
/// what the text assembler makes of its printed assembly (the text is a
/// view of the IR, and the two encoders must agree).
pub fn executable_of(prog: &CodeletProgram) -> Executable {
    let exe = prog.executable().unwrap_or_else(|e| panic!("{e}"));
    let text = prog.assembly();
    let via_text = ipuc_ipu_arch::assemble(&text, &Default::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(exe.tiles.len(), 1);
    assert_eq!(exe.tiles[0].image, via_text, "{text}");
    exe
}
