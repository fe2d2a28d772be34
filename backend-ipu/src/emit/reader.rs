//! Graphcore assembly text to `ipu` ops: the inverse of [`super::asm_view`]
//! (reading its output gives back the same ops, so IR -> asm -> IR -> asm is
//! a fixed point), and good enough for hand-written poplibs-style code.
//!
//! What it reads: statements separated by newlines or `;`; comments `//`,
//! `#` and `/* */`; labels `name:`; directives; instructions
//! `mnemonic op, op`; bundles `{ main ; aux }` on one or several lines.
//! `.section`, `.text` and `.data` open an `ipu.section`; `.supervisor` and
//! `.worker` set the kind of the current section, or open a new section of
//! the same name when the current one already holds items (the assembler
//! keeps appending to a section that is named again, so the layout is the
//! same). Operands are classified by [`Operand::from_asm`]. Syntax the
//! assembler would reject (unknown mnemonics, bad operand kinds) is kept as
//! written: the ISA check and the assembler report it.

use ipuc_dialects::ipu::{self, Operand};
use ipuc_ir::attributes::Attribute;
use ipuc_ir::{BlockId, Context, Diagnostic, Location, OpId, OperationState};

#[derive(Debug)]
enum Piece {
    Stmt(String, u32, u32),
    Open(u32, u32),
    Close(u32, u32),
}

/// Splits text into statements and bundle braces, dropping comments.
fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut line, mut col) = (1u32, 0u32);
    let mut start = (1u32, 1u32);
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut in_string = false;
    let flush = |cur: &mut String, start: (u32, u32), out: &mut Vec<Piece>| {
        if !cur.trim().is_empty() {
            let lead = (cur.len() - cur.trim_start().len()) as u32;
            out.push(Piece::Stmt(cur.trim().to_string(), start.0, start.1 + lead));
        }
        cur.clear();
    };
    while i < chars.len() {
        let c = chars[i];
        col += 1;
        if cur.is_empty() {
            start = (line, col);
        }
        if in_string {
            cur.push(c);
            if c == '\\' && i + 1 < chars.len() {
                cur.push(chars[i + 1]);
                i += 1;
                col += 1;
            } else if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            '\n' => {
                flush(&mut cur, start, &mut out);
                line += 1;
                col = 0;
            }
            ';' => flush(&mut cur, start, &mut out),
            '{' | '}' => {
                flush(&mut cur, start, &mut out);
                out.push(if c == '{' {
                    Piece::Open(line, col)
                } else {
                    Piece::Close(line, col)
                });
            }
            '"' => {
                in_string = true;
                cur.push(c);
            }
            '#' => {
                while i + 1 < chars.len() && chars[i + 1] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i + 1 < chars.len() && chars[i + 1] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 1;
                col += 1;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                    col += 1;
                    if chars[i] == '\n' {
                        line += 1;
                        col = 0;
                    }
                }
                i += 1;
                col += 1;
            }
            _ => cur.push(c),
        }
        i += 1;
    }
    flush(&mut cur, start, &mut out);
    out
}

fn ident_len(s: &str) -> usize {
    let mut n = 0;
    for (k, c) in s.char_indices() {
        let ok = if k == 0 {
            c.is_ascii_alphabetic() || c == '_' || c == '.'
        } else {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$')
        };
        if !ok {
            break;
        }
        n = k + c.len_utf8();
    }
    n
}

/// Splits at commas outside parentheses and strings.
fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut in_str) = (0i32, false);
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '"' => in_str = !in_str,
            '(' if !in_str => depth += 1,
            ')' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

struct Reader<'c> {
    ctx: &'c mut Context,
    file: String,
    tile_block: BlockId,
    section: Option<(OpId, BlockId, String, Option<String>)>,
    mode: &'static str,
}

fn new_container(ctx: &mut Context, state: OperationState) -> (OpId, BlockId) {
    let r = ctx.create_region();
    let b = ctx.create_block(&[]);
    ctx.append_block(r, b);
    let op = ctx.create_op(state.region(r));
    (op, b)
}

