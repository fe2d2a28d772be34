//! The one way codelets write code: `ipu` ops appended to a tile, with the
//! issue slots counted as they are emitted.
//!
//! A codelet never formats assembly text and never keeps instruction counts
//! by hand: it calls [`Emitter::solo`], [`Emitter::bundle`], [`Emitter::rpt`]
//! and friends, and reads [`Emitter::issues`] at the points its cycle
//! estimate needs (before a loop, per iteration, after it). The assembly
//! text is a view printed from the ops (`emit::tile_asm`); the executable
//! is encoded from them directly.
//!
//! Counting rules (the tile's issue model, `ipu-machine.md`): a solo
//! instruction or a bundle is one issue, except that a transcendental
//! holds its worker for `pipeline::issue_slots` issues (the machine
//! model's `transcendental_issues`; every machine model has the same, a
//! test in `ipu-arch` holds them equal); a bundle must start 8-byte
//! aligned, so the emitter inserts a `nop` (one issue) before a bundle or a
//! loop head at an odd word; the body of a `rpt` is not counted where it is
//! emitted (it repeats): [`Emitter::rpt`] returns its length instead.
//! Supervisor code also keeps its instructions ([`Emitter::supervisor_code`])
//! so that estimates can schedule them under the supervisor pipeline rules
//! (`ipuc_ipu_arch::pipeline`): there an issue is not a cycle.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use ipuc_dialects::ipu::{self, build, Operand, Register, SectionKind};
use ipuc_ipu_arch::encoding::Instr;
use ipuc_ipu_arch::isa::forms_of;
use ipuc_ipu_arch::pipeline::issue_slots;
use ipuc_ipu_arch::MachineModel;

use ipuc_ir::{
    Attribute, BlockId, Context, Dictionary, Location, OpId, OperationName, OperationState,
};

use crate::emit::verify_isa::timing_instr;

/// One instruction: mnemonic and operands.
#[derive(Clone, Debug)]
pub struct Inst {
    /// The mnemonic.
    pub mnemonic: &'static str,
    /// The operands.
    pub operands: Vec<Operand>,
}

/// `mnemonic operands`.
pub fn inst(mnemonic: &'static str, operands: impl Into<Vec<Operand>>) -> Inst {
    Inst {
        mnemonic,
        operands: operands.into(),
    }
}

/// `ld32 dst, $mvertex_base, $mzero, word`: word `word` of the worker's
/// vertex state (its pointers, counts and constants, see
/// [`super::launch::emit_vertex_state`]).
pub fn load_state_word(dst: Operand, word: i64) -> Inst {
    inst("ld32", [dst, op::vertex_base(), op::mzero(), op::imm(word)])
}

/// `ld64step $aDST:DST+1, $mzero, $mPTR+=, 1`: the next 64 bits at `$mPTR`
/// into a register pair, `$mPTR` stepping on by 8 bytes.
pub fn ld64_next(dst_pair: u8, ptr: u8) -> Inst {
    inst(
        "ld64step",
        [
            op::a_pair(dst_pair),
            op::mzero(),
            op::m_inc(ptr),
            op::imm(1),
        ],
    )
}

/// `st64step $aSRC:SRC+1, $mzero, $mPTR+=, 1`: a register pair to the next
/// 64 bits at `$mPTR`, `$mPTR` stepping on by 8 bytes.
pub fn st64_next(src_pair: u8, ptr: u8) -> Inst {
    inst(
        "st64step",
        [
            op::a_pair(src_pair),
            op::mzero(),
            op::m_inc(ptr),
            op::imm(1),
        ],
    )
}

/// `ld2xst64pace $a0:3, $a4:5, $m4:5+=, $mzero, 0`: a paced stream's
/// bundle, loading the next two words (of the streams `tapack`ed into
/// `$m4:5`) into `$a0:1` and `$a2:3` and storing `$a4:5`.
pub fn ld2xst64_stream() -> Inst {
    inst(
        "ld2xst64pace",
        [
            op::a_quad(0),
            op::a_pair(4),
            op::m_pair_inc(4),
            op::mzero(),
            op::imm(0),
        ],
    )
}

