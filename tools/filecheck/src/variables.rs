//! The variable table shared by all patterns of one check run.

use crate::numeric::Format;
use std::collections::HashMap;

/// String and numeric variables with their current values.
#[derive(Debug, Clone, Default)]
pub struct Variables {
    strings: HashMap<String, String>,
    numerics: HashMap<String, (i128, Format)>,
}

impl Variables {
    /// Value of string variable `name`.
    pub fn string(&self, name: &str) -> Option<&str> {
        self.strings.get(name).map(String::as_str)
    }

    /// Value and format of numeric variable `name`.
    pub fn numeric(&self, name: &str) -> Option<(i128, Format)> {
        self.numerics.get(name).copied()
    }

    /// Sets string variable `name`.
    pub fn set_string(&mut self, name: &str, value: &str) {
        self.strings.insert(name.to_string(), value.to_string());
    }

    /// Sets numeric variable `name`.
    pub fn set_numeric(&mut self, name: &str, value: i128, format: Format) {
        self.numerics.insert(name.to_string(), (value, format));
    }

    /// Forgets every variable whose name does not start with `$`
    /// (`--enable-var-scope` at each CHECK-LABEL).
    pub fn clear_locals(&mut self) {
        self.strings.retain(|k, _| k.starts_with('$'));
        self.numerics.retain(|k, _| k.starts_with('$'));
    }
}
