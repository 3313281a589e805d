//! The logits of teacher-forced passes, kept as the passes made them: one buffer a pass, a
//! row's positions side by side in it. A 128-token answer's logits over SmolLM2's vocabulary
//! are 25 MB; a vector a position would copy them once more and map that much fresh memory.

use std::ops::Range;

/// Each row's logits after each token of its continuation, `vocab` values a position.
#[derive(Debug, Clone, Default)]
pub struct ForcedLogits {
    vocab: usize,
    passes: Vec<Vec<f32>>,
    /// Per row: its pass, and where its values lie there.
    rows: Vec<(usize, Range<usize>)>,
}

impl ForcedLogits {
    pub(super) fn new(vocab: usize) -> ForcedLogits {
        ForcedLogits {
            vocab,
            ..ForcedLogits::default()
        }
    }

    /// Adds a pass's logits, the positions of each of its rows one after another
    /// (`positions[i]` of them for its row `i`, in order).
    pub(super) fn push_pass(&mut self, values: Vec<f32>, positions: &[usize]) {
        let pass = self.passes.len();
        let mut at = 0;
        for n in positions {
            let end = (at + n * self.vocab).min(values.len());
            self.rows.push((pass, at..end));
            at = end;
        }
        self.passes.push(values);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Values a position.
    pub fn vocab(&self) -> usize {
        self.vocab
    }

    /// Row `i`'s logits, position after position (empty past the last row): position `j`
    /// is what picks its continuation's token `j`.
    pub fn row(&self, i: usize) -> &[f32] {
        self.rows
            .get(i)
            .and_then(|(pass, range)| self.passes.get(*pass)?.get(range.clone()))
            .unwrap_or(&[])
    }

    /// Row `i`'s logits a position.
    pub fn positions(&self, i: usize) -> std::slice::ChunksExact<'_, f32> {
        self.row(i).chunks_exact(self.vocab.max(1))
    }
}