/// `ldst64pace $aL:L+1, $aS:S+1, $m4:5+=, $mzero, 0`: a paced stream's
/// bundle of one word each way, loading the next word (of the streams
/// `tapack`ed into `$m4:5`) into the pair at `load` and storing the pair
/// at `store`.
pub fn ldst64_stream(load: u8, store: u8) -> Inst {
    inst(
        "ldst64pace",
        [
            op::a_pair(load),
            op::a_pair(store),
            op::m_pair_inc(4),
            op::mzero(),
            op::imm(0),
        ],
    )
}

/// Operand constructors, named after the assembler's spelling.
pub mod op {
    use super::{Operand, Register};

    fn reg(name: String, last: Option<u8>, inc: bool) -> Operand {
        Operand::Reg(Register { name, last, inc })
    }
    /// `$mN`.
    pub fn m(n: u8) -> Operand {
        reg(format!("m{n}"), None, false)
    }
    /// `$mN+=` (post-incremented).
    pub fn m_inc(n: u8) -> Operand {
        reg(format!("m{n}"), None, true)
    }
    /// `$mN:N+1`.
    pub fn m_pair(n: u8) -> Operand {
        reg(format!("m{n}"), Some(n + 1), false)
    }
    /// `$mN:N+1+=` (post-incremented pair).
    pub fn m_pair_inc(n: u8) -> Operand {
        reg(format!("m{n}"), Some(n + 1), true)
    }
    /// `$aN`.
    pub fn a(n: u8) -> Operand {
        reg(format!("a{n}"), None, false)
    }
    /// `$aN:N+1`.
    pub fn a_pair(n: u8) -> Operand {
        reg(format!("a{n}"), Some(n + 1), false)
    }
    /// `$aN:N+3`.
    pub fn a_quad(n: u8) -> Operand {
        reg(format!("a{n}"), Some(n + 3), false)
    }
    /// `$mzero`.
    pub fn mzero() -> Operand {
        reg("mzero".into(), None, false)
    }
    /// `$azero`.
    pub fn azero() -> Operand {
        reg("azero".into(), None, false)
    }
    /// `$azeros` (the zero pair).
    pub fn azeros() -> Operand {
        reg("azeros".into(), None, false)
    }
    /// `$lr`, the link register of `call` and `br`.
    pub fn reg_lr() -> Operand {
        reg("lr".into(), None, false)
    }
    /// `$mvertex_base`.
    pub fn vertex_base() -> Operand {
        reg("mvertex_base".into(), None, false)
    }
    /// `$mworker_base`.
    pub fn worker_base() -> Operand {
        reg("mworker_base".into(), None, false)
    }
    /// A control register `$NAME`.
    pub fn csr(name: &str) -> Operand {
        Operand::Csr(name.into())
    }
    /// An immediate.
    pub fn imm(v: i64) -> Operand {
        Operand::Imm(v)
    }
    /// A label or predefined constant.
    pub fn sym(name: impl Into<String>) -> Operand {
        Operand::Symbol(name.into())
    }
    /// An assembler expression.
    pub fn expr(text: impl Into<String>) -> Operand {
        Operand::Expr(text.into())
    }
}

/// Appends `ipu` ops to one tile and counts issue slots.
pub struct Emitter<'c> {
    ctx: &'c mut Context,
    tile: BlockId,
    section: Option<BlockId>,
    loc: Location,
    /// 4-byte words in the current code section (sections start 8-aligned).
    words: u64,
    /// Issues emitted outside `rpt` bodies since the section was opened.
    issues: u64,
    /// Whether the current section is supervisor code.
    supervisor: bool,
    /// The supervisor section's solo instructions so far, for timing.
    supervisor_code: Vec<Instr>,
    /// The machine whose issue costs are counted.
    machine: MachineModel,
    /// Launch shapes emitted on this tile as subroutines, each with the
    /// instance that holds its code (see [`super::subroutine`]).
    launches: HashMap<super::subroutine::ShapeKey, String>,
    /// The attributes of the instructions emitted so far, shared.
    attrs: InstAttrs,
    /// Issue slots per mnemonic (the ISA table is searched by name).
    slots: HashMap<&'static str, u64>,
    /// How many times each [`Emitter::fresh_label`] base was asked for.
    fresh: HashMap<String, u32>,
    /// How many fresh labels were asked for in all.
    fresh_asked: u64,
}

