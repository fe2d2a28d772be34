//! The code of a placed [`Schedule`]: each tile's supervisor instructions,
//! timed as the placement says, and the delays between them.

use ipuc_ipu_arch::MachineModel;

use ipuc_dialects::ipu::SectionKind;

use super::{streams, Event, Rules, Schedule, MIN_REPOINT_LOOP};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::instance_memo::InstanceMemo;
use crate::lower::codegen::{Calls, Instance};

/// Registers: the receive side's (`$m0`..`$m3`), the sends' rotation
/// (`$m4`..`$m6`), the delay loop's counter (`$m7`).
const RECV_BASE: u8 = 3;
const RECV_MUX: u8 = 2;
const RECV_COUNT: u8 = 1;
const SEND_REGS: [u8; 3] = [4, 5, 6];
const DELAY_REG: u8 = 7;
const REPOINT_COUNT: u8 = 8;

impl Schedule {
    /// Emits `tile`'s exchange code into the open supervisor section: from
    /// the superstep's first cycle to its last event (the caller then
    /// syncs). Delay loops use labels `.Lx{tag}_{n}`; with `calls`, the
    /// longer delays call the tile's [`DelayRoutine`] (added to `calls`
    /// once, as [`DELAY_ROUTINE`]) instead, and a switch or a lone
    /// re-point with the wait before it calls the [`SwitchRoutine`] with
    /// its puts where the cycles allow ([`SwitchPuts::routine`]), every
    /// put at the cycle it has inline. Returns the bytes of code emitted
    /// here (every supervisor instruction is one 32-bit word), with those
    /// of each routine this code adds to `calls` (once a tile).
    pub fn emit(
        &self,
        e: &mut Emitter,
        machine: &MachineModel,
        (tile, tag): (u32, &str),
        mut calls: Option<&mut Calls>,
    ) -> u64 {
        let rules = Rules::of(machine);
        let Some(list) = self.events.get(&tile) else {
            return 0;
        };
        let issued = e.issues();
        let mut now = 0u64;
        let mut delays = 0;
        let routine_used = std::cell::Cell::new(false);
        let routine = calls.is_some().then_some(DELAY_ROUTINE);
        // The switch routines this tile's code called, by their puts.
        let mut switches_used: Vec<SwitchPuts> = Vec::new();
        // `may_call`: the call writes `$lr`, one of the sends' address
        // registers, so a send's pause does not call.
        let mut wait = |e: &mut Emitter, now: &mut u64, until: u64, may_call: bool| {
            debug_assert!(until >= *now, "event at {until} before cycle {now}");
            let label = format!(".Lx{tag}_{delays}");
            if delay(
                e,
                &rules,
                until - *now,
                &label,
                routine.filter(|_| may_call),
            ) {
                routine_used.set(true);
            }
            delays += 1;
            *now = until;
        };
        // Every register an instruction reads is loaded exactly `latency`
        // cycles before the instruction's scheduled cycle, or earlier when
        // the instruction must wait anyway: the supervisor's stall on the
        // register is then the wait, and no `nop` is emitted for it.
        let mut loops = 0;
        let mut i = 0;
        while i < list.len() {
            let (start, ev) = &list[i];
            i += 1;
            let run = repoint_run(&list[i - 1..], &rules);
            // A switch or a lone re-point, with the wait before it, as a
            // call of a switch routine where the cycles allow.
            if let (Some(_), None) = (&calls, &run) {
                let next = list
                    .get(i)
                    .map(|(start, ev)| code_start(ev, *start, &rules));
                if let Some((puts, resume)) = switch_by_routine(e, &rules, machine, ev, now, next) {
                    if !switches_used.contains(&puts) {
                        switches_used.push(puts);
                    }
                    now = resume;
                    continue;
                }
            }
            if let (Some(run), &Event::Repoint { base, put }) = (run, ev) {
                let last = put + (run.count as u64 - 1) * run.period;
                let next = list
                    .get(i - 1 + run.count)
                    .map(|(start, ev)| code_start(ev, *start, &rules));
                // Each turn waits out the period past its own
                // instructions (a put, an add, a taken `brnzdec`).
                let turn_wait = run.period - rules.repoint_loop_period();
                // Every put in the loop where the cycles allow: the loop
                // entered at its put (`setzi`s and a branch: a refill
                // before the first put, two cycles before a re-point's
                // own), its exit an `add` and a `brnzdec` after the last
                // put, by the tile's next event (the last one keeps the
                // form below, reaching the sync when it did).
                let entry = 2 + rules.refill;
                let exit = last + rules.put + 2;
                let entered = now + entry <= put && next.is_some_and(|n| n >= exit);
                // Otherwise the loop holds all but the last put, which
                // follows it, `nop`s waiting out the refill before it; its
                // first put stalls until the base is readable.
                let lead = if entered { entry } else { rules.latency };
                wait(e, &mut now, put - lead, true);
                let turns = run.count as i64 - if entered { 1 } else { 2 };
                e.solo(inst("setzi", [op::m(RECV_BASE), op::imm(i64::from(base))]));
                e.solo(inst("setzi", [op::m(REPOINT_COUNT), op::imm(turns)]));
                let (top, at_put) = (format!(".Lx{tag}_r{loops}"), format!(".Lx{tag}_p{loops}"));
                loops += 1;
                let put_and_step = |e: &mut Emitter| {
                    e.solo(inst("put", [op::csr("INCOMING_BASE"), op::m(RECV_BASE)]));
                    e.solo(inst(
                        "add",
                        [
                            op::m(RECV_BASE),
                            op::m(RECV_BASE),
                            op::imm(i64::from(run.stride)),
                        ],
                    ));
                };
                if entered {
                    e.solo(inst("bri", [op::sym(&at_put)]));
                }
                e.label(&top);
                let mut turn = 0;
                if entered {
                    wait(e, &mut turn, turn_wait, true);
                    e.label(&at_put);
                    put_and_step(e);
                } else {
                    put_and_step(e);
                    wait(e, &mut turn, turn_wait, true);
                }
                e.solo(inst("brnzdec", [op::m(REPOINT_COUNT), op::sym(&top)]));
                if entered {
                    now = exit;
                } else {
                    now = last - rules.refill + 1;
                    wait(e, &mut now, last, true);
                    e.solo(inst("put", [op::csr("INCOMING_BASE"), op::m(RECV_BASE)]));
                    now = last + rules.put;
                }
                i += run.count - 1;
                continue;
            }
            wait(e, &mut now, code_start(ev, *start, &rules), true);
            match ev {
                Event::Start { count } => {
                    e.solo(inst(
                        "setzi",
                        [op::m(RECV_MUX), op::imm(i64::from(machine.tiles))],
                    ));
                    if let Some(n) = count {
                        e.solo(inst("setzi", [op::m(RECV_COUNT), op::imm(i64::from(*n))]));
                    }
                    // The put stalls until the mux register is readable.
                    e.solo(inst("put", [op::csr("INCOMING_MUX"), op::m(RECV_MUX)]));
                    now = *start + rules.latency + rules.put;
                    if count.is_some() {
                        e.solo(inst("put", [op::csr("INCOMING_DCOUNT"), op::m(RECV_COUNT)]));
                        now += rules.put;
                    }
                }
                Event::Switch { sender, base, put } => {
                    let mux = sender.unwrap_or(machine.tiles);
                    wait(e, &mut now, *put - rules.latency, true);
                    e.solo(inst("setzi", [op::m(RECV_MUX), op::imm(i64::from(mux))]));
                    if let Some(b) = base {
                        e.solo(inst("setzi", [op::m(RECV_BASE), op::imm(i64::from(*b))]));
                    }
                    // Stalls until `put`, when the mux register is readable
                    // (the setzis took one or two of those cycles).
                    e.solo(inst("put", [op::csr("INCOMING_MUX"), op::m(RECV_MUX)]));
                    now = *put + rules.put;
                    if base.is_some() {
                        e.solo(inst("put", [op::csr("INCOMING_BASE"), op::m(RECV_BASE)]));
                        now += rules.put;
                    }
                }
                Event::Repoint { base, put } => {
                    wait(e, &mut now, *put - rules.latency, true);
                    e.solo(inst("setzi", [op::m(RECV_BASE), op::imm(i64::from(*base))]));
                    // Stalls until the base register is readable, at `put`.
                    e.solo(inst("put", [op::csr("INCOMING_BASE"), op::m(RECV_BASE)]));
                    now = *put + rules.put;
                }
                Event::Send {
                    chunks,
                    starts,
                    first,
                } => {
                    let reg = |i: usize| SEND_REGS[i % SEND_REGS.len()];
                    let streamed = streams(chunks);
                    if streamed {
                        // The first address, its put (stalled until it is
                        // readable, then holding until it takes effect,
                        // at `first`), and one send after another.
                        e.solo(inst(
                            "setzi",
                            [op::m(reg(0)), op::imm(i64::from(chunks[0].address))],
                        ));
                        e.solo(inst("put", [op::csr("OUTGOING_BASE"), op::m(reg(0))]));
                        now = *first;
                    } else {
                        // The event starts `latency` before the first send:
                        // the first address is readable exactly then.
                        for (i, c) in chunks.iter().take(2).enumerate() {
                            e.solo(inst(
                                "setzi",
                                [op::m(reg(i)), op::imm(i64::from(c.address))],
                            ));
                            now += 1;
                        }
                    }
                    let (times, _) = rules.send_times(chunks, starts);
                    for (i, c) in chunks.iter().enumerate() {
                        // `send_times` issues each send when the supervisor
                        // is free and its address readable: the stall.
                        debug_assert!(first + times[i] >= now);
                        // A segment's pause is explicit: the register is
                        // readable before its end, so no stall adds to it.
                        if starts.contains(&i) && first + times[i] > now {
                            wait(e, &mut now, first + times[i], false);
                        }
                        let words = op::imm(i64::from(c.words));
                        if streamed {
                            e.solo(inst("send", [words]));
                        } else {
                            e.solo(inst("send", [op::m(reg(i)), words]));
                        }
                        now = first + times[i] + 1 + u64::from(c.words) * rules.word;
                        if let Some(next) = chunks.get(i + 2).filter(|_| !streamed) {
                            e.solo(inst(
                                "setzi",
                                [op::m(reg(i + 2)), op::imm(i64::from(next.address))],
                            ));
                            now += 1;
                        }
                    }
                }
            }
        }
        // The routines this code calls, once a tile (their bytes counted
        // with the code that first calls them).
        let mut routine_bytes = 0;
        if let Some(calls) = calls.as_mut() {
            let delay = routine_used.get().then(|| {
                let r = DelayRoutine::of(&rules);
                (
                    DELAY_ROUTINE,
                    r.instructions(),
                    Box::new(r) as Box<dyn Instance>,
                )
            });
            let switches = switches_used.into_iter().map(|puts| {
                let r = SwitchRoutine::of(&rules, puts);
                (
                    puts.routine(),
                    r.instructions(),
                    Box::new(r) as Box<dyn Instance>,
                )
            });
            for (name, instructions, r) in delay.into_iter().chain(switches) {
                if !calls.iter().any(|(n, _)| n == name) {
                    routine_bytes += 4 * instructions;
                    calls.push((name.into(), r));
                }
            }
        }
        4 * (e.issues() - issued) + routine_bytes
    }
}

