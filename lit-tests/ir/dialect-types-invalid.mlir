// RUN: ipu-opt %s --split-input-file --verify-diagnostics
// Dialect types and attributes are checked against their definitions;
// errors point at the symbol.

// expected-error@+1 {{invalid type 'test.pair': expected 2 parameters (two types), found 1}}
"test.use"() {t = !test.pair<i32>} : () -> ()

// -----

// expected-error@+1 {{invalid type 'test.pair': invalid parameter 'i33x' at 'i33x'}}
"test.use"() {t = !test.pair<i32, i33x>} : () -> ()

// -----

// expected-error@+1 {{invalid attribute 'test.range': empty range: lower bound 5 exceeds upper bound 4}}
"test.use"() {r = #test.range<5, 4>} : () -> ()

// -----

// expected-error@+1 {{invalid attribute 'test.range': expected an integer bound, found 'x'}}
"test.use"() {r = #test.range<x, 4>} : () -> ()

// -----

// expected-error@+1 {{dialect 'test' provides no type 'triple'}}
"test.use"() {t = !test.triple<i32, i32, i32>} : () -> ()
