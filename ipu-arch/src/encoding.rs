//! Our binary encoding of Tile Vertex instructions.
//!
//! Graphcore's encodings are not public, so ipuc uses its own, keeping the
//! ISA's sizes: every instruction is one little-endian 32-bit word, a bundle
//! is two consecutive words at an 8-byte aligned address.
//!
//! ```text
//!  31   30..24   23..0
//! [B] [opcode] [operand fields, first operand in the low bits]
//! ```
//! `B` is set on the first (main) word of a bundle. Each operand takes
//! [`OperandKind::bits`] bits: register numbers, immediates (signed ones in
//! two's complement), control register numbers, and code targets as
//! `address / 4`.

use super::isa::{Opcode, OperandKind, ISA};

/// Most operands an instruction form has.
pub const MAX_OPERANDS: usize = 5;

/// Bit marking the first word of a bundle.
pub const BUNDLE_BIT: u32 = 1 << 31;

/// One decoded instruction: an opcode and its operand values in assembler
/// order (register numbers, immediate values, byte addresses for targets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Instr {
    /// The instruction form.
    pub opcode: Opcode,
    /// Operand values; unused trailing entries are zero.
    pub ops: [i32; MAX_OPERANDS],
}

impl Instr {
    /// An instruction with the given operands (missing ones zero).
    pub fn new(opcode: Opcode, operands: &[i32]) -> Instr {
        let mut ops = [0; MAX_OPERANDS];
        ops[..operands.len()].copy_from_slice(operands);
        Instr { opcode, ops }
    }
}

/// Why a word does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The opcode field names no table entry.
    #[error("illegal instruction word 0x{0:08x}: unknown opcode")]
    UnknownOpcode(u32),
    /// An operand field has bits set above the form's fields, or an invalid register group.
    #[error("illegal instruction word 0x{0:08x}: {1}")]
    BadOperand(u32, String),
}

/// Whether `value` fits an operand of `kind`.
pub fn fits(kind: OperandKind, value: i64) -> bool {
    match kind {
        OperandKind::M | OperandKind::MInc | OperandKind::A => (0..16).contains(&value),
        OperandKind::MPair | OperandKind::MPairInc | OperandKind::APair => {
            (0..16).contains(&value) && value % 2 == 0
        }
        OperandKind::AQuad => (0..16).contains(&value) && value % 4 == 0,
        OperandKind::UImm(b) => value >= 0 && value < (1i64 << b),
        OperandKind::SImm(b) => value >= -(1i64 << (b - 1)) && value < (1i64 << (b - 1)),
        OperandKind::Target => value >= 0 && value % 4 == 0 && (value >> 2) < (1 << 20),
        OperandKind::Csr | OperandKind::UCsr => (0..256).contains(&value),
    }
}

/// Why `value` does not fit an operand of `kind` (`None` when it
/// [`fits`]), as the assembler and the IR's ISA check report it.
pub fn misfit(kind: OperandKind, value: i64) -> Option<String> {
    if fits(kind, value) {
        return None;
    }
    Some(match kind {
        OperandKind::UImm(b) => format!(
            "{value} does not fit an unsigned {b}-bit immediate (0..={})",
            (1i64 << b) - 1
        ),
        OperandKind::SImm(b) => format!(
            "{value} does not fit a signed {b}-bit immediate ({}..={})",
            -(1i64 << (b - 1)),
            (1i64 << (b - 1)) - 1
        ),
        OperandKind::Target => {
            format!("branch target 0x{value:x} is not a 4-byte aligned code address")
        }
        other => format!("operand is not {}", other.describe()),
    })
}

/// Encodes one instruction. Operands must satisfy [`fits`] (the assembler
/// checks that first); out-of-range bits are masked.
pub fn encode(instr: &Instr, bundle_first: bool) -> u32 {
    let desc = instr.opcode.desc();
    let mut word = (instr.opcode as u32) << 24;
    let mut shift = 0;
    for (kind, &v) in desc.operands.iter().zip(instr.ops.iter()) {
        let bits = kind.bits();
        let raw = if *kind == OperandKind::Target {
            (v as u32) >> 2
        } else {
            v as u32
        };
        word |= (raw & ((1u32 << bits) - 1)) << shift;
        shift += bits;
    }
    if bundle_first {
        word |= BUNDLE_BIT;
    }
    word
}

/// Decodes one word into an instruction and whether it starts a bundle.
pub fn decode(word: u32) -> Result<(Instr, bool), DecodeError> {
    let index = ((word >> 24) & 0x7f) as usize;
    let desc = ISA.get(index).ok_or(DecodeError::UnknownOpcode(word))?;
    let mut ops = [0i32; MAX_OPERANDS];
    let mut shift = 0;
    for (i, kind) in desc.operands.iter().enumerate() {
        let bits = kind.bits();
        let raw = (word >> shift) & ((1u32 << bits) - 1);
        ops[i] = match kind {
            OperandKind::SImm(b) => ((raw << (32 - u32::from(*b))) as i32) >> (32 - u32::from(*b)),
            OperandKind::Target => (raw << 2) as i32,
            _ => raw as i32,
        };
        if !fits(*kind, i64::from(ops[i])) {
            return Err(DecodeError::BadOperand(
                word,
                format!("operand {} is not {}", i + 1, kind.describe()),
            ));
        }
        shift += bits;
    }
    if shift < 24 && (word & 0x00ff_ffff) >> shift != 0 {
        return Err(DecodeError::BadOperand(
            word,
            "unused operand bits are set".into(),
        ));
    }
    Ok((
        Instr {
            opcode: desc.opcode,
            ops,
        },
        word & BUNDLE_BIT != 0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_round_trips_through_the_encoding() {
        for d in ISA {
            let ops: Vec<i32> = d
                .operands
                .iter()
                .map(|k| match k {
                    OperandKind::SImm(b) => -(1 << (b - 1)),
                    OperandKind::UImm(b) => (1 << b) - 1,
                    OperandKind::Target => 0x7fffc,
                    OperandKind::AQuad => 12,
                    OperandKind::MPair | OperandKind::MPairInc | OperandKind::APair => 14,
                    OperandKind::Csr | OperandKind::UCsr => 0xa7,
                    _ => 15,
                })
                .collect();
            let instr = Instr::new(d.opcode, &ops);
            for bundle in [false, true] {
                assert_eq!(
                    decode(encode(&instr, bundle)).unwrap(),
                    (instr, bundle),
                    "{}",
                    d.mnemonic
                );
            }
        }
    }

    #[test]
    fn unknown_opcodes_are_errors() {
        assert!(matches!(
            decode(0x7f00_0000),
            Err(DecodeError::UnknownOpcode(_))
        ));
    }
}