/// The cycle at which an event's code may start: a switch's interval
/// starts a cycle before its first setzi (room for two), which waits until
/// `latency` before the put: one wait there, not a delay and a `nop`
/// after it.
fn code_start(ev: &Event, start: u64, rules: &Rules) -> u64 {
    match ev {
        Event::Switch { put, .. } => (*put - rules.latency).max(start),
        _ => start,
    }
}

/// Emits switch or re-point `ev`, and the wait before it from `now`, as
/// `setzi`s of its registers and a call of the [`SwitchRoutine`] with its
/// puts, if the cycles allow: the registers and the routine's lead fit
/// before the put, and the return (a refill after the puts) ends by
/// `next`, when the tile's next event's code starts (`None`: the event
/// is the tile's last, which keeps its code inline so that the tile
/// reaches the closing sync when it did). Returns, if it emitted the
/// call, the routine's puts and the cycle the caller resumes at.
fn switch_by_routine(
    e: &mut Emitter,
    rules: &Rules,
    machine: &MachineModel,
    ev: &Event,
    now: u64,
    next: Option<u64>,
) -> Option<(SwitchPuts, u64)> {
    let (puts, regs, put) = match *ev {
        Event::Switch { sender, base, put } => {
            let mux = sender.unwrap_or(machine.tiles);
            let mut regs = vec![(RECV_MUX, mux)];
            regs.extend(base.map(|b| (RECV_BASE, b)));
            let puts = if base.is_some() {
                SwitchPuts::MuxAndBase
            } else {
                SwitchPuts::Mux
            };
            (puts, regs, put)
        }
        Event::Repoint { base, put } => (SwitchPuts::Base, vec![(RECV_BASE, base)], put),
        _ => return None,
    };
    let routine = SwitchRoutine::of(rules, puts);
    let rem = put.checked_sub(now + regs.len() as u64 + routine.lead())?;
    let resume = put + rules.put * puts.count() + rules.refill;
    if next? < resume {
        return None;
    }
    for (reg, value) in regs {
        e.solo(inst("setzi", [op::m(reg), op::imm(i64::from(value))]));
    }
    let (n, k) = (rem / routine.period, rem % routine.period);
    e.solo(inst("setzi", [op::m(DELAY_REG), op::imm(n as i64)]));
    e.solo(inst(
        "call",
        [
            op::reg_lr(),
            op::sym(DelayRoutine::entry(puts.routine(), k)),
        ],
    ));
    Some((puts, resume))
}

