"""Regenerates the differential corpus from the case table below.

Run from tools/filecheck/tests/corpus/ on a machine with FileCheck-22:
    python3 ../make_corpus.py
Each case becomes NAME.case (arguments, check file, input, and LLVM's exit
code and first error location) and NAME.report (LLVM's full stderr report).
"""
import os, subprocess, tempfile, re
cases = {
# name: (args, check, input)
"plain-pass": ([], "// CHECK: foo\n// CHECK: bar\n", "foo\nbar\n"),
"plain-fail-order": ([], "// CHECK: bar\n// CHECK: foo\n", "foo\nbar\n"),
"plain-fuzzy": ([], "// CHECK: hello world\n", "xx\nhello wrld\n"),
"next-pass": ([], "CHECK: a\nCHECK-NEXT: b\nCHECK-NEXT: c\n", "a\nb\nc\n"),
"next-skipped-line": ([], "CHECK: a\nCHECK-NEXT: c\n", "a\nb\nc\n"),
"next-same-line": ([], "CHECK: a\nCHECK-NEXT: b\n", "a b\n"),
"next-first": ([], "CHECK-NEXT: a\n", "a\n"),
"same-pass": ([], "CHECK: func\nCHECK-SAME: (%arg0\nCHECK-SAME: -> i32\n", "func @f(%arg0: i32) -> i32\n"),
"same-fail": ([], "CHECK: func\nCHECK-SAME: i64\n", "func @f(i32)\nret i64\n"),
"not-pass": ([], "CHECK: a\nCHECK-NOT: bad\nCHECK: b\n", "a\nok\nb\nbad\n"),
"not-fail": ([], "CHECK: a\nCHECK-NOT: bad\nCHECK: end\n", "a\nbad\nend\n"),
"not-trailing": ([], "CHECK: a\nCHECK-NOT: z\n", "a\nb\nz\n"),
"not-leading": ([], "CHECK-NOT: z\nCHECK: a\n", "z\na\n"),
"dag-pass": ([], "CHECK-DAG: y\nCHECK-DAG: x\nCHECK: end\n", "x\ny\nend\n"),
"dag-missing": ([], "CHECK-DAG: y\nCHECK-DAG: q\nCHECK: end\n", "x\ny\nend\n"),
"dag-overlap": ([], "CHECK-DAG: x\nCHECK-DAG: x\n", "x\ny\n"),
"dag-overlap-pass": ([], "CHECK-DAG: x\nCHECK-DAG: x\n", "x\nx\n"),
"dag-not-between": ([], "CHECK-DAG: a\nCHECK-NOT: bad\nCHECK-DAG: zz\n", "a\nbad\nzz\n"),
"dag-after-check": ([], "CHECK: start\nCHECK-DAG: b\nCHECK-DAG: a\nCHECK: end\n", "a\nstart\nb\nend\n"),
"label-pass": ([], "CHECK-LABEL: func1\nCHECK: x\nCHECK-LABEL: func2\nCHECK: y\n", "func1\nx\nfunc2\ny\n"),
"label-blocks": ([], "CHECK-LABEL: func1\nCHECK: y\nCHECK-LABEL: func2\nCHECK: x\n", "func1\nx\nfunc2\ny\n"),
"label-missing": ([], "CHECK-LABEL: func1\nCHECK: x\nCHECK-LABEL: nope\n", "func1\nx\n"),
"label-variable": ([], "CHECK-LABEL: [[F:f]]\n", "f\n"),
"empty-pass": ([], "CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b\n", "a\n\nb\n"),
"empty-fail": ([], "CHECK: a\nCHECK-EMPTY:\n", "a\nb\n\n"),
"empty-nonempty": ([], "CHECK: a\nCHECK-EMPTY: x\n", "a\n\n"),
"count-pass": ([], "CHECK-COUNT-3: op\nCHECK: end\n", "op\nop op\nend\n"),
"count-fail": ([], "CHECK-COUNT-3: op\n", "op\nop\n"),
"count-zero": ([], "CHECK-COUNT-0: op\n", "op\n"),
"var-def-use": ([], "CHECK: %[[V:[0-9]+]] = add\nCHECK: use %[[V]]\n", "%12 = add\nuse %1\nuse %12\n"),
"var-mismatch": ([], "CHECK: %[[V:[0-9]+]] = add\nCHECK: use %[[V]]\n", "%12 = add\nuse %13\n"),
"var-undefined": ([], "CHECK: use [[NOPE]]\n", "use x\n"),
"var-same-line": ([], "CHECK: [[A:[a-z]+]] == [[A]]\n", "ab == ac\nxy == xy\n"),
"var-global-scope": (["--enable-var-scope"], "CHECK-LABEL: f1\nCHECK: [[$G:[a-z]+]] [[L:[0-9]+]]\nCHECK-LABEL: f2\nCHECK: [[$G]]\n", "f1\nabc 12\nf2\nabc\n"),
"var-scope-local": (["--enable-var-scope"], "CHECK-LABEL: f1\nCHECK: [[L:[0-9]+]]\nCHECK-LABEL: f2\nCHECK: [[L]]\n", "f1\n12\nf2\n12\n"),
"regex-pass": ([], "CHECK: add {{%[0-9]+}}, {{%[a-z]+}}\nCHECK: {{^}}ret{{$}}\n", "add %1, %x\nret\n"),
"regex-alternation": ([], "CHECK: x{{a|b}}y\n", "xby\n"),
"regex-unterminated": ([], "CHECK: x{{a\n", "xa\n"),
"regex-invalid": ([], "CHECK: x{{(}}\n", "xa\n"),
"regex-newline-class": ([], "CHECK: a{{[^x]*}}b\n", "a\nb\n"),
"literal-modifier": ([], "CHECK{LITERAL}: [[x]] {{y}}\n", "[[x]] {{y}}\n"),
"prefixes": (["--check-prefixes=FOO,BAR"], "FOO: a\nBAR: b\nCHECK: zzz\n", "a\nb\n"),
"prefix-unused": (["--check-prefixes=FOO,BAR"], "FOO: a\n", "a\n"),
"prefix-in-word": ([], "XCHECK: nope\nCHECK: a\n", "a\n"),
"comments": ([], "COM: CHECK: nope\n// RUN: CHECK: nope\nCHECK: a\n", "a\n"),
"implicit-check-not-pass": (["--implicit-check-not=error"], "CHECK: a\nCHECK: b\n", "a\nb\nwarning\n"),
"implicit-check-not-fail": (["--implicit-check-not=error"], "CHECK: a\nCHECK: b\n", "a\nb\nerror: x\n"),
"match-full-lines-pass": (["--match-full-lines"], "CHECK: a b\n", "  a b \n"),
"match-full-lines-fail": (["--match-full-lines"], "CHECK: a b\n", "xa b\n"),
"strict-whitespace": (["--strict-whitespace"], "CHECK: a  b\n", "a b\na  b\n"),
"canonical-whitespace": ([], "CHECK: a \t b\n", "a     b\n"),
"ignore-case": (["--ignore-case"], "CHECK: HeLLo\n", "hello\n"),
"define": (["-DNAME=world"], "CHECK: hello [[NAME]]\n", "hello world\n"),
"empty-input": ([], "CHECK: a\n", ""),
"allow-empty": (["--allow-empty"], "CHECK-NOT: a\n", ""),
"misspelled": ([], "CHECK: a\nCHECK_NEXT: b\n", "a\nb\n"),
"bad-not-combo": ([], "CHECK-NOT-NEXT: a\n", "a\n"),
"empty-pattern": ([], "CHECK:\n", "a\n"),
"numeric-pass": ([], "CHECK: [[#N:]] items\nCHECK: next [[#N+1]]\nCHECK: hex [[#%x,ADDR:]]\nCHECK: [[#ADDR+16]]\n", "41 items\nnext 42\nhex ff\n10f\n"),
"numeric-fail": ([], "CHECK: [[#N:]] items\nCHECK: next [[#N+1]]\n", "41 items\nnext 41\n"),
"at-line": ([], "CHECK: line [[@LINE]]\nCHECK: line [[#@LINE]]\n", "line 1\nline 2\n"),
"multiple-failures": ([], "CHECK-LABEL: a\nCHECK: x\nCHECK-LABEL: b\nCHECK: y\n", "a\nq\nb\nq\n"),
"crlf": ([], "CHECK: a\r\nCHECK-NEXT: b\r\n", "a\r\nb\r\n"),
"substitution-block-unterminated": ([], "CHECK: [[X:a\n", "a\n"),
"verbose-dag-not": (["-v"], "CHECK: begin\nCHECK-DAG: b\nCHECK-DAG: a\nCHECK-NOT: bad\nCHECK: end\n", "begin\na\nb\nbad\nend\n"),
"verbose-labels": (["-v"], "CHECK-LABEL: f1\nCHECK: x\nCHECK-LABEL: f2\nCHECK-NEXT: y\nCHECK-SAME: z\n", "f1\nx\nf2\ny w\nq\n"),
"verbose-count-next": (["-v"], "CHECK: a\nCHECK-COUNT-2: b\nCHECK-NEXT: c\n", "a\nb b\n\nc\n"),
"always-dump-pass": (["--dump-input=always", "-v"], "CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b\n", "a\n\nb\n"),
"always-dump-implicit": (["--dump-input=always", "--implicit-check-not=warning"], "CHECK: a\nCHECK: b\n", "a\nwarning: x\nb\n"),
"fuzzy-regex": ([], "CHECK: %{{[0-9]+}} = arith.addi %arg0\n", "%0 = arith.addi %ar0, %arg1\n"),
"next-wrong-line-verbose": (["-v"], "CHECK: a\nCHECK-NEXT: c\n", "a\nb\nc\n"),
"empty-same-line": ([], "CHECK: a\nCHECK-EMPTY:\n", "a\n"),
"undefined-in-not": ([], "CHECK: a\nCHECK-NOT: [[U]]\nCHECK: b\n", "a\nb\n"),
"numeric-hex-fail": ([], "CHECK: [[#%x,A:]]\nCHECK: [[#A+1]]\n", "ff\nff\n"),
"var-whitespace": ([], "CHECK: [[0, 1]]\n", "[[0, 1]]\n"),
}
def run(args, check, inp):
    d = tempfile.mkdtemp()
    open(os.path.join(d,"check.txt"),"w",newline="").write(check)
    p = subprocess.run(["FileCheck-22","check.txt"]+([] if any(a.startswith("--dump-input") for a in args) else ["--dump-input=never"])+args, input=inp.encode(), cwd=d, capture_output=True)
    err = p.stderr.decode()
    m = re.search(r"^(check\.txt|<stdin>|command line):(\d+):(\d+): error:", err, re.M)
    loc = "-"
    if m:
        kind = {"check.txt":"check","<stdin>":"input","command line":"cmdline"}[m.group(1)]
        loc = f"{kind}:{m.group(2)}:{m.group(3)}"
    return p.returncode, loc
for name,(args,check,inp) in cases.items():
    rc, loc = run(args,check,inp)
    with open(name+".case","w",newline="") as f:
        f.write(f"# args: {' '.join(args)}\n# expect: {rc} {loc}\n--- check\n{check}--- input\n{inp}")
    print(name, rc, loc)

# Full reports as LLVM prints them with its default dump settings.
for name,(args,check,inp) in cases.items():
    d = tempfile.mkdtemp()
    open(os.path.join(d,"check.txt"),"w",newline="").write(check)
    extra = [] if any(a.startswith("--dump-input") for a in args) else ["--dump-input=fail"]
    p = subprocess.run(["FileCheck-22","check.txt"]+extra+args, input=inp.encode(), cwd=d, capture_output=True)
    report = "".join(l + "\n" for l in p.stderr.decode().split("\n")[:-1] if not l.startswith("FileCheck command line:"))
    open(name+".report","w",newline="").write(report)
