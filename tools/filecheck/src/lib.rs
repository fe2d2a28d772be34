//! LLVM FileCheck-compatible pattern checker.
