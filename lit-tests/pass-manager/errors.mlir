// RUN: not ipu-opt %s --pass-pipeline='func.func(cse)' 2>&1 | filecheck %s --check-prefix=ANCHOR
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(canonicalize{max-iteration=3})' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(canonicalize{max-iterations=many})' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: ipu-opt --list-passes | filecheck %s --check-prefix=LIST

// ANCHOR: the top-level pipeline must be anchored on 'builtin.module'
// OPTION: unknown option 'max-iteration' for pass 'canonicalize' (options: max-iterations, max-num-rewrites, top-down, test-convergence)
// VALUE: invalid value 'many' for option 'max-iterations' of pass 'canonicalize': expected uint
// LIST: --canonicalize
// LIST-NEXT: max-iterations=<uint>
// LIST: --cse
func.func @f() {
  return
}
