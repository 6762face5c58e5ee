//! One test per refusal of the core, each from hand-made arguments: the
//! error names exactly what was refused, its message says so, and the
//! caller's planes are untouched. Then the resume checks of §5, one state
//! problem at a time, and the §4 prediction rules.

use bob_core::{
    copy_resumable_state, predict, resume_state_problem, train, vocabulary_of, CoreError, Kernel, Options, Planes, StateProblem, BOB_V1_ADAMW,
    EMPTY_PROMPT,
};

/// A 4 x 4 state (P holds 0, 0.25, 0.5, … so a change is visible).
fn state() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    ((0..16).map(|i| i as f32 / 4.0).collect(), vec![0.0; 16], vec![0.0; 16])
}

/// `train` on a 4 x 4 state with these planes (P, M, V) and pairs must
/// refuse with `want`, leave the planes as they were, and say `message`.
fn refused(planes: (Vec<f32>, Vec<f32>, Vec<f32>), contexts: &[u32], targets: &[u32], step: u64, want: CoreError,
           message: &str) {
    let (p, m, v) = planes;
    for kernel in [Kernel::Auto, Kernel::Scalar] {
        let (mut p2, mut m2, mut v2) = (p.clone(), m.clone(), v.clone());
        let options = Options { kernel, threads: 1 };
        let got = Planes::new(&mut p2, &mut m2, &mut v2)
            .and_then(|planes| train(planes, contexts, targets, step, 10, &BOB_V1_ADAMW, options));
        assert_eq!(got, Err(want.clone()), "{kernel:?}");
        assert_eq!((p2, m2, v2), (p.clone(), m.clone(), v.clone()), "{kernel:?}: a refusal changed the planes");
    }
    assert_eq!(want.to_string(), message);
}

#[test]
fn plane_length_mismatch_names_the_plane() {
    let (p, m, v) = state();
    refused((p.clone(), vec![0.0; 15], v.clone()), &[0], &[1], 0,
            CoreError::PlaneLengthMismatch { plane: "M", expected: 16, actual: 15 },
            "plane M holds 15 values, expected 16 (the length of P)");
    refused((p, m, vec![0.0; 17]), &[0], &[1], 0, CoreError::PlaneLengthMismatch { plane: "V", expected: 16, actual: 17 },
            "plane V holds 17 values, expected 16 (the length of P)");
}

#[test]
fn a_table_that_is_not_square_is_refused() {
    for len in [0usize, 2, 3, 5, 8, 15, 17, 65_535, 65_537] {
        assert_eq!(vocabulary_of(len), Err(CoreError::NotSquare { len }), "{len}");
    }
    for rows in [1usize, 2, 3, 4, 255, 256, 257, 4096, 65_535, 65_536] {
        assert_eq!(vocabulary_of(rows * rows), Ok(rows), "{rows}");
    }
    // Where the f64 square root of k*k - 1 rounds up to k and vocabulary_of
    // must step down in integers.
    for k in [(1usize << 30) + 1, (1 << 31) + 3, 3_000_000_019, (1 << 32) - 1] {
        assert_eq!((((k * k - 1) as f64).sqrt()) as usize, k, "the case this checks");
        assert_eq!(vocabulary_of(k * k), Ok(k));
        assert_eq!(vocabulary_of(k * k - 1), Err(CoreError::NotSquare { len: k * k - 1 }));
    }
    let k = (1usize << 32) - 1;
    assert_eq!(vocabulary_of(k * k), Ok(k));
    assert_eq!(vocabulary_of(k * k + 1), Err(CoreError::NotSquare { len: k * k + 1 }));
    assert_eq!(vocabulary_of(usize::MAX), Err(CoreError::NotSquare { len: usize::MAX }));
    refused((vec![0.0; 15], vec![0.0; 15], vec![0.0; 15]), &[0], &[1], 0, CoreError::NotSquare { len: 15 },
            "P holds 15 values, which is not rows x rows for a whole number of rows >= 1");
}

