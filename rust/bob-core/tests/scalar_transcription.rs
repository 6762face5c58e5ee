//! Tests that the fast kernels (every kernel this CPU has, one and several
//! threads) give exactly the bits of the plain scalar transcription of
//! contract §6 that the crate ships as `bob_core::scalar`, on random states.

use bob_core::scalar::{exp as exp_scalar, pinned_sum as pinned_sum_scalar, update as update_scalar};
use bob_core::{initialize, predict, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED};
use sha2::{Digest, Sha256};

// ----------------------------------------------------------- test inputs ---
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / 16_777_216.0
    }
    /// Logits that stress the kernels: ordinary, ±80, ±1e30, subnormals, ties.
    fn logit(&mut self) -> f32 {
        match self.below(10) {
            0 => 80.0,
            1 => -80.0,
            2 => if self.below(2) == 0 { 1e30 } else { -1e30 },
            3 => f32::from_bits(1 + self.below(0x7f_ffff) as u32) * if self.below(2) == 0 { 1.0 } else { -1.0 },
            4 => 0.25, // ties
            5 => if self.below(2) == 0 { 0.0 } else { -0.0 },
            _ => (self.unit() - 0.5) * 20.0,
        }
    }
}

struct State {
    p: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
}

fn random_state(rng: &mut Rng, n: usize, extreme: bool) -> State {
    let size = n * n;
    let p = (0..size).map(|_| if extreme { rng.logit() } else { (rng.unit() - 0.5) * 0.1 }).collect();
    let m = (0..size).map(|_| (rng.unit() - 0.5) * 0.01).collect();
    let v = (0..size).map(|_| rng.unit() * 1e-4).collect();
    State { p, m, v }
}