/// The attributes of `ipu.inst` and `ipu.directive` ops, made once per
/// tile and shared by every op that has them: a tile's code repeats the
/// same instructions thousands of times (a `nop` per delay cycle, the
/// same loads in every launch), and building an operand's attribute
/// takes several allocations. An instruction seen before gets a clone of
/// its first occurrence's dictionary (one reference count, see
/// [`Dictionary`]); a new one is built from the shared operand
/// attributes.
struct InstAttrs {
    name: OperationName,
    directive: OperationName,
    /// Whether `mnemonic` and `operands` are inherent (properties).
    inherent: bool,
    /// Whether a directive's `name` and `args` are.
    directive_inherent: bool,
    /// `mnemonic`, `operands`, `name` and `args`.
    keys: [Arc<str>; 4],
    mnemonics: HashMap<&'static str, Attribute>,
    operands: HashMap<Operand, Attribute>,
    /// Each instruction's dictionary, by mnemonic and operands.
    insts: HashMap<(&'static str, Vec<Operand>), Dictionary>,
}

impl InstAttrs {
    fn new(ctx: &Context) -> Self {
        let name = ctx.op_name(ipu::INST);
        let inherent = name.is_inherent_attr("mnemonic");
        debug_assert_eq!(inherent, name.is_inherent_attr("operands"));
        let directive = ctx.op_name(ipu::DIRECTIVE);
        let directive_inherent = directive.is_inherent_attr("name");
        debug_assert_eq!(directive_inherent, directive.is_inherent_attr("args"));
        InstAttrs {
            name,
            directive,
            inherent,
            directive_inherent,
            keys: ["mnemonic", "operands", "name", "args"].map(Arc::from),
            mnemonics: HashMap::default(),
            operands: HashMap::default(),
            insts: HashMap::default(),
        }
    }

    /// The shared attribute of operand `o`.
    fn operand(&mut self, o: &Operand) -> Attribute {
        match self.operands.get(o) {
            Some(a) => a.clone(),
            None => {
                let a = o.to_attr();
                self.operands.insert(o.clone(), a.clone());
                a
            }
        }
    }

    /// The operands' list attribute.
    fn list(&mut self, operands: &[Operand]) -> Attribute {
        Attribute::array(operands.iter().map(|o| self.operand(o)).collect())
    }

    /// An op named `name` with `attrs` where `OperationState::attr` would
    /// put them (properties, when the op declares them).
    fn with(
        name: &OperationName,
        inherent: bool,
        attrs: Dictionary,
        loc: Location,
    ) -> OperationState {
        let mut state = OperationState::new(name.clone(), loc);
        if inherent {
            state.properties = Some(attrs);
        } else {
            state.attributes = attrs;
        }
        state
    }

    /// The state of `ipu.inst` `i`, as [`build::inst`] makes it.
    fn state(&mut self, i: Inst, loc: Location) -> OperationState {
        let key = (i.mnemonic, i.operands);
        let attrs = match self.insts.get(&key) {
            Some(d) => d.clone(),
            None => {
                let mnemonic = self
                    .mnemonics
                    .entry(key.0)
                    .or_insert_with(|| Attribute::string(key.0))
                    .clone();
                let operands = self.list(&key.1);
                let mut attrs = Dictionary::new();
                attrs.set_shared(&self.keys[0], mnemonic);
                attrs.set_shared(&self.keys[1], operands);
                self.insts.insert(key, attrs.clone());
                attrs
            }
        };
        Self::with(&self.name, self.inherent, attrs, loc)
    }

