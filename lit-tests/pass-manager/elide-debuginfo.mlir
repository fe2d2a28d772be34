// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-elide-elementsattrs-if-larger=2 | filecheck %s --check-prefix=ELIDE
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-elide-resource-strings-if-larger=4 | filecheck %s --check-prefix=RES
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-debuginfo | filecheck %s --check-prefix=LOC

// ELIDE: "test.a"() {big = dense_resource<__elided__> : tensor<4xi32>, small = dense<[1, 2]> : tensor<2xi32>}
// RES: blob: "__elided__"
// LOC: "test.a"() {{.*}} loc("{{.*}}elide-debuginfo.mlir":[[@LINE+2]]:1)
// LOC: "test.b"() {{.*}} loc("node_name")
"test.a"() {big = dense<[1, 2, 3, 4]> : tensor<4xi32>, small = dense<[1, 2]> : tensor<2xi32>} : () -> ()
"test.b"() {r = dense_resource<blob> : tensor<2xi32>} : () -> () loc("node_name")
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000100000002000000"
    }
  }
#-}
