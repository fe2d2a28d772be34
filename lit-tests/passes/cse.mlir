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
