//! `report.html` in a real headless browser (Debian's chromium, which
//! `.ci/run` installs): the report of the FP8 MLP block of
//! `lit-tests/lower/mlp-fp8.mlir` loads without a console message or
//! script error and draws every view with as many elements as the
//! profile has supersteps, steps, tiles and allocations, and the note of
//! a truncated recording when there is one. A copy with a broken script
//! must be caught by the same checks.
//!
//! The browser is driven without npm or a protocol client: `--dump-dom`
//! prints the DOM after the page's scripts ran, and `--enable-logging=stderr`
//! prints every console message as an `INFO:CONSOLE` line. The page adds
//! `data-ready="1"` to its body when every view is drawn and shows any
//! error in `#js-errors`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const TEST: &str = "report_browser";

/// Debian's chromium, or `IPUC_CHROMIUM`.
fn browser() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IPUC_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// The DOM after `page`'s scripts ran, and the browser's stderr.
fn load(browser: &Path, page: &Path) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    // Files, not pipes: a DOM larger than a pipe's buffer would block the
    // browser while this waits for it to exit.
    let (dom_path, log_path) = (
        profile.path().join("dom.html"),
        profile.path().join("log.txt"),
    );
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("user").display()
        ))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::from(std::fs::File::create(&dom_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!(
                "{} did not finish loading {} in 120 s",
                browser.display(),
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let log = read(&log_path);
    assert!(status.success(), "{log}");
    (read(&dom_path), log)
}

/// What is wrong with a loaded report: console messages, script errors,
/// an unfinished page.
fn problems(dom: &str, stderr: &str) -> Vec<String> {
    let mut out: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(|l| format!("console: {l}"))
        .collect();
    if !dom.contains("<pre id=\"js-errors\" hidden=\"\"></pre>") {
        out.push("the page shows script errors".into());
    }
    if !dom.contains("data-ready=\"1\"") {
        out.push("the page did not finish drawing".into());
    }
    out
}

#[test]
fn the_report_loads_and_draws_every_view() {
    let Some(browser) = browser() else {
        ipuc_test_support::missing(
            TEST,
            "chromium not found (apt-get install chromium, or set IPUC_CHROMIUM)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prof = dir.path().join("prof");
    common::profile_block(env!("CARGO_BIN_EXE_ipu-run"), &prof);
    let page = prof.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch.
    for fetch in ["<script src", "<link", "https://", "url("] {
        assert!(
            !html.contains(fetch),
            "the report fetches something: {fetch}"
        );
    }
    let (dom, log) = load(&browser, &page);
    assert_eq!(problems(&dom, &log), Vec::<String>::new());
    let p: Value =
        serde_json::from_str(&std::fs::read_to_string(prof.join("profile.json")).unwrap()).unwrap();
    let len = |v: &Value| v.as_array().unwrap().len();
    let count = |needle: &str| dom.matches(needle).count();
    let supersteps = len(&p["supersteps"]);
    assert_eq!(count("class=\"superstep\""), supersteps);
    let spans: usize = p["supersteps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| len(&s["codelets"]))
        .sum();
    assert_eq!(count("class=\"op-span\""), spans);
    assert_eq!(count("class=\"cost-row\""), len(&p["steps"]));
    assert_eq!(count("class=\"exchange-bar\""), supersteps);
    let tiles = &p["tiles"];
    assert_eq!(count("<option value="), len(tiles));
    assert_eq!(count("class=\"allocation\""), len(&tiles[0]["memory"]));
    // The heat map: a row per tile (26 tiles) times 200 bins.
    assert!(
        dom.contains(&format!("data-cells=\"{}\"", len(tiles) * 200)),
        "heat map not drawn"
    );
    // The memory table: a row per superstep.
    let table = dom.split("id=\"memory-free\"").nth(1).unwrap();
    assert_eq!(
        table
            .split("</table>")
            .next()
            .unwrap()
            .matches("<tr>")
            .count(),
        supersteps + 1
    );

    // A whole recording shows no truncation note; a truncated one shows
    // its note above the views.
    assert!(dom.contains("<div id=\"truncated\" hidden=\"\"></div>"));
    let truncated = prof.join("truncated.html");
    std::fs::write(
        &truncated,
        html.replacen(
            "\"truncated\":null",
            "\"truncated\":\"profile truncated: from superstep 3\"",
            1,
        ),
    )
    .unwrap();
    let (dom, log) = load(&browser, &truncated);
    assert_eq!(problems(&dom, &log), Vec::<String>::new());
    assert!(
        dom.contains("<div id=\"truncated\">profile truncated: from superstep 3</div>"),
        "the truncation note is not shown"
    );

    // The same checks catch a script that fails half-way.
    let broken = prof.join("broken.html");
    std::fs::write(
        &broken,
        html.replacen("summary(D);", "summary(D); null.x;", 1),
    )
    .unwrap();
    let (dom, log) = load(&browser, &broken);
    let found = problems(&dom, &log);
    assert!(
        found.iter().any(|p| p.contains("did not finish"))
            && found.iter().any(|p| p.contains("script errors")),
        "{found:?}"
    );
}
