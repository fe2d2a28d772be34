//! A chain planned with its weights streamed (`ipu-run --stream-weights`,
//! `ipu-lower{weights=streamed}`, `plan_chain_with(.., Weights::Streamed)`):
//! what so400m runs because its weights do not fit resident, on siglip-tiny,
//! which is small enough to simulate and has onnxruntime's outputs:
//!
//! - the plan streams the weights where a product has several grid rows,
//!   and a chain's MLP block gathers fc1's in the link into it (where only
//!   the LN tiles receive), not in its exchange A, and so does an
//!   attention block qk's weights and vt's input (the loop's copies of
//!   their home pieces then run before the link back into the body, so
//!   that it sends the coming layer's);
//! - the whole model at fp16 and fp8 on the simulator meets issue 12's
//!   bars against onnxruntime's outputs, the plan report saying where
//!   each product's weights are gathered.

mod common;

use std::process::Command;

use common::{fixture_dir, output_ok, passed_report};
use ipuc_backend_ipu::lower::attention_block::AttentionPlan;
use ipuc_backend_ipu::lower::attention_exchange::{
    exchange_a as attention_exchange_a, qkv_gather_before,
};
use ipuc_backend_ipu::lower::block::{exchange_a, fc1_gather_before};
use ipuc_backend_ipu::lower::chain::{match_chain, plan_chain_with, ChainPlan, PlannedBlock};
use ipuc_backend_ipu::lower::schedule::Transfer;
use ipuc_backend_ipu::lower::stream::Weights;
use ipuc_ipu_arch::MachineModel;

/// siglip-tiny's chain at fp8 planned with its weights streamed (`None`
/// where the fixture is missing, as `compiled_fixture` says).
fn streamed_plan() -> Option<ChainPlan> {
    let (ctx, f) = common::compiled_fixture("siglip-tiny", None, "fp8")?;
    let chain = match_chain(&ctx, f).unwrap().expect("a chain");
    let machine = MachineModel::c600();
    Some(
        plan_chain_with(&ctx, &chain, &machine, Weights::Streamed)
            .unwrap_or_else(|d| panic!("{}", d.message)),
    )
}

/// The plans of `plan`'s blocks of one kind, as `pick` takes them.
fn of_kind<'a, T>(
    plan: &'a ChainPlan,
    pick: impl Fn(&'a PlannedBlock) -> Option<&'a T>,
) -> Vec<&'a T> {
    plan.blocks.iter().filter_map(pick).collect()
}

/// Checks that `gather` is the part of a block's exchange A (`without`
/// the link gathering) that exchange A no longer holds (`with`), and that
/// no LN tile (the link's other receivers) receives it.
fn moved_out(gather: &[Transfer], (with, without): (&[Transfer], &[Transfer]), ln_tiles: &[u32]) {
    assert_eq!(with.len() + gather.len(), without.len());
    assert!(gather.iter().all(|t| !with.contains(t)));
    assert!(gather.iter().all(|t| without.contains(t)));
    assert!(gather
        .iter()
        .flat_map(|t| &t.receivers)
        .all(|(r, _)| !ln_tiles.contains(r)));
}

#[test]
fn a_chains_mlp_blocks_gather_fc1s_weights_in_the_link_into_them() {
    let Some(plan) = streamed_plan() else {
        return;
    };
    let mlps = of_kind(&plan, |b| match b {
        PlannedBlock::Mlp(p) => Some(p),
        _ => None,
    });
    // The layers' MLP blocks stream fc1 (several grid rows); the head's,
    // on its one pooled row, keeps it resident.
    let (streaming, resident): (Vec<_>, Vec<_>) = mlps
        .into_iter()
        .partition(|p| Weights::Streamed.streams(&p.fc1));
    assert!(!streaming.is_empty(), "siglip-tiny's layers stream fc1");
    assert!(resident.iter().all(|p| !p.fc1_gathered_before));
    for p in streaming {
        // After another block, fc1's gather is the link's: exchange A
        // holds it no more.
        assert!(p.fc1_gathered_before);
        let gather = fc1_gather_before(p);
        assert!(!gather.is_empty());
        let alone = ipuc_backend_ipu::lower::block::MlpPlan {
            fc1_gathered_before: false,
            ..p.clone()
        };
        // Nothing but fc1's tiles receives the gather.
        moved_out(&gather, (&exchange_a(p), &exchange_a(&alone)), &p.ln_tiles);
    }
}

#[test]
fn a_chains_attention_blocks_gather_qk_and_vt_in_the_link_into_them() {
    let Some(plan) = streamed_plan() else {
        return;
    };
    let attentions = of_kind(&plan, |b| match b {
        PlannedBlock::Attention(p) => Some(&**p),
        _ => None,
    });
    assert!(!attentions.is_empty());
    let mut gathered = 0;
    for p in attentions {
        // Every layer's attention block follows another block (the patch
        // embedding, or the MLP before it): the link gathers for it.
        assert!(p.qkv_gathered_before);
        let gather = qkv_gather_before(p);
        gathered += gather.len();
        let alone = AttentionPlan {
            qkv_gathered_before: false,
            ..p.clone()
        };
        // Only qk's and vt's tiles receive it.
        moved_out(
            &gather,
            (&attention_exchange_a(p), &attention_exchange_a(&alone)),
            &p.ln_tiles,
        );
    }
    assert!(
        gathered > 0,
        "siglip-tiny's attention blocks stream qk or vt"
    );
}

/// siglip-tiny whole on the simulator with `--stream-weights` at
/// `precision`, against onnxruntime's outputs: the plan report (stderr)
/// and the JSON report.
fn streamed(precision: &str, (min_cosine, max_rel_l2): (f64, f64)) -> Option<String> {
    let dir = fixture_dir("siglip-tiny")?;
    let out = output_ok(
        Command::new(env!("CARGO_BIN_EXE_ipu-run"))
            .arg(dir.join("model.onnx"))
            .arg("--input")
            .arg(dir.join("test_data_set_0"))
            .args([
                "--precision",
                precision,
                "--stream-weights",
                "--plan-report",
            ])
            .arg("--json"),
        "siglip-tiny",
    );
    let (report, _) = passed_report("siglip-tiny", &out);
    assert_eq!(
        report["oracle"], "the outputs stored in test_data_set_0",
        "judged against onnxruntime's outputs"
    );
    for o in report["outputs"].as_array().expect("outputs") {
        let cosine = o["cosine"].as_f64().expect("cosine");
        let rel_l2 = o["rel_l2_err"].as_f64().expect("relative L2");
        assert!(
            cosine >= min_cosine && rel_l2 <= max_rel_l2,
            "{precision} {}: {o}",
            o["name"]
        );
    }
    Some(String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn siglip_tiny_runs_with_streamed_weights_at_fp8() {
    let Some(plan) = streamed("fp8", (0.99, 0.15)) else {
        return;
    };
    assert!(
        plan.contains("fc1's in pieces") && plan.contains("gathered in the link into the block"),
        "{plan}"
    );
    assert!(plan.contains("qk's weights streamed"), "{plan}");
}

#[test]
fn siglip_tiny_runs_with_streamed_weights_at_fp16() {
    let Some(plan) = streamed("fp16", (0.999, 1e-2)) else {
        return;
    };
    assert!(
        plan.contains("gathered in the link into the block"),
        "{plan}"
    );
}
