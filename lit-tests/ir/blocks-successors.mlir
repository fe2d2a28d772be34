// RUN: ipu-opt %s --allow-unregistered-dialect | filecheck %s

// Blocks with arguments, forward block references and successors; values
// numbered as upstream numbers them (sibling regions restart from the same id).
// CHECK-LABEL: func.func @cfg(%arg0: i1, %arg1: i32) -> i32 {
// CHECK-NEXT:   "test.cond_br"(%arg0, %arg1)[^bb1, ^bb2] : (i1, i32) -> ()
// CHECK-NEXT: ^bb1:
// CHECK-NEXT:   %0 = "test.one"() : () -> i32
// CHECK-NEXT:   "test.br"(%0)[^bb3] : (i32) -> ()
// CHECK-NEXT: ^bb2:
// CHECK-NEXT:   "test.br"(%arg1)[^bb3] : (i32) -> ()
// CHECK-NEXT: ^bb3(%1: i32):
// CHECK-NEXT:   return %1 : i32
func.func @cfg(%c: i1, %x: i32) -> i32 {
  "test.cond_br"(%c, %x)[^then, ^else] : (i1, i32) -> ()
^then:
  %one = "test.one"() : () -> i32
  "test.br"(%one)[^join] : (i32) -> ()
^else:
  "test.br"(%x)[^join] : (i32) -> ()
^join(%r: i32):
  return %r : i32
}

// CHECK-LABEL: func.func @regions
// CHECK: %0 = "test.if"() ({
// CHECK-NEXT:   %1 = "test.a"() : () -> i32
// CHECK: }, {
// CHECK-NEXT:   %1 = "test.b"() : () -> i32
func.func @regions() {
  %0 = "test.if"() ({
    %a = "test.a"() : () -> i32
    "test.yield"(%a) : (i32) -> ()
  }, {
    %b = "test.b"() : () -> i32
    "test.yield"(%b) : (i32) -> ()
  }) : () -> i32
  return
}
