// RUN: ipu-opt %s --allow-unregistered-dialect | filecheck %s
// An operation may continue on the next line after `=`, `,`, `:` or `->`,
// at the top level and inside regions, as upstream's parser allows.

// CHECK:      %0 = "a.b"() : () -> i32
// CHECK-NEXT: %1:2 = "a.c"(%0) : (i32) -> (i32, i32)
// CHECK-NEXT: "a.d"() ({
// CHECK-NEXT:   %2 = "a.e"() : () -> i32
// CHECK-NEXT: ^bb1:
// CHECK-NEXT:   "a.f"(%2) : (i32) -> ()
// CHECK-NEXT: }) : () -> ()
%0 =
  "a.b"() : () -> i32
%1:2 = "a.c"(%0) :
  (i32) ->
  (i32, i32)
"a.d"() ({
  %2 =
    "a.e"() : () -> i32
^bb1:
  "a.f"(%2) : (i32) -> ()
}) : () -> ()
