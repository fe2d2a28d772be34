// RUN: ipu-opt %s --split-input-file --verify-diagnostics

func.func @wrong_return_count() -> i32 {
  // expected-error @+1 {{'func.return' op has 0 operands, but enclosing function (@wrong_return_count) returns 1}}
  return
}

// -----

func.func @call_unknown() {
  // expected-error @+1 {{'func.call' op 'nowhere' does not reference a valid function}}
  call @nowhere() : () -> ()
  return
}

// -----

// expected-note @+1 {{see existing symbol definition here}}
func.func @dup() {
  return
}
// expected-error @+1 {{redefinition of symbol named 'dup'}}
func.func @dup() {
  return
}

// -----

func.func @undefined_value() {
  // expected-error @+1 {{use of undeclared SSA value name '%nope'}}
  return %nope : i32
}
