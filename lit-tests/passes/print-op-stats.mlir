// RUN: ipu-opt %s --print-op-stats 2>&1 >/dev/null | filecheck %s
// RUN: ipu-opt %s --print-op-stats=json=true 2>&1 >/dev/null | filecheck %s --check-prefix=JSON

// CHECK: Operations encountered:
// CHECK: builtin.module , 1
// CHECK: func.func      , 2
// CHECK: func.return    , 2
// JSON: "func.func" : 2
func.func @a() {
  return
}
func.func @b() {
  return
}
