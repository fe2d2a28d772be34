//! What the filecheck test binaries share.

/// Each check directive once, as a check file spells it (`COUNT` with 2).
pub const DIRECTIVES: [&str; 8] = [
    "CHECK:",
    "CHECK-NEXT:",
    "CHECK-SAME:",
    "CHECK-NOT:",
    "CHECK-DAG:",
    "CHECK-LABEL:",
    "CHECK-EMPTY:",
    "CHECK-COUNT-2:",
];
