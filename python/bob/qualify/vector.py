"""The public test vector of contract §8, in one place.

Copied from the contract (python/bob/data/contract/bob-v1.md §8), not computed by bob:
``bob-qualify`` and the tests compare bob's output against these values.
"""

from __future__ import annotations

CORPUS = b"abracadabra"
PROMPTS = (b"abra", b"cad", b"")

RECORD_SHA256 = "d0d6de4cdcaa05f34ff1fb517f90ca5181543fee16498e570f9b4bd6fadf59f1"
CHECKPOINT_SHA256 = {
    10: "7c3544ee00bb44bc52844f36274c87715d84908ebbbeeb364f4fc5af80e5bc71",
    20: "9a338a2df4ede38e189262486d41edfdafdab04b90be4bac6406e5d3a63cd7b8",
}
PREDICTIONS_HEX = "630000000100000061000000010000000000000000000000"  # after step 10 and after step 20
# First and last loss of each invocation; losses are compared with a tolerance (§6.4).
LOSSES = {10: (5.548397, 4.663767), 20: (4.566657, 3.710753)}
LOSS_TOLERANCE = 5e-7  # the contract prints six decimals
