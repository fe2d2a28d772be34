//! RUN-line substitutions: `%s` (the test file), `%S` (its directory),
//! `%t` (a per-test temporary path), `%T` (the per-test temporary directory)
//! and `%%` (a literal `%`). Other `%` sequences are left alone.

use std::path::Path;

/// The paths substitutions expand to for one test.
#[derive(Debug, Clone)]
pub struct Substitutions<'a> {
    /// The test file.
    pub source: &'a Path,
    /// The per-test temporary directory.
    pub temp_dir: &'a Path,
}

impl Substitutions<'_> {
    /// The `%t` path: `<temp dir>/<file name>.tmp`.
    pub fn temp_path(&self) -> std::path::PathBuf {
        let name = self
            .source
            .file_name()
            .map_or_else(|| "test".into(), |n| n.to_string_lossy().into_owned());
        self.temp_dir.join(format!("{name}.tmp"))
    }

    /// Expands the substitutions in `command`, shell-quoting the paths.
    pub fn apply(&self, command: &str) -> String {
        let dir = self.source.parent().unwrap_or(Path::new("."));
        let mut out = String::with_capacity(command.len());
        let mut chars = command.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.peek() {
                Some('%') => out.push('%'),
                Some('s') => out.push_str(&quote(self.source)),
                Some('S') => out.push_str(&quote(dir)),
                Some('t') => out.push_str(&quote(&self.temp_path())),
                Some('T') => out.push_str(&quote(self.temp_dir)),
                _ => {
                    out.push('%');
                    continue;
                }
            }
            chars.next();
        }
        out
    }
}

/// Quotes `path` for the shell when it holds characters the shell treats
/// specially.
fn quote(path: &Path) -> String {
    let s = path.to_string_lossy();
    if s.chars()
        .all(|c| c.is_alphanumeric() || "/._-+=,:@".contains(c))
    {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_paths_and_percent() {
        let s = Substitutions {
            source: Path::new("/x/dir/a.mlir"),
            temp_dir: Path::new("/tmp/t 1"),
        };
        assert_eq!(
            s.apply("opt %s -o %t && cat %S/b %% %arg0 > %T/x"),
            "opt /x/dir/a.mlir -o '/tmp/t 1/a.mlir.tmp' && cat /x/dir/b % %arg0 > '/tmp/t 1'/x"
        );
    }
}
