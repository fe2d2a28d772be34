// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file | ipu-opt --split-input-file | filecheck %s
// Types and attributes a dialect defines (test: !test.pair, #test.range):
// checked when parsed, stored and printed in canonical spelling.

// CHECK-LABEL: func.func @canonical
// CHECK-SAME: (%arg0: !test.pair<i32, tensor<2xf32>>) -> !test.pair<i32, tensor<2xf32>>
// CHECK: "test.use"(%arg0) {r = #test.range<-1, 4>} : (!test.pair<i32, tensor<2xf32>>) -> ()
func.func @canonical(%a: !test.pair<i32,tensor<2xf32>>) -> !test.pair< i32 , tensor<2xf32> > {
  "test.use"(%a) {r = #test.range<-1,4>} : (!test.pair<i32, tensor<2xf32>>) -> ()
  return %a : !test.pair<i32, tensor<2xf32>>
}
