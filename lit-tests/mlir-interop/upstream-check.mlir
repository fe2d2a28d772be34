// In builds with upstream MLIR the lit harness sets IPUC_UPSTREAM_CHECK=1:
// ipu-opt then has upstream parse and verify the generic form of all IR it
// writes. Here ipuc accepts an unregistered arith.addi that upstream's
// arith dialect rejects (integer ops on f32).
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --allow-unregistered-dialect 2>&1 | filecheck %s

// CHECK: error: IPUC_UPSTREAM_CHECK=1: upstream MLIR rejects the generic printout of {{.*}}upstream-check.mlir
// CHECK: upstream-check.mlir:[[@LINE+2]]:8: error: upstream MLIR: 'arith.addi' op operand #0 must be
func.func @main(%a: f32) -> f32 {
  %r = "arith.addi"(%a, %a) : (f32, f32) -> f32
  return %r : f32
}
