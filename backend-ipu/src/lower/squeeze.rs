//! Searching a block's products again with less memory.
//!
//! A block's planner searches each product alone in the memory earlier
//! blocks left; the block's layout then holds several products' buffers,
//! its own constants and any gathered weights at once, and may find bytes
//! missing. The planner searches again with that much memory taken away
//! from what the search sees, and at least twice as much more each time
//! (the buffers are whole element pairs: a little less memory can leave
//! the search's choice as it was). Where a search then finds no grid, the
//! squeeze backs off halfway toward the most taken away with which it
//! found one, a bisection that ends within [`SQUEEZE_GRAIN`] bytes.
//! Used by the attention block (a squeeze per product) and the MLP block
//! (one for both).

/// How many times a block's planner searches products again with the
/// memory the block's layout found missing under them taken away (or
/// with less taken away, after a search that found nothing).
pub const MAX_SQUEEZES: u32 = 16;

/// The least a squeeze takes away from a product on its first try,
/// doubled on each later try of the same product.
pub const SQUEEZE_STEP: u32 = 4096;

/// The finest a squeeze's back-off goes: bytes between an amount with
/// which a product's search found a grid and one with which it found none.
pub const SQUEEZE_GRAIN: u32 = 1024;

/// One product's squeeze: the bytes taken away from the memory its search
/// sees, and the bounds a bisection keeps.
/// Growing (the layout found bytes missing under the product) takes at
/// least twice as much more each time, but stays below the least amount
/// with which the search found no grid; backing off (the search found
/// none) goes halfway back to the most with which it found one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Squeeze {
    /// Bytes taken away now.
    pub bytes: u32,
    /// The most taken away with which the product's search found a grid.
    good: u32,
    /// The least taken away with which it found none.
    bad: Option<u32>,
    /// Times it grew.
    steps: u32,
}

impl Squeeze {
    /// The search found a grid with [`Self::bytes`] taken away.
    pub fn found(&mut self) {
        self.good = self.good.max(self.bytes);
    }

    /// Takes `missing` bytes more away (at least [`SQUEEZE_STEP`] doubled
    /// per earlier growth), at most `room` in all, below the least amount
    /// with which the search found no grid; false if no amount is left
    /// between.
    pub fn grow(&mut self, missing: u32, room: u32) -> bool {
        let step = SQUEEZE_STEP.checked_shl(self.steps).unwrap_or(u32::MAX);
        let mut next = self
            .bytes
            .saturating_add(missing.max(step).next_multiple_of(16))
            .min(room / 16 * 16);
        if let Some(bad) = self.bad {
            if next >= bad {
                next = (self.bytes + (bad - self.bytes) / 2) / 16 * 16;
            }
        }
        self.steps += 1;
        if next <= self.bytes || self.bad.is_some_and(|b| b - self.bytes < SQUEEZE_GRAIN) {
            return false;
        }
        self.bytes = next;
        true
    }

    /// The search found no grid with [`Self::bytes`] taken away: halfway
    /// back to the most with which it found one; false if they are closer
    /// than [`SQUEEZE_GRAIN`].
    pub fn back_off(&mut self) -> bool {
        self.bad = Some(self.bytes);
        if self.bytes - self.good < SQUEEZE_GRAIN {
            return false;
        }
        self.bytes = (self.good + (self.bytes - self.good) / 2) / 16 * 16;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{Squeeze, SQUEEZE_GRAIN, SQUEEZE_STEP};

    const ROOM: u32 = 400_000;

    #[test]
    fn a_squeeze_grows_by_doubling_steps_and_backs_off_by_halves() {
        let mut s = Squeeze::default();
        // Short by a little: at least a step, then twice as much more.
        assert!(s.grow(100, ROOM));
        assert_eq!(s.bytes, SQUEEZE_STEP);
        assert!(s.grow(100, ROOM));
        assert_eq!(s.bytes, 3 * SQUEEZE_STEP);
        // Short by more than the step: what is missing.
        assert!(s.grow(40_000, ROOM));
        assert_eq!(s.bytes, 3 * SQUEEZE_STEP + 40_000);
        s.found();
        let good = s.bytes;
        // No grid with 8 steps more: halfway back.
        assert!(s.grow(1, ROOM));
        let bad = s.bytes;
        assert_eq!(bad, good + 8 * SQUEEZE_STEP);
        assert!(s.back_off());
        assert_eq!(s.bytes, good + 4 * SQUEEZE_STEP);
        // Short again there: growing stays below where no grid was found.
        assert!(s.grow(1, ROOM));
        assert_eq!(s.bytes, good + 6 * SQUEEZE_STEP);
        assert!(s.bytes < bad);
        // Bisection ends within the grain.
        let mut tries = 0;
        while s.back_off() {
            tries += 1;
            assert!(tries < 32);
        }
        assert!(s.bad.is_some_and(|b| b - s.good < SQUEEZE_GRAIN));
        // Never more than the room there is.
        let mut s = Squeeze::default();
        assert!(s.grow(100, 6000));
        assert_eq!(s.bytes, SQUEEZE_STEP);
        assert!(s.grow(100, 6000));
        assert_eq!(s.bytes, 6000 / 16 * 16);
        assert!(!s.grow(100, 6000));
    }
}
