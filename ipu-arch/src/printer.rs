//! The assembly printer: a [`TileImage`] back to assembler text.
//!
//! `print_image(assemble(x))` is a fixed point: assembling the printed text
//! gives the same image, which prints to the same text. Branch targets
//! print as symbol names, or as generated local labels `.L_<hex address>`
//! where no symbol names the address; immediates print in decimal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::csr::{csr_by_number, CsrSpace};
use super::encoding::{decode, Instr};
use super::image::{ContextKind, TileImage};
use super::isa::OperandKind;
use super::registers::{register_name, RegFile};

fn operand_text(kind: OperandKind, v: i32, labels: &BTreeMap<u32, String>) -> String {
    match kind {
        OperandKind::M => register_name(RegFile::M, v as u8),
        OperandKind::MInc => format!("{}+=", register_name(RegFile::M, v as u8)),
        OperandKind::MPair => format!("$m{}:{}", v, v + 1),
        OperandKind::MPairInc => format!("$m{}:{}+=", v, v + 1),
        OperandKind::A => register_name(RegFile::A, v as u8),
        OperandKind::APair => format!("$a{}:{}", v, v + 1),
        OperandKind::AQuad => format!("$a{}:{}", v, v + 3),
        OperandKind::UImm(_) | OperandKind::SImm(_) => v.to_string(),
        OperandKind::Target => labels
            .get(&(v as u32))
            .cloned()
            .unwrap_or_else(|| format!("0x{:x}", v as u32)),
        OperandKind::Csr => csr_by_number(v as u8, CsrSpace::Lower)
            .map(|c| format!("${}", c.name))
            .unwrap_or_else(|| v.to_string()),
        OperandKind::UCsr => csr_by_number(v as u8, CsrSpace::Upper)
            .map(|c| format!("${}", c.name))
            .unwrap_or_else(|| v.to_string()),
    }
}

/// Prints one instruction; targets are resolved through `labels`.
pub fn instr_text(instr: &Instr, labels: &BTreeMap<u32, String>) -> String {
    let d = instr.opcode.desc();
    let ops: Vec<String> = d
        .operands
        .iter()
        .zip(instr.ops.iter())
        .map(|(k, v)| operand_text(*k, *v, labels))
        .collect();
    if ops.is_empty() {
        d.mnemonic.to_string()
    } else {
        format!("{} {}", d.mnemonic, ops.join(", "))
    }
}

