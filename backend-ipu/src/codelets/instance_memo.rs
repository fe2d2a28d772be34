//! Subroutine instances emitted once and copied.
//!
//! A lowered block calls the same few launches on hundreds of tiles: one
//! so400m compile emits about 80,000 subroutine instances
//! ([`super::subroutine`]) of only about 220 distinct codelets and names
//! (a product's reduction adds, its casts and broadcasts have the same
//! parameters on every tile of a grid row or column). Emitting one means
//! running the codelet's emitter, finding its launch's shape and renaming
//! every label it defined; [`InstanceMemo`] does that once per codelet,
//! name and holder and copies the result to every later tile.
//!
//! What an instance leaves on its tile depends on three things only: the
//! codelet (its type and every parameter, which its `Debug` form prints,
//! as [`super::estimate::memoized_estimate`] keys it), the instance's name
//! (its labels and sections carry it), and which earlier instance on the
//! tile holds its shape's code, if any (a later instance of a shape keeps
//! its own `main` and vertex states and names the holder's worker code).
//! The memo keys its copies by all three, so a tile gets exactly what
//! emitting would have given it: the executable is byte for byte the
//! same (a test emits every instance both ways).
//!
//! An instance whose codelet asked the emitter for a fresh label
//! ([`Emitter::fresh_label`], numbered per tile) depends on the tile's
//! earlier code too: such a codelet is emitted on every tile, never
//! copied. Every instance starts with no section open, copied or not, so
//! what a codelet emits before opening its first section is its own.
//!
//! The copies are detached ops of the context, made once when the
//! instance is first emitted (the tile's own ops go on to be renamed into
//! their block's scope), so a memo serves the emitters of one context
//! only (the lowering keeps one per block). [`InstanceMemo::finish`]
//! erases them; a memo dropped without it leaves them in the context,
//! unreferenced.

use std::any::TypeId;
use std::fmt::Debug;

use rustc_hash::FxHashMap as HashMap;

use ipuc_ir::{Context, OpId};

use super::emitter::Emitter;
use super::program::Codelet;
use super::subroutine::{emit_instance, ShapeKey};
use super::CodeletError;

/// A codelet by type and parameters, and an instance name.
type Key = (TypeId, String, String);

/// What one codelet emitted under one name: its launch's shape and, by
/// the instance holding the shape's code (`None`: itself), the sections
/// it left; nothing when it asked for a fresh label (emitted every time).
struct Emitted {
    shape: Option<ShapeKey>,
    copies: HashMap<Option<String>, Vec<OpId>>,
    /// Whether its emission asked for a fresh label.
    tile_dependent: bool,
}

/// The instances emitted so far, across tiles (see the module doc).
#[derive(Default)]
pub struct InstanceMemo {
    emitted: HashMap<Key, Emitted>,
    /// Instances emitted by their codelet, and copied.
    counts: MemoCounts,
}

/// How a memo's instances were made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoCounts {
    /// Emitted by their codelet.
    pub emitted: usize,
    /// Copied from an identical instance emitted before.
    pub copied: usize,
}

impl InstanceMemo {
    /// A memo with nothing emitted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Emits `codelet` as subroutine `name` into the tile of `e`, as
    /// [`super::subroutine::emit_subroutine`] does, copying what an
    /// earlier tile's identical instance left when there is one. Leaves
    /// no section open.
    pub fn emit<C: Codelet + Debug + 'static>(
        &mut self,
        e: &mut Emitter,
        name: &str,
        codelet: &C,
    ) -> Result<(), CodeletError> {
        e.close_section();
        let key: Key = (TypeId::of::<C>(), format!("{codelet:?}"), name.to_string());
        if let Some(known) = self.emitted.get(&key).filter(|k| !k.tile_dependent) {
            let holder = known
                .shape
                .as_ref()
                .and_then(|s| e.shared_launch(s))
                .map(str::to_string);
            if let Some(sections) = known.copies.get(&holder) {
                e.append_copies(sections);
                self.counts.copied += 1;
                if let (None, Some(shape)) = (&holder, &known.shape) {
                    e.record_launch(shape.clone(), name);
                }
                return Ok(());
            }
        }
        let fresh = e.fresh_labels_made();
        let (_, left) = emit_instance(e, name, codelet)?;
        self.counts.emitted += 1;
        e.close_section();
        let tile_dependent = e.fresh_labels_made() != fresh;
        let known = self.emitted.entry(key).or_insert_with(|| Emitted {
            shape: left.shape,
            copies: HashMap::default(),
            tile_dependent,
        });
        if !known.tile_dependent {
            let ctx = e.context();
            let copies: Vec<OpId> = left
                .sections
                .iter()
                .map(|&s| ctx.clone_op(s, &mut Default::default()))
                .collect();
            known.copies.insert(left.holder, copies);
        }
        Ok(())
    }

    /// How the instances so far were made.
    pub fn counts(&self) -> MemoCounts {
        self.counts
    }

    /// Erases the memo's copies from `ctx` (`ipu-lower` debug: logs its
    /// counts).
    pub fn finish(self, ctx: &mut Context) {
        if self.counts != MemoCounts::default() {
            tracing::debug!(
                target: "ipu-lower",
                "subroutine instances: {} emitted, {} copied",
                self.counts.emitted,
                self.counts.copied
            );
        }
        for emitted in self.emitted.into_values() {
            for op in emitted.copies.into_values().flatten() {
                ctx.erase_op(op);
            }
        }
    }
}
