// RUN: ipu-opt %s --allow-unregistered-dialect --pass-pipeline='builtin.module(func.func(cse))' | filecheck %s

// Pure ops (here the cast) are merged; unregistered ops have unknown effects and stay.
// CHECK-LABEL: func.func @f
// CHECK: %[[C:.*]] = builtin.unrealized_conversion_cast %arg0 : i32 to i64
// CHECK-NOT: unrealized_conversion_cast
// CHECK: "test.use"(%[[C]], %[[C]])
// CHECK: "test.effect"
// CHECK: "test.effect"
func.func @f(%a: i32) {
  %0 = builtin.unrealized_conversion_cast %a : i32 to i64
  %1 = builtin.unrealized_conversion_cast %a : i32 to i64
  "test.use"(%0, %1) : (i64, i64) -> ()
  "test.effect"() : () -> ()
  "test.effect"() : () -> ()
  return
}

// Across blocks, an op is replaced by an equivalent one in a dominating
// block (^bb0 dominates ^bb1 and ^bb3), but not by one in a sibling (^bb1
// does not dominate ^bb2) nor in a block that does not dominate the join.
// CHECK-LABEL: func.func @blocks
// CHECK: %[[X:.*]] = builtin.unrealized_conversion_cast %arg0 : i32 to i64
// CHECK: ^bb1:
// CHECK-NEXT: %[[Y:.*]] = builtin.unrealized_conversion_cast %arg0 : i32 to i16
// CHECK-NEXT: "test.use"(%[[X]], %[[Y]])
// CHECK: ^bb2:
// CHECK-NEXT: %[[Z:.*]] = builtin.unrealized_conversion_cast %arg0 : i32 to i16
// CHECK-NEXT: "test.use"(%[[X]], %[[Z]])
// CHECK: ^bb3:
// CHECK-NEXT: %[[W:.*]] = builtin.unrealized_conversion_cast %arg0 : i32 to i16
// CHECK-NEXT: "test.use"(%[[X]], %[[W]])
func.func @blocks(%a: i32, %c: i1) {
  %x = builtin.unrealized_conversion_cast %a : i32 to i64
  "test.cond_br"(%c)[^bb1, ^bb2] : (i1) -> ()
^bb1:
  %x1 = builtin.unrealized_conversion_cast %a : i32 to i64
  %y = builtin.unrealized_conversion_cast %a : i32 to i16
  "test.use"(%x1, %y) : (i64, i16) -> ()
  "test.br"()[^bb3] : () -> ()
^bb2:
  %x2 = builtin.unrealized_conversion_cast %a : i32 to i64
  %z = builtin.unrealized_conversion_cast %a : i32 to i16
  "test.use"(%x2, %z) : (i64, i16) -> ()
  "test.br"()[^bb3] : () -> ()
^bb3:
  %x3 = builtin.unrealized_conversion_cast %a : i32 to i64
  %w = builtin.unrealized_conversion_cast %a : i32 to i16
  "test.use"(%x3, %w) : (i64, i16) -> ()
  return
}
