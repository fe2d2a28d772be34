//! ipuc importers: ONNX, and TOSA (read into and written from `nn`).
pub mod onnx;
pub mod tosa;