/// Prints a whole tile image as assembler text.
pub fn print_image(image: &TileImage) -> String {
    // Labels: symbols first, then generated labels for unnamed targets.
    let mut labels: BTreeMap<u32, String> = BTreeMap::new();
    for s in &image.symbols {
        labels.entry(s.address).or_insert_with(|| s.name.clone());
    }
    let mut targets = BTreeSet::new();
    for sec in image.sections.iter().filter(|s| s.is_code) {
        for w in sec.bytes.chunks_exact(4) {
            if let Ok((instr, _)) = decode(u32::from_le_bytes([w[0], w[1], w[2], w[3]])) {
                for (k, v) in instr.opcode.desc().operands.iter().zip(instr.ops) {
                    if *k == OperandKind::Target
                        && image.section_at(v as u32).is_some_and(|s| s.is_code)
                    {
                        targets.insert(v as u32);
                    }
                }
            }
        }
    }
    for t in targets {
        labels.entry(t).or_insert_with(|| format!(".L_{t:x}"));
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "// tile image printed by ipuc; entry 0x{:x}",
        image.entry
    );
    for st in &image.stacks {
        let who = if st.context == ContextKind::Worker {
            "worker"
        } else {
            "supervisor"
        };
        let _ = writeln!(out, "\t.stack {who}, 0x{:x}, {}", st.top, st.size);
    }
    let mut by_addr: BTreeMap<u32, Vec<&super::image::Symbol>> = BTreeMap::new();
    for s in &image.symbols {
        by_addr.entry(s.address).or_default().push(s);
    }
    let emit_labels = |out: &mut String, addr: u32| {
        if let Some(syms) = by_addr.get(&addr) {
            for s in syms {
                if s.global {
                    let _ = writeln!(out, "\t.globl {}", s.name);
                }
                if s.is_function {
                    let _ = writeln!(out, "\t.type {}, @function", s.name);
                }
                if let Some(size) = s.size {
                    let _ = writeln!(out, "\t.size {}, {}", s.name, size);
                }
                let _ = writeln!(out, "{}:", s.name);
            }
        } else if let Some(l) = labels.get(&addr) {
            let _ = writeln!(out, "{l}:");
        }
    };
    for sec in &image.sections {
        if sec.flags.is_empty() {
            let _ = writeln!(out, "\t.section {}", sec.name);
        } else {
            let _ = writeln!(out, "\t.section {}, \"{}\"", sec.name, sec.flags);
        }
        // Re-derive the address the assembler gives this section by default;
        // where an `.align` had moved it further, print the alignment.
        let region_start = if sec.name.starts_with(".interleaved") && !sec.is_code {
            0x80000
        } else {
            0x4c000
        };
        let prev_end = image
            .sections
            .iter()
            .filter(|s| s.end() <= sec.address && s.address >= region_start)
            .map(|s| s.end())
            .max()
            .unwrap_or(region_start);
        if sec.address != prev_end.div_ceil(8) * 8 {
            let align = 1u32 << sec.address.trailing_zeros().min(12);
            let _ = writeln!(out, "\t.align {align}");
        }
        let mut mode_iter = sec.modes.iter().peekable();
        let mut off = 0u32;
        let len = sec.bytes.len() as u32;
        while off < len {
            while let Some((o, m)) = mode_iter.peek() {
                if *o <= off {
                    let _ = writeln!(out, "\t{}", mode_directive(*m));
                    mode_iter.next();
                } else {
                    break;
                }
            }
            let addr = sec.address + off;
            emit_labels(&mut out, addr);
            if sec.is_code {
                let w = u32::from_le_bytes(
                    sec.bytes[off as usize..off as usize + 4]
                        .try_into()
                        .unwrap_or([0; 4]),
                );
                match decode(w) {
                    Ok((instr, true)) if off + 8 <= len => {
                        let w2 = u32::from_le_bytes(
                            sec.bytes[off as usize + 4..off as usize + 8]
                                .try_into()
                                .unwrap_or([0; 4]),
                        );
                        match decode(w2) {
                            Ok((aux, _)) => {
                                let _ = writeln!(
                                    out,
                                    "\t{{ {} ; {} }}",
                                    instr_text(&instr, &labels),
                                    instr_text(&aux, &labels)
                                );
                                off += 8;
                                continue;
                            }
                            Err(e) => {
                                let _ = writeln!(out, "\t// {e}");
                            }
                        }
                    }
                    Ok((instr, _)) => {
                        let _ = writeln!(out, "\t{}", instr_text(&instr, &labels));
                    }
                    Err(e) => {
                        let _ = writeln!(out, "\t// {e}");
                    }
                }
                off += 4;
            } else if off.is_multiple_of(4) && off + 4 <= len {
                let w = u32::from_le_bytes(
                    sec.bytes[off as usize..off as usize + 4]
                        .try_into()
                        .unwrap_or([0; 4]),
                );
                let _ = writeln!(out, "\t.word 0x{w:08x}");
                off += 4;
            } else {
                let _ = writeln!(out, "\t.space {}", len - off);
                off = len;
            }
        }
        // Remaining mode changes at the end and labels just past the end.
        for (_, m) in mode_iter {
            let _ = writeln!(out, "\t{}", mode_directive(*m));
        }
        if !image
            .sections
            .iter()
            .any(|s| s.address == sec.address + len)
        {
            emit_labels(&mut out, sec.address + len);
        }
    }
    out
}

/// The directive that switches the assembler to code of `kind`'s context.
fn mode_directive(kind: ContextKind) -> &'static str {
    if kind == ContextKind::Worker {
        ".worker"
    } else {
        ".supervisor"
    }
}
