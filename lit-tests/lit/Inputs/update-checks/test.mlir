// RUN: cat %S/output.mlir | filecheck %s

// CHECK-LABEL: stale check that will be replaced
func.func @double(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// CHECK: another stale check
func.func @branch(%c: i1, %v: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %v : i32
^bb2:
  %zero = arith.constant 0 : i32
  return %zero : i32
}
