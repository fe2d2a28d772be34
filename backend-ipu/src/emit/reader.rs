//! Graphcore assembly text to `ipu` ops: the inverse of [`super::asm_view`]
//! (reading its output gives back the same ops, so IR -> asm -> IR -> asm is
//! a fixed point), and good enough for hand-written poplibs-style code.
//!
//! What it reads is what the assembler reads: the text goes through the
//! assembler's own parser ([`ipuc_ipu_arch::asm::parse`]), so there is one
//! lexer and one grammar of Graphcore assembly in ipuc.
//! `.section`, `.text` and `.data` open an `ipu.section`; `.supervisor` and
//! `.worker` set the kind of the current section, or open a new section of
//! the same name when the current one already holds items (the assembler
//! keeps appending to a section that is named again, so the layout is the
//! same). Each operand's source text is classified by [`Operand::from_asm`],
//! which keeps its spelling (`$mzero`, `0x70000`, `(.Lend - .Lstart) / 8 - 1`).
//! Syntax the assembler would reject (unknown mnemonics, bad operand kinds) is kept as
//! written: the ISA check and the assembler report it.

use ipuc_dialects::ipu::{build, Operand, SectionKind};
use ipuc_ipu_arch::asm::{self, DirArg, ParsedInstr, Pos, Stmt};
use ipuc_ir::attributes::Attribute;
use ipuc_ir::{BlockId, Context, Diagnostic, Location, OpId};

struct Reader<'c, 't> {
    ctx: &'c mut Context,
    file: String,
    lines: Vec<&'t str>,
    tile_block: BlockId,
    section: Option<(OpId, BlockId, String, Option<String>)>,
    mode: SectionKind,
}

impl Reader<'_, '_> {
    fn loc(&self, pos: Pos) -> Location {
        Location::file_line_col(&self.file, pos.line, pos.col)
    }

    /// The source text at `pos` (its `len` characters on its line).
    fn text_at(&self, pos: Pos) -> String {
        let line = self
            .lines
            .get(pos.line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or("");
        line.chars()
            .skip(pos.col.saturating_sub(1) as usize)
            .take(pos.len.max(1) as usize)
            .collect()
    }

    /// The operand written at `pos`.
    fn operand(&self, pos: Pos) -> Result<Operand, Diagnostic> {
        Operand::from_asm(&self.text_at(pos))
            .map_err(|e| Diagnostic::error(self.loc(pos), e.to_string()))
    }

    fn open_section(&mut self, name: &str, flags: Option<String>, loc: Location) {
        let (op, b) = build::section(self.ctx, name, flags.as_deref(), self.mode, loc);
        self.ctx.append_op(self.tile_block, op);
        self.section = Some((op, b, name.to_string(), flags));
    }

    /// The block items go to (opening `.text` when no section is open).
    fn items(&mut self, loc: &Location) -> BlockId {
        if self.section.is_none() {
            self.open_section(".text", Some("ax".into()), loc.clone());
        }
        self.section.as_ref().expect("open section").1
    }

    fn set_mode(&mut self, mode: SectionKind, loc: Location) {
        self.mode = mode;
        if let Some((op, b, name, flags)) = self.section.clone() {
            if self.ctx.block_is_empty(b) {
                self.ctx
                    .set_attr(op, "kind", Attribute::string(mode.as_str()));
            } else {
                self.open_section(&name, flags, loc);
            }
        }
    }

    fn inst(&mut self, pi: &ParsedInstr) -> Result<OpId, Diagnostic> {
        let operands = pi
            .operands
            .iter()
            .map(|o| self.operand(o.pos()))
            .collect::<Result<Vec<_>, _>>()?;
        let loc = self.loc(pi.pos);
        Ok(build::inst(self.ctx, &pi.mnemonic, &operands, loc))
    }

    fn append_item(&mut self, op: OpId, loc: &Location) {
        let b = self.items(loc);
        self.ctx.append_op(b, op);
    }

    fn statement(&mut self, stmt: &Stmt) -> Result<(), Diagnostic> {
        match stmt {
            Stmt::Label(name, pos) => {
                let loc = self.loc(*pos);
                let op = build::label(self.ctx, name, loc.clone());
                self.append_item(op, &loc);
            }
            Stmt::Directive(name, args, pos) => self.directive(name, args, *pos)?,
            Stmt::Instr(pi) => {
                let op = self.inst(pi)?;
                self.append_item(op, &self.loc(pi.pos));
            }
            Stmt::Bundle(main, aux, pos) => {
                let loc = self.loc(*pos);
                let (main, aux) = (self.inst(main)?, self.inst(aux)?);
                let bundle = build::bundle(self.ctx, main, aux, loc.clone());
                self.append_item(bundle, &loc);
            }
        }
        Ok(())
    }

    fn directive(&mut self, name: &str, args: &[DirArg], pos: Pos) -> Result<(), Diagnostic> {
        let loc = self.loc(pos);
        let text = |a: &DirArg| match a {
            DirArg::Str(s) | DirArg::At(s) => s.clone(),
            DirArg::Expr(_, p) => self.text_at(*p),
        };
        match name {
            ".section" => {
                let Some(section) = args.first().map(text) else {
                    return Err(Diagnostic::error(loc, "`.section` needs a section name"));
                };
                let flags = args.get(1).map(text);
                self.open_section(&section, flags, loc);
            }
            ".text" => self.open_section(".text", Some("ax".into()), loc),
            ".data" => self.open_section(".data", Some("aw".into()), loc),
            ".worker" => self.set_mode(SectionKind::Worker, loc),
            ".supervisor" => self.set_mode(SectionKind::Supervisor, loc),
            _ => {
                let args = args
                    .iter()
                    .map(|a| match a {
                        DirArg::Expr(_, p) => self.operand(*p),
                        DirArg::At(kind) => Ok(Operand::At(kind.clone())),
                        DirArg::Str(s) => Ok(Operand::Expr(format!("{s:?}"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let op = build::directive(self.ctx, &name[1..], &args, loc.clone());
                self.append_item(op, &loc);
            }
        }
        Ok(())
    }
}

/// Reads one tile's assembly into a new (detached) `ipu.tile` op with
/// locations `file:line:col`.
pub fn read_tile(ctx: &mut Context, tile: u32, text: &str, file: &str) -> Result<OpId, Diagnostic> {
    let (tile_op, tile_block) = build::tile(ctx, tile, None, Location::file_line_col(file, 1, 1));
    let (stmts, errors) = asm::parse(text, file);
    if let Some(e) = errors.first() {
        return Err(Diagnostic::error(
            Location::file_line_col(file, e.pos.line, e.pos.col),
            e.message.clone(),
        ));
    }
    let mut r = Reader {
        ctx,
        file: file.to_string(),
        lines: text.split('\n').collect(),
        tile_block,
        section: None,
        mode: SectionKind::Supervisor,
    };
    for stmt in &stmts {
        r.statement(stmt)?;
    }
    Ok(tile_op)
}

/// Reads tile programs into a new (detached) `ipu.executable` for `machine`;
/// tile `t` reads from file name `tile{t}.s`.
pub fn read_executable(
    ctx: &mut Context,
    machine: &str,
    tiles: &[(u32, &str)],
) -> Result<OpId, Diagnostic> {
    let (exe, block) = build::executable(ctx, machine, Location::unknown());
    for (t, text) in tiles {
        let tile = read_tile(ctx, *t, text, &format!("tile{t}.s"))?;
        ctx.append_op(block, tile);
    }
    Ok(exe)
}
