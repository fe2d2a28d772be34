//! `trace.json`: a profile in the Chrome trace-event format (JSON object
//! form), which Perfetto and `chrome://tracing` open.
//!
//! - One track (thread) per tile; tiles are grouped 16 to a process, one
//!   row of the exchange's row map, so 1,472 tracks fold into 92 groups.
//! - Spans: each compute set (one codelet instance's launches on a tile
//!   in a superstep, merged), named `nn op · codelet (instance)`; the
//!   tile's exchange sends in a superstep (first word to last); its wait
//!   at the sync.
//! - A counter per group: active workers, the sum over its tiles of each
//!   compute set's mean active workers.
//! - Nothing is sampled; the merging above is stated in `otherData`, and
//!   a truncated recording's cut in `otherData.truncated`.
//!
//! Times are microseconds at the machine's clock (fractional).
//!
//! The events are written one at a time as they are made (a whole model
//! has millions of them, several GB as `serde_json::Value`s), the object's
//! keys in the order `serde_json` sorts them.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{json, Value};

use super::schema::ProfileData;

/// Tiles per group (process) of the trace.
pub const TILES_PER_GROUP: u32 = 16;

/// Writes the trace of `p` to `out`.
pub fn write(p: &ProfileData, out: &mut impl Write) -> std::io::Result<()> {
    write!(out, "{{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut *out, &other_data(p))?;
    write!(out, ",\"traceEvents\":[")?;
    let mut first = true;
    let mut event = |e: Value| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &e)?;
        Ok(())
    };
    events(p, &mut event)?;
    write!(out, "]}}")
}

/// The trace's `otherData`.
fn other_data(p: &ProfileData) -> Value {
    let mut other = json!({
        "generator": "ipuc ipu-run --profile",
        "model": p.model,
        "function": p.function,
        "machine": p.machine,
        "clock_hz": p.clock_hz,
        "total_cycles": p.total_cycles,
        "tracks": format!("one thread per tile, {TILES_PER_GROUP} tiles per process (one exchange row)"),
        "aggregation": "every tile that ran is present, nothing is sampled; a compute-set span merges one codelet instance's worker launches on a tile within a superstep (first start to last exit); an exchange span covers a tile's sends in a superstep (first word to last); the per-group 'active workers' counter sums each compute set's mean active workers (its worker-cycles / its span)",
    });
    if let Some(t) = &p.truncated {
        other["truncated"] = json!({
            "superstep": t.superstep,
            "cycle": t.cycle,
            "limit_bytes": t.limit_bytes,
            "held_bytes": t.held_bytes,
            "note": t.note(),
        });
    }
    other
}

/// Hands each event of `p`'s trace to `event`, in order.
fn events(
    p: &ProfileData,
    event: &mut impl FnMut(Value) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let us = |cycles: u64| cycles as f64 * 1e6 / p.clock_hz;
    let mut groups: BTreeMap<u32, Vec<(u64, f64)>> = BTreeMap::new();
    for t in &p.tiles {
        let pid = t.tile / TILES_PER_GROUP;
        if let std::collections::btree_map::Entry::Vacant(v) = groups.entry(pid) {
            let (lo, hi) = (
                pid * TILES_PER_GROUP,
                pid * TILES_PER_GROUP + TILES_PER_GROUP - 1,
            );
            event(
                json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": format!("tiles {lo}-{hi}")}}),
            )?;
            event(
                json!({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}),
            )?;
            v.insert(Vec::new());
        }
        event(
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": t.tile, "args": {"name": format!("tile {}", t.tile)}}),
        )?;
        event(
            json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": t.tile, "args": {"sort_index": t.tile}}),
        )?;
        let deltas = groups.get_mut(&pid).expect("inserted above");
        for set in &t.compute_sets {
            let [k, c, start, end, launches, worker_cycles] = *set;
            let codelet = &p.codelets[c as usize];
            let op = codelet.op.split(" @ ").next().unwrap_or("");
            let workers = worker_cycles as f64 / (end - start).max(1) as f64;
            event(json!({
                "ph": "X", "pid": pid, "tid": t.tile, "cat": "compute",
                "name": format!("{op} · {} ({})", codelet.codelet, codelet.instance),
                "ts": us(start), "dur": us(end - start),
                "args": {"superstep": k, "step": p.steps[codelet.step].name, "op": codelet.op,
                         "launches": launches, "mean_active_workers": workers,
                         "start_cycle": start, "cycles": end - start},
            }))?;
            deltas.push((start, workers));
            deltas.push((end, -workers));
        }
        for s in &t.sends {
            let [k, start, end, words] = *s;
            event(json!({
                "ph": "X", "pid": pid, "tid": t.tile, "cat": "exchange", "name": "exchange",
                "ts": us(start), "dur": us(end - start),
                "args": {"superstep": k, "words": words, "start_cycle": start, "cycles": end - start},
            }))?;
        }
        for (k, s) in t.supersteps.iter().enumerate() {
            let [_, sync, release, ..] = *s;
            if release > sync {
                event(json!({
                    "ph": "X", "pid": pid, "tid": t.tile, "cat": "sync", "name": "sync",
                    "ts": us(sync), "dur": us(release - sync),
                    "args": {"superstep": k, "start_cycle": sync, "cycles": release - sync},
                }))?;
            }
        }
    }
    for (pid, mut deltas) in groups {
        deltas.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut level = 0.0f64;
        let mut i = 0;
        while i < deltas.len() {
            let at = deltas[i].0;
            while i < deltas.len() && deltas[i].0 == at {
                level += deltas[i].1;
                i += 1;
            }
            // Rounded so that float sums of +w and -w come back to 0.
            let value = (level * 1000.0).round() / 1000.0;
            event(
                json!({"ph": "C", "pid": pid, "name": "active workers", "ts": us(at), "args": {"workers": value}}),
            )?;
        }
    }
    Ok(())
}