fn random_pairs(rng: &mut Rng, n: usize, k: usize) -> Vec<(u32, u32)> {
    (0..k).map(|_| (rng.below(n as u64) as u32, rng.below(n as u64) as u32)).collect()
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// The fast kernels this CPU has (the scalar reference is what they are checked against).
fn kernels() -> Vec<Kernel> {
    Kernel::FAST.into_iter().filter(|k| k.is_available()).collect()
}

fn check_against_scalar(n: usize, k: usize, step: u64, updates: u64, extreme: bool, seed: u64) {
    let mut rng = Rng(seed);
    let start = random_state(&mut rng, n, extreme);
    let pairs = random_pairs(&mut rng, n, k);
    check_state_against_scalar(&start, &pairs, step, updates, &format!("n={n} k={k} extreme={extreme} seed={seed}"));
}

/// Every fast kernel at 1 to 3 threads against the scalar reference, from `start`.
fn check_state_against_scalar(start: &State, pairs: &[(u32, u32)], step: u64, updates: u64, label: &str) {
    let (contexts, targets): (Vec<u32>, Vec<u32>) = pairs.iter().copied().unzip();

    let mut want = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
    let want_losses: Vec<f64> = (0..updates)
        .map(|i| update_scalar(&mut want.p, &mut want.m, &mut want.v, pairs, step + i, &BOB_V1_ADAMW))
        .collect();

    for kernel in kernels() {
        for threads in [1, 2, 3] {
            let mut got = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
            let options = Options { kernel, threads };
            let losses = Planes::new(&mut got.p, &mut got.m, &mut got.v)
                .and_then(|planes| train(planes, &contexts, &targets, step, updates, &BOB_V1_ADAMW, options))
                .unwrap();
            let what = format!("{label} step={step} {kernel:?} threads={threads}");
            assert_eq!(bits(&got.p), bits(&want.p), "P differs: {what}");
            assert_eq!(bits(&got.m), bits(&want.m), "M differs: {what}");
            assert_eq!(bits(&got.v), bits(&want.v), "V differs: {what}");
            assert_eq!(losses.len(), want_losses.len());
            for (a, b) in losses.iter().zip(&want_losses) {
                assert!(a == b || (a - b).abs() <= 1e-12 * b.abs().max(1.0) || (a.is_nan() && b.is_nan()),
                    "loss {a} vs {b}: {what}");
            }
        }
    }
}

// ------------------------------------------------------------------ tests ---
#[test]
fn exp_matches_scalar_transcription_everywhere() {
    let mut rng = Rng(7);
    let mut xs: Vec<f32> = (0..200_000).map(|_| -rng.unit() * 90.0).collect();
    xs.extend([0.0, -0.0, -86.0, -85.999_99, -86.000_01, -1e30, -f32::MIN_POSITIVE, -1e-45, -80.0, -0.5]);
    for x in xs {
        assert_eq!(bob_core::exp_pinned(x).to_bits(), exp_scalar(x).to_bits(), "x = {x:e}");
    }
}

#[test]
fn exp_is_within_one_ulp_of_exp() {
    let mut x = -86.0f32;
    while x <= 0.0 {
        let got = bob_core::exp_pinned(x);
        let want = f64::from(x).exp();
        let ulp = f64::from(f32::from_bits(got.to_bits() + 1) - got);
        assert!((f64::from(got) - want).abs() <= ulp, "x = {x}: {got:e} vs {want:e}");
        x += 0.001_3;
    }
    assert_eq!(bob_core::exp_pinned(-86.5).to_bits(), 0);
}

#[test]
fn pinned_sum_matches_scalar_for_all_small_lengths() {
    let mut rng = Rng(11);
    for len in 0..70 {
        let e: Vec<f32> = (0..len).map(|_| rng.unit() * 3.0).collect();
        assert_eq!(bob_core::pinned_sum(&e).to_bits(), pinned_sum_scalar(&e).to_bits(), "len {len}");
    }
}

#[test]
fn contract_size_all_rows_live_matches_scalar() {
    // Every context byte present: all 256 rows live.
    let mut rng = Rng(3);
    let n = 256;
    let start = random_state(&mut rng, n, false);
    let mut pairs: Vec<(u32, u32)> = (0..256).map(|r| (r, rng.below(256) as u32)).collect();
    pairs.rotate_left(17);
    let (contexts, targets): (Vec<u32>, Vec<u32>) = pairs.iter().copied().unzip();
    let mut want = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
    for i in 0..20 {
        update_scalar(&mut want.p, &mut want.m, &mut want.v, &pairs, 5 + i, &BOB_V1_ADAMW);
    }
    for kernel in kernels() {
        let mut got = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
        let options = Options { kernel, threads: 2 };
        Planes::new(&mut got.p, &mut got.m, &mut got.v)
            .and_then(|planes| train(planes, &contexts, &targets, 5, 20, &BOB_V1_ADAMW, options))
            .unwrap();
        assert_eq!(bits(&got.p), bits(&want.p), "{kernel:?}");
        assert_eq!(bits(&got.m), bits(&want.m), "{kernel:?}");
        assert_eq!(bits(&got.v), bits(&want.v), "{kernel:?}");
    }
}

#[test]
fn random_states_match_scalar() {
    for seed in 0..6 {
        check_against_scalar(256, 256, seed * 1000, 10, false, seed);
    }
}

#[test]
fn extreme_logits_and_ties_match_scalar() {
    for seed in 100..106 {
        check_against_scalar(256, 256, seed, 10, true, seed);
    }
}

#[test]
fn rows_whose_maximum_is_a_tie_of_signed_zeros_match_scalar() {
    // The kernels take each row's maximum over several lane accumulators;
    // the scalar reference scans the row in order. They agree on the value;
    // where +0.0 and -0.0 tie for the maximum the sign each finds may
    // differ, which must change no bit. Rows of non-positive values whose
    // maximum is zero: +0.0 and -0.0 at every lane position, first or
    // last, among subnormals, -FLT_MAX and values under exp's cutoff. (Only
    // finite states: bob refuses any other before training, and D16 says how
    // far kernels agree on NaNs.)
    let n = 64;
    let mut rng = Rng(0x5eed);
    let others = [-1.0, -0.5, -f32::MIN_POSITIVE / 4.0, -f32::MAX, -87.5, -3.0e-5];
    let p: Vec<f32> = (0..n * n)
        .map(|i| {
            let (r, j) = (i / n, i % n);
            if j == r % n || j == (r * 7 + 1) % n {
                if (r + j) % 2 == 0 { 0.0 } else { -0.0 }
            } else {
                others[rng.below(others.len() as u64) as usize]
            }
        })
        .collect();
    let m = (0..n * n).map(|_| (rng.unit() - 0.5) * 0.01).collect();
    let v = (0..n * n).map(|_| rng.unit() * 1e-4).collect();
    let pairs: Vec<(u32, u32)> = (0..n as u32).map(|r| (r, (r * 5 + 2) % n as u32)).collect();
    check_state_against_scalar(&State { p, m, v }, &pairs, 3, 12, "signed-zero maxima");
}

#[test]
fn other_shapes_match_scalar() {
    // Vocabularies that are not multiples of 8, pair counts that are not powers of two.
    for (i, (n, k)) in [(1, 3), (5, 7), (13, 100), (64, 1000), (300, 300), (17, 1)].into_iter().enumerate() {
        check_against_scalar(n, k, 0, 12, i % 2 == 1, 40 + i as u64);
    }
}

#[test]
fn large_vocabularies_with_smaller_row_blocks_match_scalar() {
    // From about 1,640 rows on, the kernel puts fewer than 16 rows in a block
    // (its L2 budget): 1,700 rows -> 15 per block, 2,600 -> 10, and a block
    // count that does not divide the rows.
    check_against_scalar(1700, 3000, 7, 3, false, 77);
    check_against_scalar(2600, 900, 0, 2, true, 78);
}

#[test]
fn many_updates_cross_blocks_and_large_steps() {
    check_against_scalar(32, 64, 0, 40, false, 9);
    check_against_scalar(32, 64, u64::MAX - 40, 40, false, 10);
}

// ------------------------------------------------- the scalar kernel itself ---
#[test]
fn scalar_kernel_is_the_transcription_and_only_chosen_by_name() {
    let mut rng = Rng(21);
    let start = random_state(&mut rng, 16, true);
    let pairs = random_pairs(&mut rng, 16, 40);
    let (contexts, targets): (Vec<u32>, Vec<u32>) = pairs.iter().copied().unzip();
    let mut want = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
    let want_losses: Vec<f64> =
        (0..7).map(|i| update_scalar(&mut want.p, &mut want.m, &mut want.v, &pairs, 3 + i, &BOB_V1_ADAMW)).collect();
    let mut got = State { p: start.p.clone(), m: start.m.clone(), v: start.v.clone() };
    let options = Options { kernel: Kernel::Scalar, threads: 0 };
    let losses = Planes::new(&mut got.p, &mut got.m, &mut got.v)
        .and_then(|planes| train(planes, &contexts, &targets, 3, 7, &BOB_V1_ADAMW, options))
        .unwrap();
    assert_eq!(bits(&got.p), bits(&want.p));
    assert_eq!(bits(&got.m), bits(&want.m));
    assert_eq!(bits(&got.v), bits(&want.v));
    assert_eq!(losses.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
               want_losses.iter().map(|x| x.to_bits()).collect::<Vec<_>>());

    assert_eq!(Kernel::from_name("scalar"), Some(Kernel::Scalar));
    assert_eq!(Kernel::Scalar.resolve(), Kernel::Scalar);
    assert!(Kernel::Scalar.is_available());
    for k in [Kernel::Auto, Kernel::Portable, Kernel::Avx2, Kernel::Avx512] {
        assert_ne!(k.resolve(), Kernel::Scalar, "{k:?} must never resolve to the scalar reference");
    }
    assert!(!Kernel::FAST.contains(&Kernel::Scalar));
    // Refusals are checked before the scalar path runs, as for the others.
    let o = Options { kernel: Kernel::Scalar, threads: 0 };
    assert_eq!(Planes::new(&mut got.p, &mut got.m, &mut got.v)
        .and_then(|planes| train(planes, &[], &[], 0, 1, &BOB_V1_ADAMW, o)),
               Err(bob_core::CoreError::NoPairs));
}

// ------------------------------------------------------ §6.1 check values ---
#[test]
fn seed_check_values() {
    assert_eq!(bob_core::fnv1a64(SEED), 0x0f26_cba9_a23c_695c);
    let mut p = vec![0f32; 65_536];
    initialize(&mut p, SEED);
    // §6.1's check words as its erratum of 2026-11-30 prints them: the words its
    // formula gives, whose whole plane has the SHA-256 checked below (an earlier
    // printing's differed from both: formats/contract-errata.md, E1).
    assert_eq!(&bits(&p[..4]), &[0xbba8_4a70, 0x3c19_eff0, 0xbaca_6d7b, 0x3b9b_54d4]);
    let bytes: Vec<u8> = p.iter().flat_map(|x| x.to_le_bytes()).collect();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "abb32a4606ab19ddea632c8942100942f92eebedc5b336076c8b49b7756179a3");
}

