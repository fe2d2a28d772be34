//! Step 1 of assembling: statements to sections, items and labels, then
//! section addresses.
//!
//! Each statement lands in the current section (a `.text` section is opened
//! for code and a `.data` one for data when none is open) at the section's
//! current size; directives that only state facts (`.globl`, `.type`,
//! `.size`, `.stack`) are recorded for the last step. Placement: code
//! sections first from the base of region 0, then data sections in region
//! 0, then sections named `.interleaved*` from the base of region 1; every
//! section starts aligned to its largest `.align` (at least 8).

use std::collections::BTreeMap;

use super::error::{Diag, Pos};
use super::syntax::{DirArg, Expr, ParsedInstr, Stmt};
use super::{AsmOptions, PREDEFINED};
use crate::image::ContextKind;

/// A section while it is being filled.
#[derive(Debug)]
pub(super) struct SectionBuild {
    pub(super) name: String,
    pub(super) flags: String,
    pub(super) is_code: bool,
    pub(super) size: u32,
    pub(super) align: u32,
    /// From which offset on the code is supervisor or worker code.
    pub(super) modes: Vec<(u32, ContextKind)>,
    pub(super) address: u32,
}

impl SectionBuild {
    /// Whether the section goes to the interleaved region (region 1).
    pub(super) fn is_interleaved(&self) -> bool {
        !self.is_code && self.name.starts_with(".interleaved")
    }
}

/// What occupies bytes of a section.
#[derive(Debug)]
pub(super) enum ItemKind {
    Instr(ParsedInstr),
    Bundle(ParsedInstr, ParsedInstr),
    Words(Vec<(Expr, Pos)>),
    Zeros,
    NopPad(u32),
}

/// An item at its section offset.
#[derive(Debug)]
pub(super) struct Item {
    pub(super) section: usize,
    pub(super) offset: u32,
    pub(super) kind: ItemKind,
    pub(super) pos: Pos,
    pub(super) mode: ContextKind,
}

/// `.size NAME, EXPR`: the expression and where it stood (section, offset).
#[derive(Debug)]
pub(super) struct SizeDirective {
    pub(super) symbol: String,
    pub(super) size: Expr,
    pub(super) pos: Pos,
    pub(super) at: Option<(usize, u32)>,
}

/// `.stack supervisor|worker, TOP, SIZE`.
#[derive(Debug)]
pub(super) struct StackDirective {
    pub(super) context: ContextKind,
    pub(super) top: Expr,
    pub(super) size: Expr,
    pub(super) pos: Pos,
}

/// The laid-out program: what the encoder and the image builder need.
#[derive(Debug, Default)]
pub(super) struct Layout {
    pub(super) sections: Vec<SectionBuild>,
    /// Section indices in placement order.
    pub(super) order: Vec<usize>,
    pub(super) items: Vec<Item>,
    /// Label -> (section, offset, where defined).
    pub(super) labels: BTreeMap<String, (usize, u32, Pos)>,
    pub(super) globals: BTreeMap<String, Pos>,
    pub(super) functions: BTreeMap<String, Pos>,
    pub(super) sizes: Vec<SizeDirective>,
    pub(super) stacks: Vec<StackDirective>,
}

impl Layout {
    /// Every label and predefined constant with its value.
    pub(super) fn symbols(&self) -> BTreeMap<String, i64> {
        let mut symbols: BTreeMap<String, i64> = PREDEFINED
            .iter()
            .map(|(n, v)| (n.to_string(), *v))
            .collect();
        for (name, (sec, off, _)) in &self.labels {
            symbols.insert(name.clone(), i64::from(self.sections[*sec].address + off));
        }
        symbols
    }
}

