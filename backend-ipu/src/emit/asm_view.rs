//! `ipu` IR to Graphcore assembly text, one tile at a time, with a map from
//! output lines back to the ops that produced them (so that an assembler
//! error at `tile3.s:12:5` becomes a diagnostic at the offending op).
//!
//! Layout of a tile's text: per `ipu.section`, a `.section NAME[, "FLAGS"]`
//! line and a `.supervisor`/`.worker` line; labels at column 0 as `name:`;
//! instructions and directives indented by four spaces; a bundle as `{`, its
//! main and auxiliary instruction on their own lines, and `}`.

use ipuc_dialects::ipu::{self, Operand};
use ipuc_ir::attributes::Attribute;
use ipuc_ir::{Context, OpId};

/// The assembly of one tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileAsm {
    /// The tile number.
    pub tile: u32,
    /// The `ipu.tile` op.
    pub op: OpId,
    /// The assembly text.
    pub text: String,
    /// For each line (index = line number - 1), the op it was printed from.
    pub line_ops: Vec<Option<OpId>>,
}

impl TileAsm {
    /// The op printed on 1-based `line` (the tile op when the line has none).
    pub fn op_at_line(&self, line: u32) -> OpId {
        line.checked_sub(1)
            .and_then(|l| self.line_ops.get(l as usize).copied().flatten())
            .unwrap_or(self.op)
    }
}

struct Writer {
    text: String,
    line_ops: Vec<Option<OpId>>,
}

impl Writer {
    fn line(&mut self, op: Option<OpId>, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
        self.line_ops.push(op);
    }
}

/// A section name as the assembler reads it: bare when it is an identifier, else quoted.
fn section_name(name: &str) -> String {
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'));
    if ident {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

fn str_attr<'a>(ctx: &'a Context, op: OpId, name: &str) -> &'a str {
    ctx.attr(op, name).and_then(Attribute::as_str).unwrap_or("")
}

/// `mnemonic op, op` (or `.directive args`).
fn statement(ctx: &Context, op: OpId, name: &str, prefix: &str) -> String {
    let ops: Vec<String> = ipu::operands_of(ctx, op)
        .iter()
        .map(Operand::asm_text)
        .collect();
    if ops.is_empty() {
        format!("{prefix}{name}")
    } else {
        format!("{prefix}{name} {}", ops.join(", "))
    }
}

/// The assembly text of one `ipu.tile` (a verified op).
pub fn tile_asm(ctx: &Context, tile: OpId) -> TileAsm {
    let mut w = Writer {
        text: String::new(),
        line_ops: Vec::new(),
    };
    for section in ipu::body_ops(ctx, tile) {
        let name = section_name(str_attr(ctx, section, "name"));
        match ctx.attr(section, "flags").and_then(Attribute::as_str) {
            Some(f) => w.line(Some(section), &format!("    .section {name}, \"{f}\"")),
            None => w.line(Some(section), &format!("    .section {name}")),
        }
        w.line(
            Some(section),
            &format!("    .{}", str_attr(ctx, section, "kind")),
        );
        for item in ipu::body_ops(ctx, section) {
            match ctx.name_str(item) {
                ipu::LABEL => w.line(Some(item), &format!("{}:", str_attr(ctx, item, "sym_name"))),
                ipu::INST => {
                    let m = str_attr(ctx, item, "mnemonic");
                    w.line(Some(item), &statement(ctx, item, m, "    "))
                }
                ipu::DIRECTIVE => {
                    let d = str_attr(ctx, item, "name");
                    w.line(Some(item), &statement(ctx, item, d, "    ."))
                }
                ipu::BUNDLE => {
                    w.line(Some(item), "    {");
                    for inst in ipu::body_ops(ctx, item) {
                        let m = str_attr(ctx, inst, "mnemonic");
                        w.line(Some(inst), &statement(ctx, inst, m, "      "));
                    }
                    w.line(Some(item), "    }");
                }
                other => w.line(Some(item), &format!("    // unexpected op {other}")),
            }
        }
    }
    TileAsm {
        tile: ipu::tile_index(ctx, tile).unwrap_or(0),
        op: tile,
        text: w.text,
        line_ops: w.line_ops,
    }
}

/// Every tile of an `ipu.executable`, in tile order.
pub fn executable_tiles(ctx: &Context, exe: OpId) -> Vec<TileAsm> {
    let mut tiles: Vec<TileAsm> = ipu::body_ops(ctx, exe)
        .into_iter()
        .filter(|&op| ctx.name_str(op) == ipu::TILE)
        .map(|t| tile_asm(ctx, t))
        .collect();
    tiles.sort_by_key(|t| t.tile);
    tiles
}

/// The `--emit=asm` text of an executable: each tile's assembly after a
/// `// tile N` line, in tile order.
pub fn executable_asm(ctx: &Context, exe: OpId) -> String {
    let mut out = String::new();
    for t in executable_tiles(ctx, exe) {
        out.push_str(&format!("// tile {}\n", t.tile));
        out.push_str(&t.text);
    }
    out
}
