//! The contract's §8 public vector through the core alone: the §6.1
//! initialization, 10 + 10 + 10 updates on the §3 fixture pairs of
//! `abracadabra`, the losses and the predictions. After step 10, P, M and V
//! are held bit for bit to the golden checkpoint the Python package ships
//! (made by the code; its SHA-256 is checked here against §8), so a change
//! to any step of the arithmetic, in any kernel at any thread count, fails
//! here without Python.

use bob_core::{initialize, predict, train, vocabulary_of, Kernel, Options, Planes, BOB_V1_ADAMW, EMPTY_PROMPT, SEED};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

const CORPUS: &[u8] = b"abracadabra";
const INITIAL_P_SHA256: &str = "abb32a4606ab19ddea632c8942100942f92eebedc5b336076c8b49b7756179a3";
const CKPT_10_SHA256: &str = "7c3544ee00bb44bc52844f36274c87715d84908ebbbeeb364f4fc5af80e5bc71";
const LOSSES: [(f64, f64); 2] = [(5.548397, 4.663767), (4.566657, 3.710753)];
const HEADER_BYTES: usize = 448; // the canonical envelope's header (§5)
const N: usize = 256 * 256;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn le_bytes(plane: &[f32]) -> Vec<u8> {
    plane.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// P, M, V of a golden checkpoint, after checking the file is §8's.
fn golden_planes(name: &str, sha256: &str) -> [Vec<f32>; 3] {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python/bob/data/golden").join(name);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(hex(&Sha256::digest(&data)), sha256, "{name} is not the §8 checkpoint");
    let values: Vec<f32> = data[HEADER_BYTES..]
        .chunks_exact(4)
        .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    assert_eq!(values.len(), 3 * N);
    [values[..N].to_vec(), values[N..2 * N].to_vec(), values[2 * N..].to_vec()]
}

/// The §3 fixture builder's pairs: pair k is (corpus[k mod n], corpus[(k+1) mod n]).
fn pairs() -> (Vec<u32>, Vec<u32>) {
    let n = CORPUS.len();
    (0..256).map(|k| (u32::from(CORPUS[k % n]), u32::from(CORPUS[(k + 1) % n]))).unzip()
}

fn rounded(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn run(kernel: Kernel, threads: usize) {
    let mut p = vec![0.0f32; N];
    initialize(&mut p, SEED);
    assert_eq!(hex(&Sha256::digest(le_bytes(&p))), INITIAL_P_SHA256, "§6.1 initialization");
    let (mut m, mut v) = (vec![0.0f32; N], vec![0.0f32; N]);
    let (contexts, targets) = pairs();
    let options = Options { kernel, threads };
    for (invocation, expected_losses) in LOSSES.into_iter().enumerate() {
        let step = 10 * invocation as u64;
        let losses = Planes::new(&mut p, &mut m, &mut v)
            .and_then(|planes| train(planes, &contexts, &targets, step, 10, &BOB_V1_ADAMW, options)).unwrap();
        assert_eq!(losses.len(), 10);
        assert_eq!((rounded(losses[0]), rounded(losses[9])), expected_losses, "{kernel:?} x{threads}");
        assert!(losses.windows(2).all(|w| w[1] < w[0]), "the loss falls at every update: {losses:?}");
        if step == 0 {
            let [gp, gm, gv] = golden_planes("checkpoint-abracadabra-step10.bin", CKPT_10_SHA256);
            for (plane, mine, golden) in [("P", &p, &gp), ("M", &m, &gm), ("V", &v, &gv)] {
                assert!(le_bytes(mine) == le_bytes(golden), "{kernel:?} x{threads}: plane {plane} differs at step 10");
            }
        }
        let prompts = [u32::from(b'a'), u32::from(b'd'), EMPTY_PROMPT];
        assert_eq!(predict(&p, &prompts).unwrap(), vec![(u32::from(b'c'), 1), (u32::from(b'a'), 1), (0, 0)]);
    }
    // §8: the prediction for `abra` turns from `c` to `b` at invocation 3.
    Planes::new(&mut p, &mut m, &mut v)
        .and_then(|planes| train(planes, &contexts, &targets, 20, 10, &BOB_V1_ADAMW, options)).unwrap();
    assert_eq!(predict(&p, &[u32::from(b'a')]).unwrap(), vec![(u32::from(b'b'), 1)]);
}

#[test]
fn section_8_vector_with_every_kernel_and_thread_count() {
    assert_eq!(vocabulary_of(N), Ok(256));
    for kernel in Kernel::FAST.into_iter().filter(|k| k.is_available()).chain([Kernel::Auto]) {
        for threads in [1, 2, 3] {
            run(kernel, threads);
        }
    }
    run(Kernel::Scalar, 1);
}

/// §6.1's two building blocks against their published reference values
/// (FNV-1a-64's test vectors; SplitMix64 from state 0, as in Vigna's
/// splitmix64.c), so a change that only the low bits of an output would show
/// (bob keeps the top 24 of each) is still caught.
#[test]
fn fnv1a64_and_splitmix64_give_their_reference_values() {
    use bob_core::fnv1a64;
    use bob_core::pinned::SplitMix64;

    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    let first: Vec<u64> = SplitMix64::new(0).take(3).collect();
    assert_eq!(first, [0xe220_a839_7b1d_cdaf, 0x6e78_9e6a_a1b9_65f4, 0x06c4_5d18_8009_454f]);
}