/// Lays out `stmts` and places the sections in `opts.machine`'s memory.
pub(super) fn layout(stmts: Vec<Stmt>, opts: &AsmOptions, diag: &mut Diag) -> Layout {
    let mut b = Builder {
        layout: Layout::default(),
        current: None,
        mode: ContextKind::Supervisor,
        diag,
    };
    for stmt in stmts {
        match stmt {
            Stmt::Label(name, pos) => b.label(name, pos),
            Stmt::Directive(name, args, pos) => b.directive(&name, args, pos),
            Stmt::Instr(pi) => {
                let pos = pi.pos;
                b.code(ItemKind::Instr(pi), pos, 4)
            }
            Stmt::Bundle(main, aux, pos) => b.code(ItemKind::Bundle(main, aux), pos, 8),
        }
    }
    let mut layout = b.layout;
    place(&mut layout, opts, diag);
    layout
}

struct Builder<'d, 'a> {
    layout: Layout,
    current: Option<usize>,
    mode: ContextKind,
    diag: &'d mut Diag<'a>,
}

impl Builder<'_, '_> {
    /// The section called `name`, opened with `flags` if new.
    fn switch_section(&mut self, name: &str, flags: &str) -> usize {
        let sections = &mut self.layout.sections;
        if let Some(i) = sections.iter().position(|s| s.name == name) {
            return i;
        }
        let is_code = flags.contains('x') || name == ".text" || name.starts_with(".text.");
        sections.push(SectionBuild {
            name: name.into(),
            flags: flags.into(),
            is_code,
            size: 0,
            align: 8,
            modes: vec![(0, self.mode)],
            address: 0,
        });
        sections.len() - 1
    }

    /// The current section, opening `.text` (or `.data` for data) if none is.
    fn section_or(&mut self, name: &str, flags: &str) -> usize {
        match self.current {
            Some(s) => s,
            None => {
                let s = self.switch_section(name, flags);
                self.current = Some(s);
                s
            }
        }
    }

    fn push(&mut self, section: usize, kind: ItemKind, pos: Pos, bytes: u32) {
        let s = &mut self.layout.sections[section];
        self.layout.items.push(Item {
            section,
            offset: s.size,
            kind,
            pos,
            mode: self.mode,
        });
        s.size += bytes;
    }

    fn label(&mut self, name: String, pos: Pos) {
        let sec = self.section_or(".text", "ax");
        if PREDEFINED.iter().any(|(n, _)| *n == name) {
            self.diag.error(
                pos,
                format!("`{name}` is a predefined constant and cannot be a label"),
            );
        } else if let Some((_, _, prev)) = self.layout.labels.get(&name) {
            let prev = *prev;
            self.diag.error(
                pos,
                format!("label `{name}` is already defined at line {}", prev.line),
            );
        } else {
            let offset = self.layout.sections[sec].size;
            self.layout.labels.insert(name, (sec, offset, pos));
        }
    }

    /// A solo instruction (4 bytes) or a bundle (8 bytes).
    fn code(&mut self, kind: ItemKind, pos: Pos, bytes: u32) {
        let sec = self.section_or(".text", "ax");
        let s = &self.layout.sections[sec];
        let what = if bytes == 8 { "bundle" } else { "instruction" };
        if !s.is_code {
            let message = format!("{what} in data section `{}`", s.name);
            self.diag.error(pos, message);
            return;
        }
        if bytes == 4 && !s.size.is_multiple_of(4) {
            self.diag.error(pos, "instruction is not 4-byte aligned");
            return;
        }
        if bytes == 8 && !s.size.is_multiple_of(8) {
            // Reported, but laid out anyway so later addresses stay meaningful.
            self.diag.error(
                pos,
                "bundle is not 8-byte aligned: insert a `nop` or `.align 8` before it",
            );
        }
        self.push(sec, kind, pos, bytes);
    }

