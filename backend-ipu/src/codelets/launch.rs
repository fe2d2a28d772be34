//! How a compute set launches a worker codelet on one tile: the supervisor
//! starts six workers on one entry with `runall`, each with its own vertex
//! state (a run of 32-bit words), and joins them with
//! `sync TEXCH_SYNCZONE_LOCAL`.

use ipuc_dialects::ipu::SectionKind;

use super::emitter::{inst, op, Emitter};

/// Workers of a tile.
pub const WORKERS: usize = 6;

/// Supervisor issues of a launch, counted while emitting it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SupervisorCounts {
    /// Issues up to and including `runall`.
    pub before_run: u64,
    /// Issues after the workers are started (`sync` completes, `exitz`).
    pub after_run: u64,
}

impl SupervisorCounts {
    /// Tile cycles of a launch whose slowest worker issues `worker_issues`
    /// times: the supervisor issues once per cycle while no worker holds a
    /// slot, each worker once per 6 cycles.
    pub fn cycles(&self, worker_issues: u64) -> u64 {
        self.before_run + 6 * worker_issues + self.after_run
    }
}

/// Emits the supervisor `main` of a launch of `{tag}_worker` on six workers
/// with `state_words` words of vertex state each (at `{tag}_vertex_state`),
/// then opens the worker's section at its entry `{tag}_worker`.
pub fn emit_supervisor_and_worker_entry(
    e: &mut Emitter,
    tag: &str,
    state_words: usize,
) -> SupervisorCounts {
    e.code_section(&format!(".text.{tag}_supervisor"), SectionKind::Supervisor);
    e.function("main");
    e.solo(inst("setzi", [op::m(1), op::sym(format!("{tag}_worker"))]));
    e.solo(inst("setzi", [op::m(2), op::sym(format!("{tag}_vertex_state"))]));
    e.solo(inst("runall", [op::m(1), op::m(2), op::imm(state_words as i64)]));
    let before_run = e.issues();
    e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_LOCAL")]));
    e.solo(inst("exitz", [op::mzero()]));
    let after_run = e.issues() - before_run;
    e.size_of("main");
    e.code_section(&format!(".text.{tag}_worker"), SectionKind::Worker);
    e.worker_entry(&format!("{tag}_worker"));
    SupervisorCounts {
        before_run,
        after_run,
    }
}

/// Ends the worker (`.size`) and emits the six vertex states (`words[w]`
/// for worker w) at `{tag}_vertex_state`.
pub fn emit_vertex_state(e: &mut Emitter, tag: &str, words: &[Vec<u32>; WORKERS]) {
    e.size_of(&format!("{tag}_worker"));
    e.data_section(".data");
    e.directive("align", &[op::imm(8)]);
    e.label(&format!("{tag}_vertex_state"));
    for w in words {
        e.words(w);
    }
}

/// Supervisor issues before the workers start: `setzi`, `setzi`, `runall`.
pub const SUPERVISOR_ISSUES_BEFORE_RUN: u64 = 3;
/// Supervisor issues after the workers finish: the `sync` completes, `exitz`.
pub const SUPERVISOR_ISSUES_AFTER_RUN: u64 = 2;

/// Splits `units` of work over the six workers: contiguous shares, the
/// first `units % 6` workers one more.
pub fn split(units: u32) -> [u32; WORKERS] {
    let w = WORKERS as u32;
    std::array::from_fn(|i| units / w + u32::from((i as u32) < units % w))
}

/// The first unit of each worker's share.
pub fn offsets(shares: &[u32; WORKERS]) -> [u32; WORKERS] {
    let mut acc = 0;
    std::array::from_fn(|i| {
        let o = acc;
        acc += shares[i];
        o
    })
}

/// The supervisor (entry `main`) and the section header of the worker
/// `{tag}_worker`; the caller appends the worker body, then
/// [`vertex_state`].
pub fn supervisor_and_worker_header(tag: &str, state_words: usize) -> String {
    format!(
        "    .section .text.{tag}_supervisor, \"ax\"\n    .supervisor\n    .globl main\n    .type main, @function\nmain:\n\
         \x20   setzi $m1, {tag}_worker\n    setzi $m2, {tag}_vertex_state\n    runall $m1, $m2, {state_words}\n\
         \x20   sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .size main, . - main\n\n\
         \x20   .section .text.{tag}_worker, \"ax\"\n    .worker\n    .align 8\n    .type {tag}_worker, @function\n{tag}_worker:\n"
    )
}