#[test]
fn learner_constants_encode_as_the_contract_says() {
    let hp = BOB_V1_ADAMW;
    let words: Vec<u32> = [hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay].iter().map(|x| x.to_bits()).collect();
    // hex `cdcc4c3d 6666663f 77be7f3f 77cc2b32 0ad7233c` read as LE words
    assert_eq!(words, vec![0x3d4c_cccd, 0x3f66_6666, 0x3f7f_be77, 0x322b_cc77, 0x3c23_d70a]);
}

// ------------------------------------------------------------ predictions ---
#[test]
fn predictions_take_lowest_index_of_ties_and_check_finiteness() {
    let n = 4;
    let mut p = vec![0f32; n * n];
    p[4..8].copy_from_slice(&[1.0, 3.0, 3.0, 2.0]);
    p[8..12].copy_from_slice(&[1.0, f32::NAN, 5.0, 0.0]);
    p[12..16].copy_from_slice(&[-0.0, 0.0, -1.0, -0.0]);
    let out = predict(&p, &[1, 2, u32::MAX, 3, 0]).unwrap();
    assert_eq!(out, vec![(1, 1), (0, 0), (0, 0), (0, 1), (0, 1)]);
    assert!(predict(&p, &[4]).is_err());
}

// ------------------------------------------------------------------ errors ---
#[test]
fn refusals_are_errors_not_panics() {
    use bob_core::CoreError::*;
    let hp = BOB_V1_ADAMW;
    let o = Options::default();
    let mut p = vec![0f32; 16];
    let mut m = vec![0f32; 16];
    let mut v = vec![0f32; 16];
    let mut short = vec![0f32; 15];
    assert_eq!(Planes::new(&mut short.clone(), &mut short.clone(), &mut short)
        .and_then(|planes| train(planes, &[0], &[0], 0, 1, &hp, o)), Err(NotSquare { len: 15 }));
    assert_eq!(Planes::new(&mut [], &mut [], &mut [])
        .and_then(|planes| train(planes, &[0], &[0], 0, 1, &hp, o)), Err(NotSquare { len: 0 }));
    assert_eq!(Planes::new(&mut p, &mut m, &mut [0f32; 9]).and_then(|planes| train(planes, &[0], &[0], 0, 1, &hp, o)),
               Err(PlaneLengthMismatch { plane: "V", expected: 16, actual: 9 }));
    assert_eq!(Planes::new(&mut p, &mut m, &mut v)
        .and_then(|planes| train(planes, &[0, 1], &[0], 0, 1, &hp, o)), Err(PairCountMismatch { contexts: 2, targets: 1 }));
    assert_eq!(Planes::new(&mut p, &mut m, &mut v)
        .and_then(|planes| train(planes, &[], &[], 0, 1, &hp, o)), Err(NoPairs));
    assert_eq!(Planes::new(&mut p, &mut m, &mut v).and_then(|planes| train(planes, &[0, 4], &[0, 0], 0, 1, &hp, o)),
               Err(ContextOutOfRange { index: 1, value: 4, vocabulary: 4 }));
    assert_eq!(Planes::new(&mut p, &mut m, &mut v).and_then(|planes| train(planes, &[0], &[9], 0, 1, &hp, o)),
               Err(TargetOutOfRange { index: 0, value: 9, vocabulary: 4 }));
    assert_eq!(Planes::new(&mut p, &mut m, &mut v)
        .and_then(|planes| train(planes, &[0], &[0], u64::MAX - 3, 10, &hp, o)),
               Err(StepOverflow { step: u64::MAX - 3, updates: 10 }));
    assert_eq!(Planes::new(&mut p, &mut m, &mut v)
        .and_then(|planes| train(planes, &[0], &[0], 0, 0, &hp, o)), Ok(vec![]));
    assert!(p.iter().all(|&x| x == 0.0), "a refusal or zero updates leaves P untouched");
}
