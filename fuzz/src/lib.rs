//! bob-core's fuzz targets: each takes the fuzzer's bytes and panics when a
//! property fails. The same functions run under cargo-fuzz (nightly,
//! `fuzz_targets/*.rs`) and on stable from `rust/bob-core/tests/fuzz_replay.rs`,
//! which includes this file and replays `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/`.
//!
//! * `kernels`: every fast kernel (one and two threads) and `Kernel::Scalar`
//!   through `train` give exactly the bits of `bob_core::scalar::update`
//!   applied update by update, on arbitrary small states (any f32 bit
//!   pattern), pairs and steps up to u64's limit; a refused call is refused
//!   for a reason the arguments really have.
//! * `predict`: `predict` agrees with a plain re-statement of contract §4.
//! * `resume`: `resume_state_problem` agrees with a plain re-statement of the
//!   §5 resume checks.

use bob_core::scalar::update as scalar_update;
use bob_core::{
    predict as core_predict, resume_state_problem, train, Kernel, Options, Planes, StateProblem, BOB_V1_ADAMW,
};

/// The fuzzer's bytes as small values; zeros once they run out.
pub struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data, at: 0 }
    }
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// An f32 that stresses the kernels: raw bits, or one of a few telling values.
    pub fn f32(&mut self, scale: f32) -> f32 {
        match self.byte() % 16 {
            0 => f32::from_bits(self.u32()),
            1 => f32::MAX,
            2 => -f32::MAX,
            3 => f32::from_bits(1 + u32::from(self.byte())), // subnormal
            4 => -0.0,
            5 => 80.0,
            6 => -80.0,
            7 => 1e30,
            _ => (f32::from(self.byte()) - 128.0) * scale,
        }
    }
}

const STEPS: [u64; 8] = [0, 1, 9, 10, 1 << 40, u64::MAX - 10, u64::MAX - 2, u64::MAX];

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// The bits, every NaN as one canonical NaN: a NaN's sign and payload are not
/// pinned (a state holding a NaN is refused before it is written, contract
/// §5), and the AVX2 kernel's differ from the scalar transcription's
/// (regressions/kernels/nan-payload-avx2-*). Every other value must match bit
/// for bit.
fn bits_nan_as_one(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| if v.is_nan() { f32::NAN.to_bits() } else { v.to_bits() }).collect()
}

fn fast_kernels() -> Vec<Kernel> {
    Kernel::FAST.into_iter().filter(|k| k.is_available()).collect()
}

struct State {
    p: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
}

fn state(b: &mut Bytes, n: usize) -> State {
    let p = (0..n * n).map(|_| b.f32(0.05)).collect();
    let m = (0..n * n).map(|_| b.f32(0.001)).collect();
    let v = (0..n * n).map(|_| b.f32(1e-5).abs()).collect();
    State { p, m, v }
}

/// Every kernel against the scalar transcription.
pub fn kernels(data: &[u8]) {
    let mut b = Bytes::new(data);
    let n = match b.byte() % 16 {
        15 => 64,
        x => 1 + usize::from(x),
    };
    let start = state(&mut b, n);
    let k = 1 + usize::from(b.byte() % 64);
    let pairs: Vec<(u32, u32)> =
        (0..k).map(|_| (u32::from(b.byte()) % n as u32, u32::from(b.byte()) % n as u32)).collect();
    let step = if b.byte() % 2 == 0 { STEPS[usize::from(b.byte()) % STEPS.len()] } else { b.u64() };
    let updates = 1 + u64::from(b.byte() % 3);
    let (contexts, targets): (Vec<u32>, Vec<u32>) = pairs.iter().copied().unzip();

    let mut kernels = fast_kernels();
    kernels.push(Kernel::Scalar);
    if step.checked_add(updates).is_none() {
        for kernel in kernels {
            let mut s = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
            let options = Options { kernel, threads: 1 };
            let got = Planes::new(&mut s.p, &mut s.m, &mut s.v)
                .and_then(|planes| train(planes, &contexts, &targets, step, updates, &BOB_V1_ADAMW, options));
            assert!(got.is_err(), "{kernel:?} accepted step {step} + {updates} updates, which overflows a u64");
            assert_eq!(bits(&s.p), bits(&start.p), "{kernel:?} changed P while refusing");
        }
        return;
    }
    let mut want = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
    let want_losses: Vec<f64> =
        (0..updates).map(|i| scalar_update(&mut want.p, &mut want.m, &mut want.v, &pairs, step + i, &BOB_V1_ADAMW))
            .collect();
    for kernel in kernels {
        for threads in [1, 2] {
            let mut got = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
            let options = Options { kernel, threads };
            let losses = Planes::new(&mut got.p, &mut got.m, &mut got.v)
                .and_then(|planes| train(planes, &contexts, &targets, step, updates, &BOB_V1_ADAMW, options))
                .expect("valid arguments are accepted");
            let what = format!("n={n} k={k} step={step} updates={updates} {kernel:?} threads={threads}");
            assert_eq!(bits_nan_as_one(&got.p), bits_nan_as_one(&want.p), "P differs from the scalar transcription: {what}");
            assert_eq!(bits_nan_as_one(&got.m), bits_nan_as_one(&want.m), "M differs from the scalar transcription: {what}");
            assert_eq!(bits_nan_as_one(&got.v), bits_nan_as_one(&want.v), "V differs from the scalar transcription: {what}");
            // The loss is reported, not stored (§6.4): compared as bob-core's tests compare it.
            for (a, w) in losses.iter().zip(&want_losses) {
                assert!(a == w || (a - w).abs() <= 1e-12 * w.abs().max(1.0) || (a.is_nan() && w.is_nan()),
                        "loss {a} vs {w}: {what}");
            }
        }
    }
}

