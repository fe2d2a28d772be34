//! Builds a [`ProfileData`] from a recorded simulator run, the executable
//! it ran and the lowering's [`Attribution`].
//!
//! - A launch's codelet is named by the section holding its entry
//!   (`.text.CODELET_worker.INSTANCE`, or `.text.TAG_ovw_worker` /
//!   `.text.TAG_acc_worker` for a product's vertex), its instance by the
//!   section holding its vertex state (`.data.INSTANCE`, or
//!   `.const.TAG_vertex_states`): instances of one shape on a tile share
//!   their worker code, so the entry alone would name the first of them.
//! - A compute set is one instance's launches on one tile in one
//!   superstep, merged.
//! - A superstep belongs to the step whose codelets took the most worker
//!   cycles in it over the chip; a superstep without launches to the next
//!   exchange step in program order.

use std::collections::BTreeMap;

use ipuc_ipu_arch::{ContextKind, Executable, MachineModel, StreamDirection};
use ipuc_runtime::sim::{Profile, TileProfile, TileTimeline};

use super::attribution::{Attribution, Part};
use super::schema::{self, Allocation, Codelet, ProfileData, Step, Superstep, Tile};

/// The codelet and instance of a worker section's name.
pub fn codelet_of_section(name: &str) -> (String, String) {
    let stem = name.strip_prefix(".text.").unwrap_or(name);
    if let Some((codelet, instance)) = stem.split_once('.') {
        let codelet = codelet.strip_suffix("_worker").unwrap_or(codelet);
        return (codelet.to_string(), instance.to_string());
    }
    for kind in ["ovw", "acc"] {
        if let Some(tag) = stem.strip_suffix(&format!("_{kind}_worker")) {
            return (format!("tile_gemm_{kind}"), tag.to_string());
        }
    }
    (stem.to_string(), stem.to_string())
}

/// The instance whose vertex state a data or constant section holds.
pub fn instance_of_vertex_section(name: &str) -> Option<String> {
    let stem = name
        .strip_prefix(".data.")
        .or_else(|| name.strip_prefix(ipuc_backend_ipu::emit::CONSTANT_SECTION_PREFIX))?;
    // A bare `.data` section in a chain block's scope (`.data.b3`, see
    // `ipuc_backend_ipu::codelets::scope`) names no instance.
    if stem
        .strip_prefix('b')
        .is_some_and(|k| !k.is_empty() && k.bytes().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    Some(
        stem.strip_suffix("_vertex_states")
            .unwrap_or(stem)
            .to_string(),
    )
}

/// What a profile is built from.
pub struct Inputs<'a> {
    /// Model file, for the record.
    pub model: &'a str,
    /// Function name.
    pub function: &'a str,
    /// The machine.
    pub machine: &'a MachineModel,
    /// The executable that ran.
    pub exe: &'a Executable,
    /// The simulator's profile of the run, recorded (`SimConfig::record`).
    pub sim: &'a Profile,
    /// The lowering's attribution.
    pub attribution: &'a Attribution,
}

