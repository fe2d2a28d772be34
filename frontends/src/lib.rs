//! ipuc importers (ONNX).
pub mod onnx;
