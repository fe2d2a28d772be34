// RUN: cat %S/output.mlir | filecheck %s

// CHECK-LABEL:   func.func @double(
// CHECK-SAME:                      %[[ARG0:.*]]: f32) -> f32 {
// CHECK:           %[[VAL_0:.*]] = arith.addf %[[ARG0]], %[[ARG0]] : f32
// CHECK:           return %[[VAL_0]] : f32
// CHECK:         }
func.func @double(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// CHECK-LABEL:   func.func @branch(
// CHECK-SAME:                      %[[ARG0:.*]]: i1,
// CHECK-SAME:                      %[[ARG1:.*]]: i32) -> i32 {
// CHECK:           cf.cond_br %[[ARG0]], ^[[BB_0:.*]], ^[[BB_1:.*]]
// CHECK:         ^[[BB_0]]:
// CHECK:           return %[[ARG1]] : i32
// CHECK:         ^[[BB_1]]:
// CHECK:           %[[VAL_0:.*]] = arith.constant 0 : i32
// CHECK:           return %[[VAL_0]] : i32
// CHECK:         }
func.func @branch(%c: i1, %v: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %v : i32
^bb2:
  %zero = arith.constant 0 : i32
  return %zero : i32
}
