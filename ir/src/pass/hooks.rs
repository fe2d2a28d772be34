//! Pass hooks: typed extension points through which a tool wires a
//! target's implementation (e.g. the IPU cost model) into a
//! target-independent pass, without registering the pass a second time.
//!
//! A pass crate declares a hook as a constant ([`PassHook`]) and lists it
//! in its [`declare_pass!`](crate::declare_pass) (`hooks: [COST_MODEL]`);
//! the pass reads it when built ([`PassHooks::get`]) and falls back to its
//! own default when no tool installed one. A tool installs one
//! implementation per hook with
//! [`PassRegistry::install_hook`](super::PassRegistry::install_hook);
//! `--list-passes` shows which implementation each pass will use.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// What a hook is for, as `--list-passes` shows it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HookInfo {
    /// The hook's name (`cost-model`).
    pub name: &'static str,
    /// What the implementation decides.
    pub summary: &'static str,
    /// What the pass does when no implementation is installed.
    pub fallback: &'static str,
}

/// A hook whose implementations are `Arc<T>` (usually `T` is a `dyn Trait`).
pub struct PassHook<T: ?Sized + 'static> {
    /// Name and documentation.
    pub info: HookInfo,
    _value: PhantomData<fn() -> Arc<T>>,
}

impl<T: ?Sized + 'static> PassHook<T> {
    /// Declares a hook.
    pub const fn new(name: &'static str, summary: &'static str, fallback: &'static str) -> Self {
        PassHook {
            info: HookInfo {
                name,
                summary,
                fallback,
            },
            _value: PhantomData,
        }
    }
}

struct Installed {
    implementation: &'static str,
    value: Box<dyn Any + Send + Sync>,
}

/// The hook implementations a tool installed, by hook name.
#[derive(Clone, Default)]
pub struct PassHooks {
    installed: FxHashMap<&'static str, Arc<Installed>>,
}

impl PassHooks {
    /// Installs `value` (named `implementation` in listings) for `hook`.
    /// Returns the name of the implementation already installed, if any
    /// (and then installs nothing).
    pub(super) fn install<T: ?Sized + Send + Sync + 'static>(
        &mut self,
        hook: &PassHook<T>,
        implementation: &'static str,
        value: Arc<T>,
    ) -> Result<(), &'static str> {
        if let Some(existing) = self.installed.get(hook.info.name) {
            return Err(existing.implementation);
        }
        self.installed.insert(
            hook.info.name,
            Arc::new(Installed {
                implementation,
                value: Box::new(value),
            }),
        );
        Ok(())
    }

    /// The implementation installed for `hook`, if any.
    pub fn get<T: ?Sized + Send + Sync + 'static>(&self, hook: &PassHook<T>) -> Option<Arc<T>> {
        let installed = self.installed.get(hook.info.name)?;
        let value = installed.value.downcast_ref::<Arc<T>>().unwrap_or_else(|| {
            // Two hook constants with one name but different types: a bug in
            // the pass crates, not something a user can cause.
            panic!(
                "hook '{}' was installed with another type than it is read with",
                hook.info.name
            )
        });
        Some(value.clone())
    }

    /// The name of the implementation installed for the hook named `name`.
    pub fn implementation(&self, name: &str) -> Option<&'static str> {
        self.installed.get(name).map(|i| i.implementation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Price: Send + Sync {
        fn price(&self) -> u32;
    }
    struct Cheap;
    impl Price for Cheap {
        fn price(&self) -> u32 {
            1
        }
    }
    const PRICE: PassHook<dyn Price> = PassHook::new("price", "prices things", "free");

    #[test]
    fn one_implementation_per_hook() {
        let mut hooks = PassHooks::default();
        assert!(hooks.get(&PRICE).is_none());
        hooks.install(&PRICE, "cheap", Arc::new(Cheap)).unwrap();
        assert_eq!(hooks.get(&PRICE).unwrap().price(), 1);
        assert_eq!(hooks.implementation("price"), Some("cheap"));
        assert_eq!(
            hooks.install(&PRICE, "other", Arc::new(Cheap)).unwrap_err(),
            "cheap"
        );
    }
}
