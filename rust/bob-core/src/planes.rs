//! P, M, V together with their row width: what `train` checks once and then
//! hands, whole or cut into runs of rows, to the kernel and its row loops.

use crate::{vocabulary_of, CoreError};

/// The three planes of a state (§2) — parameters P, first moments M, second
/// moments V — as rows of `vocabulary` values each, the same rows of all
/// three. [`Planes::new`] takes a whole table; the kernel cuts it into runs
/// of rows, which keep the table's vocabulary as their row width.
#[derive(Debug)]
pub struct Planes<'a> {
    p: &'a mut [f32],
    m: &'a mut [f32],
    v: &'a mut [f32],
    vocabulary: usize,
}

impl<'a> Planes<'a> {
    /// The whole table P, M, V: P holds `vocabulary * vocabulary` values
    /// (its length a square), and M and V as many as P.
    pub fn new(p: &'a mut [f32], m: &'a mut [f32], v: &'a mut [f32]) -> Result<Planes<'a>, CoreError> {
        let vocabulary = vocabulary_of(p.len())?;
        for (plane, len) in [("M", m.len()), ("V", v.len())] {
            if len != p.len() {
                return Err(CoreError::PlaneLengthMismatch { plane, expected: p.len(), actual: len });
            }
        }
        Ok(Planes { p, m, v, vocabulary })
    }

    /// Values per row: the table's vocabulary.
    pub fn vocabulary(&self) -> usize {
        self.vocabulary
    }

    /// The rows these planes hold (the vocabulary for a whole table).
    pub fn rows(&self) -> usize {
        self.p.len() / self.vocabulary
    }

    /// P, M and V, in that order.
    pub fn parts(&mut self) -> (&mut [f32], &mut [f32], &mut [f32]) {
        (&mut *self.p, &mut *self.m, &mut *self.v)
    }

    /// The same rows, borrowed again for a shorter time.
    pub(crate) fn reborrow(&mut self) -> Planes<'_> {
        Planes { p: &mut *self.p, m: &mut *self.m, v: &mut *self.v, vocabulary: self.vocabulary }
    }

    /// The first `rows` rows and the rest (`rows` at most [`Planes::rows`]).
    pub(crate) fn split_rows(self, rows: usize) -> (Planes<'a>, Planes<'a>) {
        let values = rows * self.vocabulary;
        let (p, rest_p) = self.p.split_at_mut(values);
        let (m, rest_m) = self.m.split_at_mut(values);
        let (v, rest_v) = self.v.split_at_mut(values);
        let n = self.vocabulary;
        (Planes { p, m, v, vocabulary: n }, Planes { p: rest_p, m: rest_m, v: rest_v, vocabulary: n })
    }

    /// Runs of `rows` rows each (the last one shorter), in order.
    pub(crate) fn chunks_of_rows(self, rows: usize) -> impl Iterator<Item = Planes<'a>> {
        let values = rows.max(1) * self.vocabulary;
        let n = self.vocabulary;
        self.p
            .chunks_mut(values)
            .zip(self.m.chunks_mut(values))
            .zip(self.v.chunks_mut(values))
            .map(move |((p, m), v)| Planes { p, m, v, vocabulary: n })
    }

    /// Row `i` of P, M and V.
    pub(crate) fn row(&mut self, i: usize) -> (&mut [f32], &mut [f32], &mut [f32]) {
        let span = i * self.vocabulary..(i + 1) * self.vocabulary;
        (&mut self.p[span.clone()], &mut self.m[span.clone()], &mut self.v[span])
    }
}
