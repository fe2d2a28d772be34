// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// Parse errors in declarative formats land on the offending token with the
// same wording as hand-written parsers.

func.func @f(%a: i32, %b: i32) {
  // expected-error@+1 {{expected ',', found ':'}}
  %0 = test.add %a : i32
  return
}

// -----

func.func @f(%a: i32, %b: i32) {
  // expected-error@+1 {{2 operands present, but 1 operand types given}}
  %0 = test.format_operands %a, %b : i32 -> i32
  return
}

// -----

func.func @f(%a: i32) {
  // expected-error@+1 {{expected 'by', found '3'}}
  %0 = test.format_attr %a 3 : i32 -> i32
  return
}

// -----

func.func @f(%a: i32) {
  // expected-error@+1 {{attribute 'count' must be an integer attribute}}
  %0 = test.format_attr %a by "three" : i32 -> i32
  return
}

// -----

func.func @f(%a: i32) {
  // expected-error@+1 {{attribute 'count' is written by the op's format, so it may not appear in the attribute dictionary}}
  %0 = test.format_attr %a by 3 : i64 {count = 4 : i64} : i32 -> i32
  return
}

// -----

func.func @f(%a: i32) {
  // The optional group started with `,`, so its operand is now required.
  // expected-error@+1 {{expected an SSA operand, found ':'}}
  %0 = test.format_optional %a, : i32 : i32 -> i32
  return
}

// -----

func.func @f(%a: i32, %b: i32) {
  // expected-error@+1 {{expected a function type '(inputs) -> results'}}
  %0 = test.format_functional %a, %b : i32
  return
}

// -----

func.func @f(%a: i32, %b: i32) {
  // expected-error@+1 {{use of value '%b' expects different type than prior uses: 'f32' vs 'i32'}}
  %0 = test.format_functional %a, %b : (i32, f32) -> i32
  return
}

// -----

func.func @f(%a: i32) {
  // expected-error@+1 {{expected a region, found '{k}'}}
  %0 = test.format_region(%a : i32) -> i32 {k}
  return
}

// -----

func.func @f(%a: i32) {
  // expected-error@+1 {{unexpected 'extra' in custom operation syntax}}
  %0 = test.add %a, %a : i32 extra
  return
}

// -----

func.func @f(%a: i32) {
  // Verified after parsing: the declaration allows one optional operand.
  // expected-error@+1 {{'test.format_optional' op requires at least 1 operands}}
  %0 = "test.format_optional"() : () -> i32
  return
}