/// The exchange registers a [`SwitchRoutine`] puts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchPuts {
    /// `$INCOMING_MUX` from `$m2`, then `$INCOMING_BASE` from `$m3`: a
    /// switch that re-points the write pointer.
    MuxAndBase,
    /// `$INCOMING_MUX` from `$m2`: a switch that continues the pointer.
    Mux,
    /// `$INCOMING_BASE` from `$m3`: a re-point.
    Base,
}

impl SwitchPuts {
    /// The name of the tile's routine with these puts among its calls.
    pub fn routine(self) -> &'static str {
        match self {
            SwitchPuts::MuxAndBase => "xswitch",
            SwitchPuts::Mux => "xmux",
            SwitchPuts::Base => "xbase",
        }
    }

    /// The puts.
    fn count(self) -> u64 {
        match self {
            SwitchPuts::MuxAndBase => 2,
            SwitchPuts::Mux | SwitchPuts::Base => 1,
        }
    }
}

/// A tile's switch routine: the wait before a switch (or re-point) and
/// its puts, called as `setzi $m2/$m3 ... ; setzi $m7, n ; call $lr,
/// {name}_r{k}` (the caller loads the registers it puts): entries
/// `{name}_r{k}` for `k` in `0..period`, each `k` `nop`s before a
/// `brnzdec` loop on `$m7` (the [`DelayRoutine`]'s), then the puts and
/// `br $lr`. The put issues [`SwitchRoutine::lead`] `+ k + n·period`
/// cycles after the `setzi $m7`; the caller resumes a refill after the
/// puts. Where each switch was its wait (two instructions, or `nop`s),
/// its `setzi`s and its puts, a call is the `setzi`s and two: the puts,
/// two of a switch's six instructions, are the routine's, once a tile.
#[derive(Clone, Copy, Debug)]
pub struct SwitchRoutine {
    /// A taken `brnzdec`'s cycles (the loop's turn).
    period: u64,
    /// A taken branch's refill.
    refill: u64,
    /// What it puts.
    puts: SwitchPuts,
}