impl Reader<'_> {
    fn loc(&self, line: u32, col: u32) -> Location {
        Location::file_line_col(&self.file, line, col)
    }

    fn open_section(&mut self, name: &str, flags: Option<String>, loc: Location) {
        let mut state = OperationState::new(self.ctx.op_name(ipu::SECTION), loc)
            .attr("name", Attribute::string(name))
            .attr("kind", Attribute::string(self.mode));
        if let Some(f) = &flags {
            state = state.attr("flags", Attribute::string(f));
        }
        let (op, b) = new_container(self.ctx, state);
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

    fn set_mode(&mut self, mode: &'static str, loc: Location) {
        self.mode = mode;
        if let Some((op, b, name, flags)) = self.section.clone() {
            if self.ctx.block_is_empty(b) {
                self.ctx.set_attr(op, "kind", Attribute::string(mode));
            } else {
                self.open_section(&name, flags, loc);
            }
        }
    }

    fn inst(&mut self, text: &str, line: u32, col: u32) -> Result<OpId, Diagnostic> {
        let loc = self.loc(line, col);
        let n = ident_len(text);
        if n == 0 {
            return Err(Diagnostic::error(
                loc,
                format!("expected an instruction mnemonic, found `{text}`"),
            ));
        }
        let operands = split_args(&text[n..])
            .iter()
            .map(|a| Operand::from_asm(a).map(|o| o.to_attr()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Diagnostic::error(loc.clone(), e))?;
        let state = OperationState::new(self.ctx.op_name(ipu::INST), loc)
            .attr("mnemonic", Attribute::string(&text[..n]))
            .attr("operands", Attribute::array(operands));
        Ok(self.ctx.create_op(state))
    }

    fn statement(&mut self, stmt: &str, line: u32, col: u32) -> Result<(), Diagnostic> {
        let mut s = stmt;
        let mut col = col;
        // Labels.
        loop {
            let n = ident_len(s);
            let rest = s[n..].trim_start();
            if n > 0 && rest.starts_with(':') {
                let loc = self.loc(line, col);
                let b = self.items(&loc);
                let op = self.ctx.create_op(
                    OperationState::new(self.ctx.op_name(ipu::LABEL), loc)
                        .attr("sym_name", Attribute::string(&s[..n])),
                );
                self.ctx.append_op(b, op);
                let after = &rest[1..];
                col += (s.len() - after.trim_start().len()) as u32;
                s = after.trim_start();
            } else {
                break;
            }
        }
        if s.is_empty() {
            return Ok(());
        }
        let loc = self.loc(line, col);
        if s.starts_with('.') && ident_len(s) > 1 {
            let n = ident_len(s);
            let name = &s[1..n];
            let args = split_args(&s[n..]);
            let unquote = |a: &str| a.trim_matches('"').to_string();
            match name {
                "section" => {
                    let Some(sec) = args.first().filter(|a| !a.is_empty()) else {
                        return Err(Diagnostic::error(loc, "`.section` needs a section name"));
                    };
                    let flags = args.get(1).map(|f| unquote(f));
                    self.open_section(&unquote(sec), flags, loc);
                }
                "text" => self.open_section(".text", Some("ax".into()), loc),
                "data" => self.open_section(".data", Some("aw".into()), loc),
                "worker" => self.set_mode("worker", loc),
                "supervisor" => self.set_mode("supervisor", loc),
                _ => {
                    let args = args
                        .iter()
                        .map(|a| Operand::from_asm(a).map(|o| o.to_attr()))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| Diagnostic::error(loc.clone(), e))?;
                    let b = self.items(&loc);
                    let op = self.ctx.create_op(
                        OperationState::new(self.ctx.op_name(ipu::DIRECTIVE), loc)
                            .attr("name", Attribute::string(name))
                            .attr("args", Attribute::array(args)),
                    );
                    self.ctx.append_op(b, op);
                }
            }
            return Ok(());
        }
        let b = self.items(&loc);
        let op = self.inst(s, line, col)?;
        self.ctx.append_op(b, op);
        Ok(())
    }
}

/// Reads one tile's assembly into a new (detached) `ipu.tile` op with
/// locations `file:line:col`.
pub fn read_tile(ctx: &mut Context, tile: u32, text: &str, file: &str) -> Result<OpId, Diagnostic> {
    let state = OperationState::new(ctx.op_name(ipu::TILE), Location::file_line_col(file, 1, 1))
        .attr("tile", Attribute::i64(i64::from(tile)));
    let (tile_op, tile_block) = new_container(ctx, state);
    let mut r = Reader {
        ctx,
        file: file.to_string(),
        tile_block,
        section: None,
        mode: "supervisor",
    };
    let ps = pieces(text);
    let mut i = 0;
    while i < ps.len() {
        match &ps[i] {
            Piece::Stmt(s, line, col) => r.statement(s, *line, *col)?,
            Piece::Open(line, col) => {
                let loc = r.loc(*line, *col);
                let mut insts = Vec::new();
                i += 1;
                loop {
                    match ps.get(i) {
                        Some(Piece::Stmt(s, l, c)) => insts.push(r.inst(s, *l, *c)?),
                        Some(Piece::Close(..)) => break,
                        _ => {
                            return Err(Diagnostic::error(loc, "unterminated bundle: missing `}`"))
                        }
                    }
                    i += 1;
                }
                if insts.len() != 2 {
                    return Err(Diagnostic::error(
                        loc,
                        format!(
                            "a bundle holds exactly two instructions (main ; aux), found {}",
                            insts.len()
                        ),
                    ));
                }
                let b = r.items(&loc);
                let state = OperationState::new(r.ctx.op_name(ipu::BUNDLE), loc);
                let (bundle, bb) = new_container(r.ctx, state);
                for inst in insts {
                    r.ctx.append_op(bb, inst);
                }
                r.ctx.append_op(b, bundle);
            }
            Piece::Close(line, col) => {
                return Err(Diagnostic::error(
                    r.loc(*line, *col),
                    "`}` without a bundle to close",
                ))
            }
        }
        i += 1;
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
    let state = OperationState::new(ctx.op_name(ipu::EXECUTABLE), Location::unknown())
        .attr("machine", Attribute::string(machine));
    let (exe, block) = new_container(ctx, state);
    for (t, text) in tiles {
        let tile = read_tile(ctx, *t, text, &format!("tile{t}.s"))?;
        ctx.append_op(block, tile);
    }
    Ok(exe)
}
