"""bob v1's constants and contract strings (contract §1, §2), standard library only.

Imported by :mod:`bob.formats.contract` (the readable view of them), by bob-run's fast paths
(:mod:`bob.formats.canonical`, :mod:`bob.formats.checkpoint.header`) and by :mod:`bob.errors` (which shows a learner
contract's floats), so all of them use one copy."""

from __future__ import annotations

import struct

# The magics and chunk tags the schemas match, kept here (standard library
# only) so bob-run's fast paths use the very same bytes.
INPUT_MAGIC = b"BOB-INPT"
CHECKPOINT_MAGIC = b"BOB-CKPT"
TRACE_MAGIC = b"BOB-TRCE"
CHUNK_TAGS = (b"P\0\0\0", b"M\0\0\0", b"V\0\0\0")
INPUT_FORMAT_VERSION = 1  # bob-input v1
ENVELOPE_FORMAT_VERSION = 1  # bob-envelope v1

VOCABULARY = 256
PARAMETER_COUNT = VOCABULARY * VOCABULARY  # 65,536, row-major: context * 256 + next


def cell_name(index: int) -> str:
    """Where parameter ``index`` of a plane lies, in words: ``context r, next j``."""
    return f"context {index // VOCABULARY}, next {index % VOCABULARY}"


PLANE_NAMES = ("P", "M", "V")
SCALAR_BYTES = 4
PLANE_DTYPE = "<f4"  # a plane's values as NumPy reads them: little-endian float32
CHUNK_BYTES = PARAMETER_COUNT * SCALAR_BYTES  # 262,144: one chunk per plane
PAYLOAD_BYTES = CHUNK_BYTES * len(PLANE_NAMES)  # 786,432
UPDATES_PER_INVOCATION = 10
PROMPTS = 3
RECORD_BYTES = 16 + 2 * VOCABULARY + 4 * VOCABULARY + 4 * PROMPTS  # 1,564
PREDICTION_BYTES = 8 * PROMPTS  # 24
EMPTY_PROMPT = 0xFFFFFFFF
MAX_HEADER_BYTES = 65_536
MAX_CHECKPOINT_BYTES = MAX_HEADER_BYTES + PAYLOAD_BYTES  # never read more than this
STRING_LIMIT = 4_096  # every contract string's length prefix is at most this
U64_MAX = (1 << 64) - 1
TRACE_VERSION = 2  # bob-trace v2 (v1 had no digests of the state resumed)
TRACE_UPDATES = UPDATES_PER_INVOCATION  # a trace holds one invocation: one entry per update

# The learner contract's shape: its text, then five f32 hyper-parameters.
LEARNER_PREFIX = b"softmax-cross-entropy-mean|adamw|"
LEARNER_NAMES = ("lr", "beta1", "beta2", "eps", "weight_decay")
LEARNER_FLOATS = struct.Struct("<5f")
LEARNER_HYPERPARAMETERS = (0.05, 0.9, 0.999, 1e-8, 0.01)


def learner_floats(learner: bytes) -> "tuple[float, ...] | None":
    """The five f32 hyper-parameters of a learner contract, or None if it is not shaped like one."""
    learner = bytes(learner)
    if len(learner) != len(LEARNER_PREFIX) + LEARNER_FLOATS.size or not learner.startswith(LEARNER_PREFIX):
        return None
    return LEARNER_FLOATS.unpack_from(learner, len(LEARNER_PREFIX))


STATE = b"bob-raw-pmv-f32-v1|parameter-order:p-then-m-then-v|payload=%d" % PAYLOAD_BYTES
LEARNER = LEARNER_PREFIX + LEARNER_FLOATS.pack(*LEARNER_HYPERPARAMETERS)
DATA = b"raw-byte-sequence|vocabulary=%d|prompts=%d|record=%d" % (VOCABULARY, PROMPTS, RECORD_BYTES)
SEED = b"bob-seed-v1"
