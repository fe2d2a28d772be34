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

    /// Tile cycles when the workers take `shares` units each (the slowest
    /// decides).
    pub fn cycles(&self, shares: &[u32; WORKERS]) -> u64 {
        let worst = shares
            .iter()
            .map(|&n| self.worker_issues(n))
            .max()
            .unwrap_or(0);
        self.supervisor.cycles(worst)
    }
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
        let worst = shares
            .iter()
            .map(|&n| self.worker_issues(n, body))
            .max()
            .unwrap_or(0);
        self.supervisor.cycles(worst)
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
    e.solo(inst(
        "setzi",
        [op::m(2), op::sym(format!("{tag}_vertex_state"))],
    ));
    e.solo(inst(
        "runall",
        [op::m(1), op::m(2), op::imm(state_words as i64)],
    ));
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
