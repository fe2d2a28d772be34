//! Typed pass options: each pass declares a struct of options (with
//! [`declare_pass!`](crate::declare_pass)); its fields are parsed from a
//! pipeline's `{key=value ...}`, printed back for `--dump-pass-pipeline`,
//! and listed with their defaults and docs by `--list-passes`.

/// The value kind of an option, as `--list-passes` names it.
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
    /// The kind as `--list-passes` prints it (`uint`).
    pub fn describe(self) -> &'static str {
        match self {
            PassOptionKind::Bool => "bool",
            PassOptionKind::Int => "int",
            PassOptionKind::UInt => "uint",
            PassOptionKind::String => "string",
            PassOptionKind::StringList => "string list",
        }
    }
}

/// An option value that does not parse: what the option takes instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}")]
pub struct OptionValueError {
    /// What a valid value looks like (`uint (from 0 to 4294967295)`).
    pub expected: String,
}

impl OptionValueError {
    /// A value that should have been `expected`.
    pub fn expected(expected: impl Into<String>) -> OptionValueError {
        OptionValueError {
            expected: expected.into(),
        }
    }
}

/// Why a pass could not be built from a pipeline's `name{key=value ...}`.
/// The pipeline is command-line text, so the error names the pass and the
/// option rather than a file position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PassCreateError {
    /// No pass or pipeline has this name.
    #[error(
        "'{name}' does not refer to a registered pass or pass pipeline{}",
        did_you_mean(suggestions)
    )]
    UnknownPass {
        /// The name as written.
        name: String,
        /// Registered names within a small edit distance.
        suggestions: Vec<&'static str>,
    },
    /// An option given to a pass that declares none.
    #[error("pass '{pass}' takes no options, got '{key}'")]
    NoOptions {
        /// The pass.
        pass: String,
        /// The option as written.
        key: String,
    },
    /// An option the pass does not declare.
    #[error("unknown option '{key}' for pass '{pass}' (options: {})", known.join(", "))]
    UnknownOption {
        /// The pass.
        pass: String,
        /// The option as written.
        key: String,
        /// The options it declares.
        known: Vec<&'static str>,
    },
    /// A value outside what the option takes.
    #[error("invalid value '{value}' for option '{key}' of pass '{pass}': {error}")]
    InvalidValue {
        /// The pass.
        pass: String,
        /// The option.
        key: String,
        /// The value as written.
        value: String,
        /// What it should have been.
        error: OptionValueError,
    },
    /// The pass refused its options as a whole (a missing option, or one
    /// that names something unknown); the text says what to write.
    #[error("{0}")]
    Refused(String),
}

fn did_you_mean(suggestions: &[&str]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("; did you mean '{}'?", suggestions.join("', '"))
    }
}

/// A Rust type that can be the type of a pass option.
pub trait PassOptionValue: Sized {
    /// How `--list-passes` names the type.
    const KIND: PassOptionKind;
    /// Parses the text after `key=`; on error, says what was expected.
    fn parse_option(text: &str) -> Result<Self, OptionValueError>;
    /// The value as it would be written in a pipeline.
    fn print_option(&self) -> String;
}

impl PassOptionValue for bool {
    const KIND: PassOptionKind = PassOptionKind::Bool;
    fn parse_option(text: &str) -> Result<Self, OptionValueError> {
        match text {
            // A bare `{flag}` means true, as in MLIR.
            "true" | "1" | "" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(OptionValueError::expected("bool")),
        }
    }
    fn print_option(&self) -> String {
        self.to_string()
    }
}

