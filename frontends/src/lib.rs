//! ipuc importers (ONNX).
