//! What a conversion remembers while it runs: which values stand for which
//! converted values (1:N), the casts it created, the target
//! materializations it can reuse, and the problems to report at the end.
//!
//! Only live values are keys: arena slots are recycled, so a mapping from
//! an erased value could later be read for an unrelated new one. When a
//! value that some mapping lists is replaced (its producer was converted
//! in turn), the lists are updated in place ([`ConversionState::replace`]).

use rustc_hash::{FxHashMap, FxHashSet};

use super::type_converter::{build_unrealized_cast, InsertPoint};
use crate::context::{Context, OpId, Value};
use crate::diagnostics::Diagnostic;
use crate::location::Location;
use crate::types::Type;

/// Which way a conversion cast goes, so that the matching materialization
/// hooks can replace it when the conversion ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CastKind {
    /// Converted values back to one value of the original type.
    Source,
    /// One value to the converted types.
    Target,
}

/// A target materialization: the types asked for and the values built.
type TargetCast = (Vec<Type>, Vec<Value>);

/// Bookkeeping shared by the driver and its rewriters.
#[derive(Default)]
pub(crate) struct ConversionState {
    /// A stand-in (a source materialization the unconverted users read)
    /// -> the converted values it was built from.
    mapping: FxHashMap<Value, Vec<Value>>,
    /// A converted value -> the stand-ins whose lists name it.
    listed_in: FxHashMap<Value, Vec<Value>>,
    /// Conversion casts this conversion created, in creation order, and
    /// which way they go.
    pub(crate) casts: Vec<(OpId, CastKind)>,
    pub(crate) cast_set: FxHashSet<OpId>,
    /// Target materializations by source value: (types, values), for reuse.
    target_casts: FxHashMap<Value, Vec<TargetCast>>,
    pub(crate) materializations: u64,
    /// Errors that fail the conversion: patterns' (through
    /// `ConversionRewriter::fail`) and materialization hooks that built the
    /// wrong types.
    pub(crate) errors: Vec<Diagnostic>,
    /// Op name -> a pattern that declined it because it takes only 1:1
    /// operands and some operand converted to several values (or none).
    pub(crate) one_to_n_refusals: FxHashMap<String, String>,
    /// Op name -> an operand type that has no conversion.
    pub(crate) unconvertible_operands: FxHashMap<String, String>,
}

impl ConversionState {
    /// Builds a conversion cast of `inputs` to `to` at `at` and remembers
    /// it: casts that cancel out or go unused are removed when the
    /// conversion ends, and the rest are handed to the materialization hooks.
    pub(crate) fn cast(
        &mut self,
        ctx: &mut Context,
        kind: CastKind,
        at: InsertPoint,
        inputs: &[Value],
        to: &[Type],
        loc: &Location,
    ) -> Vec<Value> {
        let values = build_unrealized_cast(ctx, at, inputs, to, loc);
        let op = ctx.defining_op(values[0]).expect("a cast result");
        self.materializations += 1;
        self.cast_set.insert(op);
        self.casts.push((op, kind));
        values
    }

    /// Records that `stand_in` stands for `converted`.
    pub(crate) fn map(&mut self, stand_in: Value, converted: Vec<Value>) {
        for &c in &converted {
            self.listed_in.entry(c).or_default().push(stand_in);
        }
        self.mapping.insert(stand_in, converted);
    }

    /// The converted values `v` stands for (`[v]` when it stands for
    /// nothing else), following stand-ins of stand-ins.
    pub(crate) fn lookup(&self, v: Value) -> Vec<Value> {
        let mut out = Vec::new();
        let mut seen = FxHashSet::default();
        self.expand(v, &mut out, &mut seen);
        out
    }

    fn expand(&self, v: Value, out: &mut Vec<Value>, seen: &mut FxHashSet<Value>) {
        match self.mapping.get(&v) {
            // A value reached twice would be a cycle: stop and take it as is.
            Some(list) if seen.insert(v) => {
                for &c in list {
                    self.expand(c, out, seen);
                }
            }
            _ => out.push(v),
        }
    }

    /// `old` is about to be erased, replaced by `new`: lists that named it
    /// name `new` instead, and nothing is keyed by it any longer.
    pub(crate) fn replace(&mut self, old: Value, new: &[Value]) {
        self.target_casts.remove(&old);
        if let Some(list) = self.mapping.remove(&old) {
            for c in list {
                if let Some(users) = self.listed_in.get_mut(&c) {
                    users.retain(|&s| s != old);
                }
            }
        }
        let Some(stand_ins) = self.listed_in.remove(&old) else {
            return;
        };
        for s in stand_ins {
            if let Some(list) = self.mapping.get_mut(&s) {
                let spliced: Vec<Value> = list
                    .iter()
                    .flat_map(|&c| if c == old { new.to_vec() } else { vec![c] })
                    .collect();
                *list = spliced;
            }
            for &n in new {
                self.listed_in.entry(n).or_default().push(s);
            }
        }
    }

    /// A target materialization of `source` to `types` made earlier, if its
    /// values are still there.
    pub(crate) fn cached_target(
        &self,
        ctx: &Context,
        source: Value,
        types: &[Type],
    ) -> Option<Vec<Value>> {
        let (_, values) = self
            .target_casts
            .get(&source)?
            .iter()
            .find(|(ts, _)| ts == types)?;
        values
            .iter()
            .all(|&v| ctx.value_is_live(v))
            .then(|| values.clone())
    }

    /// Remembers a target materialization of `source` for reuse.
    pub(crate) fn cache_target(&mut self, source: Value, types: Vec<Type>, values: Vec<Value>) {
        self.target_casts
            .entry(source)
            .or_default()
            .push((types, values));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entity::EntityKey;

    fn v(i: usize) -> Value {
        Value::new(i)
    }

    #[test]
    fn lookup_follows_stand_ins_and_replacement_updates_lists() {
        let mut s = ConversionState::default();
        // v10 stands for (v1, v2); v11 stands for (v10, v3).
        s.map(v(10), vec![v(1), v(2)]);
        s.map(v(11), vec![v(10), v(3)]);
        assert_eq!(s.lookup(v(11)), [v(1), v(2), v(3)]);
        assert_eq!(s.lookup(v(4)), [v(4)]);
        // v2's producer is converted again: v2 becomes (v5, v6).
        s.replace(v(2), &[v(5), v(6)]);
        assert_eq!(s.lookup(v(10)), [v(1), v(5), v(6)]);
        assert_eq!(s.lookup(v(11)), [v(1), v(5), v(6), v(3)]);
        // And v5 in turn becomes nothing (1:0).
        s.replace(v(5), &[]);
        assert_eq!(s.lookup(v(11)), [v(1), v(6), v(3)]);
    }

    #[test]
    fn a_cycle_of_stand_ins_ends() {
        let mut s = ConversionState::default();
        s.map(v(1), vec![v(2)]);
        s.map(v(2), vec![v(1)]);
        assert_eq!(s.lookup(v(1)), [v(1)]);
    }
}
