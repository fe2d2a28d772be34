//! Op interfaces: what a pass may ask of an op without knowing its name.
//!
//! As in MLIR, an interface is a set of methods that many ops implement,
//! each in its own way. An [`OpDefinition`](crate::OpDefinition) registers
//! one implementation (a "model") per interface it implements, with
//! [`OpDefinition::implement`](crate::OpDefinition::implement); a pass asks
//! the op's name for an interface with
//! [`OperationName::interface`](crate::OperationName::interface) and gets
//! `None` when the op does not implement it (unregistered ops implement
//! nothing). A pass that needs "the matrix products this op performs" thus
//! works for every op that says so, including ops added after the pass was
//! written, and never keeps a table of op names.
//!
//! An interface is a Rust trait marked with [`OpInterface`]; any crate may
//! declare one. The core declares the four that target-independent passes
//! and cost models need:
//!
//! | interface | what it tells |
//! |---|---|
//! | [`ViewLike`] | the results reinterpret or cut an operand's memory: no arithmetic, no data moved |
//! | [`Contraction`] | the matrix products the op performs (batch, M, N, K and element types) |
//! | [`Elementwise`] | each result element depends only on the operand elements at its position; the work per element |
//! | [`Reduction`] | the op combines elements along some dimensions (how many, with what), plus its work per element |
//!
//! Methods read an [`OpSignature`] (operand and result types and the
//! attributes), not an op of a [`Context`](crate::Context), so that they
//! answer alike for an op in the IR ([`OpSignature::of`]) and for a node of
//! an e-graph that has no op yet.
//!
//! ```
//! use std::sync::Arc;
//! use ipuc_ir::interfaces::{ElementWork, Elementwise, OpSignature};
//! use ipuc_ir::{Dialect, DialectRegistry, OpDefinition, Type};
//!
//! struct Square;
//! impl Elementwise for Square {
//!     fn work(&self, _: &OpSignature<'_>) -> ElementWork {
//!         ElementWork::flops(1)
//!     }
//! }
//!
//! let mut registry = DialectRegistry::new();
//! registry.register(Dialect::new("demo", "").op(
//!     OpDefinition::new("demo.square").implement::<dyn Elementwise>(Box::new(Square)),
//! ));
//! let name = registry.op_name("demo.square");
//! let t = [Type::tensor(&[4], Type::f32())];
//! let none = Default::default();
//! let sig = OpSignature::new(&t, &t, &none);
//! assert_eq!(name.interface::<dyn Elementwise>().unwrap().work(&sig).flops, 1);
//! assert!(registry.op_name("demo.unknown").interface::<dyn Elementwise>().is_none());
//! ```

mod contraction;
mod elementwise;
mod reduction;
mod signature;
mod view;

use std::any::{Any, TypeId};

pub use contraction::{Contraction, ContractionShape};
pub use elementwise::{ElementWork, Elementwise};
pub use reduction::{CombiningKind, Reduction, ReductionShape};
pub use signature::{all_attributes, OpSignature, OwnedSignature};
pub use view::ViewLike;

/// Marks a trait object type as an op interface.
///
/// Implemented for `dyn Trait` of each interface trait, so that
/// definitions store and find models by the interface's type.
pub trait OpInterface: 'static {
    /// The interface's name, for documentation and messages (`Contraction`).
    const NAME: &'static str;
}

/// The interfaces one op definition implements: one model per interface.
#[derive(Default)]
pub struct InterfaceSet {
    // A handful per op: a vector searched in order beats a map.
    models: Vec<Model>,
}

struct Model {
    interface: TypeId,
    name: &'static str,
    /// A `Box<I>` for the interface `I`, boxed again as `Any`.
    model: Box<dyn Any + Send + Sync>,
}

impl InterfaceSet {
    /// Adds (or replaces) the model of interface `I`.
    pub fn insert<I>(&mut self, model: Box<I>)
    where
        I: ?Sized + OpInterface,
        Box<I>: Send + Sync,
    {
        let interface = TypeId::of::<I>();
        self.models.retain(|m| m.interface != interface);
        self.models.push(Model {
            interface,
            name: I::NAME,
            model: Box::new(model),
        });
    }
    /// The model of interface `I`, if implemented.
    pub fn get<I: ?Sized + OpInterface>(&self) -> Option<&I> {
        let interface = TypeId::of::<I>();
        self.models
            .iter()
            .find(|m| m.interface == interface)
            .and_then(|m| m.model.downcast_ref::<Box<I>>())
            .map(|b| &**b)
    }
    /// The names of the implemented interfaces, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self.models.iter().map(|m| m.name).collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Whole;
    impl ViewLike for Whole {}

    struct Twice;
    impl Elementwise for Twice {
        fn work(&self, _: &OpSignature<'_>) -> ElementWork {
            ElementWork::flops(2)
        }
    }
    struct Once;
    impl Elementwise for Once {
        fn work(&self, _: &OpSignature<'_>) -> ElementWork {
            ElementWork::flops(1)
        }
    }

    #[test]
    fn models_are_found_by_interface() {
        let mut set = InterfaceSet::default();
        assert!(set.get::<dyn ViewLike>().is_none());
        set.insert::<dyn ViewLike>(Box::new(Whole));
        set.insert::<dyn Elementwise>(Box::new(Twice));
        assert_eq!(set.get::<dyn ViewLike>().unwrap().view_source(), 0);
        assert!(set.get::<dyn Contraction>().is_none());
        assert!(set.get::<dyn Reduction>().is_none());
        let none = crate::Dictionary::new();
        let sig = OpSignature::new(&[], &[], &none);
        assert_eq!(set.get::<dyn Elementwise>().unwrap().work(&sig).flops, 2);
        assert_eq!(set.names(), ["Elementwise", "ViewLike"]);
        // A second model of the same interface replaces the first.
        set.insert::<dyn Elementwise>(Box::new(Once));
        assert_eq!(set.get::<dyn Elementwise>().unwrap().work(&sig).flops, 1);
        assert_eq!(set.names().len(), 2);
    }
}
