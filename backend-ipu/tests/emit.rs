//! The assembly view of the `ipu` dialect and its reader: IR -> asm -> IR ->
//! asm is a fixed point, and hand-written assembly read into IR assembles to
//! the same tile image as the original text.

use ipuc_backend_ipu::emit::{
    build_executable, executable_asm, find_executable, read_executable, read_tile, tile_asm,
    CONSTANT_SECTION_PREFIX,
};
use ipuc_ipu_arch::{assemble, AsmOptions};
use ipuc_ir::{parse_source, print_op, verify, Context, OpId, PrintOptions};

fn lit(path: &str) -> String {
    let p = format!("{}/../lit-tests/ipu/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn parse(text: &str) -> (Context, OpId) {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = parse_source(&mut ctx, "input.mlir", text).unwrap().module;
    verify(&ctx, module).unwrap();
    (ctx, module)
}

/// Reads the per-tile assembly of `exe` back into a new executable in the module.
fn reread(ctx: &mut Context, module: OpId, exe: OpId) -> OpId {
    let machine = ctx
        .attr(exe, "machine")
        .and_then(|a| a.as_str())
        .unwrap()
        .to_string();
    let tiles: Vec<(u32, String)> = ipuc_dialects::ipu::body_ops(ctx, exe)
        .into_iter()
        .filter(|&t| ctx.name_str(t) == ipuc_dialects::ipu::TILE)
        .map(|t| {
            let a = tile_asm(ctx, t);
            (a.tile, a.text)
        })
        .collect();
    let refs: Vec<(u32, &str)> = tiles.iter().map(|(t, s)| (*t, s.as_str())).collect();
    let new = read_executable(ctx, &machine, &refs).unwrap();
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    ctx.append_op(body, new);
    new
}

#[test]
fn ir_to_asm_to_ir_to_asm_is_a_fixed_point() {
    for file in ["Inputs/vector-add.mlir", "roundtrip.mlir"] {
        let (mut ctx, module) = parse(&lit(file));
        let exe = find_executable(&ctx, module).unwrap();
        let asm1 = executable_asm(&ctx, exe);
        let exe2 = reread(&mut ctx, module, exe);
        let asm2 = executable_asm(&ctx, exe2);
        let exe3 = reread(&mut ctx, module, exe2);
        let asm3 = executable_asm(&ctx, exe3);
        assert_eq!(asm1, asm2, "{file}");
        assert_eq!(asm2, asm3, "{file}");
        verify(&ctx, module).unwrap();
        let opts = PrintOptions::default();
        assert_eq!(
            print_op(&ctx, exe2, &opts),
            print_op(&ctx, exe3, &opts),
            "{file}"
        );
    }
}

const HAND_WRITTEN: &str = r#"
// poplibs-style: one-line and split bundles, comments, mode switches inside a section.
    .section .text.main, "ax"
    .globl main
    .type main, @function
main:
    setzi $m0, worker        # the worker entry
    setzi $m1, 0x70000
    run $m0, $m1, 0 ; sync TEXCH_SYNCZONE_LOCAL
    exitz $mzero
    .size main, . - main
    .worker
    .align 8
worker:
    setzi $m2, 0
    setzi $m3, 0
    setzi $m5, 7
    nop
    { rpt $m5, (.Lend - .Lstart) / 8 - 1 ; fnop }
.Lstart:
    {
      ld32step $m4, $mvertex_base, $m3+=, 1
      fnop
    }
    { add $m2, $m2, $m4 ; fnop }
.Lend:
    st32 $m2, $mvertex_base, $mzero, 16  /* the sum */
    exitz $mzero
    .data
table:
    .word 1, 2, main
    .space 8
"#;

#[test]
fn hand_written_assembly_reads_into_ir_that_assembles_to_the_same_image() {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let tile = read_tile(&mut ctx, 0, HAND_WRITTEN, "hand.s").unwrap();
    let sections: Vec<String> = ipuc_dialects::ipu::body_ops(&ctx, tile)
        .into_iter()
        .map(|s| {
            format!(
                "{} {}",
                ctx.attr(s, "name").unwrap().as_str().unwrap(),
                ctx.attr(s, "kind").unwrap().as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        sections,
        [".text.main supervisor", ".text.main worker", ".data worker"]
    );
    let text = tile_asm(&ctx, tile).text;
    let opts = AsmOptions::default();
    let original = assemble(HAND_WRITTEN, &opts).unwrap();
    let via_ir = assemble(&text, &opts).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(original, via_ir, "{text}");
}

#[test]
fn reader_errors_carry_file_line_and_column() {
    let mut ctx = Context::new(ipuc_dialects::registry());
    // `src` is refused with an error saying `says`.
    let mut refused = |src: &str, says: &str| {
        let e = read_tile(&mut ctx, 0, src, "bad.s").unwrap_err();
        assert!(e.message.contains(says), "{}", e.message);
        e
    };
    let e = refused(
        "main:\n  { nop }\n",
        "a bundle holds exactly two instructions",
    );
    assert_eq!(e.loc.file_line_col_of(), Some(("bad.s", 2, 3)));
    refused(
        "main:\n  add $1x, $m0, 1\n",
        "neither a register nor a control register",
    );
}

/// The executable is encoded from the ops' statements without printing any
/// text; the text assembler, fed the printed assembly view, must give the
/// same bytes for every tile.
#[test]
fn ir_encodes_to_the_same_bytes_as_its_printed_assembly() {
    for file in [
        "Inputs/vector-add.mlir",
        "Inputs/exchange-add.mlir",
        "roundtrip.mlir",
    ] {
        let (ctx, module) = parse(&lit(file));
        let exe = find_executable(&ctx, module).unwrap();
        let direct = build_executable(&ctx, exe).unwrap_or_else(|d| panic!("{file}: {d:?}"));
        assert!(!direct.tiles.is_empty(), "{file} has tiles");
        if file == "roundtrip.mlir" {
            // Its constant `@k` (four f16: 1, 2, 3, 4) is on tiles 0 and 1.
            for program in &direct.tiles {
                let k = program.image.sections.iter().find(|s| s.name == ".const.k");
                let k = k.unwrap_or_else(|| panic!("tile {} lacks `.const.k`", program.tile));
                assert_eq!(
                    (k.address, &k.bytes[..]),
                    (0x80000, &[0, 60, 0, 64, 0, 66, 0, 68][..])
                );
            }
        }
        for program in &direct.tiles {
            let tile = ipuc_dialects::ipu::body_ops(&ctx, exe)
                .into_iter()
                .find(|&t| ipuc_dialects::ipu::tile_index(&ctx, t) == Some(program.tile))
                .unwrap();
            let text = tile_asm(&ctx, tile).text;
            let entry = ctx
                .attr(tile, "entry")
                .and_then(|a| a.as_symbol_root())
                .unwrap_or("main")
                .to_string();
            let opts = AsmOptions {
                entry,
                machine: ipuc_ipu_arch::MachineModel::by_name(&direct.machine).unwrap(),
                ..AsmOptions::default()
            };
            let via_text = assemble(&text, &opts).unwrap_or_else(|e| panic!("{e}\n{text}"));
            // Constant tensors are loaded with the program beside the
            // assembled sections; the tile's assembly text does not hold them.
            let mut assembled = program.image.clone();
            assembled
                .sections
                .retain(|s| !s.name.starts_with(CONSTANT_SECTION_PREFIX));
            assert_eq!(assembled, via_text, "{file}, tile {}", program.tile);
        }
    }
}