    fn directive(&mut self, name: &str, args: Vec<DirArg>, pos: Pos) {
        let arg_name = |a: Option<&DirArg>| match a {
            Some(DirArg::Expr(Expr::Sym(s, _), _)) => Some(s.clone()),
            Some(DirArg::Str(s)) => Some(s.clone()),
            _ => None,
        };
        match name {
            ".section" => match arg_name(args.first()) {
                Some(n) => {
                    let flags = match args.get(1) {
                        Some(DirArg::Str(f)) => f.clone(),
                        _ => String::new(),
                    };
                    self.current = Some(self.switch_section(&n, &flags));
                }
                None => self.diag.error(pos, "`.section` needs a section name"),
            },
            ".text" => self.current = Some(self.switch_section(".text", "ax")),
            ".data" => self.current = Some(self.switch_section(".data", "aw")),
            ".globl" | ".global" => match arg_name(args.first()) {
                Some(n) if args.len() == 1 => {
                    self.layout.globals.insert(n, pos);
                }
                _ => self
                    .diag
                    .error(pos, format!("`{name}` needs one symbol name")),
            },
            ".type" => match (arg_name(args.first()), args.get(1)) {
                (Some(n), Some(DirArg::At(t))) if t == "function" => {
                    self.layout.functions.insert(n, pos);
                }
                (Some(_), Some(DirArg::At(t))) if t == "object" => {}
                _ => self
                    .diag
                    .error(pos, "`.type` expects `.type NAME, @function` or `@object`"),
            },
            ".size" => match (arg_name(args.first()), args.get(1)) {
                (Some(symbol), Some(DirArg::Expr(e, _))) if args.len() == 2 => {
                    let at = self.current.map(|c| (c, self.layout.sections[c].size));
                    self.layout.sizes.push(SizeDirective {
                        symbol,
                        size: e.clone(),
                        pos,
                        at,
                    })
                }
                _ => self.diag.error(pos, "`.size` expects `.size NAME, EXPR`"),
            },
            ".worker" | ".supervisor" => self.set_mode(if name == ".worker" {
                ContextKind::Worker
            } else {
                ContextKind::Supervisor
            }),
            ".align" | ".balign" => self.align(&args, pos),
            ".word" | ".int" | ".long" | ".space" | ".zero" => self.data(name, &args, pos),
            ".stack" => match args.as_slice() {
                [DirArg::Expr(Expr::Sym(who, _), _), DirArg::Expr(top, _), DirArg::Expr(size, _)]
                    if who == "supervisor" || who == "worker" =>
                {
                    let context = if who == "worker" {
                        ContextKind::Worker
                    } else {
                        ContextKind::Supervisor
                    };
                    self.layout.stacks.push(StackDirective {
                        context,
                        top: top.clone(),
                        size: size.clone(),
                        pos,
                    });
                }
                _ => self.diag.error(
                    pos,
                    "`.stack` expects `.stack supervisor|worker, TOP, SIZE`",
                ),
            },
            ".file" | ".ident" | ".allow_optimizations" => {}
            _ => self.diag.error(pos, format!("unknown directive `{name}`")),
        }
    }

    /// `.worker`/`.supervisor`: code from here on runs in that context.
    fn set_mode(&mut self, mode: ContextKind) {
        self.mode = mode;
        if let Some(sec) = self.current {
            let s = &mut self.layout.sections[sec];
            let off = s.size;
            match s.modes.last_mut() {
                Some(last) if last.0 == off => last.1 = mode,
                _ => s.modes.push((off, mode)),
            }
        }
    }

