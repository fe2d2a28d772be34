//! The instruction-set table: the subset of the Mk2/IPU21 Tile Vertex ISA
//! that ipuc's codelets use, in Graphcore's assembler syntax.
//!
//! Each entry gives the mnemonic, the operand kinds in assembler order, the
//! issue slot class (main or auxiliary half of a bundle), the contexts that
//! may execute it, a category, and a doc comment with its semantics. Where
//! the public material (graphcore/ipu_assembly_support hover docs, poplibs
//! codelets, `shared/ipu-machine.md`) is thin, the doc says what we assume.
//! One mnemonic may have several forms (register or immediate offset, `$m`
//! or `$a` destination); each form is its own [`Opcode`]. Every instruction
//! is 4 bytes; a bundle `{ main ; aux }` is 8 bytes.
//!
//! Conventions used by the docs:
//! - Loads and stores are naturally aligned. `base, delta, off` forms address
//!   `base + delta + off * size`; `step` forms address `base + delta` and then
//!   add `imm * size` to the `delta` register (`$mN+=`).
//! - `pace` forms take a triple-packed address pair `$mN:N+1+=` (three 21-bit
//!   addresses, field i at bits `21*i` of the 64-bit pair, see `tapack`) and a
//!   stride register; each address has a 2-bit stride selector in the
//!   immediate (address 0 in the low bits): `0b00` = +1 access (8 bytes),
//!   `0b01` = + `$mStride[9:0]` accesses, `0b10` = + `$mStride[19:10]`
//!   accesses (both signed 10-bit), `0b11` = no increment. This follows the
//!   poplibs usage `ld2xst64pace ..., 0b001001`; the exact field layout is a
//!   model assumption.
//! - Registers read in a bundle are read before either half writes.

use std::fmt;

/// What an operand position accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperandKind {
    /// An `$m` register.
    M,
    /// An even-aligned `$m` register pair `$mN:N+1`.
    MPair,
    /// An `$m` register post-incremented by the instruction: `$mN+=`.
    MInc,
    /// A post-incremented triple-packed address pair: `$mN:N+1+=`.
    MPairInc,
    /// An `$a` register.
    A,
    /// An even-aligned `$a` pair `$aN:N+1`.
    APair,
    /// A 4-aligned `$a` quad `$aN:N+3`.
    AQuad,
    /// An unsigned immediate of the given bit width.
    UImm(u8),
    /// A signed immediate of the given bit width.
    SImm(u8),
    /// A code address (label or absolute number, 4-byte aligned).
    Target,
    /// A control register of the `put`/`get` space.
    Csr,
    /// A control register of the `uput`/`uget` space.
    UCsr,
}

impl OperandKind {
    /// How the operand is written in a form signature (`$mN:N+1`, `simm`,
    /// `label`, ...), for messages that list an instruction's forms.
    pub fn syntax(self) -> &'static str {
        match self {
            OperandKind::M => "$m",
            OperandKind::MPair => "$mN:N+1",
            OperandKind::MInc => "$m+=",
            OperandKind::MPairInc => "$mN:N+1+=",
            OperandKind::A => "$a",
            OperandKind::APair => "$aN:N+1",
            OperandKind::AQuad => "$aN:N+3",
            OperandKind::UImm(_) => "zimm",
            OperandKind::SImm(_) => "simm",
            OperandKind::Target => "label",
            OperandKind::Csr | OperandKind::UCsr => "$CSR",
        }
    }

    /// Bits the operand takes in our encoding.
    pub fn bits(self) -> u32 {
        match self {
            OperandKind::M
            | OperandKind::MPair
            | OperandKind::MInc
            | OperandKind::MPairInc
            | OperandKind::A
            | OperandKind::APair
            | OperandKind::AQuad => 4,
            OperandKind::UImm(b) | OperandKind::SImm(b) => u32::from(b),
            OperandKind::Target => 20,
            OperandKind::Csr | OperandKind::UCsr => 8,
        }
    }

    /// Human description for error messages.
    pub fn describe(self) -> String {
        match self {
            OperandKind::M => "an $m register".into(),
            OperandKind::MPair => "an even $m register pair ($mN:N+1)".into(),
            OperandKind::MInc => "a post-incremented $m register ($mN+=)".into(),
            OperandKind::MPairInc => "a post-incremented $m pair ($mN:N+1+=)".into(),
            OperandKind::A => "an $a register".into(),
            OperandKind::APair => "an even $a register pair ($aN:N+1)".into(),
            OperandKind::AQuad => "an $a register quad ($aN:N+3, N a multiple of 4)".into(),
            OperandKind::UImm(b) => format!("an unsigned {b}-bit immediate"),
            OperandKind::SImm(b) => format!("a signed {b}-bit immediate"),
            OperandKind::Target => "a code label or address".into(),
            OperandKind::Csr => "a control register ($NAME or number)".into(),
            OperandKind::UCsr => "a worker control register ($NAME or number)".into(),
        }
    }
}

