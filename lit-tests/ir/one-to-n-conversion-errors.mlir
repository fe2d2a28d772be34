// Failures of 1:N conversion, each a located error (test-one-to-n-conversion;
// see one-to-n-conversion.mlir).

// RUN: not ipu-opt %s --split-input-file --pass-pipeline='builtin.module(test-one-to-n-conversion{full})' 2>&1 | filecheck %s

// A block argument whose type has no conversion (a dynamic number of tiles)
// is reported where it is declared.
// CHECK: one-to-n-conversion-errors.mlir:[[# @LINE + 2]]:6: error: block argument type 'tensor<?x4xf32>' has no conversion
"test.region"() ({
^bb0(%a: tensor<?x4xf32>):
  "test.terminator"() : () -> ()
}) : () -> ()

// -----

// A pattern written for 1:1 operands meets an operand split in two: it is
// not called, and the report names it.
// CHECK: one-to-n-conversion-errors.mlir:[[# @LINE + 3]]:6: error: failed to legalize 1 operation of 1 kind in full conversion
// CHECK: note: 'test.whole': 1 operation rejected by its legality predicate (pattern 'whole-1to1' takes only 1:1 operands, but an operand converted to several values or none: give it a 1:N form); first here
%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.whole"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>

// -----

// A pattern fails the conversion with its own located error.
// CHECK: one-to-n-conversion-errors.mlir:[[# @LINE + 3]]:6: error: 'test.map' operands and results split into different numbers of pieces ([2, 3, 2])
%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.source"() : () -> tensor<3x4xf32>
%2 = "test.map"(%0, %1) : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>

// -----

// A full conversion fails on an op that nothing converts, even though its
// operand's producer was converted.
// CHECK: one-to-n-conversion-errors.mlir:[[# @LINE + 4]]:1: error: failed to legalize 1 operation of 1 kind in full conversion
// CHECK: note: 'test.other': 1 operation not marked legal (no pattern converts it); first here
%0 = "test.source"() : () -> tensor<2x4xf32>
%1 = "test.map"(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
"test.other"(%1) : (tensor<2x4xf32>) -> ()

// -----

// An operand whose type has no conversion (more tiles than max-pieces):
// no pattern can be tried, and the report says why.
// CHECK: note: 'test.map': 1 operation rejected by its legality predicate (an operand of type 'tensor<100x4xf32>' has no conversion, so no pattern was tried); first here
%0 = "test.source"() : () -> tensor<100x4xf32>
%1 = "test.map"(%0) : (tensor<100x4xf32>) -> tensor<100x4xf32>
