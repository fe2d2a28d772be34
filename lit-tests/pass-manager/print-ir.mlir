// RUN: ipu-opt %s --pass-pipeline='builtin.module(symbol-dce,cse)' --mlir-print-ir-before=symbol-dce --mlir-print-ir-after-all 2>&1 >/dev/null | filecheck %s
// RUN: ipu-opt %s --pass-pipeline='builtin.module(symbol-dce,cse)' --mlir-print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE

// CHECK: // -----// IR Dump Before SymbolDce (symbol-dce) //----- //
// CHECK: func.func private @dead
// CHECK: // -----// IR Dump After SymbolDce (symbol-dce) //----- //
// CHECK-NOT: @dead
// CHECK: // -----// IR Dump After Cse (cse) //----- //

// Only symbol-dce changes the IR.
// CHANGE: IR Dump After SymbolDce
// CHANGE-NOT: IR Dump After Cse
func.func private @dead() {
  return
}
func.func @live() {
  return
}
