//! Typed, index-addressed arenas for IR entities.
//!
//! Every IR entity (operation, block, region, value) lives in an [`Arena`]
//! owned by the [`crate::Context`] and is named by a small `Copy` key. Erased
//! slots are recycled through a free list, so long pass pipelines do not grow
//! the arenas without bound. Keys are plain indices: using a key after its
//! entity was erased is a logic error that the accessors report by panicking
//! with the entity name (the verifier never produces such keys).

use std::marker::PhantomData;

/// A key that names an entity stored in an [`Arena`].
pub trait EntityKey: Copy + Eq + std::hash::Hash + std::fmt::Debug {
    /// Builds a key from a slot index.
    fn new(index: usize) -> Self;
    /// The slot index of this key.
    fn index(self) -> usize;
}

/// Declares a `u32` entity key type with a display prefix.
#[macro_export]
macro_rules! entity_key {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        ///
        /// Index plus one, so that an `Option` of the key is as small as
        /// the key (an op's parent and neighbours are three of them).
        #[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(std::num::NonZeroU32);
        impl $crate::entity::EntityKey for $name {
            #[inline]
            fn new(index: usize) -> Self {
                u32::try_from(index)
                    .ok()
                    .and_then(|i| i.checked_add(1))
                    .and_then(std::num::NonZeroU32::new)
                    .map($name)
                    .expect("IR arena overflow: more than 2^32 - 1 entities")
            }
            #[inline]
            fn index(self) -> usize {
                (self.0.get() - 1) as usize
            }
        }
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0.get() - 1)
            }
        }
    };
}

/// Slots in chunks of [`CHUNK`] that never move: growing the arena
/// allocates one more chunk instead of copying every slot into a buffer
/// twice as large (a compile that emits tens of millions of ops spent a
/// third of its time in those copies and in the kernel zeroing the pages
/// they landed on). The first chunk alone grows as a vector does, up to
/// [`CHUNK`]: a small context (a codelet built to count its issues, a
/// test's module) does not reserve a whole chunk per arena, some 3 MB of
/// op slots that the kernel would zero for a handful of ops.
#[derive(Clone)]
struct Slots<V> {
    chunks: Vec<Vec<Option<V>>>,
    len: usize,
}

/// Slots per chunk.
const CHUNK: usize = 1 << 14;

impl<V> Slots<V> {
    fn new() -> Self {
        Slots {
            chunks: Vec::new(),
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, value: Option<V>) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(if self.chunks.is_empty() {
                Vec::new()
            } else {
                Vec::with_capacity(CHUNK)
            });
        }
        self.chunks
            .last_mut()
            .expect("a chunk with room")
            .push(value);
        self.len += 1;
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&Option<V>> {
        self.chunks.get(i / CHUNK).and_then(|c| c.get(i % CHUNK))
    }

    #[inline]
    fn get_mut(&mut self, i: usize) -> Option<&mut Option<V>> {
        self.chunks
            .get_mut(i / CHUNK)
            .and_then(|c| c.get_mut(i % CHUNK))
    }

    fn iter(&self) -> impl Iterator<Item = &Option<V>> {
        self.chunks.iter().flatten()
    }
}

/// A slot arena with free-list reuse.
#[derive(Clone)]
pub struct Arena<K: EntityKey, V> {
    slots: Slots<V>,
    free: Vec<K>,
    live: usize,
    _key: PhantomData<K>,
}

impl<K: EntityKey, V> Default for Arena<K, V> {
    fn default() -> Self {
        Self {
            slots: Slots::new(),
            free: Vec::new(),
            live: 0,
            _key: PhantomData,
        }
    }
}

impl<K: EntityKey, V> Arena<K, V> {
    /// Stores `value` and returns its key.
    pub fn alloc(&mut self, value: V) -> K {
        self.live += 1;
        if let Some(key) = self.free.pop() {
            *self
                .slots
                .get_mut(key.index())
                .expect("a freed key names a slot") = Some(value);
            key
        } else {
            self.slots.push(Some(value));
            K::new(self.slots.len() - 1)
        }
    }

    /// Removes the entity named by `key` and returns it.
    pub fn free(&mut self, key: K) -> V {
        let value = self
            .slots
            .get_mut(key.index())
            .and_then(Option::take)
            .unwrap_or_else(|| panic!("{key:?} was already erased"));
        self.free.push(key);
        self.live -= 1;
        value
    }

    /// Whether `key` names a live entity.
    pub fn contains(&self, key: K) -> bool {
        self.slots.get(key.index()).is_some_and(Option::is_some)
    }

    /// The number of live entities.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no entity is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Iterates over live entities in key order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (K::new(i), v)))
    }
}

impl<K: EntityKey, V> std::ops::Index<K> for Arena<K, V> {
    type Output = V;
    #[inline]
    fn index(&self, key: K) -> &V {
        match self.slots.get(key.index()) {
            Some(Some(v)) => v,
            _ => panic!("use of erased or foreign IR entity {key:?}"),
        }
    }
}

impl<K: EntityKey, V> std::ops::IndexMut<K> for Arena<K, V> {
    #[inline]
    fn index_mut(&mut self, key: K) -> &mut V {
        match self.slots.get_mut(key.index()) {
            Some(Some(v)) => v,
            _ => panic!("use of erased or foreign IR entity {key:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::entity_key!(Key, "k");

    #[test]
    fn slots_past_a_chunk_keep_their_keys_and_reuse_freed_ones() {
        let mut a: Arena<Key, usize> = Arena::default();
        let keys: Vec<Key> = (0..2 * CHUNK + 3).map(|i| a.alloc(i)).collect();
        assert_eq!(a.len(), 2 * CHUNK + 3);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(k.index(), i);
            assert_eq!(a[k], i);
        }
        // Free one in the second chunk: it is gone, then reused.
        let k = keys[CHUNK + 1];
        assert_eq!(a.free(k), CHUNK + 1);
        assert!(!a.contains(k));
        assert_eq!(a.iter().count(), 2 * CHUNK + 2);
        assert_eq!(a.alloc(7), k);
        a[k] += 1;
        assert_eq!(a[k], 8);
        // Iteration in key order across chunks.
        let seen: Vec<usize> = a.iter().map(|(k, _)| k.index()).collect();
        assert_eq!(seen, (0..2 * CHUNK + 3).collect::<Vec<_>>());
        assert!(!a.contains(Key::new(2 * CHUNK + 3)));
    }

    #[test]
    #[should_panic(expected = "use of erased or foreign IR entity k9")]
    fn a_foreign_key_is_reported() {
        let a: Arena<Key, u8> = Arena::default();
        let _ = a[Key::new(9)];
    }
}