    /// The state of `ipu.directive` `.name args`, as [`build::directive`]
    /// makes it.
    fn directive_state(&mut self, name: &str, args: &[Operand], loc: Location) -> OperationState {
        let mut attrs = Dictionary::new();
        attrs.set_shared(&self.keys[2], Attribute::string(name));
        let args = self.list(args);
        attrs.set_shared(&self.keys[3], args);
        Self::with(&self.directive, self.directive_inherent, attrs, loc)
    }
}

impl<'c> Emitter<'c> {
    /// The machine whose issue costs are counted.
    pub fn machine(&self) -> &MachineModel {
        &self.machine
    }

    /// Emits into the body block of an `ipu.tile`, every op at `loc`.
    pub fn new(ctx: &'c mut Context, tile_body: BlockId, loc: Location) -> Self {
        let attrs = InstAttrs::new(ctx);
        Emitter {
            ctx,
            tile: tile_body,
            section: None,
            loc,
            words: 0,
            issues: 0,
            supervisor: false,
            supervisor_code: Vec::new(),
            machine: MachineModel::c600(),
            launches: HashMap::default(),
            attrs,
            slots: HashMap::default(),
            fresh: HashMap::default(),
            fresh_asked: 0,
        }
    }

    /// The subroutine instance on this tile whose code a launch of `shape`
    /// shares, if one was emitted.
    pub fn shared_launch(&self, shape: &super::subroutine::ShapeKey) -> Option<&str> {
        self.launches.get(shape).map(String::as_str)
    }

    /// Records subroutine `name` as the holder of `shape`'s code.
    pub fn record_launch(&mut self, shape: super::subroutine::ShapeKey, name: &str) {
        self.launches
            .entry(shape)
            .or_insert_with(|| name.to_string());
    }

    /// Appends a copy of each of `sections` (detached section ops, as
    /// [`super::instance_memo`] keeps them) to the tile, and leaves no
    /// section open: the next instruction opens `.text` unless a section
    /// is opened first.
    pub fn append_copies(&mut self, sections: &[OpId]) {
        for &s in sections {
            let copy = self.ctx.clone_op(s, &mut Default::default());
            self.ctx.append_op(self.tile, copy);
        }
        self.close_section();
    }

    /// Leaves the current section: what is emitted next opens `.text`
    /// unless a section is opened first.
    pub fn close_section(&mut self) {
        self.section = None;
        self.words = 0;
        self.issues = 0;
        self.supervisor = false;
        self.supervisor_code.clear();
    }

    /// Puts the sections emitted from tile op `first` on (an index into
    /// [`Emitter::tile_ops`]) into scope `scope` ([`super::scope`]). Later
    /// launches share no code with the scoped ones: their labels are the
    /// scope's now.
    pub fn scope_since(&mut self, first: usize, scope: &str) {
        let sections = self.tile_ops()[first..].to_vec();
        super::scope::scope_sections(self.ctx, &sections, scope);
        self.launches.clear();
        self.section = None;
    }

    /// The supervisor instructions emitted since the current supervisor
    /// section began (operands as `timing_instr` resolves them).
    pub fn supervisor_code(&self) -> &[Instr] {
        &self.supervisor_code
    }

    /// The ops of the tile body so far (its sections), in order.
    pub fn tile_ops(&self) -> Vec<OpId> {
        self.ctx.block_ops_vec(self.tile)
    }

    /// The context, for rewrites of what was emitted (see
    /// [`super::subroutine`]).
    pub fn context(&mut self) -> &mut Context {
        self.ctx
    }

    /// Issues emitted outside `rpt` bodies since the current section began.
    pub fn issues(&self) -> u64 {
        self.issues
    }

    fn append(&mut self, op: OpId) {
        let block = match self.section {
            Some(b) => b,
            None => self.open(".text", Some("ax"), SectionKind::Supervisor),
        };
        self.ctx.append_op(block, op);
    }

