//! Step 3 of assembling: the symbol table, `.size`s, stack regions and the
//! entry point, and the finished [`TileImage`].

use std::collections::BTreeMap;

use super::encode::{eval_reported, Ctx};
use super::error::{AsmErrors, Diag, Pos};
use super::layout::Layout;
use super::{AsmOptions, Assembled};
use crate::image::{ContextKind, Section, StackRegion, Symbol, TileImage};

/// The image of `layout` with its encoded `bytes` and the warnings, or
/// every error so far.
pub(super) fn finish(
    mut layout: Layout,
    symbols: &BTreeMap<String, i64>,
    mut bytes: Vec<Vec<u8>>,
    opts: &AsmOptions,
    mut diag: Diag,
) -> Result<Assembled, AsmErrors> {
    let out_symbols = symbol_table(&layout, symbols, &mut diag);
    let out_stacks = stack_regions(&layout, symbols, opts, &mut diag);
    let file_pos = Pos {
        line: 1,
        col: 1,
        len: 1,
    };
    let entry = match symbols.get(&opts.entry) {
        Some(&a) if layout.labels.contains_key(&opts.entry) => a as u32,
        _ => {
            if diag.errors.is_empty() {
                diag.error(
                    file_pos,
                    format!(
                        "no supervisor entry: symbol `{}` is not defined",
                        opts.entry
                    ),
                );
            }
            0
        }
    };

    let warnings = diag.into_result()?;
    let sections = &mut layout.sections;
    let mut out_sections: Vec<Section> = layout
        .order
        .iter()
        .filter(|&&i| sections[i].size > 0 || sections[i].is_code)
        .map(|&i| {
            let s = &sections[i];
            Section {
                name: s.name.clone(),
                flags: s.flags.clone(),
                is_code: s.is_code,
                address: s.address,
                bytes: std::mem::take(&mut bytes[i]),
                modes: s.modes.clone(),
            }
        })
        .collect();
    out_sections.sort_by_key(|s| s.address);
    Ok(Assembled {
        image: TileImage {
            sections: out_sections,
            symbols: out_symbols,
            stacks: out_stacks,
            entry,
        },
        warnings,
    })
}

/// Labels (not `.L` locals) as symbols, with `.globl`, `.type` and `.size`.
fn symbol_table(layout: &Layout, symbols: &BTreeMap<String, i64>, diag: &mut Diag) -> Vec<Symbol> {
    let mut out_symbols = Vec::new();
    for (name, (_, _, _)) in layout.labels.iter().filter(|(n, _)| !n.starts_with(".L")) {
        let address = symbols[name] as u32;
        out_symbols.push(Symbol {
            name: name.clone(),
            address,
            size: None,
            global: layout.globals.contains_key(name),
            is_function: layout.functions.contains_key(name),
        });
    }
    for (name, pos) in layout.globals.iter().chain(layout.functions.iter()) {
        if !layout.labels.contains_key(name) {
            diag.error(
                *pos,
                format!("symbol `{name}` is declared but never defined"),
            );
        }
    }
    for size in &layout.sizes {
        let (name, e, pos, at) = (&size.symbol, &size.size, &size.pos, &size.at);
        let here = at
            .map(|(sec, off)| i64::from(layout.sections[sec].address + off))
            .unwrap_or(0);
        let v = eval_reported(e, *pos, &Ctx { symbols, here }, diag);
        match (out_symbols.iter_mut().find(|s| &s.name == name), v) {
            (Some(s), Some(v)) if (0..=i64::from(u32::MAX)).contains(&v) => s.size = Some(v as u32),
            (Some(_), Some(v)) => diag.error(*pos, format!("size {v} is out of range")),
            (None, _) => diag.error(*pos, format!("`.size` of undefined symbol `{name}`")),
            _ => {}
        }
    }
    out_symbols.sort_by(|a, b| (a.address, &a.name).cmp(&(b.address, &b.name)));
    out_symbols
}

/// The `.stack` regions, checked to lie in tile memory.
fn stack_regions(
    layout: &Layout,
    symbols: &BTreeMap<String, i64>,
    opts: &AsmOptions,
    diag: &mut Diag,
) -> Vec<StackRegion> {
    let mut out_stacks = Vec::new();
    for stack in &layout.stacks {
        let (ctx_kind, top, size, pos) = (&stack.context, &stack.top, &stack.size, &stack.pos);
        let c = Ctx { symbols, here: 0 };
        if let (Some(t), Some(s)) = (
            eval_reported(top, *pos, &c, diag),
            eval_reported(size, *pos, &c, diag),
        ) {
            let copies = if *ctx_kind == ContextKind::Worker {
                i64::from(opts.machine.worker_contexts)
            } else {
                1
            };
            if t % 8 != 0
                || s % 8 != 0
                || s <= 0
                || t > i64::from(opts.machine.sram_end)
                || t - s * copies < i64::from(opts.machine.sram_base)
            {
                diag.error(
                    *pos,
                    "stack region must be 8-byte aligned and inside tile memory",
                );
            } else {
                out_stacks.push(StackRegion {
                    context: *ctx_kind,
                    top: t as u32,
                    size: s as u32,
                });
            }
        }
    }
    out_stacks
}
