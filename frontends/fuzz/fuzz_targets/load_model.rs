//! Any byte string fed to the model loader gives a model or an error, never a panic.
#![no_main]

use ipuc_frontends::onnx::{LoadOptions, Model};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Model::decode(bytes::Bytes::copy_from_slice(data), "fuzz input", None, &LoadOptions::default());
});
