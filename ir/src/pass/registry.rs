//! The pass registry: name -> description, options and constructor.

use std::collections::BTreeMap;

use super::options::{PassOptionDecl, PassOptions};
use super::Pass;

/// Constructs a pass from validated options.
pub type PassConstructor = fn(&PassOptions) -> Result<Box<dyn Pass>, String>;

/// A registered pass.
#[derive(Clone)]
pub struct PassInfo {
    /// The pipeline name.
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Declared options.
    pub options: Vec<PassOptionDecl>,
    /// Constructor.
    pub create: PassConstructor,
}

/// All passes known to a tool.
#[derive(Clone, Default)]
pub struct PassRegistry {
    passes: BTreeMap<&'static str, PassInfo>,
}

impl PassRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        PassRegistry::default()
    }
    /// Registers a pass.
    pub fn register(&mut self, info: PassInfo) {
        self.passes.insert(info.name, info);
    }
    /// Looks a pass up.
    pub fn get(&self, name: &str) -> Option<&PassInfo> {
        self.passes.get(name)
    }
    /// All passes, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &PassInfo> {
        self.passes.values()
    }
    /// Builds a pass by name with `key=value` options.
    pub fn create(
        &self,
        name: &str,
        options: &[(String, String)],
    ) -> Result<Box<dyn Pass>, String> {
        let info = self.get(name).ok_or_else(|| {
            let close: Vec<&str> = self.passes.keys().copied().filter(|k| edit_distance(k, name) <= 2).collect();
            if close.is_empty() {
                format!("'{name}' does not refer to a registered pass or pass pipeline")
            } else {
                format!("'{name}' does not refer to a registered pass or pass pipeline; did you mean '{}'?", close.join("', '"))
            }
        })?;
        let opts = PassOptions::new(name, &info.options, options)?;
        (info.create)(&opts)
    }
    /// `--list-passes` text.
    pub fn help(&self) -> String {
        let mut out = String::from("Available Passes:\n");
        for p in self.iter() {
            out.push_str(&format!("  --{:<28} - {}\n", p.name, p.description));
            for o in &p.options {
                out.push_str(&format!("    {}\n", o.help_line()));
            }
        }
        out
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}
