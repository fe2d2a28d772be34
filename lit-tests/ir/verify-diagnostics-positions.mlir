// RUN: ipu-opt %s --allow-unregistered-dialect --split-input-file --verify-diagnostics

func.func @below() -> i32 {
  // expected-error@below {{'func.return' op has 0 operands}}
  return
}

// -----

func.func @above() -> i32 {
  return
  // expected-error@above {{'func.return' op has 0 operands}}
}

// -----

func.func @dominance(%c: i1) -> i32 {
  // expected-error@+1 {{operand #0 does not dominate this use}}
  %0 = "test.use"(%1) : (i32) -> i32
  // expected-note@+1 {{operand defined here}}
  %1 = "test.def"() : () -> i32
  return %0 : i32
}
