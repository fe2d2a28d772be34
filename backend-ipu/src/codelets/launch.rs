//! How a compute set launches a worker codelet on one tile: the supervisor
//! starts six workers on one entry with `runall`, each with its own vertex
//! state (a run of 32-bit words), and joins them with
//! `sync TEXCH_SYNCZONE_LOCAL`.

use ipuc_dialects::ipu::SectionKind;
use ipuc_ipu_arch::encoding::Instr;
use ipuc_ipu_arch::pipeline::{launch_cycles_after, supervisor_schedule};
use ipuc_ipu_arch::MachineModel;

use super::emitter::{inst, op, Emitter};

/// Workers of a tile.
pub const WORKERS: usize = 6;

/// The supervisor's part of a launch, scheduled under the supervisor
/// pipeline rules (`ipuc_ipu_arch::pipeline`) from its emitted code.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SupervisorCounts {
    /// Cycle `runall` issues in (its code from cycle 0).
    pub runall: u64,
    /// Cycles of the code after the `sync` (`exitz`).
    pub epilogue: u64,
}

impl SupervisorCounts {
    /// The counts of supervisor code `code` (as [`Emitter::supervisor_code`]
    /// gives it) whose `runall` is at `runall_at`, followed by `sync`.
    pub fn of(code: &[Instr], runall_at: usize) -> Self {
        let m = Self::machine();
        let last = |c: &[Instr]| {
            supervisor_schedule(c, &m)
                .issue
                .last()
                .map_or(0, |&t| t + 1)
        };
        SupervisorCounts {
            runall: last(&code[..=runall_at]) - 1,
            epilogue: last(code.get(runall_at + 2..).unwrap_or(&[])),
        }
    }

    /// The machine whose rules the estimates follow (every model has the
    /// same supervisor pipeline).
    fn machine() -> MachineModel {
        MachineModel::c600()
    }

    /// Tile cycles of a launch whose workers issue `worker_issues[w]` times
    /// each, once per barrel round from their start after `runall`; the
    /// `sync` completes after the last one and the supervisor finishes.
    pub fn cycles_per_worker(&self, worker_issues: &[u64; WORKERS]) -> u64 {
        launch_cycles_after(self.runall, worker_issues, self.epilogue, &Self::machine())
    }

    /// Tile cycles of a launch whose slowest worker issues `worker_issues`
    /// times, counted as if every worker did (a few cycles over when they
    /// differ).
    pub fn cycles(&self, worker_issues: u64) -> u64 {
        self.cycles_per_worker(&[worker_issues; WORKERS])
    }
}

/// Issue counts of a streaming launch, as emitted: each worker takes `n`
/// units of work; a prologue does the first `prologue_units` (0 or 1) and a
/// `rpt` the rest.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamCounts {
    /// The supervisor's.
    pub supervisor: SupervisorCounts,
    /// A worker with no work (it branches to its exit).
    pub empty: u64,
    /// A worker's issues outside the `rpt` body.
    pub worker: u64,
    /// Issues of one pass of the `rpt` body (one unit).
    pub body: u64,
    /// Units the code outside the `rpt` does (their issues are in `worker`).
    pub prologue_units: u32,
}

impl StreamCounts {
    /// Issues of a worker with `n` units.
    pub fn worker_issues(&self, n: u32) -> u64 {
        match n {
            0 => self.empty,
            n => self.worker + u64::from(n.saturating_sub(self.prologue_units)) * self.body,
        }
    }

    /// Tile cycles when the workers take `shares` units each.
    pub fn cycles(&self, shares: &[u32; WORKERS]) -> u64 {
        self.supervisor
            .cycles_per_worker(&shares.map(|n| self.worker_issues(n)))
    }
}

/// Starts a worker's row loop on the row count in `$m2`: `brz` to
/// `.L{tag}_done` when there are no rows, else counts one row off for the
/// loop's closing `brnzdec`. Returns the issues of a worker with no rows
/// (its code so far and the taken branch).
pub fn emit_start_row_count(e: &mut Emitter, tag: &str) -> u64 {
    e.solo(inst("brz", [op::m(2), op::sym(format!(".L{tag}_done"))]));
    let empty = e.issues() + 1;
    e.solo(inst("sub", [op::m(2), op::m(2), op::imm(1)]));
    empty
}

/// Ends a worker's row loop: `brnzdec $m2` back to `.L{tag}_row`, then
/// `.L{tag}_done: exitz`. `setup` is the worker's issue count before the
/// loop head; the per-row count is what was emitted since.
pub fn emit_end_row_loop(e: &mut Emitter, tag: &str, setup: u64) -> RowLoopCounts {
    e.solo(inst("brnzdec", [op::m(2), op::sym(format!(".L{tag}_row"))]));
    let per_row = e.issues() - setup;
    e.label(&format!(".L{tag}_done"));
    e.solo(inst("exitz", [op::mzero()]));
    RowLoopCounts {
        setup,
        per_row,
        exit: e.issues() - setup - per_row,
    }
}