/// Builds the profile. Fails if the run was not recorded.
pub fn collect(inp: &Inputs) -> Result<ProfileData, String> {
    let sim = inp.sim;
    if sim.timelines.len() != sim.tiles.len() {
        return Err("the simulator did not record this run's timeline".into());
    }
    let mut steps: Vec<Step> = inp
        .attribution
        .steps
        .iter()
        .map(|s| Step {
            name: s.name.clone(),
            ops: s.ops.clone(),
            estimate_cycles: s.estimate,
            simulated_cycles: 0,
            work: s.work,
        })
        .collect();
    let mut codelets: Vec<Codelet> = Vec::new();
    type Key = (String, String, Option<(usize, String)>);
    let mut codelet_ids: BTreeMap<Key, usize> = BTreeMap::new();
    let images: BTreeMap<u32, &ipuc_ipu_arch::TileImage> =
        inp.exe.tiles.iter().map(|t| (t.tile, &t.image)).collect();
    let n_steps = sim
        .tiles
        .iter()
        .map(|t| t.supersteps.len())
        .max()
        .unwrap_or(0);
    let mut tiles = Vec::with_capacity(sim.timelines.len());
    for (tl, tp) in sim.timelines.iter().zip(&sim.tiles) {
        let image = images
            .get(&tl.tile)
            .ok_or_else(|| format!("tile {} ran but has no program", tl.tile))?;
        let mut sets: BTreeMap<(u32, usize), [u64; 6]> = BTreeMap::new();
        // The recorder merged the launches of one entry section and one
        // vertex section; those of one instance merge here.
        for l in &tl.compute_sets {
            let section = image.section_at(l.entry).map_or("?", |s| s.name.as_str());
            let (codelet, by_entry) = codelet_of_section(section);
            let instance = image
                .section_at(l.vertex)
                .and_then(|s| instance_of_vertex_section(&s.name))
                .unwrap_or(by_entry);
            // The same instance name on the tiles of two blocks of a
            // chain is two codelets: the key holds the classification.
            let class = inp.attribution.classify(tl.tile, &instance);
            let key = (codelet, instance, class);
            let id = match codelet_ids.get(&key) {
                Some(&id) => id,
                None => {
                    let (step, op) = match &key.2 {
                        Some(c) => c.clone(),
                        None => (unattributed(&mut steps), String::new()),
                    };
                    codelets.push(Codelet {
                        codelet: key.0.clone(),
                        instance: key.1.clone(),
                        step,
                        op,
                    });
                    codelet_ids.insert(key, codelets.len() - 1);
                    codelets.len() - 1
                }
            };
            let e = sets.entry((l.superstep, id)).or_insert([
                u64::from(l.superstep),
                id as u64,
                l.start,
                l.end,
                0,
                0,
            ]);
            e[2] = e[2].min(l.start);
            e[3] = e[3].max(l.end);
            e[4] += u64::from(l.launches);
            e[5] += l.worker_cycles;
        }
        let mut compute_sets: Vec<[u64; 6]> = sets.into_values().collect();
        compute_sets.sort_by_key(|s| (s[0], s[2], s[1]));
        tiles.push(Tile {
            tile: tl.tile,
            supersteps: spans(tp),
            compute_sets,
            sends: tl
                .sends
                .iter()
                .map(|s| [u64::from(s.superstep), s.start, s.end, s.words])
                .collect(),
            received_words: received_words(tl, tp.supersteps.len()),
            memory: memory_of(inp, image, tl.tile, n_steps),
        });
    }
    let truncated = sim.truncation.map(|t| schema::Truncated {
        superstep: t.superstep as usize,
        cycle: t.cycle,
        limit_bytes: t.limit_bytes,
        held_bytes: t.held_bytes,
    });
    // Supersteps past the cut have no launches to name their step by.
    let unrecorded = truncated.map(|t| (t.superstep, not_recorded(&mut steps)));
    let supersteps = supersteps_of(
        &tiles,
        &codelets,
        n_steps,
        inp.attribution,
        &mut steps,
        unrecorded,
    );
    let mut data = ProfileData {
        schema: schema::SCHEMA.into(),
        version: schema::VERSION,
        model: inp.model.into(),
        function: inp.function.into(),
        machine: inp.machine.name.clone(),
        clock_hz: inp.machine.clock_hz,
        total_cycles: sim.total_cycles,
        memory_base: inp.machine.sram_base,
        memory_end: inp.machine.sram_end,
        steps,
        codelets,
        supersteps,
        tiles,
        truncated,
    };
    place_buffers(&mut data, inp.attribution);
    Ok(data)
}

/// A tile's supersteps as `[start, sync, release, compute, exchange,
/// exchange_until]`, from the simulator's counters: the first starts at
/// cycle 0, each reaches its sync after its compute and exchange cycles,
/// is released after its sync wait, and the next starts there.
fn spans(tp: &TileProfile) -> Vec<[u64; 6]> {
    let mut start = 0;
    tp.supersteps
        .iter()
        .map(|c| {
            let sync = start + c.compute + c.exchange;
            let release = sync + c.sync_wait;
            let span = [
                start,
                sync,
                release,
                c.compute,
                c.exchange,
                c.exchange_until,
            ];
            start = release;
            span
        })
        .collect()
}

