//! The pass registry: every pass a tool knows, by name, built from its
//! declaration, plus the hook implementations the tool installed.
//!
//! A name is registered once: a second registration is an error, never a
//! silent replacement. Target behaviour enters through hooks
//! ([`PassRegistry::install_hook`]), and `--list-passes` shows which
//! implementation each pass will use.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::declaration::{DeclaredPass, PassInstance};
use super::hooks::{HookInfo, PassHook, PassHooks};
use super::options::{PassCreateError, PassOptionDecl, PassOptionSet};
use super::Pass;

/// Builds a pass from `key=value` options and the installed hooks.
pub type PassConstructor =
    fn(&[(String, String)], &PassHooks) -> Result<Box<dyn Pass>, PassCreateError>;

/// A registered pass, as its declaration states it.
#[derive(Clone)]
pub struct PassInfo {
    /// The pipeline name.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// The op kind it runs on (`None`: any op).
    pub anchor: Option<&'static str>,
    /// Declared options.
    pub options: Vec<PassOptionDecl>,
    /// The hooks it reads.
    pub hooks: &'static [HookInfo],
    /// The Rust type that implements it (for error messages).
    pub type_name: &'static str,
    /// Constructor.
    pub create: PassConstructor,
}

/// Why a registration was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// Two passes claim one pipeline name.
    #[error("pass '{name}' is registered twice (by {first} and by {second}); each pass name must be unique")]
    DuplicatePass {
        /// The contested name.
        name: &'static str,
        /// The type registered first.
        first: &'static str,
        /// The type registered second.
        second: &'static str,
    },
    /// Two implementations for one hook.
    #[error(
        "hook '{hook}' already has the implementation '{first}'; cannot install '{second}' as well"
    )]
    DuplicateHook {
        /// The hook.
        hook: &'static str,
        /// The implementation installed first.
        first: &'static str,
        /// The implementation installed second.
        second: &'static str,
    },
}

fn construct<P: DeclaredPass>(
    pairs: &[(String, String)],
    hooks: &PassHooks,
) -> Result<Box<dyn Pass>, PassCreateError> {
    let options = P::Options::parse(P::NAME, pairs)?;
    Ok(Box::new(PassInstance::<P>::new(options, hooks)?))
}

/// All passes known to a tool, and the hook implementations it installed.
#[derive(Clone, Default)]
pub struct PassRegistry {
    passes: BTreeMap<&'static str, PassInfo>,
    hooks: PassHooks,
}

impl PassRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        PassRegistry::default()
    }

    /// Registers the declared pass `P` under its name.
    pub fn register<P: DeclaredPass>(&mut self) -> Result<(), RegistrationError> {
        let type_name = std::any::type_name::<P>();
        if let Some(existing) = self.passes.get(P::NAME) {
            return Err(RegistrationError::DuplicatePass {
                name: P::NAME,
                first: existing.type_name,
                second: type_name,
            });
        }
        self.passes.insert(
            P::NAME,
            PassInfo {
                name: P::NAME,
                summary: P::SUMMARY,
                anchor: P::ANCHOR,
                options: <P::Options as PassOptionSet>::declarations(),
                hooks: P::HOOKS,
                type_name,
                create: construct::<P>,
            },
        );
        Ok(())
    }

    /// Installs `value` as the implementation of `hook` for every pass
    /// that reads it; `implementation` names it in `--list-passes`.
    pub fn install_hook<T: ?Sized + Send + Sync + 'static>(
        &mut self,
        hook: &PassHook<T>,
        implementation: &'static str,
        value: Arc<T>,
    ) -> Result<(), RegistrationError> {
        self.hooks
            .install(hook, implementation, value)
            .map_err(|first| RegistrationError::DuplicateHook {
                hook: hook.info.name,
                first,
                second: implementation,
            })
    }

    /// The installed hook implementations.
    pub fn hooks(&self) -> &PassHooks {
        &self.hooks
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
    ) -> Result<Box<dyn Pass>, PassCreateError> {
        let info = self.get(name).ok_or_else(|| PassCreateError::UnknownPass {
            name: name.to_string(),
            suggestions: self
                .passes
                .keys()
                .copied()
                .filter(|k| edit_distance(k, name) <= 2)
                .collect(),
        })?;
        (info.create)(options, &self.hooks)
    }

    /// `--list-passes` text: every pass with its options, and for each
    /// hook it reads, the installed implementation (or what it falls back to).
    pub fn help(&self) -> String {
        let mut out = String::from("Available Passes:\n");
        for p in self.iter() {
            out.push_str(&format!("  --{:<28} - {}\n", p.name, p.summary));
            for o in &p.options {
                out.push_str(&format!("    {}\n", o.help_line()));
            }
            for h in p.hooks {
                let using = match self.hooks.implementation(h.name) {
                    Some(i) => i.to_string(),
                    None => format!("none installed: {}", h.fallback),
                };
                out.push_str(&format!("    hook {} = {using} - {}\n", h.name, h.summary));
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