    fn open(&mut self, name: &str, flags: Option<&str>, kind: SectionKind) -> BlockId {
        let (op, body) = build::section(self.ctx, name, flags, kind, self.loc.clone());
        self.ctx.append_op(self.tile, op);
        self.section = Some(body);
        self.words = 0;
        self.issues = 0;
        self.supervisor = kind == SectionKind::Supervisor;
        self.supervisor_code.clear();
        body
    }

    /// Opens code section `name` (flags `ax`) running in `kind`.
    pub fn code_section(&mut self, name: &str, kind: SectionKind) {
        self.open(name, Some("ax"), kind);
    }

    /// Opens data section `name` (flags `aw`).
    pub fn data_section(&mut self, name: &str) {
        self.open(name, Some("aw"), SectionKind::Supervisor);
    }

    /// `name:`.
    pub fn label(&mut self, name: &str) {
        let op = build::label(self.ctx, name, self.loc.clone());
        self.append(op);
    }

    /// A name for a local label: `base` the first time this emitter is
    /// asked for it, `base_N` the N-th time after. Code emitted twice with
    /// the same tag (a flash-style attention's identical chunks share
    /// their workers and vertex states, each with its own supervisor
    /// loop) thus defines each label once.
    pub fn fresh_label(&mut self, base: &str) -> String {
        self.fresh_asked += 1;
        let n = self.fresh.entry(base.to_string()).or_insert(0);
        let name = match *n {
            0 => base.to_string(),
            k => format!("{base}_{k}"),
        };
        *n += 1;
        name
    }

    /// How many labels [`Emitter::fresh_label`] made so far: code that
    /// asked for one depends on what the tile asked before
    /// ([`super::instance_memo`] copies no such instance).
    pub fn fresh_labels_made(&self) -> u64 {
        self.fresh_asked
    }

    /// A loop head or `rpt` target: a `nop` first if it would be misaligned.
    pub fn aligned_label(&mut self, name: &str) {
        self.align_code();
        self.label(name);
    }

    /// `.name args`.
    pub fn directive(&mut self, name: &str, args: &[Operand]) {
        let state = self.attrs.directive_state(name, args, self.loc.clone());
        let op = self.ctx.create_op(state);
        self.append(op);
    }

    /// `.globl name`, `.type name, @function` and `name:`.
    pub fn function(&mut self, name: &str) {
        self.directive("globl", &[op::sym(name)]);
        self.directive("type", &[op::sym(name), Operand::At("function".into())]);
        self.label(name);
    }

    /// `.type name, @function` and `name:` at an 8-byte boundary (a worker
    /// entry: `.align 8` first).
    pub fn worker_entry(&mut self, name: &str) {
        self.directive("align", &[op::imm(8)]);
        self.directive("type", &[op::sym(name), Operand::At("function".into())]);
        self.label(name);
    }

    /// `.size name, . - name`.
    pub fn size_of(&mut self, name: &str) {
        self.directive("size", &[op::sym(name), op::expr(format!(". - {name}"))]);
    }

    /// `.word` values (data sections).
    pub fn words(&mut self, values: &[u32]) {
        let args: Vec<Operand> = values.iter().map(|&v| op::imm(i64::from(v))).collect();
        self.directive("word", &args);
    }

    /// Issues `i` holds its context for (1 unless it is a transcendental).
    fn slots(&mut self, i: &Inst) -> u64 {
        let machine = &self.machine;
        *self.slots.entry(i.mnemonic).or_insert_with(|| {
            forms_of(i.mnemonic)
                .map(|d| u64::from(issue_slots(d.opcode, machine)))
                .max()
                .unwrap_or(1)
        })
    }

    /// Issues of a bundle: the larger of its halves'.
    fn bundle_slots(&mut self, main: &Inst, aux: &Inst) -> u64 {
        self.slots(main).max(self.slots(aux))
    }