/// A tile's received words, per superstep of its `n`.
fn received_words(tl: &TileTimeline, n: usize) -> Vec<u64> {
    let mut words = vec![0; n];
    for r in &tl.received {
        if let Some(w) = words.get_mut(r.superstep as usize) {
            *w += u64::from(r.words);
        }
    }
    words
}

/// The name of the step that takes the supersteps of a truncated
/// recording past its cut ([`schema::Truncated`]).
pub const NOT_RECORDED: &str = "not recorded (profile truncated)";

/// The [`NOT_RECORDED`] step, made last.
fn not_recorded(steps: &mut Vec<Step>) -> usize {
    steps.push(Step {
        name: NOT_RECORDED.into(),
        ops: Vec::new(),
        estimate_cycles: None,
        simulated_cycles: 0,
        work: None,
    });
    steps.len() - 1
}

/// The `unattributed` step (made on first use, after `sync`).
fn unattributed(steps: &mut Vec<Step>) -> usize {
    if let Some(i) = steps.iter().position(|s| s.name == "unattributed") {
        return i;
    }
    steps.push(Step {
        name: "unattributed".into(),
        ops: Vec::new(),
        estimate_cycles: None,
        simulated_cycles: 0,
        work: None,
    });
    steps.len() - 1
}

fn supersteps_of(
    tiles: &[Tile],
    codelets: &[Codelet],
    n: usize,
    attribution: &Attribution,
    steps: &mut [Step],
    unrecorded: Option<(usize, usize)>,
) -> Vec<Superstep> {
    let mut out = Vec::with_capacity(n);
    // Per superstep: the step its launches name, its busiest tile's
    // cycles to the sync, the sync's release after the last arrival.
    let mut active: Vec<(Option<usize>, u64, u64)> = Vec::with_capacity(n);
    // Per superstep: its exchange's part, before the launches.
    let mut leads: Vec<u64> = Vec::with_capacity(n);
    for k in 0..n {
        let mut s = Superstep {
            index: k,
            step: 0,
            exchange_step: None,
            start: u64::MAX,
            end: 0,
            compute_max: 0,
            exchange_max: 0,
            sync_wait_max: 0,
            busiest_tile: 0,
            exchange_bytes: 0,
            tiles_computing: 0,
            codelets: Vec::new(),
        };
        let mut last_arrival = 0u64;
        let mut active_max = 0u64;
        // The latest end of a tile's exchange instructions: a superstep
        // whose compute follows its exchange at a fence holds both.
        let mut exchange_lead = 0u64;
        let mut per_codelet: BTreeMap<usize, u64> = BTreeMap::new();
        let mut worker_cycles_per_step: BTreeMap<usize, u64> = BTreeMap::new();
        for t in tiles {
            let Some(&[start, sync, release, compute, exchange, until]) = t.supersteps.get(k)
            else {
                continue;
            };
            s.start = s.start.min(start);
            s.end = s.end.max(release);
            s.compute_max = s.compute_max.max(compute);
            s.exchange_max = s.exchange_max.max(exchange);
            s.sync_wait_max = s.sync_wait_max.max(release - sync);
            if sync >= last_arrival {
                last_arrival = sync;
                s.busiest_tile = t.tile;
            }
            active_max = active_max.max(sync - start);
            exchange_lead = exchange_lead.max(until);
            let mut on_tile: BTreeMap<usize, u64> = BTreeMap::new();
            for set in of_superstep(&t.compute_sets, k) {
                let c = set[1] as usize;
                *on_tile.entry(c).or_default() += set[3] - set[2];
                *worker_cycles_per_step.entry(codelets[c].step).or_default() += set[5];
            }
            if !on_tile.is_empty() {
                s.tiles_computing += 1;
            }
            for (c, cycles) in on_tile {
                let e = per_codelet.entry(c).or_default();
                *e = (*e).max(cycles);
            }
            s.exchange_bytes += of_superstep(&t.sends, k)
                .iter()
                .map(|x| 4 * x[3])
                .sum::<u64>();
        }
        if s.start == u64::MAX {
            s.start = 0;
        }
        s.codelets = per_codelet
            .into_iter()
            .map(|(c, cycles)| [c as u64, cycles])
            .collect();
        let by_launches = worker_cycles_per_step
            .iter()
            .max_by_key(|(step, w)| (**w, usize::MAX - **step))
            .map(|(&step, _)| step);
        // The superstep's share of the run: its busiest tile to the sync,
        // then the sync's release after the last arrival.
        active.push((by_launches, active_max, s.end.saturating_sub(last_arrival)));
        leads.push(exchange_lead.min(active_max));
        out.push(s);
    }
    for k in 0..out.len() {
        let step = match (active[k].0, unrecorded) {
            (_, Some((cut, step))) if k >= cut => step,
            (Some(step), _) => step,
            (None, _) => {
                let before = active[..k].iter().rev().find_map(|a| a.0);
                let after = active[k + 1..].iter().find_map(|a| a.0);
                launch_free_step(attribution, before, after)
            }
        };
        out[k].step = step;
        // An exchange that its step's launches follow at a fence: its part
        // goes to the exchange step before them (a reduction round's stays
        // with its product).
        let recorded = !matches!(unrecorded, Some((cut, _)) if k >= cut);
        let exchange_step = match active[k].0 {
            Some(step) if recorded && leads[k] > 0 => {
                let before = active[..k].iter().rev().find_map(|a| a.0);
                Some(launch_free_step(attribution, before, Some(step))).filter(|&x| x != step)
            }
            _ => None,
        };
        out[k].exchange_step = exchange_step;
        match exchange_step {
            Some(x) => {
                steps[x].simulated_cycles += leads[k];
                steps[step].simulated_cycles += active[k].1 - leads[k];
            }
            None => steps[step].simulated_cycles += active[k].1,
        }
        steps[attribution.sync_step()].simulated_cycles += active[k].2;
    }
    out
}

