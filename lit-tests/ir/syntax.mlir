// RUN: ipu-opt %s --allow-unregistered-dialect | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect | ipu-opt --allow-unregistered-dialect | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK: #map = affine_map<(d0)[s0] -> (d0 + s0)>
// CHECK: "test.types"() {a = i1, b = si8, c = ui16, d = index, e = bf16, f = f8E4M3FNUZ, g = f8E5M2FNUZ, h = f8E4M3FN, i = f8E5M2, j = none, k = tensor<?x8xf32>, l = tensor<*xf16>, m = memref<4x?xf32>, n = vector<4x[8]xf32>, o = !dialect.name<params>, p = (i32, f32) -> i64}
"test.types"() {a = i1, b = si8, c = ui16, d = index, e = bf16, f = f8E4M3FNUZ, g = f8E5M2FNUZ, h = f8E4M3FN, i = f8E5M2, j = none, k = tensor<?x8xf32>, l = tensor<*xf16>, m = memref<4x?xf32>, n = vector<4x[8]xf32>, o = !dialect.name<params>, p = (i32, f32) -> i64} : () -> ()

// CHECK: "test.attrs"() {a = 7 : i32, b = 1.500000e+00 : f32, c = 0x7FC00000 : f32, d = "x\0Ay", e = [1 : i64, true], f = {g}, h = @a::@b, i = dense<[1, 2]> : tensor<2xi8>, j = dense<2.000000e+00> : tensor<3xf16>, k = array<i64: 1, 2>, l = #map, m = #dialect.attr<1>}
"test.attrs"() {a = 7 : i32, b = 1.5 : f32, c = 0x7FC00000 : f32, d = "x\ny", e = [1, true], f = {g}, h = @a::@b, i = dense<[1, 2]> : tensor<2xi8>, j = dense<2.0> : tensor<3xf16>, k = array<i64: 1, 2>, l = affine_map<(d0)[s0] -> (d0 + s0)>, m = #dialect.attr<1>} : () -> ()

// Zero-element literals print as upstream does, `dense<>` at every rank: a
// nested `[]` would make upstream infer the shape [0] and reject 0x1.
// CHECK: "test.empty"() {a = dense<> : tensor<0xf32>, b = dense<> : tensor<0x1xf32>, c = dense<> : tensor<2x0xi8>}
"test.empty"() {a = dense<> : tensor<0xf32>, b = dense<> : tensor<0x1xf32>, c = dense<[[], []]> : tensor<2x0xi8>} : () -> ()

// CHECK: %[[R:.*]]:2 = "test.multi"() : () -> (i32, i32)
// CHECK: "test.region"(%[[R]]#1) ({
// CHECK-NEXT: ^bb0(%arg0: i32):
// CHECK-NEXT:   "test.br"(%arg0)[^bb1] : (i32) -> ()
// CHECK-NEXT: ^bb1:
%0:2 = "test.multi"() : () -> (i32, i32)
"test.region"(%0#1) ({
^bb0(%x: i32):
  "test.br"(%x)[^bb1] : (i32) -> ()
^bb1:
  "test.end"() : () -> ()
}) : (i32) -> ()

// GENERIC: "builtin.module"() ({
// GENERIC: "test.props"() <{p = 1 : i64}> : () -> ()
"test.props"() <{p = 1 : i64}> : () -> ()