/// Issue counts of a row-loop launch, as emitted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RowLaunchCounts {
    /// The supervisor's.
    pub supervisor: SupervisorCounts,
    /// A worker with no rows (it branches to its exit).
    pub empty: u64,
    /// The row loop's.
    pub rows: RowLoopCounts,
}

impl RowLaunchCounts {
    /// Issues of a worker with `n` rows whose `rpt` bodies take `body`
    /// issues per row.
    pub fn worker_issues(&self, n: u32, body: u64) -> u64 {
        match n {
            0 => self.empty,
            n => self.rows.worker_issues(n, body),
        }
    }

    /// Tile cycles when the workers take `shares` rows each.
    pub fn cycles(&self, shares: &[u32; WORKERS], body: u64) -> u64 {
        self.supervisor
            .cycles_per_worker(&shares.map(|n| self.worker_issues(n, body)))
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
    emit_launch_operands(e, tag);
    let counts = emit_runall_and_exit(e, state_words);
    e.code_section(&format!(".text.{tag}_worker"), SectionKind::Worker);
    e.worker_entry(&format!("{tag}_worker"));
    counts
}

/// Points the supervisor's `$m1` at the worker entry `{tag}_worker` and
/// `$m2` at the vertex states `{tag}_vertex_state`, the operands of
/// [`emit_runall_and_exit`]'s `runall`.
pub fn emit_launch_operands(e: &mut Emitter, tag: &str) {
    e.solo(inst("setzi", [op::m(1), op::sym(format!("{tag}_worker"))]));
    e.solo(inst(
        "setzi",
        [op::m(2), op::sym(format!("{tag}_vertex_state"))],
    ));
}

/// Ends the supervisor `main`: starts the six workers (`state_words`
/// words of vertex state each) with `runall`, joins them with `sync` and
/// exits; returns the counts of the supervisor code emitted so far.
pub fn emit_runall_and_exit(e: &mut Emitter, state_words: usize) -> SupervisorCounts {
    e.solo(inst(
        "runall",
        [op::m(1), op::m(2), op::imm(state_words as i64)],
    ));
    let runall_at = e.supervisor_code().len() - 1;
    e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_LOCAL")]));
    e.solo(inst("exitz", [op::mzero()]));
    let counts = SupervisorCounts::of(e.supervisor_code(), runall_at);
    e.size_of("main");
    counts
}

/// The suffix of the label of a launch's vertex states (`{tag}_vertex_state`):
/// the `.word`s after it are the only part of a launch that differs between
/// launches of one shape (see [`super::subroutine`]).
pub const VERTEX_STATE_SUFFIX: &str = "_vertex_state";

/// Ends the worker (`.size`) and emits the six vertex states (`words[w]`
/// for worker w) at `{tag}_vertex_state`.
pub fn emit_vertex_state(e: &mut Emitter, tag: &str, words: &[Vec<u32>; WORKERS]) {
    e.size_of(&format!("{tag}_worker"));
    e.data_section(".data");
    e.directive("align", &[op::imm(8)]);
    e.label(&format!("{tag}{VERTEX_STATE_SUFFIX}"));
    for w in words {
        e.words(w);
    }
}

/// Ends a row-loop launch: the six vertex states (`words[w]` for worker
/// w) after the worker, and the launch's counts.
pub fn end_row_launch(
    e: &mut Emitter,
    tag: &str,
    words: &[Vec<u32>; WORKERS],
    supervisor: SupervisorCounts,
    empty: u64,
    rows: RowLoopCounts,
) -> RowLaunchCounts {
    emit_vertex_state(e, tag, words);
    RowLaunchCounts {
        supervisor,
        empty,
        rows,
    }
}

/// Ends a streaming launch whose worker branches from its `brz` at issue
/// `at_branch` straight to `exitz` when its share is empty, and does one
/// unit before its `rpt`: the six vertex states after the worker, and the
/// launch's counts.
pub fn end_stream_launch(
    e: &mut Emitter,
    tag: &str,
    words: &[Vec<u32>; WORKERS],
    supervisor: SupervisorCounts,
    at_branch: u64,
    worker: u64,
    body: u64,
) -> StreamCounts {
    emit_vertex_state(e, tag, words);
    StreamCounts {
        supervisor,
        empty: at_branch + 1,
        worker,
        body,
        prologue_units: 1,
    }
}

/// Splits `units` of work over the six workers: contiguous shares, the
/// first `units % 6` workers one more.
pub fn split(units: u32) -> [u32; WORKERS] {
    let w = WORKERS as u32;
    std::array::from_fn(|i| units / w + u32::from((i as u32) < units % w))
}

/// Each worker's vertex state, `state(first, count)` of the `count` rows
/// (or units) it takes from its `shares` entry, starting at row `first`
/// (the shares laid end to end in worker order).
pub fn worker_states(
    shares: &[u32; WORKERS],
    state: impl Fn(u32, u32) -> Vec<u32>,
) -> [Vec<u32>; WORKERS] {
    let offs = offsets(shares);
    std::array::from_fn(|w| state(offs[w], shares[w]))
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

/// Worker issues outside the `rpt` bodies of a row-loop codelet, counted
/// while emitting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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
