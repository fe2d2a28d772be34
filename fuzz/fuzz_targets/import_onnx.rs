//! Feeds arbitrary bytes to the whole ONNX path, not only protobuf decoding:
//! decode the model, import it into `nn` IR (binding batch-like dimensions
//! as a user would), verify it, print it, and run it on the reference
//! executor with zero inputs when it is small. Any panic is a bug: bad input
//! must be a located error (the node's name and what to do).
//!
//! Seed it with real models so that mutations reach the importer:
//! `mkdir -p fuzz/corpus/import_onnx && for d in ../shared/onnx-node-tests-full/*/;
//! do cp $d/model.onnx fuzz/corpus/import_onnx/$(basename $d).onnx; done`, then
//! `cargo +nightly fuzz run import_onnx fuzz/corpus/import_onnx -- -rss_limit_mb=4096`
//! from the repository root.

#![no_main]

use std::sync::Arc;

use bytes::Bytes;
use ipuc_frontends::onnx::import::{import_model, ImportOptions};
use ipuc_frontends::onnx::{LoadOptions, Model};
use ipuc_ir::{print_op, verify, Context, PrintOptions};
use ipuc_runtime::reference::interpreter::{entry_function, run_function};
use ipuc_runtime::reference::HostTensor;
use libfuzzer_sys::fuzz_target;

/// Functions whose inputs hold more elements than this are not run (the
/// fuzzer looks for panics, not for slow big tensors).
const RUN_LIMIT: usize = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let Ok(model) = Model::decode(
        Bytes::copy_from_slice(data),
        "fuzz input",
        None,
        &LoadOptions::default(),
    ) else {
        return;
    };
    let mut ctx = Context::new(ipuc_dialects::registry());
    let Ok(module) = import_model(&mut ctx, &model, &ImportOptions::default()) else {
        return;
    };
    verify(&ctx, module).expect("an imported module verifies");
    let _ = print_op(&ctx, module, &PrintOptions::default());
    let Ok(main) = entry_function(&ctx, module) else {
        return;
    };
    let Some(body) = ipuc_dialects::func::entry_block(&ctx, main) else {
        return;
    };
    let mut inputs = Vec::new();
    for &arg in ctx.block_args(body) {
        let ty = ctx.value_type(arg);
        let (Some(shape), Some(kind)) = (
            ty.shape(),
            ty.element_type()
                .and_then(ipuc_runtime::reference::interpreter::element_kind_of),
        ) else {
            return;
        };
        let dims: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
        let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        match n {
            Some(n) if n <= RUN_LIMIT => {
                inputs.push(HostTensor::new(kind, dims, Arc::from(vec![0u8; n * kind.byte_size()])))
            }
            _ => return,
        }
    }
    // Errors are fine (unsupported cases); panics are not.
    let _ = run_function(&ctx, main, &inputs);
});
