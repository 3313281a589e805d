//! Verification end to end on an in-memory chain; invariants after every block.

use crate::test_utils::*;
