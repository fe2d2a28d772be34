// A pass that fails writes a reproducer that --run-reproducer replays.
// RUN: rm -f %t.repro.mlir
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(func.func(symbol-dce))' --mlir-pass-pipeline-crash-reproducer=%t.repro.mlir 2>&1 | filecheck %s
// RUN: filecheck %s --check-prefix=REPRO --input-file=%t.repro.mlir
// RUN: not ipu-opt %t.repro.mlir --run-reproducer 2>&1 | filecheck %s

// CHECK: symbol-dce must run on a symbol table op, not 'func.func'
// REPRO: mlir_reproducer
// REPRO: pipeline: "builtin.module(func.func(symbol-dce))"
func.func @f() {
  return
}
