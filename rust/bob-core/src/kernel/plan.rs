//! What every row of a call needs, computed once per call: the pairs sorted
//! into slots by row, and the hyperparameters' per-call constants.

use crate::{AdamW, Pairs};


/// What every row needs, computed once per call.
pub(super) struct Plan {
    pub(super) vocabulary: usize,
    /// Row r's pairs are slots `row_offsets[r]..row_offsets[r + 1]`.
    pub(super) row_offsets: Vec<usize>,
    pub(super) slot_targets: Vec<u32>,
    /// Pair k's slot: the losses are summed in pair order.
    pub(super) slot_of_pair: Vec<usize>,
    pub(super) beta1: f32,
    pub(super) beta2: f32,
    pub(super) eps: f32,
    pub(super) decay: f32,
    pub(super) omb1: f32,
    pub(super) omb2: f32,
    /// f32(K), and 1/f32(K) when dividing by f32(K) equals multiplying by it
    /// bit for bit (K a power of two: both round the same real number).
    pub(super) pair_count: f32,
    pub(super) pair_count_reciprocal: Option<f32>,
}

impl Plan {
    /// The pairs sorted into slots by row (a counting sort, stable: a row's
    /// slots keep pair order), and the hyperparameters' per-call constants.
    pub(super) fn new(vocabulary: usize, pairs: Pairs<'_>, hyper: &AdamW) -> Plan {
        let mut row_offsets = vec![0usize; vocabulary + 1];
        for (c, _) in pairs.iter() {
            row_offsets[c as usize + 1] += 1;
        }
        for r in 0..vocabulary {
            row_offsets[r + 1] += row_offsets[r];
        }
        let mut fill = row_offsets.clone();
        let mut slot_of_pair = vec![0usize; pairs.len()];
        let mut slot_targets = vec![0u32; pairs.len()];
        for (i, (c, t)) in pairs.iter().enumerate() {
            let slot = fill[c as usize];
            fill[c as usize] += 1;
            slot_of_pair[i] = slot;
            slot_targets[slot] = t;
        }
        Plan { row_offsets, slot_targets, slot_of_pair, ..Plan::without_pairs(vocabulary, pairs.len(), hyper) }
    }

    /// The per-call constants alone (no slots), for `pair_count` pairs.
    pub(super) fn without_pairs(vocabulary: usize, pair_count: usize, hyper: &AdamW) -> Plan {
        let kf = pair_count as f32;
        Plan {
            vocabulary,
            row_offsets: Vec::new(),
            slot_targets: Vec::new(),
            slot_of_pair: Vec::new(),
            beta1: hyper.beta1,
            beta2: hyper.beta2,
            eps: hyper.eps,
            decay: hyper.decay(),
            omb1: 1.0f32 - hyper.beta1,
            omb2: 1.0f32 - hyper.beta2,
            pair_count: kf,
            pair_count_reciprocal: exact_reciprocal(kf),
        }
    }

    /// The loss before each of a block's `updates` updates, from
    /// `logp[slot * updates + t]`: summed in pair order, whatever order the
    /// rows ran in.
    pub(super) fn losses<'a>(&'a self, logp: &'a [f64], updates: usize) -> impl Iterator<Item = f64> + 'a {
        let pair_count = self.slot_of_pair.len() as f64;
        (0..updates).map(move |t| {
            let total: f64 = self.slot_of_pair.iter().map(|&slot| logp[slot * updates + t]).sum();
            -total / pair_count
        })
    }
}

pub(super) fn exact_reciprocal(k: f32) -> Option<f32> {
    let bits = k.to_bits();
    let is_power_of_two = k.is_normal() && k > 0.0 && bits & 0x007f_ffff == 0;
    let r = 1.0f32 / k;
    (is_power_of_two && r.is_normal() && r * k == 1.0).then_some(r)
}
