//! Differential test against LLVM FileCheck: every case under
//! `tests/corpus/` (check file, input, arguments, and LLVM's recorded
//! outcome) is run through our implementation and, when `FileCheck-22` is
//! installed, through LLVM's; both must agree with the recorded exit code and
//! the location of the first error.

mod common;

use common::DIRECTIVES;
use ipuc_filecheck::{check, DumpInput, Options};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LLVM_FILECHECK: &str = "FileCheck-22";

struct Case {
    name: String,
    /// LLVM's full report (from `NAME.report`).
    report: String,
    args: Vec<String>,
    check: String,
    input: String,
    /// Exit code and `kind:line:col` of the first error (`-` if none).
    expected: (i32, String),
}

fn parse_case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).expect("readable corpus file");
    let header = |key: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("# {key}:")))
            .unwrap_or_else(|| panic!("{}: missing '# {key}:'", path.display()))
            .trim()
            .to_string()
    };
    let args = header("args")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let expect = header("expect");
    let (code, location) = expect.split_once(' ').expect("'# expect: CODE LOCATION'");
    let check_start = text.find("--- check\n").expect("'--- check' section") + "--- check\n".len();
    let input_marker = text.find("--- input\n").expect("'--- input' section");
    let report = std::fs::read_to_string(path.with_extension("report"))
        .expect("a .report beside each .case");
    Case {
        report,
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        args,
        check: text[check_start..input_marker].to_string(),
        input: text[input_marker + "--- input\n".len()..].to_string(),
        expected: (
            code.parse().expect("numeric exit code"),
            location.to_string(),
        ),
    }
}

fn options_for(args: &[String], dump_input: DumpInput) -> Options {
    let mut o = Options {
        dump_input,
        ..Options::default()
    };
    for a in args {
        let (flag, value) = a.split_once('=').map_or((a.as_str(), ""), |(f, v)| (f, v));
        match flag {
            "--check-prefixes" | "--check-prefix" => o
                .check_prefixes
                .extend(value.split(',').map(str::to_string)),
            "--implicit-check-not" => o.implicit_check_not.push(value.to_string()),
            "--match-full-lines" => o.match_full_lines = true,
            "--strict-whitespace" => o.strict_whitespace = true,
            "--ignore-case" => o.ignore_case = true,
            "--allow-empty" => o.allow_empty = true,
            "--enable-var-scope" => o.enable_var_scope = true,
            "-v" => o.verbose = true,
            "--dump-input" if value == "always" => o.dump_input = DumpInput::Always,
            _ if a.starts_with("-D") => o.defines.push(a[2..].to_string()),
            _ => panic!("corpus uses unsupported argument {a}"),
        }
    }
    o
}

fn location_kind(buffer: &str) -> &str {
    match buffer {
        "check.txt" => "check",
        "<stdin>" => "input",
        "command line" => "cmdline",
        other => other,
    }
}

fn run_ours(case: &Case) -> (i32, String) {
    match check(
        &case.check,
        "check.txt",
        &case.input,
        &options_for(&case.args, DumpInput::Never),
    ) {
        Ok(_) => (0, "-".to_string()),
        Err(f) => {
            let location = f
                .error_locations
                .first()
                .map_or("-".to_string(), |(b, l, c)| {
                    format!("{}:{l}:{c}", location_kind(b))
                });
            (f.exit_code(), location)
        }
    }
}

/// Whether LLVM's FileCheck cannot be run; if so, says so for `test`,
/// followed by `note` (a failure where CI asks for every oracle).
fn llvm_filecheck_missing(test: &str, note: &str) -> bool {
    let missing = Command::new(LLVM_FILECHECK)
        .arg("--version")
        .output()
        .is_err();
    if missing {
        ipuc_test_support::missing(test, &format!("{LLVM_FILECHECK} is not installed{note}"));
    }
    missing
}