/// `predict` against contract §4 stated plainly.
pub fn predict(data: &[u8]) {
    let mut b = Bytes::new(data);
    let len = match b.byte() % 8 {
        7 => usize::from(b.byte()), // often not a square
        x => (1 + usize::from(x) * 3).pow(2),
    };
    let p: Vec<f32> = (0..len).map(|_| b.f32(1.0)).collect();
    let words: Vec<u32> = (0..usize::from(b.byte() % 5))
        .map(|_| match b.byte() % 4 {
            0 => u32::MAX,
            1 => b.u32(),
            _ => u32::from(b.byte()),
        })
        .collect();
    let n = (0..=len).find(|r| r * r >= len).filter(|r| r * r == len && *r > 0);
    let got = core_predict(&p, &words);
    let Some(n) = n else {
        assert!(got.is_err(), "predict accepted a plane of {len} values");
        return;
    };
    if words.iter().any(|&w| w != u32::MAX && w as usize >= n) {
        assert!(got.is_err(), "predict accepted a prompt word outside {n} rows: {words:?}");
        return;
    }
    let got = got.expect("valid arguments are accepted");
    assert_eq!(got.len(), words.len());
    for (&w, &(token, validity)) in words.iter().zip(&got) {
        let want = if w == u32::MAX {
            (0, 0)
        } else {
            let row = &p[w as usize * n..(w as usize + 1) * n];
            if row.iter().any(|x| x.is_nan() || x.is_infinite()) {
                (0, 0)
            } else {
                let mut best = 0;
                for j in 1..n {
                    if row[j] > row[best] {
                        best = j;
                    }
                }
                (best as u32, 1)
            }
        };
        assert_eq!((token, validity), want, "word {w}, n {n}");
    }
}

/// `resume_state_problem` against the §5 resume checks stated plainly.
pub fn resume(data: &[u8]) {
    let mut b = Bytes::new(data);
    let n = 1 + usize::from(b.byte() % 8);
    let mut s = state(&mut b, n);
    for i in 0..n * n {
        match b.byte() % 8 {
            0 => s.m[i] = 0.0,
            1 => s.v[i] = 0.0,
            2 => s.v[i] = -s.v[i],
            _ => {}
        }
    }
    let step = if b.byte() % 2 == 0 { STEPS[usize::from(b.byte()) % STEPS.len()] } else { b.u64() };
    let updates = [10, 0, 1, u64::MAX][usize::from(b.byte() % 4)];

    let mut want = None;
    'planes: for (name, plane) in [("P", &s.p), ("M", &s.m), ("V", &s.v)] {
        for (i, &x) in plane.iter().enumerate() {
            if x.is_nan() || x.is_infinite() {
                want = Some(format!("NonFinite {name} {i}"));
                break 'planes;
            }
        }
    }
    if want.is_none() {
        want = s.v.iter().position(|&x| x < 0.0).map(|i| format!("Negative {i}"));
    }
    if want.is_none() && step == 0 {
        'moments: for (name, plane) in [("M", &s.m), ("V", &s.v)] {
            for (i, &x) in plane.iter().enumerate() {
                if x != 0.0 {
                    want = Some(format!("AtStepZero {name} {i}"));
                    break 'moments;
                }
            }
        }
    }
    if want.is_none() && u128::from(step) + u128::from(updates) > u128::from(u64::MAX) {
        want = Some("NoRoom".to_string());
    }
    let got = resume_state_problem(&s.p, &s.m, &s.v, step, updates).map(|p| match p {
        StateProblem::NonFinite { plane, index, .. } => format!("NonFinite {plane} {index}"),
        StateProblem::NegativeSecondMoment { index, .. } => format!("Negative {index}"),
        StateProblem::MomentsAtStepZero { plane, index, .. } => format!("AtStepZero {plane} {index}"),
        StateProblem::NoRoomForUpdates { .. } => "NoRoom".to_string(),
    });
    assert_eq!(got, want, "step {step}, updates {updates}");
}

/// Runs `target` over every file in `dir` (if it exists); the number of files run.
pub fn replay_dir(dir: &std::path::Path, target: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    files.sort();
    for f in &files {
        let data = std::fs::read(f).expect("readable corpus file");
        target(&data);
    }
    files.len()
}