/// The records of superstep `k` among `records` sorted by superstep (their
/// first field), found by binary search: a whole model has thousands of
/// supersteps.
fn of_superstep<const N: usize>(records: &[[u64; N]], k: usize) -> &[[u64; N]] {
    let k = k as u64;
    let lo = records.partition_point(|r| r[0] < k);
    let hi = lo + records[lo..].partition_point(|r| r[0] == k);
    &records[lo..hi]
}

/// The step of a superstep without launches, between supersteps of steps
/// `before` and `after`: the step itself where both are one step (an
/// exchange inside it, e.g. a reduction round's), the first exchange step
/// between them (a loop's link back aside), or `before` where none is
/// between (an exchange inside `before`'s step, whose last superstep also
/// ran the next step's launches, e.g. a loop's copies); where the
/// program goes back to an earlier step next, a loop's link back after
/// `before`; without `after`, the first exchange step after `before`.
fn launch_free_step(a: &Attribution, before: Option<usize>, after: Option<usize>) -> usize {
    let first = |from: usize, to: usize, back: bool| {
        a.steps
            .iter()
            .enumerate()
            .take(to)
            .skip(from)
            .find(|(_, st)| st.exchange && st.loops_back == back)
            .map(|(i, _)| i)
    };
    let n = a.steps.len();
    match (before, after) {
        (Some(b), Some(c)) if b == c => b,
        (Some(b), Some(c)) if b < c => first(b + 1, c, false).unwrap_or(b),
        (Some(b), Some(_)) => first(b + 1, n, true)
            .or_else(|| first(b + 1, n, false))
            .unwrap_or(b),
        (b, _) => {
            let from = b.map_or(0, |b| b + 1);
            first(from, n, false)
                .or_else(|| first(from, n, true))
                .or(b)
                .unwrap_or(0)
        }
    }
}