    fn inst_op(&mut self, i: Inst) -> OpId {
        let state = self.attrs.state(i, self.loc.clone());
        self.ctx.create_op(state)
    }

    /// A solo instruction: one issue (a transcendental's issue slots).
    pub fn solo(&mut self, i: Inst) {
        let slots = self.slots(&i);
        if self.supervisor {
            // An instruction the ISA does not know is reported by
            // `ipu-verify-isa` at emission; timing just skips it.
            if let Some(t) = timing_instr(i.mnemonic, &i.operands) {
                self.supervisor_code.push(t);
            }
        }
        let op = self.inst_op(i);
        self.append(op);
        self.words += 1;
        self.issues += slots;
    }

    /// Loads vertex-state words into `$m` registers, one solo `ld32` per
    /// `(register, word)`.
    pub fn load_state(&mut self, regs: &[(u8, i64)]) {
        for &(reg, word) in regs {
            self.solo(load_state_word(op::m(reg), word));
        }
    }

    /// Pads with a `nop` to an 8-byte boundary (one issue when it pads).
    pub fn align_code(&mut self) {
        if self.words % 2 == 1 {
            self.solo(inst("nop", []));
        }
    }

    fn bundle_op(&mut self, main: Inst, aux: Inst) {
        let (m, a) = (self.inst_op(main), self.inst_op(aux));
        let op = build::bundle(self.ctx, m, a, self.loc.clone());
        self.append(op);
        self.words += 2;
    }

    /// `{ main ; aux }`: one issue, or the transcendental's slots (a `nop`
    /// first if misaligned).
    pub fn bundle(&mut self, main: Inst, aux: Inst) {
        self.align_code();
        let slots = self.bundle_slots(&main, &aux);
        self.bundle_op(main, aux);
        self.issues += slots;
    }

    /// `{ rpt count, body/8 - 1 ; fnop }` over `body` bundles between
    /// `.L{name}_start` and `.L{name}_end`. The `rpt` bundle counts one
    /// issue; the body is not counted here (it repeats): its length in
    /// issues per pass is returned.
    pub fn rpt(&mut self, count: Operand, name: &str, body: Vec<(Inst, Inst)>) -> u64 {
        let (start, end) = (format!(".L{name}_start"), format!(".L{name}_end"));
        self.bundle(
            inst("rpt", [count, op::expr(format!("({end} - {start})/8 - 1"))]),
            inst("fnop", []),
        );
        self.label(&start);
        let mut n = 0;
        for (m, a) in body {
            n += self.bundle_slots(&m, &a);
            self.bundle_op(m, a);
        }
        self.label(&end);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_ir::{print_op, PrintOptions};

    #[test]
    fn shared_attributes_make_the_op_build_inst_makes() {
        let mut ctx = Context::new(ipuc_dialects::registry());
        let loc = Location::unknown();
        let (_tile, body) = build::tile(&mut ctx, 0, None, loc.clone());
        let sample = || {
            [
                inst("setzi", [op::m(1), op::imm(0x4_0000)]),
                inst("nop", []),
                inst("setzi", [op::m(1), op::imm(0x4_0000)]),
                inst("brnzdec", [op::m(7), op::sym(".Lx")]),
                inst("put", [op::csr("INCOMING_MUX"), op::m(2)]),
            ]
        };
        let mut e = Emitter::new(&mut ctx, body, loc.clone());
        e.code_section(".text", SectionKind::Supervisor);
        for i in sample() {
            e.solo(i);
        }
        let section = ctx.block_ops_vec(body)[0];
        let emitted = ipu::body_ops(&ctx, section);
        let opts = PrintOptions::default();
        for (&got, want) in emitted.iter().zip(sample()) {
            let want = build::inst(&mut ctx, want.mnemonic, &want.operands, loc.clone());
            assert_eq!(print_op(&ctx, got, &opts), print_op(&ctx, want, &opts));
            assert_eq!(ctx.attr(got, "operands"), ctx.attr(want, "operands"));
        }
        assert_eq!(emitted.len(), 5);
    }
}
