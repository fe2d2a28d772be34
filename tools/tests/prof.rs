//! `ipu-run --profile` and `ipu-prof` on the FP8 MLP block of
//! `lit-tests/lower/mlp-fp8.mlir`: the profile agrees with the run's own
//! report, the trace is well-formed, `ipu-prof`'s answers are
//! snapshotted, and bad input gets an error.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::run_tool;
use serde_json::Value;

use common::PROFILED_BLOCK as MODEL;

fn ipu_prof(args: &[&str]) -> (i32, String, String) {
    run_tool(env!("CARGO_BIN_EXE_ipu-prof"), args)
}

/// The profile directory of one recorded run (made once per test binary),
/// and that run's `ipu-run --json` report.
fn profiled() -> &'static (tempfile::TempDir, Value) {
    static DIR: OnceLock<(tempfile::TempDir, Value)> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let report = common::profile_block(env!("CARGO_BIN_EXE_ipu-run"), &dir.path().join("prof"));
        (dir, report)
    })
}

fn prof_dir() -> PathBuf {
    profiled().0.path().join("prof")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `name` of each entry of the JSON array `list`.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect()
}

/// The simulated cycles of profile `p`'s steps, summed.
fn steps_cycles(p: &Value) -> u64 {
    p["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["simulated_cycles"].as_u64().unwrap())
        .sum()
}

/// The per-superstep figures and the total agree with `ipu-run`'s own
/// report of the same run (computed from the simulator's counters, not
/// from the recording), and the steps' simulated cycles add up to the run.
#[test]
fn the_profile_agrees_with_the_runs_report() {
    let report = &profiled().1;
    let p = read_json(&prof_dir().join("profile.json"));
    assert_eq!(p["schema"], "ipuc-profile");
    assert_eq!(p["version"], 2);
    assert_eq!(p["total_cycles"], report["cycles"]);
    assert_eq!(steps_cycles(&p), report["cycles"].as_u64().unwrap());
    let theirs = report["profile"]["supersteps"].as_array().unwrap();
    let ours = p["supersteps"].as_array().unwrap();
    assert_eq!(ours.len(), theirs.len());
    for (o, t) in ours.iter().zip(theirs) {
        assert_eq!(o["compute_max"], t["compute"]);
        assert_eq!(o["exchange_max"], t["exchange"]);
        assert_eq!(o["sync_wait_max"], t["sync"]);
    }
    // Every codelet instance of the block is attributed to an `nn` op,
    // also the instances that share another's worker code (the second
    // residual add runs the first one's worker with its own vertex state).
    let codelets = p["codelets"].as_array().unwrap();
    for c in codelets {
        assert!(c["op"].as_str().unwrap().starts_with("nn."), "{c}");
    }
    let instance = |i: &str| codelets.iter().find(|c| c["instance"] == i).cloned();
    let (first, second) = (instance("out0_0").unwrap(), instance("out0_1").unwrap());
    assert_eq!(first["codelet"], "scaled_add_f16");
    assert_eq!(
        (&second["codelet"], &second["op"]),
        (&first["codelet"], &first["op"])
    );
    assert!(first["op"].as_str().unwrap().starts_with("nn.add @"));
}

/// Every tile that ran has a named track in a 16-tile group; each compute
/// set, send and sync wait is one complete event; the metadata states the
/// aggregation.
#[test]
fn the_trace_has_a_track_per_tile_and_a_span_per_compute_set() {
    let p = read_json(&prof_dir().join("profile.json"));
    let t = read_json(&prof_dir().join("trace.json"));
    let events = t["traceEvents"].as_array().unwrap();
    let tiles = p["tiles"].as_array().unwrap();
    let named: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
        .collect();
    assert_eq!(named.len(), tiles.len());
    assert!(named.iter().all(|(pid, tid)| *pid == tid / 16));
    let count = |cat: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat)
            .count()
    };
    let sets: usize = tiles
        .iter()
        .map(|t| t["compute_sets"].as_array().unwrap().len())
        .sum();
    assert_eq!(count("compute"), sets);
    let sends: usize = tiles
        .iter()
        .map(|t| t["sends"].as_array().unwrap().len())
        .sum();
    assert_eq!(count("exchange"), sends);
    assert!(events.iter().any(|e| e["ph"] == "X"
        && e["name"]
            .as_str()
            .unwrap()
            .starts_with("nn.gelu · gelu_tanh_f8")));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "C" && e["name"] == "active workers"));
    assert!(t["otherData"]["aggregation"]
        .as_str()
        .unwrap()
        .contains("nothing is sampled"));
}

