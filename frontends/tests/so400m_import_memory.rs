//! Importing the graph-only so400m model with synthesised random weights must
//! hold the weights once: peak memory close to the weight bytes (the loader's
//! buffers are released as each weight moves into the IR's resource table).
//! Its own test binary, so the process's peak RSS is this test's alone.

use std::path::Path;

mod common;

use ipuc_frontends::onnx::import::{import_file, ImportOptions};
use ipuc_frontends::onnx::{LoadOptions, WeightsPolicy};
use ipuc_ir::attributes::AttrKind;
use ipuc_ir::{Context, WalkOrder};

#[test]
fn so400m_import_with_random_weights_holds_them_once() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/models/siglip-so400m/model.onnx");
    let mut ctx = Context::new(ipuc_dialects::registry());
    let load = LoadOptions {
        weights: WeightsPolicy::Random { seed: 1 },
    };
    let module = import_file(&mut ctx, &path, &load, &ImportOptions::default()).unwrap();
    let mut resource_bytes = 0usize;
    ctx.walk(module, WalkOrder::PreOrder, &mut |c, op| {
        if let Some(AttrKind::DenseResource { resource, .. }) =
            c.attr(op, "value").map(|a| a.kind())
        {
            resource_bytes += resource.blob().map_or(0, |b| b.data.len());
        }
    });
    let weights = 428_225_600 * 4;
    // Everything but the small inline constants lives in resources.
    assert!(resource_bytes > weights * 99 / 100, "{resource_bytes}");
    common::memory::assert_weights_held_once(weights);
}
