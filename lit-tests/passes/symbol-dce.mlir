// RUN: ipu-opt %s --pass-pipeline='builtin.module(symbol-dce)' | filecheck %s

// CHECK-LABEL: func.func @public
// CHECK-NOT: @dead
// CHECK: func.func private @used
module {
  func.func @public() {
    call @used() : () -> ()
    return
  }
  func.func private @dead() {
    call @dead() : () -> ()
    return
  }
  func.func private @used() {
    return
  }
}