impl SwitchRoutine {
    /// The routine with `puts` under `rules_of`'s timing.
    pub fn of(rules_of: &impl DelayRules, puts: SwitchPuts) -> Self {
        let d = DelayRoutine::of(rules_of);
        SwitchRoutine {
            period: d.period,
            refill: d.refill,
            puts,
        }
    }

    /// Cycles from the `setzi $m7` to the first put with no `nop` and no
    /// taken turn: the `setzi`, the call (a refill) and the loop's one
    /// issue.
    pub fn lead(&self) -> u64 {
        1 + self.refill + 1
    }

    /// Its instructions: `period - 1` `nop`s, the `brnzdec`, the puts and
    /// the return.
    pub fn instructions(&self) -> u64 {
        self.period + self.puts.count() + 1
    }
}

impl Instance for SwitchRoutine {
    fn emit_as(
        &self,
        e: &mut Emitter,
        name: &str,
        _: &mut InstanceMemo,
    ) -> Result<(), crate::codelets::CodeletError> {
        emit_delay_entries(e, name, self.period);
        if self.puts != SwitchPuts::Base {
            e.solo(inst("put", [op::csr("INCOMING_MUX"), op::m(RECV_MUX)]));
        }
        if self.puts != SwitchPuts::Mux {
            e.solo(inst("put", [op::csr("INCOMING_BASE"), op::m(RECV_BASE)]));
        }
        e.solo(inst("br", [op::reg_lr()]));
        Ok(())
    }
}

