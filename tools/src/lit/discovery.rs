//! Finding test files: explicit files are taken as they are; directories are
//! searched recursively (in sorted order) for files with a test suffix,
//! skipping `Inputs` directories, which hold fixtures by lit convention.

use std::path::{Path, PathBuf};

/// File-name suffixes that mark test files by default.
pub const DEFAULT_SUFFIXES: [&str; 4] = [".mlir", ".test", ".asm", ".onnx.txt"];

/// Collects the test files under `paths`, in a deterministic order.
pub fn discover(paths: &[PathBuf], suffixes: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut tests = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.is_dir() {
            walk(path, suffixes, &mut tests)?;
        } else {
            tests.push(path.clone());
        }
    }
    Ok(tests)
}

fn walk(dir: &Path, suffixes: &[String], tests: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        let name = entry
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if entry.is_dir() {
            if name != "Inputs" {
                walk(&entry, suffixes, tests)?;
            }
        } else if suffixes.iter().any(|s| name.ends_with(s.as_str())) {
            tests.push(entry);
        }
    }
    Ok(())
}
