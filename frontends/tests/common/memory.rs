//! The peak-memory check of the so400m loading and import tests (each its
//! own test binary, so the process's peak RSS is that test's alone).

/// Peak resident set size of this process (Linux `VmHWM`), in bytes.
fn peak_rss() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The process's peak RSS is under 1.3 times `weights` bytes: the weights
/// are held once, not copied. Says so and checks nothing where
/// `/proc/self/status` is missing.
pub fn assert_weights_held_once(weights: usize) {
    let Some(peak) = peak_rss() else {
        eprintln!("no /proc/self/status: peak memory not checked");
        return;
    };
    let ratio = peak as f64 / weights as f64;
    eprintln!("peak RSS {peak} bytes = {ratio:.3} x weight bytes {weights}");
    assert!(
        ratio < 1.3,
        "peak RSS {peak} is {ratio:.2}x the weight bytes"
    );
}