macro_rules! integer_option {
    ($($t:ty => $kind:ident),*) => {$(
        impl PassOptionValue for $t {
            const KIND: PassOptionKind = PassOptionKind::$kind;
            fn parse_option(text: &str) -> Result<Self, OptionValueError> {
                text.parse().map_err(|_| {
                    OptionValueError::expected(format!("{} (from {} to {})", PassOptionKind::$kind.describe(), <$t>::MIN, <$t>::MAX))
                })
            }
            fn print_option(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

integer_option!(u32 => UInt, u64 => UInt, usize => UInt, i32 => Int, i64 => Int);

impl PassOptionValue for String {
    const KIND: PassOptionKind = PassOptionKind::String;
    fn parse_option(text: &str) -> Result<Self, OptionValueError> {
        Ok(text.to_string())
    }
    fn print_option(&self) -> String {
        self.clone()
    }
}

impl PassOptionValue for Vec<String> {
    const KIND: PassOptionKind = PassOptionKind::StringList;
    fn parse_option(text: &str) -> Result<Self, OptionValueError> {
        Ok(if text.is_empty() {
            Vec::new()
        } else {
            text.split(',').map(|s| s.trim().to_string()).collect()
        })
    }
    fn print_option(&self) -> String {
        self.join(",")
    }
}

/// A declared option, as `--list-passes` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassOptionDecl {
    /// The option name (`max-iterations`).
    pub name: &'static str,
    /// Its kind.
    pub kind: PassOptionKind,
    /// Default value, as pipeline text.
    pub default: String,
    /// Help text (the field's doc comment).
    pub description: &'static str,
}

impl PassOptionDecl {
    /// `name=<kind> - description (default: ...)` for `--list-passes`.
    pub fn help_line(&self) -> String {
        format!(
            "{}=<{}> - {} (default: {})",
            self.name,
            self.kind.describe(),
            self.description,
            if self.default.is_empty() {
                "\"\""
            } else {
                &self.default
            }
        )
    }
}

/// The options struct of a pass. [`declare_pass!`](crate::declare_pass)
/// implements it; `()` is the option set of passes without options.
pub trait PassOptionSet: Clone + Default + Send + Sync + 'static {
    /// Every option with its kind, default and doc, in declaration order.
    fn declarations() -> Vec<PassOptionDecl>;
    /// Sets the option `key` from pipeline text. `Ok(false)`: no such
    /// option; `Err`: the text is not a valid value.
    fn set(&mut self, key: &str, value: &str) -> Result<bool, OptionValueError>;
    /// Every option as `(name, pipeline text)`, in declaration order.
    fn values(&self) -> Vec<(&'static str, String)>;

    /// The defaults overridden by `pairs` (`key=value` from a pipeline),
    /// with errors naming the pass, the option and what was expected.
    fn parse(pass: &str, pairs: &[(String, String)]) -> Result<Self, PassCreateError> {
        let mut options = Self::default();
        for (key, value) in pairs {
            match options.set(key, value) {
                Ok(true) => {}
                Ok(false) => {
                    let known: Vec<&str> = Self::declarations().iter().map(|d| d.name).collect();
                    return Err(if known.is_empty() {
                        PassCreateError::NoOptions {
                            pass: pass.into(),
                            key: key.clone(),
                        }
                    } else {
                        PassCreateError::UnknownOption {
                            pass: pass.into(),
                            key: key.clone(),
                            known,
                        }
                    });
                }
                Err(error) => {
                    return Err(PassCreateError::InvalidValue {
                        pass: pass.into(),
                        key: key.clone(),
                        value: value.clone(),
                        error,
                    })
                }
            }
        }
        Ok(options)
    }

    /// The options that differ from their defaults, as `k=v` pipeline text
    /// in declaration order (what `--dump-pass-pipeline` and reproducers print).
    fn to_text(&self) -> String {
        let defaults = Self::default().values();
        self.values()
            .into_iter()
            .zip(defaults)
            .filter(|((_, v), (_, d))| v != d)
            .map(|((k, v), _)| {
                // Values with separators are quoted so that the text parses back.
                if v.is_empty() || v.contains([' ', '}', '{']) {
                    format!("{k}=\"{v}\"")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl PassOptionSet for () {
    fn declarations() -> Vec<PassOptionDecl> {
        Vec::new()
    }
    fn set(&mut self, _key: &str, _value: &str) -> Result<bool, OptionValueError> {
        Ok(false)
    }
    fn values(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_print_back() {
        assert_eq!(bool::parse_option(""), Ok(true));
        assert_eq!(bool::parse_option("0"), Ok(false));
        assert!(bool::parse_option("yes").is_err());
        assert_eq!(u32::parse_option("7"), Ok(7));
        assert_eq!(
            u32::parse_option("-1"),
            Err(OptionValueError::expected("uint (from 0 to 4294967295)"))
        );
        assert_eq!(i64::parse_option("-3"), Ok(-3));
        let list = Vec::<String>::parse_option("a, b,c").unwrap();
        assert_eq!(list, ["a", "b", "c"]);
        assert_eq!(list.print_option(), "a,b,c");
        assert_eq!(Vec::<String>::parse_option(""), Ok(Vec::new()));
    }

    #[test]
    fn no_options_reject_every_key() {
        let e = <()>::parse("cse", &[("x".into(), "1".into())]).unwrap_err();
        assert_eq!(e.to_string(), "pass 'cse' takes no options, got 'x'");
        assert_eq!(().to_text(), "");
    }
}