/// A run of re-points [`Schedule::emit`] emits as a loop.
struct RepointRun {
    /// Re-points in the run.
    count: usize,
    /// Bytes between consecutive bases.
    stride: u32,
    /// Cycles between consecutive puts.
    period: u64,
}

/// The run of re-points that starts `events` (the tile's events from
/// there), if it is worth a loop: at least [`MIN_REPOINT_LOOP`]
/// consecutive re-points (no other event of the tile between), bases a
/// fixed positive stride apart and puts a fixed period apart, long enough
/// for the loop's body: `put ; add ; delay ; brnzdec` (the put holds the
/// supervisor [`Rules::put`] cycles, the add one, a taken `brnzdec`
/// [`Rules::refill`]). A segmented transfer's re-points are such a run
/// (its segments are sent a fixed period apart): one loop instead of a
/// `setzi`, a `put` and a delay per segment, the exchange code a tile
/// keeps.
fn repoint_run(events: &[(u64, Event)], rules: &Rules) -> Option<RepointRun> {
    let points: Vec<(u32, u64)> = events
        .iter()
        .map_while(|(_, ev)| match ev {
            Event::Repoint { base, put } => Some((*base, *put)),
            _ => None,
        })
        .collect();
    let (&(b0, p0), &(b1, p1)) = (points.first()?, points.get(1)?);
    let (stride, period) = (b1.checked_sub(b0)?, p1.checked_sub(p0)?);
    if stride == 0 || stride > i16::MAX as u32 || period < rules.repoint_loop_period() {
        return None;
    }
    let count = 1 + points
        .windows(2)
        .take_while(|w| w[1].0.checked_sub(w[0].0) == Some(stride) && w[1].1 - w[0].1 == period)
        .count();
    (count >= MIN_REPOINT_LOOP).then_some(RepointRun {
        count,
        stride,
        period,
    })
}

/// The name of a tile's [`DelayRoutine`] among its calls.
pub const DELAY_ROUTINE: &str = "xdelay";

/// A tile's delay routine, called where an exchange waits long: entries
/// `{name}_r{k}` for `k` in `0..period`, each `k` `nop`s before a
/// `brnzdec` loop on `$m7`, then `br $lr`. A delay of `c` cycles is
/// `setzi $m7, n ; call $lr, {name}_r{k}` (two instructions, where an
/// inline delay loop is two plus up to `period - 1` `nop`s): the setzi,
/// the call and the return (a refill each), `k` nops and the
/// loop (`n` taken turns of `period`, then one issue) make
/// [`DelayRoutine::fixed`] `+ k + n·period` cycles.
#[derive(Clone, Copy, Debug)]
pub struct DelayRoutine {
    /// A taken `brnzdec`'s cycles (the loop's turn).
    period: u64,
    /// A taken branch's refill.
    refill: u64,
}

impl DelayRoutine {
    /// The routine under `rules_of`'s timing.
    pub fn of(rules_of: &impl DelayRules) -> Self {
        let (latency, refill) = rules_of.delay_rules();
        DelayRoutine {
            period: refill.max(latency),
            refill,
        }
    }

    /// Cycles of a call with no `nop` and no taken turn: the `setzi`, the
    /// call and the return (taken branches: the refill, the issue
    /// included, as a taken `brnzdec`'s turn), and the loop's one issue.
    pub fn fixed(&self) -> u64 {
        1 + 2 * self.refill + 1
    }

    /// The entry that starts `k` `nop`s before the loop.
    fn entry(name: &str, k: u64) -> String {
        format!("{name}_r{k}")
    }

    /// Its instructions: `period - 1` `nop`s, the `brnzdec` and the
    /// return.
    pub fn instructions(&self) -> u64 {
        self.period + 1
    }
}

impl Instance for DelayRoutine {
    fn emit_as(
        &self,
        e: &mut Emitter,
        name: &str,
        _: &mut InstanceMemo,
    ) -> Result<(), crate::codelets::CodeletError> {
        emit_delay_entries(e, name, self.period);
        e.solo(inst("br", [op::reg_lr()]));
        Ok(())
    }
}

