// RUN: ipu-opt %s --canonicalize | filecheck %s

// Unused pure ops are erased.
// CHECK-LABEL: func.func @dead_cast
// CHECK-NEXT: return %arg0 : i32
func.func @dead_cast(%a: i32) -> i32 {
  %0 = builtin.unrealized_conversion_cast %a : i32 to i64
  return %a : i32
}
