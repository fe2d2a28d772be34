// RUN: ipu-opt %s | filecheck %s
// RUN: ipu-opt %s | ipu-opt | filecheck %s
// RUN: ipu-opt %s --mlir-print-op-generic | ipu-opt | filecheck %s
// RUN: ipu-opt %s --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC

// Declarative assembly formats (ipuc_ir::assembly_format), one `test` op per
// directive family; the formats are listed in ir/src/test_dialect.rs.

// CHECK-LABEL: func.func @directives
func.func @directives(%a: i32, %b: i32, %c: f32) -> i32 {
  // `$lhs `,` $rhs attr-dict `:` type($result)`: operand types inferred
  // from SameOperandsAndResultType.
  // CHECK-NEXT: %0 = test.add %arg0, %arg1 {tag = "x"} : i32
  // GENERIC: %0 = "test.add"(%arg0, %arg1) {tag = "x"} : (i32, i32) -> i32
  %0 = test.add %a, %b {tag = "x"} : i32

  // `operands attr-dict `:` type(operands) `->` type(results)`: a variadic
  // operand, printed comma-separated; an empty list leaves no space behind.
  // CHECK-NEXT: %1 = test.format_operands %arg0, %arg1, %arg2 : i32, i32, f32 -> i32
  %1 = test.format_operands %a, %b, %c : i32, i32, f32 -> i32
  // CHECK-NEXT: %2 = test.format_operands : -> i32
  %2 = test.format_operands : -> i32

  // `$value (`,` $extra^ `:` type($extra))? attr-dict ...`: an optional
  // operand anchoring an optional group.
  // CHECK-NEXT: %3 = test.format_optional %arg0, %arg2 : f32 : i32 -> i32
  %3 = test.format_optional %a, %c : f32 : i32 -> i32
  // CHECK-NEXT: %4 = test.format_optional %arg0 {unit} : i32 -> i32
  %4 = test.format_optional %a {unit} : i32 -> i32

  // `$input `by` $count (`scale` `=` $scale^)? attr-dict ...`: attributes in
  // the format go to properties and are elided from the dictionary.
  // CHECK-NEXT: %5 = test.format_attr %arg0 by 3 : i64 scale = "s" {other} : i32 -> i32
  // GENERIC: %5 = "test.format_attr"(%arg0) <{count = 3 : i64, scale = "s"}> {other} : (i32) -> i32
  %5 = test.format_attr %a by 3 : i64 scale = "s" {other} : i32 -> i32
  // CHECK-NEXT: %6 = test.format_attr %arg0 by -2 : i32 : i32 -> i32
  %6 = test.format_attr %a by -2 : i32 : i32 -> i32

  // `$lhs `,` $rhs attr-dict `:` functional-type(operands, results)`.
  // CHECK-NEXT: %7 = test.format_functional %arg0, %arg2 : (i32, f32) -> i32
  %7 = test.format_functional %a, %c : (i32, f32) -> i32

  // `(`(` $inits^ `:` type($inits) `)`)? `->` type($result)
  //  attr-dict-with-keyword $body`: a named region.
  // CHECK-NEXT: %8 = test.format_region(%arg0, %arg2 : i32, f32) -> i32 attributes {k = 1 : i64} {
  // CHECK-NEXT:   "test.terminator"(%arg0) : (i32) -> ()
  // CHECK-NEXT: }
  %8 = test.format_region(%a, %c : i32, f32) -> i32 attributes {k = 1 : i64} {
    "test.terminator"(%a) : (i32) -> ()
  }
  // CHECK-NEXT: %9 = test.format_region -> f32 {
  // CHECK-NEXT:   "test.terminator"() : () -> ()
  // CHECK-NEXT: }
  %9 = test.format_region -> f32 {
    "test.terminator"() : () -> ()
  }

  // `` `[` operands `]` attr-dict `:` type(operands) ``: bracket literals.
  // CHECK-NEXT: test.format_list[%arg0, %arg2] : i32, f32
  test.format_list[%a, %c] : i32, f32
  // CHECK-NEXT: return %0 : i32
  return %0 : i32
}

// `$dest (`(` $args^ `:` type($args) `)`)? attr-dict`: successors.
// CHECK-LABEL: func.func @successors
func.func @successors(%a: i32, %c: f32) {
  // CHECK-NEXT: test.format_branch ^bb1(%arg0, %arg1 : i32, f32)
  test.format_branch ^bb1(%a, %c : i32, f32)
// CHECK-NEXT: ^bb1(%0: i32, %1: f32):
^bb1(%x: i32, %y: f32):
  // CHECK-NEXT: test.format_branch ^bb2 {hint}
  test.format_branch ^bb2 {hint}
// CHECK-NEXT: ^bb2:
^bb2:
  return
}
