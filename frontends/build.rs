//! Generates the ONNX protobuf bindings with prost from the official `onnx.proto`
//! (proto2 variant, as shipped in the onnx 1.23.2 wheel), parsed by protox, a pure-Rust
//! protobuf compiler, so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/onnx.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    prost_build::Config::new()
        // `bytes` fields (raw_data, ...) become `bytes::Bytes`: decoding from a `Bytes`
        // buffer then slices it instead of copying weight data.
        .bytes(["."])
        .compile_fds(descriptors)?;
    Ok(())
}
