//! Typed pass options: declared by each pass, parsed from `{key=value ...}`.

use rustc_hash::FxHashMap;

/// The value kind of an option.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PassOptionKind {
    /// `true` / `false`.
    Bool,
    /// Signed integer.
    Int,
    /// Unsigned integer.
    UInt,
    /// Free text.
    String,
    /// Comma-separated strings.
    StringList,
}

impl PassOptionKind {
    fn describe(self) -> &'static str {
        match self {
            PassOptionKind::Bool => "bool",
            PassOptionKind::Int => "int",
            PassOptionKind::UInt => "uint",
            PassOptionKind::String => "string",
            PassOptionKind::StringList => "string list",
        }
    }
}

/// A declared option.
#[derive(Clone, Debug)]
pub struct PassOptionDecl {
    /// The option name (`max-iterations`).
    pub name: &'static str,
    /// Its kind.
    pub kind: PassOptionKind,
    /// Default value, as text.
    pub default: &'static str,
    /// Help text.
    pub description: &'static str,
}

impl PassOptionDecl {
    /// `name=<kind>  description (default: ...)` for `--list-passes`.
    pub fn help_line(&self) -> String {
        format!(
            "{}=<{}> - {} (default: {})",
            self.name,
            self.kind.describe(),
            self.description,
            if self.default.is_empty() {
                "\"\""
            } else {
                self.default
            }
        )
    }
}

/// Parsed option values, validated against the declarations.
#[derive(Clone, Debug, Default)]
pub struct PassOptions {
    values: FxHashMap<String, String>,
    decls: Vec<PassOptionDecl>,
}

impl PassOptions {
    /// Validates `pairs` against `decls`.
    pub fn new(
        pass: &str,
        decls: &[PassOptionDecl],
        pairs: &[(String, String)],
    ) -> Result<PassOptions, String> {
        let mut values = FxHashMap::default();
        for (k, v) in pairs {
            let Some(d) = decls.iter().find(|d| d.name == k) else {
                let known: Vec<&str> = decls.iter().map(|d| d.name).collect();
                return Err(if known.is_empty() {
                    format!("pass '{pass}' takes no options, got '{k}'")
                } else {
                    format!(
                        "unknown option '{k}' for pass '{pass}' (options: {})",
                        known.join(", ")
                    )
                });
            };
            check_value(pass, d, v)?;
            values.insert(k.clone(), v.clone());
        }
        Ok(PassOptions {
            values,
            decls: decls.to_vec(),
        })
    }

    fn raw(&self, name: &str) -> &str {
        if let Some(v) = self.values.get(name) {
            return v;
        }
        self.decls
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.default)
            .unwrap_or_else(|| panic!("option '{name}' is not declared"))
    }
    /// A bool option.
    pub fn bool(&self, name: &str) -> bool {
        matches!(self.raw(name), "true" | "1" | "")
    }
    /// An int option.
    pub fn int(&self, name: &str) -> i64 {
        self.raw(name).parse().expect("validated")
    }
    /// A uint option.
    pub fn uint(&self, name: &str) -> u64 {
        self.raw(name).parse().expect("validated")
    }
    /// A string option.
    pub fn string(&self, name: &str) -> String {
        self.raw(name).to_string()
    }
    /// A string-list option.
    pub fn string_list(&self, name: &str) -> Vec<String> {
        let r = self.raw(name);
        if r.is_empty() {
            Vec::new()
        } else {
            r.split(',').map(|s| s.trim().to_string()).collect()
        }
    }
    /// The explicitly set options, sorted, as `k=v` text.
    pub fn to_text(&self) -> String {
        let mut kv: Vec<_> = self.values.iter().collect();
        kv.sort();
        kv.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn check_value(pass: &str, d: &PassOptionDecl, v: &str) -> Result<(), String> {
    let ok = match d.kind {
        PassOptionKind::Bool => matches!(v, "true" | "false" | "1" | "0" | ""),
        PassOptionKind::Int => v.parse::<i64>().is_ok(),
        PassOptionKind::UInt => v.parse::<u64>().is_ok(),
        PassOptionKind::String | PassOptionKind::StringList => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid value '{v}' for option '{}' of pass '{pass}': expected {}",
            d.name,
            d.kind.describe()
        ))
    }
}