    /// `.align N[, fill]`: pads code with `nop`s and data with zeros.
    fn align(&mut self, args: &[DirArg], pos: Pos) {
        let n = match args {
            [DirArg::Expr(Expr::Num(n), _)] => *n,
            [DirArg::Expr(Expr::Num(n), _), DirArg::Expr(Expr::Num(_), _)] => *n,
            _ => {
                self.diag
                    .error(pos, "`.align` expects a constant byte alignment");
                return;
            }
        };
        if !(1..=4096).contains(&n) || (n & (n - 1)) != 0 {
            self.diag.error(
                pos,
                format!("alignment {n} is not a power of two between 1 and 4096"),
            );
            return;
        }
        let sec = self.section_or(".text", "ax");
        let s = &mut self.layout.sections[sec];
        let n = n as u32;
        s.align = s.align.max(n);
        let pad = (n - s.size % n) % n;
        if pad == 0 {
            return;
        }
        let is_code = s.is_code;
        if is_code && !pad.is_multiple_of(4) {
            self.diag.error(pos, "code is not 4-byte aligned here");
            return;
        }
        let kind = if is_code {
            ItemKind::NopPad(pad)
        } else {
            ItemKind::Zeros
        };
        self.push(sec, kind, pos, pad);
    }

    /// `.word`/`.int`/`.long` (32-bit values) and `.space`/`.zero` (bytes).
    fn data(&mut self, name: &str, args: &[DirArg], pos: Pos) {
        let sec = self.section_or(".data", "aw");
        let s = &self.layout.sections[sec];
        if s.is_code {
            let message = format!(
                "`{name}` is not allowed in code section `{}`: put data in a data section",
                s.name
            );
            self.diag.error(pos, message);
            return;
        }
        if name == ".space" || name == ".zero" {
            match args {
                [DirArg::Expr(Expr::Num(n), _)] if (0..=0x10_0000).contains(n) => {
                    self.push(sec, ItemKind::Zeros, pos, *n as u32)
                }
                _ => self.diag.error(
                    pos,
                    format!("`{name}` expects a constant byte count up to 1 MiB"),
                ),
            }
            return;
        }
        if !s.size.is_multiple_of(4) {
            self.diag
                .error(pos, format!("`{name}` data must be 4-byte aligned"));
            return;
        }
        let mut words = Vec::new();
        for a in args {
            match a {
                DirArg::Expr(e, p) => words.push((e.clone(), *p)),
                _ => self
                    .diag
                    .error(pos, format!("`{name}` expects expressions")),
            }
        }
        let bytes = words.len() as u32 * 4;
        self.push(sec, ItemKind::Words(words), pos, bytes);
    }
}

/// Gives every section an address: code, then region-0 data, then
/// interleaved data; a section that does not fit is an error.
fn place(layout: &mut Layout, opts: &AsmOptions, diag: &mut Diag) {
    let m = &opts.machine;
    let sections = &mut layout.sections;
    let (code, rest): (Vec<usize>, Vec<usize>) =
        (0..sections.len()).partition(|&i| sections[i].is_code);
    let (interleaved, data): (Vec<usize>, Vec<usize>) = rest
        .into_iter()
        .partition(|&i| sections[i].is_interleaved());
    layout.order = code.into_iter().chain(data).chain(interleaved).collect();
    let file_pos = Pos {
        line: 1,
        col: 1,
        len: 1,
    };
    let mut cursor0 = m.sram_base;
    let mut cursor1 = m.interleaved_base;
    for &i in &layout.order {
        let s = &mut sections[i];
        let interleaved = s.is_interleaved();
        let cursor = if interleaved {
            &mut cursor1
        } else {
            &mut cursor0
        };
        let a = u64::from(s.align);
        let addr = (u64::from(*cursor)).div_ceil(a) * a;
        let end = addr + u64::from(s.size);
        let limit = if interleaved {
            m.sram_end
        } else {
            m.interleaved_base
        };
        if end > u64::from(limit) {
            let what = if s.is_code { "code" } else { "data" };
            diag.error(
                file_pos,
                format!(
                    "{what} section `{}` ({} bytes) does not fit: it would end at 0x{end:x}, past the region limit 0x{limit:x}{}",
                    s.name,
                    s.size,
                    if s.is_code { " (code must lie in region 0)" } else { "" }
                ),
            );
            continue;
        }
        s.address = addr as u32;
        *cursor = end as u32;
    }
}