/// Opens routine `name`'s section and emits its delay: entries
/// `{name}_r{k}` for `k` in `0..period`, each `k` `nop`s before the
/// `brnzdec` loop on `$m7` (the last entry).
fn emit_delay_entries(e: &mut Emitter, name: &str, period: u64) {
    e.code_section(&format!(".text.{name}"), SectionKind::Supervisor);
    for k in (1..period).rev() {
        e.label(&DelayRoutine::entry(name, k));
        e.solo(inst("nop", []));
    }
    let turn = DelayRoutine::entry(name, 0);
    e.label(&turn);
    e.solo(inst("brnzdec", [op::m(DELAY_REG), op::sym(&turn)]));
}

/// Emits code that holds the supervisor exactly `cycles` cycles (no
/// worker running): `nop`s, or a `brnzdec` loop on `$m7` and `nop`s, or
/// with `routine` (the name of the tile's [`DelayRoutine`]) a call of it
/// where that is shorter, or, where fewer instructions than any of those,
/// `bri`s to the next instruction (each a taken branch's refill) and
/// `nop`s: a pause of 6 cycles is one instruction, not six `nop`s (the
/// `bri`s' labels are `{label}_b{k}`). Returns whether it called the
/// routine.
pub fn delay(
    e: &mut Emitter,
    rules_of: &impl DelayRules,
    cycles: u64,
    label: &str,
    routine: Option<&str>,
) -> bool {
    let (latency, refill) = rules_of.delay_rules();
    // setzi ; (wait latency) brnzdec × (n + 1): latency + n·period + 1.
    let period = refill.max(latency);
    let fixed = latency + 1;
    let called = DelayRoutine::of(rules_of);
    // Instructions of each form: `bri`s and `nop`s; the loop and its
    // `nop`s; the routine's call.
    let branches = cycles / refill + cycles % refill;
    let loop_rest = (cycles >= fixed).then(|| (cycles - fixed) % period);
    let looped = loop_rest.map(|rest| 2 + rest);
    let calls = routine
        .filter(|_| cycles >= called.fixed() && loop_rest.is_some_and(|rest| rest > 0))
        .map(|_| 2);
    let best_other = [looped, calls]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(cycles);
    if branches < best_other.min(cycles) {
        for k in 0..cycles / refill {
            let next = format!("{label}_b{k}");
            e.solo(inst("bri", [op::sym(&next)]));
            e.label(&next);
        }
        for _ in 0..cycles % refill {
            e.solo(inst("nop", []));
        }
        return false;
    }
    // The loop is at most 2 + (period - 1) instructions, against `cycles`
    // nops: exchange code is counted in bytes per tile.
    if cycles < fixed {
        for _ in 0..cycles {
            e.solo(inst("nop", []));
        }
        return false;
    }
    let n = (cycles - fixed) / period;
    let rest = cycles - fixed - n * period;
    if let Some(name) = routine.filter(|_| rest > 0 && cycles >= called.fixed()) {
        // Two instructions instead of two and `rest` nops. The routine's
        // loop reads `$m7` long after the setzi (the call's refill).
        let n = (cycles - called.fixed()) / period;
        let k = cycles - called.fixed() - n * period;
        e.solo(inst("setzi", [op::m(DELAY_REG), op::imm(n as i64)]));
        e.solo(inst(
            "call",
            [op::reg_lr(), op::sym(DelayRoutine::entry(name, k))],
        ));
        return true;
    }
    e.solo(inst("setzi", [op::m(DELAY_REG), op::imm(n as i64)]));
    e.label(label);
    e.solo(inst("brnzdec", [op::m(DELAY_REG), op::sym(label)]));
    for _ in 0..rest {
        e.solo(inst("nop", []));
    }
    false
}

/// The two rules a delay loop's length depends on.
pub trait DelayRules {
    /// (result latency, taken-branch refill).
    fn delay_rules(&self) -> (u64, u64);
}

impl DelayRules for Rules {
    fn delay_rules(&self) -> (u64, u64) {
        (self.latency, self.refill)
    }
}

impl DelayRules for MachineModel {
    fn delay_rules(&self) -> (u64, u64) {
        let r = Rules::of(self);
        (r.latency, r.refill)
    }
}
