// RUN: ipu-opt %s --allow-unregistered-dialect | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect | ipu-opt --allow-unregistered-dialect | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-local-scope | filecheck %s --check-prefix=LOCAL
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC

// Affine maps and integer sets are printed as aliases numbered by first use,
// maps before sets, also inside types; --mlir-print-local-scope prints them
// inline, as upstream does.

// CHECK:      #map = affine_map<(d0) -> (d0 * 3)>
// CHECK-NEXT: #map1 = affine_map<(d0) -> (d0 * 2)>
// CHECK-NEXT: #map2 = affine_map<(d0)[s0] -> (d0 * s0)>
// CHECK-NEXT: #set = affine_set<(d0) : (d0 >= 0)>
// CHECK-NEXT: module {
// CHECK-NEXT:   "a.b"() {m = #map, s = #set} : () -> ()
// CHECK-NEXT:   "a.c"() {m = #map1, q = [#map]} : () -> ()
// CHECK-NEXT:   %0 = "a.d"() : () -> memref<2xf32, #map2>
// CHECK-NEXT: }

// LOCAL-NOT:  #map
// LOCAL:      module {
// LOCAL-NEXT:   "a.b"() {m = affine_map<(d0) -> (d0 * 3)>, s = affine_set<(d0) : (d0 >= 0)>} : () -> ()
// LOCAL:        %0 = "a.d"() : () -> memref<2xf32, affine_map<(d0)[s0] -> (d0 * s0)>>

// GENERIC:      #map = affine_map<(d0) -> (d0 * 3)>
// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "a.b"() {m = #map, s = #set} : () -> ()

"a.b"() {s = affine_set<(d0) : (d0 >= 0)>, m = affine_map<(d0) -> (d0 * 3)>} : () -> ()
"a.c"() {m = affine_map<(d0) -> (d0 * 2)>, q = [affine_map<(d0) -> (d0 * 3)>]} : () -> ()
%0 = "a.d"() : () -> memref<2xf32, affine_map<(d0)[s0] -> (d0 * s0)>>
