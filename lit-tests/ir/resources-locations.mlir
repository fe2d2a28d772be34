// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-debuginfo | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-debuginfo | ipu-opt --allow-unregistered-dialect --mlir-print-debuginfo | filecheck %s

// Location forms, including aliases defined after use as upstream prints them.
// CHECK: "test.a"() : () -> () loc("file.py":3:7)
// CHECK: "test.b"() : () -> () loc("Conv_0"("model.onnx":1:1))
// CHECK: "test.c"() : () -> () loc(callsite("callee":1:1 at "caller":2:2))
// CHECK: "test.d"() : () -> () loc(fused["a":1:1, "b":2:2])
// CHECK: "test.e"() : () -> () loc(unknown)
// CHECK: "test.f"() {w = dense_resource<weights> : tensor<2xf32>} : () -> ()
// CHECK: {-#
// CHECK-NEXT: dialect_resources: {
// CHECK-NEXT: builtin: {
// CHECK-NEXT: weights: "0x100000000000803F00000040"
"test.a"() : () -> () loc("file.py":3:7)
"test.b"() : () -> () loc("Conv_0"("model.onnx":1:1))
"test.c"() : () -> () loc(callsite("callee":1:1 at "caller":2:2))
"test.d"() : () -> () loc(#fused)
"test.e"() : () -> () loc(unknown)
"test.f"() {w = dense_resource<weights> : tensor<2xf32>} : () -> ()
#fused = loc(fused["a":1:1, "b":2:2])
{-#
  dialect_resources: {
    builtin: {
      weights: "0x100000000000803F00000040"
    }
  }
#-}