/// The image's sections, stacks and host tensors on `tile`, live for the
/// whole run.
fn memory_of(
    inp: &Inputs,
    image: &ipuc_ipu_arch::TileImage,
    tile: u32,
    n: usize,
) -> Vec<Allocation> {
    let last = n.saturating_sub(1);
    let mut out = Vec::new();
    for s in &image.sections {
        let kind = if s.is_code {
            "code"
        } else if s
            .name
            .starts_with(ipuc_backend_ipu::emit::CONSTANT_SECTION_PREFIX)
        {
            "constant"
        } else {
            "data"
        };
        out.push(Allocation {
            name: s.name.clone(),
            kind: kind.into(),
            address: s.address,
            size: s.bytes.len() as u32,
            from: 0,
            to: last,
        });
    }
    for st in &image.stacks {
        let (who, contexts) = match st.context {
            ContextKind::Supervisor => ("supervisor stack", 1),
            ContextKind::Worker => ("worker stacks", 6),
        };
        out.push(Allocation {
            name: who.into(),
            kind: "stack".into(),
            address: st.top - contexts * st.size,
            size: contexts * st.size,
            from: 0,
            to: last,
        });
    }
    let direction: BTreeMap<&str, StreamDirection> = inp
        .exe
        .streams
        .iter()
        .map(|s| (s.tensor.as_str(), s.direction))
        .collect();
    for b in inp.exe.tensors.iter().filter(|b| b.tile == tile) {
        let kind = match direction.get(b.name.as_str()) {
            Some(StreamDirection::HostToDevice) => "input",
            Some(StreamDirection::DeviceToHost) => "output",
            None => "tensor",
        };
        out.push(Allocation {
            name: b.name.clone(),
            kind: kind.into(),
            address: b.address,
            size: b.size,
            from: 0,
            to: last,
        });
    }
    out
}