/// Which half of a bundle an instruction belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotClass {
    /// Main pipeline: memory, integer, control, system (`nop` is its no-op).
    Main,
    /// Auxiliary pipeline: floating point and `$a`-writing ops (`fnop`).
    Aux,
}

/// Which contexts may execute an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContextClass {
    /// Supervisor and workers.
    Any,
    /// Supervisor only (worker launch, sync, exchange).
    Supervisor,
    /// Workers only (everything touching the `$a` registers).
    Worker,
}

/// Broad instruction class, used for the `rpt`-body rules and by cost models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Memory loads (and CCCS loads).
    Load,
    /// Memory stores and combined load/store.
    Store,
    /// Integer arithmetic and moves.
    Alu,
    /// Branches, calls and `rpt` (not allowed inside a `rpt` body).
    Control,
    /// Context, sync, control registers and exchange (not allowed inside a `rpt` body).
    System,
    /// Vector floating point and conversions.
    Float,
    /// Accumulating matrix product (AMP) instructions.
    Amp,
}

/// One instruction form.
#[derive(Clone, Copy, Debug)]
pub struct InstrDesc {
    /// Its opcode (its index in [`ISA`]).
    pub opcode: Opcode,
    /// Assembler mnemonic.
    pub mnemonic: &'static str,
    /// Operand kinds in assembler order.
    pub operands: &'static [OperandKind],
    /// Bundle slot class.
    pub slot: SlotClass,
    /// Contexts allowed to execute it.
    pub context: ContextClass,
    /// Broad class.
    pub category: Category,
    /// Semantics (the doc comment of the opcode).
    pub doc: &'static str,
}

impl InstrDesc {
    /// Size in bytes of the instruction (every Tile Vertex instruction is 32-bit).
    pub const SIZE: u32 = 4;

    /// Whether the instruction exists only on FP8-capable machines (ipu21).
    pub fn needs_fp8(&self) -> bool {
        self.mnemonic.contains("f8")
    }

    /// Whether it may appear in a `rpt` body.
    pub fn allowed_in_rpt(&self) -> bool {
        !matches!(self.category, Category::Control | Category::System)
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.desc().mnemonic)
    }
}

impl Opcode {
    /// Its table entry.
    pub fn desc(self) -> &'static InstrDesc {
        &ISA[self as usize]
    }

    /// The opcode with table index `index`, if any.
    pub fn from_index(index: usize) -> Option<Opcode> {
        ISA.get(index).map(|d| d.opcode)
    }
}

/// All forms of a mnemonic, in table order.
pub fn forms_of(mnemonic: &str) -> impl Iterator<Item = &'static InstrDesc> + '_ {
    ISA.iter().filter(move |d| d.mnemonic == mnemonic)
}

