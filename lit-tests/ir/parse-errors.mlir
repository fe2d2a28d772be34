// RUN: ipu-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect
// Parse errors land on the offending token, also inside types that the
// parser first matches by extent and then parses on their own.

// expected-error@+1 {{invalid type: expected a type, found 'i33x)'}}
"a.b"() : (i32, i33x) -> i32

// -----

// expected-error@+1 {{invalid type: expected a type or valid syntax, found 'f33>'}}
"a.b"() : () -> tensor<4xf33>

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{found 'foo>'}}
  %0 = nn.add %a, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xfoo>
  return %0 : tensor<4xf32>
}

// -----

// A type left open is reported by the structured rules.
// expected-error@+1 {{expected}}
"a.b"() : () -> tensor<4xf32

// -----

// expected-error@+1 {{expected 0 operand types but had 1}}
"a.b"() : (i32) -> ()