/// The worker's `.size` and the six vertex states (`words[w]` for worker w).
pub fn vertex_state(tag: &str, words: &[Vec<u32>; WORKERS]) -> String {
    let mut s = format!(
        "    .size {tag}_worker, . - {tag}_worker\n\n    .section .data\n    .align 8\n{tag}_vertex_state:\n"
    );
    for w in words {
        let items: Vec<String> = w.iter().map(|v| format!("0x{v:x}")).collect();
        s.push_str(&format!("    .word {}\n", items.join(", ")));
    }
    s
}

/// Tile cycles of a launch whose slowest worker issues `worker_issues`
/// times: the supervisor issues once per cycle while no worker holds a
/// slot, each worker once per 6 cycles.
pub fn launch_cycles(worker_issues: u64) -> u64 {
    SUPERVISOR_ISSUES_BEFORE_RUN + 6 * worker_issues + SUPERVISOR_ISSUES_AFTER_RUN
}

/// Worker issues outside the `rpt` bodies of a row-loop codelet, counted
/// while emitting.
pub struct RowLoopCounts {
    /// Before the row loop.
    pub setup: u64,
    /// Per row (including the `rpt` bundles and alignment `nop`s).
    pub per_row: u64,
    /// After the row loop.
    pub exit: u64,
}

impl RowLoopCounts {
    /// Issues of a worker with `n > 0` rows whose `rpt` bodies take `body`
    /// issues per row.
    pub fn worker_issues(&self, n: u32, body: u64) -> u64 {
        self.setup + self.exit + u64::from(n) * (self.per_row + body)
    }
}

/// Ends a worker's row loop (`brnzdec $m2` back to `.L{tag}_row`, then
/// `.L{tag}_done: exitz`) and returns its text with the issue counts;
/// `setup` is the issue count before the loop.
pub fn end_row_loop(mut e: TextEmitter, tag: &str, setup: u64) -> (String, RowLoopCounts) {
    e.solo(&format!("brnzdec $m2, .L{tag}_row"));
    let per_row = e.issues - setup;
    e.label(&format!(".L{tag}_done"));
    e.solo("exitz $mzero");
    (
        e.text,
        RowLoopCounts {
            setup,
            per_row,
            exit: 1,
        },
    )
}

/// Emits worker code as text, padding bundles to 8 bytes and counting
/// issues: the text-era helper of the codelets not yet moved to
/// [`super::emitter::Emitter`].
#[derive(Default)]
pub struct TextEmitter {
    /// The text so far.
    pub text: String,
    words: u64,
    /// Issues emitted outside `rpt` bodies.
    pub issues: u64,
}

impl TextEmitter {
    /// A solo instruction.
    pub fn solo(&mut self, s: &str) {
        self.text.push_str(&format!("    {s}\n"));
        self.words += 1;
        self.issues += 1;
    }
    /// A bundle (a `nop` first if it would be misaligned).
    pub fn bundle(&mut self, main: &str, aux: &str) {
        if self.words % 2 == 1 {
            self.solo("nop");
        }
        self.text.push_str(&format!("    {{ {main} ; {aux} }}\n"));
        self.words += 2;
        self.issues += 1;
    }
    /// A label.
    pub fn label(&mut self, l: &str) {
        self.text.push_str(&format!("{l}:\n"));
    }
    /// A label that must be 8-byte aligned (loop heads).
    pub fn aligned_label(&mut self, l: &str) {
        if self.words % 2 == 1 {
            self.solo("nop");
        }
        self.label(l);
    }
    /// A `rpt` over `body` bundles; the body is not counted (it repeats).
    pub fn rpt(&mut self, count: &str, name: &str, body: &[(&str, &str)]) {
        self.bundle(
            &format!("rpt {count}, (.L{name}_end - .L{name}_start)/8 - 1"),
            "fnop",
        );
        self.label(&format!(".L{name}_start"));
        for (m, a) in body {
            self.text.push_str(&format!("    {{ {m} ; {a} }}\n"));
            self.words += 2;
        }
        self.label(&format!(".L{name}_end"));
    }
}