/// Runs LLVM FileCheck; returns its exit code and stderr.
fn run_llvm_raw(case: &Case, dir: &Path, dump_input: &str) -> Option<(i32, String)> {
    std::fs::write(dir.join("check.txt"), &case.check).ok()?;
    let mut child = Command::new(LLVM_FILECHECK)
        .arg("check.txt")
        .args(
            // The case's own --dump-input wins (LLVM rejects a repeated one).
            (!case.args.iter().any(|a| a.starts_with("--dump-input")))
                .then(|| format!("--dump-input={dump_input}")),
        )
        .args(&case.args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    // FileCheck exits before reading stdin when the check file is invalid.
    let _ = child.stdin.take()?.write_all(case.input.as_bytes());
    let out = child.wait_with_output().ok()?;
    Some((
        out.status.code()?,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

fn run_llvm(case: &Case, dir: &Path) -> Option<(i32, String)> {
    let (code, stderr) = run_llvm_raw(case, dir, "never")?;
    let location = stderr
        .lines()
        .find_map(|l| {
            let (head, _) = l.split_once(": error:")?;
            let mut parts = head.rsplitn(3, ':');
            let col = parts.next()?;
            let line = parts.next()?;
            let buffer = parts.next()?;
            Some(format!("{}:{line}:{col}", location_kind(buffer)))
        })
        .unwrap_or_else(|| "-".to_string());
    Some((code, location))
}

fn corpus() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    paths.sort();
    paths.iter().map(|p| parse_case(p)).collect()
}

#[test]
fn corpus_is_large_and_covers_every_directive() {
    let cases = corpus();
    assert!(cases.len() >= 40, "only {} corpus cases", cases.len());
    for directive in [
        "CHECK:", "-NEXT:", "-SAME:", "-DAG:", "-NOT:", "-LABEL:", "-EMPTY:", "-COUNT-",
    ] {
        assert!(
            cases.iter().any(|c| c.check.contains(directive)),
            "no case uses {directive}"
        );
    }
    assert!(cases.iter().any(|c| c.expected.0 == 0));
    assert!(cases.iter().any(|c| c.expected.0 == 1));
    assert!(cases.iter().any(|c| c.expected.0 == 2));
}

#[test]
fn ours_matches_recorded_llvm_outcomes() {
    let mismatches: Vec<String> = corpus()
        .iter()
        .filter_map(|case| {
            let ours = run_ours(case);
            (ours != case.expected).then(|| {
                format!(
                    "{}: expected {:?}, ours {:?}",
                    case.name, case.expected, ours
                )
            })
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

fn our_report(case: &Case) -> String {
    let options = options_for(&case.args, DumpInput::Fail);
    match check(&case.check, "check.txt", &case.input, &options) {
        Ok(s) => s.report,
        Err(f) => f.report,
    }
}

#[test]
fn ours_prints_recorded_llvm_reports() {
    let differences: Vec<String> = corpus()
        .iter()
        .filter_map(|case| {
            let ours = our_report(case);
            (ours != case.report).then(|| {
                format!(
                    "=== {}\n--- LLVM\n{}--- ours\n{ours}",
                    case.name, case.report
                )
            })
        })
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn llvm_filecheck_agrees_with_recorded_outcomes() {
    if llvm_filecheck_missing(
        "llvm_filecheck_agrees_with_recorded_outcomes",
        "; recorded outcomes were checked against ours only",
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mismatches: Vec<String> = corpus()
        .iter()
        .filter_map(|case| {
            let llvm = run_llvm(case, dir.path()).expect("FileCheck-22 runs");
            (llvm != case.expected).then(|| {
                format!(
                    "{}: recorded {:?}, LLVM {:?}",
                    case.name, case.expected, llvm
                )
            })
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn reports_are_identical_to_llvm() {
    if llvm_filecheck_missing(module_path!(), "") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut differences = Vec::new();
    for case in corpus() {
        let (_, llvm) = run_llvm_raw(&case, dir.path(), "fail").expect("FileCheck-22 runs");
        // LLVM echoes its own command line after some usage errors.
        let llvm: String = llvm
            .lines()
            .filter(|l| !l.starts_with("FileCheck command line:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let ours = our_report(&case);
        if ours != llvm {
            differences.push(format!(
                "=== {}\n--- LLVM\n{llvm}--- ours\n{ours}",
                case.name
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// A small deterministic generator (SplitMix64) for random differential cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random check file, input and option set built from directive, regex,
/// variable and whitespace fragments.
fn random_case(rng: &mut Rng, index: usize) -> Case {
    const WORDS: [&str; 9] = ["a", "b", "c", "ab", "a b", "x1", "%0", "%arg0", "foo(%a)"];
    const REGEXES: [&str; 6] = ["[a-c]+", "a|b", ".*", "[0-9]", "^a", "b$"];
    const ARGS: [&str; 7] = [
        "",
        "",
        "--match-full-lines",
        "--strict-whitespace",
        "-v",
        "--implicit-check-not=c",
        "--enable-var-scope",
    ];
    let mut check = String::new();
    for _ in 0..1 + rng.below(6) {
        let directive = rng.pick(&DIRECTIVES);
        check.push_str(directive);
        if directive != "CHECK-EMPTY:" {
            let body = match rng.below(100) {
                0..15 => format!("{{{{{}}}}}", rng.pick(&REGEXES)),
                15..25 => format!("[[V:{}]]", rng.pick(&["[a-c]+", ".*", "a"])),
                25..32 => "[[V]]".to_string(),
                32..36 => format!("{} [[#N:]]", rng.pick(&WORDS)),
                _ => rng.pick(&WORDS).to_string(),
            };
            check.push(' ');
            check.push_str(&body);
        }
        check.push('\n');
    }
    let mut input = String::new();
    for _ in 0..rng.below(9) {
        let mut lines = WORDS.to_vec();
        lines.extend(["", " a  b", "3", "12 x"]);
        input.push_str(rng.pick(&lines));
        input.push('\n');
    }
    let args = rng.pick(&ARGS);
    Case {
        name: format!("random-{index}"),
        report: String::new(),
        args: args.split_whitespace().map(str::to_string).collect(),
        check,
        input,
        expected: (0, String::new()),
    }
}

#[test]
fn random_cases_print_identical_reports_to_llvm() {
    if llvm_filecheck_missing(module_path!(), "") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0x1234_5678);
    let mut differences = Vec::new();
    for index in 0..300 {
        let case = random_case(&mut rng, index);
        let (llvm_code, llvm) = run_llvm_raw(&case, dir.path(), "fail").expect("FileCheck-22 runs");
        let llvm: String = llvm
            .lines()
            .filter(|l| !l.starts_with("FileCheck command line:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let options = options_for(&case.args, DumpInput::Fail);
        let (code, ours) = match check(&case.check, "check.txt", &case.input, &options) {
            Ok(s) => (0, s.report),
            Err(f) => (f.exit_code(), f.report),
        };
        if (code, &ours) != (llvm_code, &llvm) {
            differences.push(format!(
                "=== args {:?}\n--- check\n{}--- input\n{}--- LLVM ({llvm_code})\n{llvm}--- ours ({code})\n{ours}",
                case.args, case.check, case.input
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