macro_rules! isa_table {
    ($( $(#[doc = $doc:literal])* $name:ident = $mn:literal [$($op:expr),*] $slot:ident $ctx:ident $cat:ident; )*) => {
        /// Every instruction form; the discriminant is the index into [`ISA`]
        /// and the opcode field of our encoding.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Opcode {
            $( $(#[doc = $doc])* $name, )*
        }

        /// The instruction table, indexed by [`Opcode`].
        pub static ISA: &[InstrDesc] = &[
            $( InstrDesc {
                opcode: Opcode::$name,
                mnemonic: $mn,
                operands: &[$($op),*],
                slot: SlotClass::$slot,
                context: ContextClass::$ctx,
                category: Category::$cat,
                doc: concat!($($doc, "\n"),*),
            }, )*
        ];
    };
}

use OperandKind::{
    APair as AP, AQuad as AQ, MInc as MI, MPair as MP, MPairInc as MPI, SImm as S, Target as T,
    UImm as U, A, M,
};
const C: OperandKind = OperandKind::Csr;
const UC: OperandKind = OperandKind::UCsr;

isa_table! {
    // ---- loads ----
    /// `ld32 $aDst, $mBase, $mDelta, zimm12`: load 32 bits from `base + delta + imm*4`.
    Ld32A = "ld32" [A, M, M, U(12)] Main Worker Load;
    /// `ld32 $aDst, $mBase, $mDelta, $mOff`: load 32 bits from `base + delta + off*4`.
    Ld32AReg = "ld32" [A, M, M, M] Main Worker Load;
    /// `ld32 $mDst, $mBase, $mDelta, zimm12`: load 32 bits into the MRF.
    Ld32M = "ld32" [M, M, M, U(12)] Main Any Load;
    /// `ld32 $mDst, $mBase, $mDelta, $mOff`: load 32 bits into the MRF.
    Ld32MReg = "ld32" [M, M, M, M] Main Any Load;
    /// `ld32step $aDst, $mBase, $mDelta+=, simm12`: load from `base + delta`, then `delta += imm*4`.
    Ld32StepA = "ld32step" [A, M, MI, S(12)] Main Worker Load;
    /// `ld32step $mDst, $mBase, $mDelta+=, simm12`: as the `$a` form, into the MRF.
    Ld32StepM = "ld32step" [M, M, MI, S(12)] Main Any Load;
    /// `ld64 $aDst:Dst+1, $mBase, $mDelta, zimm12`: load 64 bits from `base + delta + imm*8`.
    Ld64 = "ld64" [AP, M, M, U(12)] Main Worker Load;
    /// `ld64 $aDst:Dst+1, $mBase, $mDelta, $mOff`: load 64 bits from `base + delta + off*8`.
    Ld64Reg = "ld64" [AP, M, M, M] Main Worker Load;
    /// `ld64step $aDst:Dst+1, $mBase, $mDelta+=, simm12`: load 64 bits, then `delta += imm*8`.
    Ld64Step = "ld64step" [AP, M, MI, S(12)] Main Worker Load;
    /// `ld128 $aDst:Dst+3, $mBase, $mDelta, zimm12`: load 128 bits from `base + delta + imm*16`; interleaved memory only.
    Ld128 = "ld128" [AQ, M, M, U(12)] Main Worker Load;
    /// `ld128 $aDst:Dst+3, $mBase, $mDelta, $mOff`: load 128 bits; interleaved memory only.
    Ld128Reg = "ld128" [AQ, M, M, M] Main Worker Load;
    /// `ld128step $aDst:Dst+3, $mBase, $mDelta+=, simm12`: load 128 bits, then `delta += imm*16`; interleaved memory only.
    Ld128Step = "ld128step" [AQ, M, MI, S(12)] Main Worker Load;
    /// `ldz16 $mDst, $mBase, $mDelta, zimm12`: load 16 bits from `base + delta + imm*2`, zero-extended.
    Ldz16 = "ldz16" [M, M, M, U(12)] Main Any Load;
    /// `ldz16step $mDst, $mBase, $mDelta+=, simm12`: load 16 bits zero-extended, then `delta += imm*2`.
    Ldz16Step = "ldz16step" [M, M, MI, S(12)] Main Any Load;
    /// `lds16 $mDst, $mBase, $mDelta, zimm12`: load 16 bits from `base + delta + imm*2`, sign-extended.
    Lds16 = "lds16" [M, M, M, U(12)] Main Any Load;
    /// `ldz8 $mDst, $mBase, $mDelta, zimm12`: load 8 bits from `base + delta + imm`, zero-extended.
    Ldz8 = "ldz8" [M, M, M, U(12)] Main Any Load;
    /// `lds8 $mDst, $mBase, $mDelta, zimm12`: load 8 bits from `base + delta + imm`, sign-extended.
    Lds8 = "lds8" [M, M, M, U(12)] Main Any Load;
    /// `ldb16 $aDst, $mBase, $mDelta, zimm12`: load 16 bits from `base + delta + imm*2` and broadcast to both halves of `$aDst`.
    Ldb16 = "ldb16" [A, M, M, U(12)] Main Worker Load;
    /// `ld2x64pace $aDst:Dst+3, $mAddr:Addr+1+=, $mStride, strimm2x2`: load 64 bits from packed address 0 into `$aDst:Dst+1` and from address 1 into `$aDst+2:Dst+3`; post-increment both.
    Ld2x64Pace = "ld2x64pace" [AQ, MPI, M, U(4)] Main Worker Load;
    /// `ld64putcs zimm8`: load 64 bits from `$CCCSLOAD` into AMP weight entry `$CWEI[imm]` (0..63), then `$CCCSLOAD += 8`.
    Ld64Putcs = "ld64putcs" [U(8)] Main Any Load;
    /// `ld128putcs zimm8`: load 128 bits from `$CCCSLOAD` (interleaved memory only) into weight entries `imm` and `imm+1` (imm even, below 64), then `$CCCSLOAD += 16`. Poplibs loads a whole panel with 32 of these.
    Ld128Putcs = "ld128putcs" [U(8)] Main Any Load;
    // ---- stores ----
    /// `st32 $aSrc, $mBase, $mDelta, zimm12`: store 32 bits at `base + delta + imm*4`.
    St32A = "st32" [A, M, M, U(12)] Main Worker Store;
    /// `st32 $aSrc, $mBase, $mDelta, $mOff`: store 32 bits at `base + delta + off*4`.
    St32AReg = "st32" [A, M, M, M] Main Worker Store;
    /// `st32 $mSrc, $mBase, $mDelta, zimm12`: store an MRF word.
    St32M = "st32" [M, M, M, U(12)] Main Any Store;
    /// `st32 $mSrc, $mBase, $mDelta, $mOff`: store an MRF word.
    St32MReg = "st32" [M, M, M, M] Main Any Store;
    /// `st32step $aSrc, $mBase, $mDelta+=, simm12`: store at `base + delta`, then `delta += imm*4`.
    St32StepA = "st32step" [A, M, MI, S(12)] Main Worker Store;
    /// `st32step $mSrc, $mBase, $mDelta+=, simm12`: store an MRF word, then `delta += imm*4`.
    St32StepM = "st32step" [M, M, MI, S(12)] Main Any Store;
    /// `st64 $aSrc:Src+1, $mBase, $mDelta, zimm12`: store 64 bits at `base + delta + imm*8`.
    St64 = "st64" [AP, M, M, U(12)] Main Worker Store;
    /// `st64 $aSrc:Src+1, $mBase, $mDelta, $mOff`: store 64 bits at `base + delta + off*8`.
    St64Reg = "st64" [AP, M, M, M] Main Worker Store;
    /// `st64step $aSrc:Src+1, $mBase, $mDelta+=, simm12`: store 64 bits, then `delta += imm*8`.
    St64Step = "st64step" [AP, M, MI, S(12)] Main Worker Store;
    /// `st64pace $aSrc:Src+1, $mAddr:Addr+1+=, $mStride, strimm2`: store 64 bits at packed address 0, post-increment it.
    St64Pace = "st64pace" [AP, MPI, M, U(2)] Main Worker Store;
    /// `ld2xst64pace $aDst:Dst+3, $aSrc:Src+1, $mAddr:Addr+1+=, $mStride, strimm3x2`: two 64-bit loads (packed addresses 0 and 1) into the quad and one 64-bit store of `$aSrc` (address 2), all post-incremented. The three accesses must not conflict.
    Ld2xSt64Pace = "ld2xst64pace" [AQ, AP, MPI, M, U(6)] Main Worker Store;
    /// `ldst64pace $aDst:Dst+1, $aSrc:Src+1, $mAddr:Addr+1+=, $mStride, strimm2x2`: 64-bit load from packed address 0 and 64-bit store to packed address 2 (selectors: load in bits 1:0, store in bits 3:2).
    LdSt64Pace = "ldst64pace" [AP, AP, MPI, M, U(4)] Main Worker Store;
    // ---- integer ----
    /// `tapack $mDst:Dst+1, $mAddr0, $mAddr1, $mAddr2`: pack three 21-bit addresses into the triple-packed format (field i at bit 21*i).
    Tapack = "tapack" [MP, M, M, M] Main Any Alu;
    /// `setzi $mDst, zimm20`: set a register to a zero-extended 20-bit immediate.
    SetziM = "setzi" [M, U(20)] Main Any Alu;
    /// `setzi $aDst, zimm20`: set an `$a` register to a zero-extended 20-bit immediate.
    SetziA = "setzi" [A, U(20)] Aux Worker Alu;
    /// `add $mDst, $mSrc0, $mSrc1`: wrapping 32-bit add.
    Add = "add" [M, M, M] Main Any Alu;
    /// `add $mDst, $mSrc0, simm16`: add a sign-extended immediate.
    AddImm = "add" [M, M, S(16)] Main Any Alu;
    /// `sub $mDst, $mSrc0, $mSrc1`: wrapping 32-bit subtract.
    Sub = "sub" [M, M, M] Main Any Alu;
    /// `sub $mDst, $mSrc0, simm16`: subtract a sign-extended immediate.
    SubImm = "sub" [M, M, S(16)] Main Any Alu;
    /// `mul $mDst, $mSrc0, $mSrc1`: low 32 bits of the product.
    Mul = "mul" [M, M, M] Main Any Alu;
    /// `mul $mDst, $mSrc0, simm16`: multiply by a sign-extended immediate.
    MulImm = "mul" [M, M, S(16)] Main Any Alu;
    /// `shl $mDst, $mSrc0, $mSrc1`: shift left by `src1 & 31`.
    Shl = "shl" [M, M, M] Main Any Alu;
    /// `shl $mDst, $mSrc0, zimm5`: shift left by an immediate.
    ShlImm = "shl" [M, M, U(5)] Main Any Alu;
    /// `shr $mDst, $mSrc0, $mSrc1`: logical shift right by `src1 & 31`.
    Shr = "shr" [M, M, M] Main Any Alu;
    /// `shr $mDst, $mSrc0, zimm5`: logical shift right by an immediate.
    ShrImm = "shr" [M, M, U(5)] Main Any Alu;
    /// `and $mDst, $mSrc0, $mSrc1`: bitwise and.
    And = "and" [M, M, M] Main Any Alu;
    /// `and $mDst, $mSrc0, zimm16`: bitwise and with a zero-extended immediate.
    AndImm = "and" [M, M, U(16)] Main Any Alu;
    /// `or $mDst, $mSrc0, $mSrc1`: bitwise or.
    Or = "or" [M, M, M] Main Any Alu;
    /// `or $mDst, $mSrc0, zimm16`: bitwise or with a zero-extended immediate.
    OrImm = "or" [M, M, U(16)] Main Any Alu;
    /// `cmpeq $mDst, $mSrc0, $mSrc1`: 1 if equal, else 0.
    Cmpeq = "cmpeq" [M, M, M] Main Any Alu;
    /// `cmpeq $mDst, $mSrc0, simm16`: 1 if equal to the immediate.
    CmpeqImm = "cmpeq" [M, M, S(16)] Main Any Alu;
    /// `cmpne $mDst, $mSrc0, $mSrc1`: 1 if different, else 0.
    Cmpne = "cmpne" [M, M, M] Main Any Alu;
    /// `cmpne $mDst, $mSrc0, simm16`: 1 if different from the immediate.
    CmpneImm = "cmpne" [M, M, S(16)] Main Any Alu;
    /// `cmpult $mDst, $mSrc0, $mSrc1`: 1 if `src0 < src1` unsigned.
    Cmpult = "cmpult" [M, M, M] Main Any Alu;
    /// `cmpult $mDst, $mSrc0, zimm16`: 1 if `src0 < imm` unsigned.
    CmpultImm = "cmpult" [M, M, U(16)] Main Any Alu;
    /// `cmpslt $mDst, $mSrc0, $mSrc1`: 1 if `src0 < src1` signed.
    Cmpslt = "cmpslt" [M, M, M] Main Any Alu;
    /// `cmpslt $mDst, $mSrc0, simm16`: 1 if `src0 < imm` signed.
    CmpsltImm = "cmpslt" [M, M, S(16)] Main Any Alu;
    /// `mov $mDst, $mSrc`: copy an MRF register.
    MovM = "mov" [M, M] Main Any Alu;
    /// `mov $aDst, $aSrc`: copy an ARF register.
    MovA = "mov" [A, A] Aux Worker Alu;
    /// `atom $mDst, $aSrc`: copy an ARF register into the MRF.
    Atom = "atom" [M, A] Main Worker Alu;
    /// `nop`: no operation (main slot).
    Nop = "nop" [] Main Any Alu;
    /// `fnop`: no operation (auxiliary slot).
    Fnop = "fnop" [] Aux Worker Alu;
    // ---- control ----
    /// `br $mTarget`: branch to the address in a register. Every taken branch, call and return costs the pipeline refill: its context issues again `MachineModel::branch_refill_cycles` after it (poplibs: `br $lr // 6 cycles`).
    Br = "br" [M] Main Any Control;
    /// `bri target`: branch to a label.
    Bri = "bri" [T] Main Any Control;
    /// `brz $mSrc, target`: branch if the register is zero.
    Brz = "brz" [M, T] Main Any Control;
    /// `brnz $mSrc, target`: branch if the register is not zero.
    Brnz = "brnz" [M, T] Main Any Control;
    /// `brnzdec $mSrc, target`: branch if the register is not zero; the register is decremented either way (wrapping). A count of n-1 runs a loop n times, as poplibs uses it.
    Brnzdec = "brnzdec" [M, T] Main Any Control;
    /// `call $mLink, target`: write the return address (pc + 4) into `$mLink` and branch.
    Call = "call" [M, T] Main Any Control;
    /// `rpt $mCount, zimm8`: zero-overhead loop: run the next `imm + 1` bundles (8-byte aligned, bundles only, no control or system instructions) `count` times; a count of 0 branches over them. The repeat counter is 16-bit on ipu2/ipu21 (`MachineModel::rpt_count_max`): a larger count faults (the hardware's behaviour is not public; poplibs masks counts before `rpt`).
    Rpt = "rpt" [M, U(8)] Main Worker Control;
    /// `rpt zimm12, zimm8`: as `rpt $mCount, zimm8` with an immediate count.
    RptImm = "rpt" [U(12), U(8)] Main Worker Control;
    // ---- contexts ----
    /// `run $mEntry, $mVBase, zimm16`: start one worker at `$mEntry` on the lowest free worker context, with `$mvertex_base = $mVBase + imm*4`. Faults when no worker context is free. The worker holds its barrel slot from the `run` on and first issues `MachineModel::worker_start_latency` cycles after it (model assumption).
    Run = "run" [M, M, U(16)] Main Supervisor System;
    /// `runall $mEntry, $mVBase, zimm16`: start all six workers at `$mEntry`; worker n gets `$mvertex_base = $mVBase + n*imm*4` and `$m12` (`$mworker_base`) = n. Faults if any worker is still active. Start timing as `run`.
    Runall = "runall" [M, M, U(16)] Main Supervisor System;
    /// `exitz $mSrc`: end the context; its exit status is `src == 0`. In the supervisor it ends the tile's program.
    Exitz = "exitz" [M] Main Any System;
    /// `exitnz $mSrc`: end the context; its exit status is `src != 0`.
    Exitnz = "exitnz" [M] Main Any System;
    /// `sync zimm4`: wait on a sync zone: 2 (`TEXCH_SYNCZONE_LOCAL`) waits until every worker has exited; 3 (`TEXCH_SYNCZONE_INTERNAL`) is the chip-wide BSP barrier, released `sync_latency` cycles after the last participant arrives. Other zones are external and not modelled.
    Sync = "sync" [U(4)] Main Supervisor System;
    /// `sans zimm4`: announce arrival at an internal sync zone without waiting; a later `sync` on the same zone waits for the release, which counts this tile's arrival from the `sans` (a second `sans` before the `sync` does not move it); the `sync` does not wait if the release came before it. Exchange data must still arrive by the release (model assumption: the public material names the instruction only).
    Sans = "sans" [U(4)] Main Supervisor System;
    // ---- control registers ----
    /// `put $CSR, $mSrc`: write a control register. A write to an exchange pointer register takes 13 cycles and takes effect when it completes.
    Put = "put" [C, M] Main Any System;
    /// `get $mDst, $CSR`: read a control register.
    Get = "get" [M, C] Main Any System;
    /// `uput $CSR, $aSrc`: write a worker control register (e.g. `$TAS`).
    Uput = "uput" [UC, A] Aux Worker Alu;
    /// `uget $aDst, $CSR`: read a worker control register.
    Uget = "uget" [A, UC] Aux Worker Alu;
    // ---- vector floating point (IEEE round-to-nearest-even) ----
    /// `f32v2add $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: two f32 adds.
    F32v2Add = "f32v2add" [AP, AP, AP] Aux Worker Float;
    /// `f32v2sub $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: two f32 subtracts.
    F32v2Sub = "f32v2sub" [AP, AP, AP] Aux Worker Float;
    /// `f32v2mul $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: two f32 multiplies.
    F32v2Mul = "f32v2mul" [AP, AP, AP] Aux Worker Float;
    /// `f32v2axpy $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: `dst = $TAS * src0 + src1` per lane, rounded once per operation (the hardware's pipelined variant is simplified to an immediate result: model assumption).
    F32v2Axpy = "f32v2axpy" [AP, AP, AP] Aux Worker Float;
    /// `f32v2max $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: two f32 maxima (IEEE maxNum: a NaN operand yields the other operand).
    F32v2Max = "f32v2max" [AP, AP, AP] Aux Worker Float;
    /// `f32v2min $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: two f32 minima (IEEE minNum).
    F32v2Min = "f32v2min" [AP, AP, AP] Aux Worker Float;
    /// `f16v4add $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: four f16 adds.
    F16v4Add = "f16v4add" [AP, AP, AP] Aux Worker Float;
    /// `f16v4mul $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: four f16 multiplies.
    F16v4Mul = "f16v4mul" [AP, AP, AP] Aux Worker Float;
    /// `f16v4max $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: four f16 maxima (IEEE maxNum).
    F16v4Max = "f16v4max" [AP, AP, AP] Aux Worker Float;
    /// `f16v4min $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1`: four f16 minima (IEEE minNum).
    F16v4Min = "f16v4min" [AP, AP, AP] Aux Worker Float;
    /// `f16v4cmac $aSrc0:Src0+1, $aSrc1:Src1+1`: `$AACC[i] += src0[i] * src1[i]` for 4 f16 lanes, accumulated in f32.
    F16v4Cmac = "f16v4cmac" [AP, AP] Aux Worker Float;
    /// `f16v8acc $aSrc:Src+3`: `$AACC[i] += src[i]` for 8 f16 lanes, accumulated in f32.
    F16v8Acc = "f16v8acc" [AQ] Aux Worker Float;
    /// `f32v4acc $aSrc:Src+3`: `$AACC[i] += src[i]` for 4 f32 lanes.
    F32v4Acc = "f32v4acc" [AQ] Aux Worker Float;
    /// `f32v2aop $aSrc0:Src0+1, $aSrc1:Src1+1, zimm4`: accumulating 2x2 outer product, `$AACC[2i+j] += src0[i] * src1[j]`.
    F32v2Aop = "f32v2aop" [AP, AP, U(4)] Aux Worker Float;
    /// `f32v2gina $aDst:Dst+1, $aSrc:Src+1, zimm3`: read accumulators `$AACC[2k..2k+2]` (k = imm) as f32 into dst and replace them with src (`$azeros` clears).
    F32v2Gina = "f32v2gina" [AP, AP, U(3)] Aux Worker Float;
    /// `f32v2tof16 $aDst, $aSrc:Src+1`: two f32 to two packed f16 (lane 0 low), RNE, overflow to infinity.
    F32v2ToF16 = "f32v2tof16" [A, AP] Aux Worker Float;
    /// `f16v2tof32 $aDst:Dst+1, $aSrc`: two packed f16 to two f32 (exact).
    F16v2ToF32 = "f16v2tof32" [AP, A] Aux Worker Float;
    /// `f32tof16 $aDst, $aSrc`: one f32 to f16 in the low half (high half zero).
    F32ToF16 = "f32tof16" [A, A] Aux Worker Float;
    /// `f16tof32 $aDst, $aSrc`: the low f16 half to f32.
    F16ToF32 = "f16tof32" [A, A] Aux Worker Float;
    /// `f16v4tof8 $aDst, $aSrc:Src+1, simm6`: four f16 to four f8E4M3FNUZ bytes with power-of-two scale s in -31..31: byte = f8(x * 2^-s) (so that value = f8 * 2^s), RNE, saturating to +-240, NaN and infinities to 0x80 (model assumption for the instruction's name and operand form; the format is the IPU's F143).
    F16v4ToF8 = "f16v4tof8" [A, AP, S(6)] Aux Worker Float;
    /// `f8v4tof16 $aDst:Dst+1, $aSrc, simm6`: four f8E4M3FNUZ bytes to four f16, each multiplied by 2^s.
    F8v4ToF16 = "f8v4tof16" [AP, A, S(6)] Aux Worker Float;
    // ---- transcendentals (graphcore/ipu_assembly_support hover docs give the
    // operand forms `$aDst0, $aSrc0`; results are the float64 function
    // rounded to nearest-even in the destination format: our model, the
    // hardware's accuracy is not public). Each holds its worker for
    // `MachineModel::transcendental_issues` issue slots (poplibs' averages).
    /// `f16v2exp $aDst, $aSrc`: `e^x` of both f16 halves.
    F16v2Exp = "f16v2exp" [A, A] Aux Worker Float;
    /// `f16v2exp2 $aDst, $aSrc`: `2^x` of both f16 halves.
    F16v2Exp2 = "f16v2exp2" [A, A] Aux Worker Float;
    /// `f16v2ln $aDst, $aSrc`: natural logarithm of both f16 halves (NaN below 0, -inf at 0).
    F16v2Ln = "f16v2ln" [A, A] Aux Worker Float;
    /// `f16v2log2 $aDst, $aSrc`: base-2 logarithm of both f16 halves.
    F16v2Log2 = "f16v2log2" [A, A] Aux Worker Float;
    /// `f16v2tanh $aDst, $aSrc`: hyperbolic tangent of both f16 halves (poplibs' GELU kernel issues it).
    F16v2Tanh = "f16v2tanh" [A, A] Aux Worker Float;
    /// `f16v2sigm $aDst, $aSrc`: logistic sigmoid `1 / (1 + e^-x)` of both f16 halves.
    F16v2Sigm = "f16v2sigm" [A, A] Aux Worker Float;
    /// `f32exp $aDst, $aSrc`: `e^x` of an f32.
    F32Exp = "f32exp" [A, A] Aux Worker Float;
    /// `f32ln $aDst, $aSrc`: natural logarithm of an f32.
    F32Ln = "f32ln" [A, A] Aux Worker Float;
    /// `f32oox $aDst, $aSrc`: single-precision reciprocal `1 / x` (hover doc: "reciprocal").
    F32Oox = "f32oox" [A, A] Aux Worker Float;
    /// `f32oorx $aDst, $aSrc`: single-precision reciprocal square root `1 / sqrt(x)` (hover doc).
    F32Oorx = "f32oorx" [A, A] Aux Worker Float;
    /// `f32sqrt $aDst, $aSrc`: square root of an f32 (hover doc).
    F32Sqrt = "f32sqrt" [A, A] Aux Worker Float;
    /// `f32tanh $aDst, $aSrc`: hyperbolic tangent of an f32 (hover doc).
    F32Tanh = "f32tanh" [A, A] Aux Worker Float;
    /// `f32sigm $aDst, $aSrc`: logistic sigmoid of an f32.
    F32Sigm = "f32sigm" [A, A] Aux Worker Float;
    // ---- accumulating matrix product (AMP) ----
    /// `f32sisov2amp $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1, zimm4`: f32 AMP, 16 MAC: 2 f32 inputs (input channels 2p, 2p+1 of the current position, p = phase = imm & 3) times 8 output channels; 2 f32 partials added to output channels 2p, 2p+1. After phase 3 the position completes; dst receives 2 results of the previous position per instruction (4-instruction lag). Weights: `$CWEI[k*4 + p]` holds the 2 f32 weights for output k, inputs 2p..2p+1.
    F32SisoV2Amp = "f32sisov2amp" [AP, AP, AP, U(4)] Aux Worker Amp;
    /// `f16v4hihov4amp $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1, zimm4`: f16 AMP with f16 partials, 64 MAC: 4 f16 inputs (input channels 4p..4p+3, p = imm & 3, poplibs' `TAMP_F16V4_E4_P0..P3`) times 16 output channels; 4 f16 partials added to outputs 4p..4p+3. A position (16 inputs x 16 outputs) completes after phase 3; each instruction's dst receives 4 f16 results (outputs 4p..4p+3) of the previously completed position: the 4-instruction lag of the ISA tables, so the first 4 instructions are warm-up (zeros). Weights: `$CWEI[k*4 + c/4]` lane `c%4` is `W[k][c]`. Accumulation in f32, rounded to f16 on output (model assumption).
    F16V4HihoV4Amp = "f16v4hihov4amp" [AP, AP, AP, U(4)] Aux Worker Amp;
    /// `f16v4sisoamp $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1, zimm4`: f16 AMP with f32 partials, 32 MAC: 4 f16 inputs (channels 4p..4p+3) times 8 outputs; 2 f32 partials/results per instruction (outputs 2p, 2p+1), same 4-instruction lag; weights as `f16v4hihov4amp` for k < 8.
    F16V4SisoAmp = "f16v4sisoamp" [AP, AP, AP, U(4)] Aux Worker Amp;
    /// `f8v8hihov4amp $aDst:Dst+1, $aSrc0:Src0+1, $aSrc1:Src1+1, zimm4`: FP8 AMP (ipu21), 128 MAC: 8 f8E4M3FNUZ inputs (channels 8p..8p+7) times 16 outputs, f16 partials/results as `f16v4hihov4amp`; weights: `$CWEI[k*4 + p]` byte `i` is `W[k][8p+i]`. Products use the unscaled f8 values; tensor scales are applied by the codelet (model assumption).
    F8V8HihoV4Amp = "f8v8hihov4amp" [AP, AP, AP, U(4)] Aux Worker Amp;
    // ---- exchange ----
    /// `send $mAddr, zimm12`: send `imm` words from memory at `$mAddr`, one word per cycle on the tile's exchange port (4 B/cycle), starting when the port is free. Exchange packets carry no destination: a word sent at cycle t reaches tile r at `t + latency(s, r)` only if r's `$INCOMING_MUX` selects this tile then.
    Send = "send" [M, U(12)] Main Supervisor System;
    /// `send zimm12`: send `imm` words from `$OUTGOING_BASE`, which advances by `4*imm`.
    SendOutgoing = "send" [U(12)] Main Supervisor System;
    // ---- sub-word shuffles ----
    /// `sort4x16lo $aDst, $aSrc0, $aSrc1`: the low 16-bit halves of both sources, `dst = src0[15:0] | src1[15:0] << 16` (graphcore/ipu_assembly_support and the Colossus LLVM tests: `sort4x16lo $m0, $m0, $m15` zero-extends the low half). Packs two vertically adjacent f16 into one word in transposes.
    Sort4x16LoA = "sort4x16lo" [A, A, A] Aux Worker Alu;
    /// `sort4x16hi $aDst, $aSrc0, $aSrc1`: the high 16-bit halves of both sources, `dst = src0[31:16] | src1[31:16] << 16`.
    Sort4x16HiA = "sort4x16hi" [A, A, A] Aux Worker Alu;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_opcode_and_fits_the_encoding() {
        assert!(ISA.len() <= 128, "opcode field is 7 bits");
        for (i, d) in ISA.iter().enumerate() {
            assert_eq!(d.opcode as usize, i, "{}", d.mnemonic);
            let bits: u32 = d.operands.iter().map(|o| o.bits()).sum();
            assert!(bits <= 24, "{} needs {bits} operand bits", d.mnemonic);
            assert!(!d.doc.is_empty(), "{} has no semantics doc", d.mnemonic);
        }
    }

    #[test]
    fn forms_with_one_mnemonic_differ_in_operands() {
        for a in ISA {
            for b in ISA {
                if a.opcode < b.opcode && a.mnemonic == b.mnemonic {
                    assert_ne!(a.operands, b.operands, "{}", a.mnemonic);
                }
            }
        }
    }
}