#[test]
fn ipu_prof_answers() {
    let dir = prof_dir();
    let dir = dir.to_str().unwrap();
    for (name, args) in [
        ("summary", vec![dir]),
        ("top", vec![dir, "top", "--limit", "3"]),
        (
            "memory_fc_tile",
            vec![dir, "memory", "--tile", "0", "--superstep", "2"],
        ),
        ("memory_ln_tile", vec![dir, "memory", "--tile", "1470"]),
    ] {
        let (code, stdout, stderr) = ipu_prof(&args);
        assert_eq!(code, 0, "{name}: {stderr}");
        insta::assert_snapshot!(name, stdout);
    }
}

/// `--json` prints one parseable line for every question.
#[test]
fn ipu_prof_json() {
    let dir = prof_dir();
    let dir = dir.to_str().unwrap();
    for args in [
        vec![dir, "--json"],
        vec![dir, "top", "--json"],
        vec![dir, "supersteps", "--json"],
        vec![dir, "memory", "--tile", "0", "--superstep", "2", "--json"],
        vec![dir, "error", "--json"],
    ] {
        let (code, stdout, stderr) = ipu_prof(&args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert_eq!(stdout.lines().count(), 1, "{args:?}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert!(!v.is_null());
    }
    let (_, stdout, _) = ipu_prof(&[dir, "error", "--json"]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        names(&v["kinds"]),
        ["exchange", "nn.layer_normalization", "nn.linear", "sync"]
    );
}

/// A recording over a small `--profile-limit` stops at a superstep: the
/// run still passes with the same cycles; the profile, the trace, the
/// report page, `ipu-prof` and the run's report say where it stops; the
/// supersteps before the cut are as in the whole recording, those after
/// it keep their cycles in the `not recorded` step, and the steps still
/// add up to the run.
#[test]
fn a_recording_over_its_limit_is_truncated_and_says_so() {
    let whole_report = &profiled().1;
    let whole = read_json(&prof_dir().join("profile.json"));
    let dir = tempfile::tempdir().unwrap();
    let prof = dir.path().join("prof");
    // 10 KiB: the block's 38 tiles hold about 24 KiB by its end.
    let report = common::profile_block_with(
        env!("CARGO_BIN_EXE_ipu-run"),
        &prof,
        &["--profile-limit", "0.01"],
    );
    assert_eq!(report["passed"], true);
    assert_eq!(report["cycles"], whole_report["cycles"]);
    let note = report["profile_files"]["truncated"].as_str().unwrap();
    assert!(note.starts_with("profile truncated"), "{note}");

    let p = read_json(&prof.join("profile.json"));
    let cut = p["truncated"]["superstep"].as_u64().unwrap() as usize;
    let supersteps = p["supersteps"].as_array().unwrap();
    assert!(0 < cut && cut < supersteps.len(), "{}", p["truncated"]);
    assert_eq!(p["truncated"]["limit_bytes"], 10485);
    assert!(p["truncated"]["held_bytes"].as_u64().unwrap() > 10485);
    assert_eq!(
        p["truncated"]["cycle"], supersteps[cut]["start"],
        "the cut is at the start of its superstep"
    );
    assert!(note.contains(&format!("from superstep {cut} ")), "{note}");
    assert!(whole.get("truncated").is_none());
    assert_eq!(steps_cycles(&p), report["cycles"].as_u64().unwrap());
    let steps = names(&p["steps"]);
    let not_recorded = steps.len() - 1;
    assert_eq!(steps[not_recorded], "not recorded (profile truncated)");
    // Codelets are numbered as first met, so compare them by name.
    let before = |v: &Value| -> Vec<Value> {
        v["supersteps"].as_array().unwrap()[..cut]
            .iter()
            .map(|s| {
                let mut s = s.clone();
                for c in s["codelets"].as_array_mut().unwrap() {
                    c[0] = codelet_name(v, &c[0]);
                }
                s
            })
            .collect()
    };
    assert_eq!(before(&p), before(&whole));
    for (k, s) in supersteps.iter().enumerate().skip(cut) {
        assert_eq!(s["step"], not_recorded, "superstep {k}");
        assert_eq!(s["codelets"], serde_json::json!([]), "superstep {k}");
        assert_eq!(s["exchange_bytes"], 0, "superstep {k}");
        let w = &whole["supersteps"][k];
        assert_eq!((&s["start"], &s["end"]), (&w["start"], &w["end"]));
        assert_eq!(s["compute_max"], w["compute_max"]);
    }
    let tiles = p["tiles"].as_array().unwrap();
    for (t, w) in tiles.iter().zip(whole["tiles"].as_array().unwrap()) {
        assert_eq!(t["supersteps"], w["supersteps"]);
        let kept = |profile: &Value, v: &Value, field: &str| -> Vec<Value> {
            v[field]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| (r[0].as_u64().unwrap() as usize) < cut)
                .map(|r| {
                    let mut r = r.clone();
                    if field == "compute_sets" {
                        r[1] = codelet_name(profile, &r[1]);
                    }
                    r
                })
                .collect()
        };
        for field in ["compute_sets", "sends"] {
            assert_eq!(kept(&p, t, field), kept(&whole, w, field), "{field}");
        }
        assert!(t["compute_sets"]
            .as_array()
            .unwrap()
            .iter()
            .chain(t["sends"].as_array().unwrap())
            .all(|r| (r[0].as_u64().unwrap() as usize) < cut));
        let received = t["received_words"].as_array().unwrap();
        assert!(received[cut..].iter().all(|w| w == 0));
        assert_eq!(
            received[..cut],
            w["received_words"].as_array().unwrap()[..cut]
        );
    }

    let trace = read_json(&prof.join("trace.json"));
    assert_eq!(trace["otherData"]["truncated"]["superstep"], cut);
    let page = std::fs::read_to_string(prof.join("report.html")).unwrap();
    assert!(
        page.contains("\"truncated\":\"profile truncated"),
        "the page's data"
    );
    assert!(page.contains("id=\"truncated\""), "the page's banner");
    let (code, text, _) = ipu_prof(&[prof.to_str().unwrap(), "supersteps"]);
    assert_eq!(code, 0);
    assert!(text.starts_with("note: profile truncated"), "{text}");
    let (_, json, _) = ipu_prof(&[prof.to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["truncated"]["superstep"], cut);

    // A limit must be a size.
    let (code, _, stderr) = run_tool(
        env!("CARGO_BIN_EXE_ipu-run"),
        [MODEL, "--profile", "x", "--profile-limit=-1"],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("is not a size in MiB"), "{stderr}");
}

/// Codelet number `c` of profile `p` as `codelet (instance)`.
fn codelet_name(p: &Value, c: &Value) -> Value {
    let c = &p["codelets"][c.as_u64().unwrap() as usize];
    Value::from(format!("{} ({})", c["codelet"], c["instance"]))
}

/// Missing profiles, other schema versions, tiles and supersteps that do
/// not exist, and `--profile` where nothing can be attributed.
#[test]
fn bad_input_gets_an_error() {
    let (code, _, stderr) = ipu_prof(&["/nonexistent/profile"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("cannot read") && stderr.contains("--profile"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(prof_dir().join("profile.json"))
        .unwrap()
        .replacen("\"version\":2", "\"version\":99", 1);
    std::fs::write(dir.path().join("profile.json"), text).unwrap();
    let (code, _, stderr) = ipu_prof(&[dir.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("version 99"), "{stderr}");
    let d = prof_dir();
    let d = d.to_str().unwrap();
    let (code, _, stderr) = ipu_prof(&[d, "memory", "--tile", "900"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("tile 900 did not run"), "{stderr}");
    let (code, _, stderr) = ipu_prof(&[d, "memory", "--tile", "0", "--superstep", "40"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("superstep 40 does not exist"), "{stderr}");
    let (code, _, stderr) = run_tool(
        env!("CARGO_BIN_EXE_ipu-run"),
        [
            MODEL,
            "--device",
            "reference",
            "--profile",
            dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("--profile needs"), "{stderr}");
}

/// The `profile.json` of siglip-tiny's `--extract block` at FP16 on the
/// simulator (`None` where the fixture is absent and may be).
fn tiny_profile(block: &str) -> Option<Value> {
    profile_of("siglip-tiny", Some(block))
}

/// The profile of `--extract block` of siglip `model` at FP16 on the
/// simulator, the whole model where `block` is `None` (`None` where the
/// fixture is absent and may be).
fn profile_of(model: &str, block: Option<&str>) -> Option<Value> {
    profile_at(model, block, "fp16")
}

/// [`profile_of`] at `precision`.
fn profile_at(model: &str, block: Option<&str>, precision: &str) -> Option<Value> {
    let dir_of_model = common::fixture_dir(model)?;
    let dir = tempfile::tempdir().unwrap();
    let onnx = dir_of_model.join("model.onnx");
    let mut args = vec![onnx.to_str().unwrap().to_string()];
    if let Some(b) = block {
        args.extend(["--extract".to_string(), b.to_string()]);
    }
    args.extend(["--precision", precision, "--device", "sim", "--profile"].map(String::from));
    args.push(dir.path().to_str().unwrap().to_string());
    let (code, _, stderr) = run_tool(env!("CARGO_BIN_EXE_ipu-run"), &args);
    assert_eq!(code, 0, "{model} {block:?}: {stderr}");
    Some(read_json(&dir.path().join("profile.json")))
}

/// Profile `p`'s codelet instance named `instance`.
fn codelet<'a>(p: &'a Value, instance: &str) -> &'a Value {
    p["codelets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["instance"] == instance)
        .unwrap_or_else(|| panic!("no instance {instance}"))
}

/// Checks that every step but `sync` whose name is in `names` has an
/// estimate within 10 % of its simulated cycles, and every exchange step
/// (scheduled in time by the compiler) exactly its simulated cycles.
fn assert_estimated(p: &Value, names: &[&str]) {
    for s in p["steps"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        if !names.contains(&name) {
            continue;
        }
        let (e, sim) = (
            s["estimate_cycles"]
                .as_u64()
                .unwrap_or_else(|| panic!("{name}: no estimate")),
            s["simulated_cycles"].as_u64().unwrap(),
        );
        if name.contains("exchange") {
            assert_eq!(e, sim, "{name}: a scheduled exchange");
        } else {
            let (e, sim) = (e as f64, sim as f64);
            assert!((e - sim).abs() <= 0.1 * sim, "{name}: {e} vs {sim}");
        }
    }
}

/// How many tiles' memory maps hold an allocation named `name`.
fn tiles_holding(p: &Value, name: &str) -> usize {
    p["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["memory"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["name"] == name)
        })
        .count()
}

/// Checks that no two allocations of a tile's memory map (sections,
/// constants and the lowering's buffers; not the host tensors, which are
/// views of the buffers that hold them) overlap while both are live, and
/// returns the names of the buffers on tile `tile`.
fn assert_no_live_overlap(p: &Value, tile: u64) -> Vec<String> {
    let mut on_tile = Vec::new();
    for t in p["tiles"].as_array().unwrap() {
        let memory: Vec<&Value> = t["memory"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["kind"] != "input" && a["kind"] != "output")
            .collect();
        let field = |a: &Value, k: &str| a[k].as_u64().unwrap();
        for (i, a) in memory.iter().enumerate() {
            for b in memory[i + 1..].iter() {
                let live = field(a, "from") <= field(b, "to") && field(b, "from") <= field(a, "to");
                let (a0, b0) = (field(a, "address"), field(b, "address"));
                let meet = a0 < b0 + field(b, "size") && b0 < a0 + field(a, "size");
                assert!(!(live && meet), "tile {}: {a} and {b}", t["tile"]);
            }
        }
        if t["tile"] == tile {
            on_tile = memory
                .iter()
                .filter(|a| a["kind"] == "buffer")
                .map(|a| a["name"].as_str().unwrap().to_string())
                .collect();
        }
    }
    on_tile
}

/// An attention block alone profiles step by step, with its estimate's
/// steps: the materialised form (siglip-tiny's 16 keys, one panel) has
/// seven, each codelet attributed to its `nn` op, the steps adding up to
/// the run.
#[test]
fn an_attention_block_profiles_step_by_step() {
    let Some(p) = tiny_profile("attention:0") else {
        return;
    };
    let steps = [
        "layer_norm",
        "exchange_a",
        "qkv",
        "exchange_b",
        "attention",
        "exchange_c",
        "out",
        "sync",
    ];
    assert_eq!(names(&p["steps"]), steps);
    assert_eq!(steps_cycles(&p), p["total_cycles"].as_u64().unwrap());
    assert_estimated(&p, &steps);
    let op_of =
        |instance: &str| -> String { codelet(&p, instance)["op"].as_str().unwrap().to_string() };
    // The memory maps: the block's buffers, none over another while both
    // are live; tile 0, an attention tile, holds Q, K, V, S, P and O.
    let buffers = assert_no_live_overlap(&p, 0);
    for name in ["Q", "K", "V", "S", "P", "O"] {
        assert!(
            buffers.contains(&format!("attention {name}")),
            "{buffers:?}"
        );
    }
    assert!(op_of("ln").contains("layer_norm1"), "{}", op_of("ln"));
    assert!(op_of("attn_softmax").starts_with("nn.attention"));
    assert!(op_of("residual_0").starts_with("nn.add"));
    assert!(op_of("out").contains("out_proj"), "{}", op_of("out"));
    assert_eq!(op_of("qk"), op_of("vt"));
}

/// At FP8 the bias broadcasts run beside LayerNorm, where qk's and vt's
/// tiles are idle: qk's bias rows and vt's splat of the value bias are
/// attributed to the LayerNorm step, not to the products'.
#[test]
fn fp8_attention_puts_its_bias_broadcasts_in_the_layernorm_step() {
    let Some(p) = profile_at("siglip-tiny", Some("attention:0"), "fp8") else {
        return;
    };
    let step_of = |instance: &str| codelet(&p, instance)["step"].as_u64().unwrap();
    assert_eq!(names(&p["steps"])[0], "layer_norm");
    assert_eq!(step_of("qk_bias_broadcast"), 0);
    assert_eq!(step_of("vt_bias_broadcast"), 0);
    assert_eq!(step_of("vt"), 2);
}

/// The key-split form (siglip-small's 64 keys, split in two blocks per
/// head) adds exchange D and the combination of the partial rows, the
/// combination attributed to the attention.
#[test]
fn a_key_split_attention_profiles_its_exchange_d_and_combine() {
    let Some(p) = profile_of("siglip-small", Some("attention:0")) else {
        return;
    };
    let steps = [
        "layer_norm",
        "exchange_a",
        "qkv",
        "exchange_b",
        "attention",
        "exchange_d",
        "combine",
        "exchange_c",
        "out",
        "sync",
    ];
    assert_eq!(names(&p["steps"]), steps);
    assert_eq!(steps_cycles(&p), p["total_cycles"].as_u64().unwrap());
    assert_estimated(&p, &steps);
    let combine = p["codelets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["instance"] == "attn_combine")
        .expect("the combination's codelet");
    assert_eq!(combine["step"], 6);
    let buffers = assert_no_live_overlap(&p, 0);
    assert!(buffers.contains(&"qk input".to_string()), "{buffers:?}");
    assert!(combine["op"].as_str().unwrap().starts_with("nn.attention"));
}

/// An encoder layer (`--extract layer:0`, a chain of the attention and MLP
/// blocks on tiles of their own) profiles block by block: each block's
/// steps keep their estimates and ops, the link between them is an
/// exchange step, and the same instance name (`ln`, the LayerNorm of both
/// blocks) is attributed by the tile it ran on. The steps still add up to
/// the run.
#[test]
fn a_layer_profiles_block_by_block() {
    let Some(p) = tiny_profile("layer:0") else {
        return;
    };
    let step_names = names(&p["steps"]);
    assert_eq!(
        step_names,
        [
            "b0 layer_norm",
            "b0 exchange_a",
            "b0 qkv",
            "b0 exchange_b",
            "b0 attention",
            "b0 exchange_c",
            "b0 out",
            "link0",
            "b1 layer_norm",
            "b1 exchange_a",
            "b1 fc1",
            "b1 exchange_b",
            "b1 fc2",
            "sync"
        ]
    );
    assert_eq!(steps_cycles(&p), p["total_cycles"].as_u64().unwrap());
    // Every block step is estimated, and near it (the link is not).
    let block_steps: Vec<&str> = step_names
        .iter()
        .copied()
        .filter(|n| n.starts_with('b'))
        .collect();
    assert_estimated(&p, &block_steps);
    let codelets = p["codelets"].as_array().unwrap();
    // Each block's code is in a scope of its own on the tiles they share.
    let ln_steps: Vec<(u64, &str)> = codelets
        .iter()
        .filter(|c| c["instance"] == "b0_ln" || c["instance"] == "b1_ln")
        .map(|c| (c["step"].as_u64().unwrap(), c["op"].as_str().unwrap()))
        .collect();
    assert_eq!(ln_steps.len(), 2, "{ln_steps:?}");
    assert_eq!(ln_steps[0].0, 0, "{ln_steps:?}");
    assert!(
        ln_steps[0].1.contains("layer_norm1"),
        "the attention block's LayerNorm: {ln_steps:?}"
    );
    assert_eq!(ln_steps[1].0, 8, "{ln_steps:?}");
    assert!(
        ln_steps[1].1.contains("layer_norm2"),
        "the MLP block's LayerNorm: {ln_steps:?}"
    );
    for c in codelets {
        assert!(c["op"].as_str().unwrap().starts_with("nn."), "{c}");
    }
}

/// The model's tail (`--extract head`: the pooling head, then its MLP
/// block) profiles step by step: the pooling head's steps are its
/// estimate's, every codelet attributed to an `nn` op.
#[test]
fn the_pooling_head_profiles_step_by_step() {
    let Some(p) = tiny_profile("head") else {
        return;
    };
    let steps = [
        "b0 layer_norm",
        "b0 exchange_a",
        "b0 sv",
        "b0 exchange_b",
        "b0 heads",
        "b0 exchange_c",
        "b0 out",
    ];
    assert_eq!(names(&p["steps"])[..steps.len()], steps);
    assert_estimated(&p, &steps);
    // Its buffers in the memory maps, none over another while both are
    // live: its LN tiles keep the post-LayerNorm rows to the end, its
    // head tiles (among them) hold the scores (then P), V, the softmax's
    // statistics, (P V)^T and O.
    assert_no_live_overlap(&p, 0);
    assert!(tiles_holding(&p, "b0 layer_norm output") > 0);
    for name in [
        "b0 head scores and P",
        "b0 head V",
        "b0 head statistics",
        "b0 head (P V)^T",
        "b0 head O",
    ] {
        assert_eq!(
            tiles_holding(&p, name),
            4,
            "{name}: one per head of 16 channels"
        );
    }
    for c in p["codelets"].as_array().unwrap() {
        assert!(c["op"].as_str().unwrap().starts_with("nn."), "{c}");
    }
}

/// The whole model (patch embedding, both layers, the pooling head and
/// its MLP) profiles with every step estimated: every block's exchanges,
/// the links between blocks and the syncs exactly (the compiler schedules
/// them), and every op kind's compute within 15 %.
#[test]
fn a_whole_model_profiles_with_every_step_estimated() {
    let Some(p) = profile_of("siglip-tiny", None) else {
        return;
    };
    assert_eq!(steps_cycles(&p), p["total_cycles"].as_u64().unwrap());
    let steps = p["steps"].as_array().unwrap();
    // The two layers are one body run in a loop: its steps once, then its
    // link back. The next layer's constants are copied in beside the
    // attention block's LayerNorm (the copies' instances in its step);
    // the LN tiles, which the link back writes and which would copy at the
    // loop's end, hold none (the LayerNorms' scales and shifts are folded
    // into the products), so there is no loop-copies step.
    assert!(steps.len() > 30, "{}", steps.len());
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    let at = |n: &str| names.iter().position(|&x| x == n);
    let back = at("link2 (back)").unwrap_or_else(|| panic!("{names:?}"));
    assert!(names[back - 1].starts_with("b2 "), "{names:?}");
    assert_eq!(at("b2 loop copies"), None, "{names:?}");
    let ln = at("b1 layer_norm").unwrap_or_else(|| panic!("{names:?}"));
    let copyin: Vec<&Value> = p["codelets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["instance"]
                .as_str()
                .unwrap()
                .starts_with("b1_loop_copyin")
        })
        .collect();
    assert!(!copyin.is_empty(), "no copies at the body's start");
    assert!(copyin.iter().all(|c| c["step"] == ln), "{copyin:?}");
    assert!(steps[ln]["simulated_cycles"].as_u64().unwrap() > 0);
    assert_no_live_overlap(&p, 0);
    // The patch embedding's row tiles hold the pixel rows the host wrote.
    assert!(tiles_holding(&p, "b0 patch rows") > 0);
    for s in steps {
        let name = s["name"].as_str().unwrap();
        let e = s["estimate_cycles"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: no estimate"));
        if name.contains("exchange") || name.starts_with("link") || name == "sync" {
            assert_eq!(e, s["simulated_cycles"].as_u64().unwrap(), "{name}");
        }
    }
    let mut kinds: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    for s in steps {
        let Some(op) = s["ops"].as_array().and_then(|o| o.first()) else {
            continue;
        };
        let kind = op.as_str().unwrap().split(' ').next().unwrap().to_string();
        let k = kinds.entry(kind).or_default();
        k.0 += s["estimate_cycles"].as_u64().unwrap() as f64;
        k.1 += s["simulated_cycles"].as_u64().unwrap() as f64;
    }
    // The body's attention step covers both layers' ops, each naming its
    // own layer (a fused location's first part is the op whose value it
    // replaced, not a constant shared by every layer).
    let attention: Vec<&Value> = steps
        .iter()
        .filter(|s| s["name"].as_str().unwrap().ends_with(" attention"))
        .collect();
    assert_eq!(attention.len(), 1, "{attention:?}");
    let ops = attention[0]["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(ops[0].as_str().unwrap().contains("/layers.0/"), "{ops:?}");
    assert!(ops[1].as_str().unwrap().contains("/layers.1/"), "{ops:?}");
    for kind in [
        "nn.conv2d",
        "nn.layer_normalization",
        "nn.linear",
        "nn.attention",
    ] {
        let (e, sim) = kinds[kind];
        assert!((e - sim).abs() <= 0.15 * sim, "{kind}: {e} vs {sim}");
    }
}

/// A batch's profile counts every image's multiply-accumulates: the whole
/// siglip-tiny at `--batch 2` (its 2 layers one loop, so a layer's steps
/// count both turns): the patch embedding's product, each layer's QKV, the
/// attention (each image over its own 16 tokens), out, fc1 and fc2, the
/// pooling head's output product and the head's MLP, twice one image's.
#[test]
fn a_batchs_profile_counts_every_images_work() {
    let Some(model) = common::fixture_dir("siglip-tiny") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let onnx = model.join("model.onnx");
    let out = dir.path().to_str().unwrap();
    let args = [onnx.to_str().unwrap(), "--batch", "2", "--profile", out];
    let (code, _, stderr) = run_tool(env!("CARGO_BIN_EXE_ipu-run"), args);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = ipu_prof(&[out, "gemms", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Value = serde_json::from_str(&stdout).unwrap();
    let (n, layers, m, c, h, k) = (2u64, 2u64, 16u64, 64u64, 256u64, 3 * 8 * 8);
    let want = [
        ("b0 product", n * m * k * c),
        ("b1 qkv", layers * n * m * c * 3 * c),
        ("b1 attention", layers * n * 2 * m * m * c),
        ("b1 out", layers * n * m * c * c),
        ("b2 fc1", layers * n * m * c * h),
        ("b2 fc2", layers * n * m * h * c),
        ("b5 out", n * c * c),
        ("b6 fc1", n * c * h),
        ("b6 fc2", n * h * c),
    ];
    let got: Vec<(String, u64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["step"].as_str().unwrap().to_string(),
                r["macs"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = want.iter().map(|(s, v)| (s.to_string(), *v)).collect();
    assert_eq!(got, want);
}

/// `ipu-prof DIR gemms`: each step that runs products, its
/// multiply-accumulates from the model's own dimensions (siglip-tiny: 16
/// tokens, 64 channels, 4 heads of 16, MLP 256; no padding counted) and
/// its utilisation of the FP16 AMP's peak (64 per tile cycle on 1,472
/// tiles) over the step's simulated cycles.
#[test]
fn ipu_prof_gemms_counts_the_models_multiply_accumulates() {
    let Some(p) = tiny_profile("layer:0") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("profile.json"), p.to_string()).unwrap();
    let path = dir.path().to_str().unwrap();
    let (code, stdout, stderr) = ipu_prof(&[path, "gemms", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Value = serde_json::from_str(&stdout).unwrap();
    let (m, c, h) = (16u64, 64u64, 256u64);
    let want = [
        ("b0 qkv", m * c * 3 * c),
        ("b0 attention", 2 * m * m * c),
        ("b0 out", m * c * c),
        ("b1 fc1", m * c * h),
        ("b1 fc2", m * h * c),
    ];
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for (r, (step, macs)) in rows.iter().zip(want) {
        assert_eq!(r["step"], step);
        assert_eq!(r["macs"].as_u64(), Some(macs), "{step}");
        assert_eq!(r["peak_macs_per_cycle"].as_u64(), Some(64 * 1472), "{step}");
        let sim = r["simulated"].as_u64().unwrap() as f64;
        let u = r["utilisation"].as_f64().unwrap();
        assert!(
            (u - macs as f64 / (sim * 64.0 * 1472.0)).abs() < 1e-12,
            "{step}"
        );
    }
    let (code, text, _) = ipu_prof(&[path, "gemms"]);
    assert_eq!(code, 0);
    assert!(text.contains("b1 fc2") && text.contains('%'), "{text}");
}