#[test]
fn contexts_and_targets_of_different_lengths_are_refused() {
    let (p, m, v) = state();
    refused((p, m, v), &[0, 1], &[1], 0, CoreError::PairCountMismatch { contexts: 2, targets: 1 },
            "contexts holds 2 pairs but targets holds 1");
}

#[test]
fn no_pairs_is_refused() {
    let (p, m, v) = state();
    refused((p, m, v), &[], &[], 0, CoreError::NoPairs, "there are no pairs to train on (pair count K = 0)");
}

#[test]
fn a_context_outside_the_table_is_refused_by_index() {
    let (p, m, v) = state();
    refused((p.clone(), m.clone(), v.clone()), &[0, 3, 4], &[1, 1, 1], 0,
            CoreError::ContextOutOfRange { index: 2, value: 4, vocabulary: 4 },
            "contexts[2] = 4 is not below the vocabulary 4");
    refused((p, m, v), &[u32::MAX], &[0], 0, CoreError::ContextOutOfRange { index: 0, value: u32::MAX, vocabulary: 4 },
            "contexts[0] = 4294967295 is not below the vocabulary 4");
}

#[test]
fn a_target_outside_the_table_is_refused_by_index() {
    let (p, m, v) = state();
    refused((p, m, v), &[0, 1], &[3, 4], 0, CoreError::TargetOutOfRange { index: 1, value: 4, vocabulary: 4 },
            "targets[1] = 4 is not below the vocabulary 4");
}

#[test]
fn a_step_with_no_room_for_the_updates_is_refused() {
    let (p, m, v) = state();
    refused((p, m, v), &[0], &[1], u64::MAX - 9, CoreError::StepOverflow { step: u64::MAX - 9, updates: 10 },
            "step 18446744073709551606 leaves no room for 10 more updates in a u64");
    // The last step that leaves room is accepted.
    let (mut p, mut m, mut v) = state();
    let losses = Planes::new(&mut p, &mut m, &mut v)
        .and_then(|planes| train(planes, &[0], &[1], u64::MAX - 10, 10, &BOB_V1_ADAMW, Options::default()));
    assert_eq!(losses.map(|l| l.len()), Ok(10));
}

#[test]
fn a_prompt_word_outside_the_table_is_refused_by_index() {
    let (p, _, _) = state();
    let want = CoreError::PromptOutOfRange { index: 1, value: 4, vocabulary: 4 };
    assert_eq!(predict(&p, &[3, 4, EMPTY_PROMPT]), Err(want.clone()));
    assert_eq!(want.to_string(),
               "prompt word 1 = 0x4 is neither below the vocabulary 4 nor 0xffffffff (empty prompt)");
    assert_eq!(predict(&p, &[EMPTY_PROMPT - 1]).unwrap_err(),
               CoreError::PromptOutOfRange { index: 0, value: EMPTY_PROMPT - 1, vocabulary: 4 });
    assert_eq!(predict(&p[..15], &[0]), Err(CoreError::NotSquare { len: 15 }));
}

#[test]
fn predictions_follow_section_4() {
    // Row 0 rises (3 wins), row 1 has a tie (the lowest index wins), row 2
    // holds a NaN and row 3 an infinity (not valid), the empty prompt gives (0, 0).
    let p = vec![
        0.0, 1.0, 2.0, 3.0, //
        5.0, -1.0, 5.0, 4.0, //
        9.0, f32::NAN, 0.0, 0.0, //
        0.0, 0.0, f32::INFINITY, 0.0,
    ];
    assert_eq!(predict(&p, &[0, 1, 2, 3, EMPTY_PROMPT]).unwrap(), vec![(3, 1), (0, 1), (0, 0), (0, 0), (0, 0)]);
    let q = vec![-3.0, -2.0, -2.0, -7.0];
    assert_eq!(predict(&q, &[1, 0]).unwrap(), vec![(0, 1), (1, 1)]);
    assert_eq!(predict(&p, &[]).unwrap(), vec![]);
}

fn problem(p: &[f32], m: &[f32], v: &[f32], step: u64) -> Option<StateProblem> {
    resume_state_problem(p, m, v, step, 10)
}

