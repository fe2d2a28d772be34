// 1:N dialect conversion through the test dialect: test-one-to-n-conversion
// converts a rank-2 tensor<T x N> into T per-tile pieces tensor<N>
// (ir/src/test_passes/one_to_n.rs says which op converts how).

// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(test-one-to-n-conversion)' | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(test-one-to-n-conversion{casts})' | filecheck %s --check-prefix=CASTS

// An unconverted producer feeds converted ops through a target
// materialization (1 -> 2, test.split); converted ops pass their pieces on
// directly (no materialization between the two maps); the unconverted
// consumer reads a source materialization (2 -> 1, test.concat).
// CHECK-LABEL: module
// CHECK-NEXT: %[[SRC:.*]] = "test.source"() : () -> tensor<2x4xf32>
// CHECK-NEXT: %[[P:.*]]:2 = "test.split"(%[[SRC]]) : (tensor<2x4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[A0:.*]] = "test.map"(%[[P]]#0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[A1:.*]] = "test.map"(%[[P]]#1) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[B0:.*]] = "test.map"(%[[A0]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[B1:.*]] = "test.map"(%[[A1]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[W:.*]] = "test.concat"(%[[B0]], %[[B1]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: "test.sink"(%[[W]])
// The same with the default materializations, one
// unrealized_conversion_cast with two results or two operands.
// CASTS-LABEL: module
// CASTS: %[[P:.*]]:2 = unrealized_conversion_cast %0 : tensor<2x4xf32> to tensor<4xf32>, tensor<4xf32>
// CASTS: unrealized_conversion_cast %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32> to tensor<2x4xf32>
%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.map"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
%2 = "test.map"(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
"test.sink"(%2) : (tensor<2x4xf32>) -> ()

// -----

// A round trip cancels: test.copy forwards the pieces of a value that was
// split only for it, and its consumer reads the value itself again
// (whole -> pieces -> whole leaves no materialization at all).
// CHECK-LABEL: module
// CHECK-NEXT: %[[SRC:.*]] = "test.source"()
// CHECK-NEXT: "test.sink"(%[[SRC]]) : (tensor<3x4xf32>) -> ()
// CHECK-NEXT: }
// CASTS-LABEL: module
// CASTS-NOT: unrealized_conversion_cast
// CASTS: }
%0 = "test.source"() : () -> tensor<3x4xf32>
%1 = "test.copy"(%0) : (tensor<3x4xf32>) -> tensor<3x4xf32>
"test.sink"(%1) : (tensor<3x4xf32>) -> ()

// -----

// Block signatures convert in place: each split argument becomes its
// pieces at its position (%b stays between them and the next ones); a use
// left unconverted reads a test.concat at the start of the block; the
// branch and the terminator pass the pieces, flattened; the successor's
// argument is split too. tensor<0x4xf32> converts to nothing (1:0): its
// block argument disappears and its unconverted user reads a test.concat
// of no pieces.
// CHECK-LABEL: module
// CHECK: "test.region"() ({
// CHECK-NEXT: ^bb0(%[[X0:.*]]: tensor<4xf32>, %[[X1:.*]]: tensor<4xf32>, %[[B:.*]]: i32):
// CHECK-NEXT: %[[WHOLE:.*]] = "test.concat"(%[[X0]], %[[X1]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[M0:.*]] = "test.map"(%[[X0]], %[[B]]) : (tensor<4xf32>, i32) -> tensor<4xf32>
// CHECK-NEXT: %[[M1:.*]] = "test.map"(%[[X1]], %[[B]]) : (tensor<4xf32>, i32) -> tensor<4xf32>
// CHECK-NEXT: "test.sink"(%[[WHOLE]])
// CHECK-NEXT: "test.br"(%[[M0]], %[[M1]])[^bb1] : (tensor<4xf32>, tensor<4xf32>) -> ()
// CHECK-NEXT: ^bb1(%[[C0:.*]]: tensor<4xf32>, %[[C1:.*]]: tensor<4xf32>):
// CHECK-NEXT: %[[EMPTY:.*]] = "test.concat"() : () -> tensor<0x4xf32>
// CHECK-NEXT: "test.sink"(%[[EMPTY]]) : (tensor<0x4xf32>) -> ()
// CHECK-NEXT: "test.terminator"(%[[C0]], %[[C1]]) : (tensor<4xf32>, tensor<4xf32>) -> ()
// CASTS-LABEL: module
// CASTS: ^bb0(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: i32):
// CASTS-NEXT: unrealized_conversion_cast %arg0, %arg1 : tensor<4xf32>, tensor<4xf32> to tensor<2x4xf32>
// CASTS: unrealized_conversion_cast to tensor<0x4xf32>
"test.region"() ({
^bb0(%a: tensor<2x4xf32>, %b: i32, %z: tensor<0x4xf32>):
  %m = "test.map"(%a, %b) : (tensor<2x4xf32>, i32) -> tensor<2x4xf32>
  "test.sink"(%a) : (tensor<2x4xf32>) -> ()
  "test.br"(%m, %z)[^bb1] : (tensor<2x4xf32>, tensor<0x4xf32>) -> ()
^bb1(%c: tensor<2x4xf32>, %y: tensor<0x4xf32>):
  "test.sink"(%y) : (tensor<0x4xf32>) -> ()
  "test.terminator"(%c) : (tensor<2x4xf32>) -> ()
}) : () -> ()

// -----

// Unsplit values (rank 1, and a leading dimension of 1 split into one
// piece) need no materialization beyond the split itself.
// CHECK-LABEL: module
// CHECK-NEXT: %[[V:.*]] = "test.source"() : () -> tensor<4xf32>
// CHECK-NEXT: %[[S:.*]] = "test.source"() : () -> tensor<1x4xf32>
// CHECK-NEXT: %[[P:.*]] = "test.split"(%[[S]]) : (tensor<1x4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[M:.*]] = "test.map"(%[[P]], %[[V]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: "test.concat"(%[[M]]) : (tensor<4xf32>) -> tensor<1x4xf32>
// CASTS-LABEL: module
%0 = "test.source"() : () -> tensor<4xf32>
%1 = "test.source"() : () -> tensor<1x4xf32>
%2 = "test.map"(%1, %0) : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
"test.sink"(%2) : (tensor<1x4xf32>) -> ()