/// Adds the lowering's buffers to their tiles, their steps turned into
/// the supersteps attributed to them.
fn place_buffers(data: &mut ProfileData, attribution: &Attribution) {
    // A superstep holds its step and, opening it, its exchange step.
    let holds = |s: &Superstep, step: usize| s.step == step || s.exchange_step == Some(step);
    let range = |step: usize, first: bool| {
        let mut it = data
            .supersteps
            .iter()
            .filter(|s| holds(s, step))
            .map(|s| s.index);
        if first {
            it.next()
        } else {
            it.next_back()
        }
    };
    // The second superstep of a step, where it has one.
    let second = |step: usize| {
        data.supersteps
            .iter()
            .filter(|s| holds(s, step))
            .map(|s| s.index)
            .nth(1)
    };
    // The last superstep of step `last` from superstep `from` on, before
    // the program goes back to an earlier step (a loop's next period,
    // even one that starts at `first`: its buffers are live in each
    // period alone) or to a step before `first`.
    let until = |from: usize, (first, last): (usize, usize)| {
        let mut previous = first;
        data.supersteps
            .iter()
            .filter(|s| s.index >= from)
            .take_while(|s| {
                // A loop's link back opens a superstep of an earlier step.
                let lo = s.exchange_step.unwrap_or(s.step);
                let on = s.index == from || (lo >= previous && lo <= s.step);
                previous = s.step;
                on
            })
            .filter(|s| holds(s, last))
            .map(|s| s.index)
            .last()
    };
    let placed: Vec<(Vec<u32>, Allocation)> = attribution
        .buffers
        .iter()
        .filter_map(|b| {
            let mut from = range(b.live.0, true)?;
            let mut to = until(from, b.live).or_else(|| range(b.live.1, false))?;
            match b.part {
                Part::Whole => {}
                Part::UntilVertex => to = range(b.live.1, true).unwrap_or(to),
                Part::AfterVertex => from = second(b.live.0).unwrap_or(from),
            }
            Some((
                b.tiles.clone(),
                Allocation {
                    name: b.name.clone(),
                    kind: "buffer".into(),
                    address: b.address,
                    size: b.size,
                    from,
                    to: to.max(from),
                },
            ))
        })
        .collect();
    let index: BTreeMap<u32, usize> = data
        .tiles
        .iter()
        .enumerate()
        .map(|(i, t)| (t.tile, i))
        .collect();
    for (tiles, a) in placed {
        for t in tiles {
            if let Some(&i) = index.get(&t) {
                data.tiles[i].memory.push(a.clone());
            }
        }
    }
    let consumed: Vec<(String, Option<usize>)> = attribution
        .consumed
        .iter()
        .map(|(prefix, step)| (format!(".const.{prefix}"), range(*step, true)))
        .collect();
    for t in &mut data.tiles {
        for a in t.memory.iter_mut().filter(|a| a.kind == "constant") {
            if let Some((_, Some(last))) = consumed
                .iter()
                .find(|(p, _)| a.name.starts_with(p.as_str()))
            {
                a.to = (*last).max(a.from);
            }
        }
        t.memory.sort_by_key(|a| (a.address, a.from));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prof::attribution::StepInfo;

    fn block_steps() -> Attribution {
        let step = |name: &str, exchange| StepInfo {
            name: name.into(),
            ops: Vec::new(),
            estimate: None,
            exchange,
            work: None,
            loops_back: false,
        };
        Attribution {
            steps: vec![
                step("layer_norm", false),
                step("exchange_a", true),
                step("fc1", false),
                step("exchange_b", true),
                step("fc2", false),
                step("sync", false),
            ],
            instances: Vec::new(),
            buffers: Vec::new(),
            consumed: Vec::new(),
        }
    }

    /// A reduction round's exchange stays with its product; an exchange
    /// between two steps is the next exchange step; one after the last
    /// exchange step stays with the step before it.
    #[test]
    fn supersteps_without_launches_join_their_step_or_the_next_exchange() {
        let a = block_steps();
        assert_eq!(launch_free_step(&a, Some(2), Some(2)), 2);
        assert_eq!(launch_free_step(&a, Some(4), Some(4)), 4);
        assert_eq!(launch_free_step(&a, Some(0), Some(2)), 1);
        assert_eq!(launch_free_step(&a, Some(2), Some(4)), 3);
        assert_eq!(launch_free_step(&a, Some(4), None), 4);
        assert_eq!(launch_free_step(&a, None, Some(0)), 1);
    }

    /// A loop over steps 1..=4 (exchange_a .. fc2): after fc2 its copies,
    /// then its link back into exchange_a's step or, on the last period,
    /// the link out to the next block.
    #[test]
    fn a_loops_link_back_takes_the_exchange_before_the_body_again() {
        let mut a = block_steps();
        let at = a.steps.len() - 1;
        let mut back = a.steps[1].clone();
        back.name = "link (back)".into();
        back.loops_back = true;
        let mut out = a.steps[1].clone();
        out.name = "link out".into();
        let mut next = a.steps[0].clone();
        next.name = "next layer_norm".into();
        a.steps.splice(at..at, [back, out, next]);
        // Steps: 0 layer_norm, 1 exchange_a, 2 fc1, 3 exchange_b, 4 fc2,
        // 5 link (back), 6 link out, 7 next layer_norm, 8 sync.
        assert_eq!(launch_free_step(&a, Some(4), Some(1)), 5);
        assert_eq!(launch_free_step(&a, Some(4), Some(7)), 6);
        assert_eq!(launch_free_step(&a, Some(4), None), 6);
        // fc2's reduction round before a superstep its copies took.
        let mut copies = a.steps[2].clone();
        copies.name = "copies".into();
        a.steps.insert(5, copies);
        assert_eq!(launch_free_step(&a, Some(4), Some(5)), 4);
    }

    #[test]
    fn codelets_and_instances_from_section_names() {
        let c = |n: &str| codelet_of_section(n);
        assert_eq!(
            c(".text.gelu_tanh_f8_worker.fc1_gelu_f8"),
            ("gelu_tanh_f8".into(), "fc1_gelu_f8".into())
        );
        assert_eq!(
            c(".text.fc2_acc_worker"),
            ("tile_gemm_acc".into(), "fc2".into())
        );
        assert_eq!(c(".text.main"), ("main".into(), "main".into()));
        let i = |n: &str| instance_of_vertex_section(n);
        assert_eq!(i(".data.out0_1").as_deref(), Some("out0_1"));
        assert_eq!(i(".const.fc1_vertex_states").as_deref(), Some("fc1"));
        assert_eq!(i(".text.main"), None);
        // Scoped by a chain: the instances carry the block's scope; a bare
        // `.data` of block 3 names none.
        assert_eq!(
            c(".text.b3_fc2_acc_worker"),
            ("tile_gemm_acc".into(), "b3_fc2".into())
        );
        assert_eq!(i(".const.b3_fc1_vertex_states").as_deref(), Some("b3_fc1"));
        assert_eq!(i(".data.b3"), None);
        assert_eq!(i(".data.b3_ln").as_deref(), Some("b3_ln"));
    }
}