#[test]
fn a_good_state_has_no_problem() {
    let (p, m, v) = state();
    assert_eq!(problem(&p, &m, &v, 0), None);
    let (m, v) = (vec![-0.5; 16], vec![0.25; 16]);
    assert_eq!(problem(&p, &m, &v, 10), None);
    assert_eq!(problem(&p, &m, &[-0.0; 16], 10), None, "-0.0 is not negative");
    assert_eq!(problem(&p, &m, &v, u64::MAX - 10), None);
}

#[test]
fn non_finite_values_are_found_first_by_plane_then_index() {
    let (p, m, v) = state();
    for (i, plane) in ["P", "M", "V"].into_iter().enumerate() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut planes = [p.clone(), m.clone(), v.clone()];
            planes[i][9] = bad;
            planes[i][12] = f32::NAN;
            let got = problem(&planes[0], &planes[1], &planes[2], 10);
            match got {
                Some(StateProblem::NonFinite { plane: name, index: 9, value }) => {
                    assert_eq!((name, value.to_bits()), (plane, bad.to_bits()));
                }
                other => panic!("{plane} {bad}: {other:?}"),
            }
        }
    }
    // P is reported before a later plane's problem.
    let (mut p2, mut v2) = (p.clone(), v.clone());
    p2[15] = f32::NAN;
    v2[0] = f32::NAN;
    assert!(matches!(problem(&p2, &m, &v2, 10), Some(StateProblem::NonFinite { plane: "P", index: 15, .. })));
}

#[test]
fn the_first_bad_index_is_found_across_screening_blocks() {
    // The check screens 64 values at a time; the index must not depend on where a block ends.
    let n = 65_536;
    let good = vec![0.25_f32; n];
    for index in [0, 1, 63, 64, 65, 127, 128, 4_095, 65_471, 65_472, n - 1] {
        let mut p = good.clone();
        p[index] = f32::NAN;
        if index + 3 < n {
            p[index + 3] = f32::INFINITY;
        }
        assert!(matches!(problem(&p, &good, &good, 10), Some(StateProblem::NonFinite { plane: "P", index: i, .. }) if i == index),
                "{index}");
        let mut v = good.clone();
        v[index] = -f32::from_bits(1); // the smallest negative subnormal
        assert_eq!(problem(&good, &good, &v, 10), Some(StateProblem::NegativeSecondMoment { index, value: v[index] }));
    }
}

#[test]
fn a_checked_copy_is_the_planes_with_the_checks_answer() {
    let (p, m, mut v) = state();
    let mut into = vec![7.0_f32; 3 * p.len()];
    assert_eq!(copy_resumable_state(&p, &m, &v, &mut into, 10, 10), Ok(None));
    assert_eq!(into, [p.clone(), m.clone(), v.clone()].concat());
    v[3] = -1.0;
    assert_eq!(copy_resumable_state(&p, &m, &v, &mut into, 10, 10), Ok(problem(&p, &m, &v, 10)));
    let mut short = vec![0.0_f32; 3 * p.len() - 1];
    assert_eq!(copy_resumable_state(&p, &m, &v, &mut short, 10, 10),
               Err(CoreError::PlaneLengthMismatch { plane: "into", expected: 3 * p.len(), actual: 3 * p.len() - 1 }));
    assert_eq!(copy_resumable_state(&p, &m[1..], &v, &mut into, 10, 10),
               Err(CoreError::PlaneLengthMismatch { plane: "M", expected: p.len(), actual: p.len() - 1 }));
}

#[test]
fn a_negative_second_moment_is_found_by_index() {
    let (p, m, mut v) = state();
    v[3] = 0.5;
    v[5] = -1e-45;
    v[7] = -2.0;
    assert_eq!(problem(&p, &m, &v, 10), Some(StateProblem::NegativeSecondMoment { index: 5, value: -1e-45 }));
}

