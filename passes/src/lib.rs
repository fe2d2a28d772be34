//! ipuc target-independent transformations.
