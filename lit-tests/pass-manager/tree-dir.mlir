// RUN: rm -rf %t && ipu-opt %s --pass-pipeline='builtin.module(func.func(cse),symbol-dce)' --mlir-print-ir-tree-dir=%t > /dev/null
// RUN: ls -R %t | filecheck %s
// RUN: cat %t/builtin_module_no-symbol-name/1_symbol-dce.mlir | filecheck %s --check-prefix=FILE

// CHECK-DAG: 1_symbol-dce.mlir
// CHECK-DAG: func_func_a
// CHECK-DAG: 0_cse.mlir
// FILE: func.func @a
func.func @a() {
  return
}