#[test]
fn step_zero_needs_both_moments_zero_each_checked_alone() {
    let (p, m, v) = state();
    for (plane, index) in [("M", 6usize), ("V", 11usize)] {
        let (mut m2, mut v2) = (m.clone(), v.clone());
        let target = if plane == "M" { &mut m2 } else { &mut v2 };
        target[index] = 1e-30;
        assert_eq!(problem(&p, &m2, &v2, 0),
                   Some(StateProblem::MomentsAtStepZero { plane, index, value: 1e-30 }), "{plane}");
        assert_eq!(problem(&p, &m2, &v2, 1), None, "{plane}: moments are allowed after step 0");
    }
    // M is reported before V, and -0.0 counts as zero.
    let (mut m2, mut v2) = (m.clone(), v.clone());
    m2[9] = -3.0;
    v2[1] = 2.0;
    m2[0] = -0.0;
    assert_eq!(problem(&p, &m2, &v2, 0), Some(StateProblem::MomentsAtStepZero { plane: "M", index: 9, value: -3.0 }));
}

#[test]
fn no_room_for_the_updates_is_a_state_problem() {
    let (p, m, v) = state();
    assert_eq!(resume_state_problem(&p, &m, &v, u64::MAX - 9, 10),
               Some(StateProblem::NoRoomForUpdates { step: u64::MAX - 9, updates: 10 }));
    assert_eq!(resume_state_problem(&p, &m, &v, u64::MAX, 0), None);
    assert_eq!(resume_state_problem(&p, &m, &v, u64::MAX, 1),
               Some(StateProblem::NoRoomForUpdates { step: u64::MAX, updates: 1 }));
}

#[test]
fn kernels_are_named_and_resolved() {
    for kernel in [Kernel::Auto, Kernel::Scalar, Kernel::Portable, Kernel::Avx2, Kernel::Avx512] {
        assert_eq!(Kernel::from_name(kernel.name()), Some(kernel));
        let resolved = kernel.resolve();
        assert!(resolved.is_available(), "{kernel:?} resolves to {resolved:?}");
        assert_eq!(resolved == Kernel::Scalar, kernel == Kernel::Scalar, "only the scalar kernel resolves to it");
        if kernel != Kernel::Auto && kernel.is_available() {
            assert_eq!(resolved, kernel);
        }
    }
    assert_eq!(
        [Kernel::Auto, Kernel::Scalar, Kernel::Portable, Kernel::Avx2, Kernel::Avx512].map(Kernel::name),
        ["auto", "scalar", "portable", "avx2", "avx512"]
    );
    assert_eq!(Kernel::from_name("AVX2"), None);
    assert_eq!(Kernel::from_name(""), None);
    assert!(Kernel::Portable.is_available() && Kernel::Scalar.is_available() && Kernel::Auto.is_available());
    // Auto is the widest instruction set this CPU has.
    let best = Kernel::FAST.into_iter().rfind(|k| k.is_available());
    assert_eq!(Some(Kernel::Auto.resolve()), best);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn kernel_availability_is_what_the_cpu_reports() {
    let avx2 = std::is_x86_feature_detected!("avx2");
    let avx512 = std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") && avx2;
    assert_eq!(Kernel::Avx2.is_available(), avx2);
    assert_eq!(Kernel::Avx512.is_available(), avx512);
}

#[test]
fn memory_that_cannot_be_had_is_a_refusal_not_an_abort() {
    use bob_core::try_vec;
    assert_eq!(try_vec::<u64>(usize::MAX / 4, "the predictions").err(),
               Some(CoreError::OutOfMemory { what: "the predictions", count: usize::MAX / 4 }));
    assert_eq!(try_vec::<u32>(3, "the pairs").map(|v| v.capacity()), Ok(3));
    let refusal = CoreError::OutOfMemory { what: "P", count: 5 };
    assert_eq!(refusal.to_string(), "no memory for P (5 values); nothing was changed");
    assert_eq!(CoreError::AddressSpace { bytes: 16 }.to_string(),
               "less than 16 bytes of address space left for the updates' scratch and threads; nothing was changed");
}
