"""bob: binary formats and a Rust-backed deterministic FP32 training run.

The public surface (``import bob``) is cheap: the error family is imported
eagerly (standard library only); everything else — NumPy, construct, the
schemas — is imported the first time it is used. The native core
(:mod:`bob.core`) is never imported here.

One invocation (contract §7), in memory::

    bob.invoke(record, checkpoint=b"", *, threads=0, trace=False, expect=None) -> Invocation  # expect: a pinned SHA-256
        # .checkpoint, .predictions, .losses, .step_before, .step_after, .trace,
        # .checkpoint_bytes(), .predictions_bytes(), .trace_bytes(); Checkpoint.write(path) …

Formats (contract ``bob-v1`` §3–§5; the document itself: ``bob.contract_document()``)::

    bob.load_input(data) -> InputRecord             # bob-input v1, RECORD_BYTES bytes
    bob.load_checkpoint(data, *, for_resume=True, expected_sha256=None)   # bob-envelope v1; b"" -> fresh state
    bob.load_predictions(data) -> Predictions       # 24 bytes
    bob.build_input(corpus, prompts) -> InputRecord # the fixture builder
    bob.read_checkpoint_file(path, *, for_resume=True) -> Checkpoint  # missing: FileNotFoundError
    bob.read_input_file(path) / bob.read_predictions_file(path)
    Checkpoint.write(path) / InputRecord.write(path) / Predictions.write(path)  # atomic
    bob.input_findings(data) / bob.checkpoint_findings(data, *, for_resume=True)
    bob.predictions_findings(data) -> list[FormatError]
    bob.load_trace(data) -> Trace / bob.read_trace_file(path) / bob.trace_findings(data)  # bob-trace v2
    bob.write_atomic(path, data) / bob.clean_stale_temporaries(path)

For people and other tools::

    bob.probabilities(checkpoint, context)          # float64 softmax of P's row
    bob.diff(a, b)                                  # what `bob-inspect diff --json` prints
    bob.diff(trace_a, trace_b, checkpoints=(ca, cb))  # where two runs part: `bob-inspect trace --json`
    Checkpoint.to_safetensors(path) / .from_safetensors(path) / .to_npz(path) / .from_npz(path)

Every refusal is a :class:`FormatError` (a ``ValueError``) naming the field.
"""

from __future__ import annotations

TYPE_CHECKING = False

from bob.errors import (
    BadValue,
    ContractMismatch,
    FormatError,
    IntegrityError,
    NotABobFile,
    StateRefused,
    Truncated,
)

__version__ = "0.1.0"

_LAZY = {
    # one invocation
    "invoke": "bob.invocation",
    "Invocation": "bob.invocation",
    # typed objects
    "InputRecord": "bob.formats.input_record",
    "Checkpoint": "bob.formats.checkpoint",
    "Predictions": "bob.formats.predictions",
    "Contract": "bob.formats.contract",
    "contract_document": "bob.formats.contract",
    "Examination": "bob.formats.checkpoint",
    # loaders and builders
    "load_input": "bob.formats.input_record",
    "build_input": "bob.formats.input_record",
    "input_findings": "bob.formats.input_record",
    "load_checkpoint": "bob.formats.checkpoint",
    "checkpoint_findings": "bob.formats.checkpoint",
    "examine_checkpoint": "bob.formats.checkpoint",
    "read_checkpoint_file": "bob.formats.checkpoint",
    "load_predictions": "bob.formats.predictions",
    "predictions_findings": "bob.formats.predictions",
    "read_input_file": "bob.formats.input_record",
    "read_predictions_file": "bob.formats.predictions",
    "Trace": "bob.formats.trace",
    "load_trace": "bob.formats.trace",
    "trace_findings": "bob.formats.trace",
    "read_trace_file": "bob.formats.trace",
    # for people and other tools
    "probabilities": "bob.analysis",
    "diff": "bob.analysis",
    # files
    "write_atomic": "bob.fileio",
    "clean_stale_temporaries": "bob.temporaries",
}
_RENAMED = {"examine_checkpoint": "examine"}

# Spelled out, not computed from _LAZY: type checkers read a literal list
# (tests/test_typing.py holds it equal to the errors and _LAZY).
__all__ = [
    "FormatError",
    "NotABobFile",
    "Truncated",
    "IntegrityError",
    "ContractMismatch",
    "BadValue",
    "StateRefused",
    "invoke",
    "Invocation",
    "InputRecord",
    "Checkpoint",
    "Predictions",
    "Contract",
    "contract_document",
    "Examination",
    "load_input",
    "build_input",
    "input_findings",
    "load_checkpoint",
    "checkpoint_findings",
    "examine_checkpoint",
    "read_checkpoint_file",
    "load_predictions",
    "predictions_findings",
    "read_input_file",
    "read_predictions_file",
    "Trace",
    "load_trace",
    "trace_findings",
    "read_trace_file",
    "probabilities",
    "diff",
    "write_atomic",
    "clean_stale_temporaries",
]


if not TYPE_CHECKING:
    # Hidden from type checkers, which see the imports below instead: with a
    # module __getattr__ in view they would take any misspelt name for Any.
    from bob.formats import lazy_names

    __getattr__ = lazy_names(__name__, _LAZY, _RENAMED)
    del lazy_names

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only; `X as X` marks a re-export
    from bob.analysis import diff as diff
    from bob.analysis import probabilities as probabilities
    from bob.temporaries import clean_stale_temporaries as clean_stale_temporaries
    from bob.fileio import write_atomic as write_atomic
    from bob.formats.checkpoint import Examination as Examination
    from bob.formats.checkpoint import checkpoint_findings as checkpoint_findings
    from bob.formats.checkpoint import examine as examine_checkpoint
    from bob.formats.contract import Contract as Contract
    from bob.formats.contract import contract_document as contract_document
    from bob.formats.checkpoint import Checkpoint as Checkpoint
    from bob.formats.checkpoint import load_checkpoint as load_checkpoint
    from bob.formats.checkpoint import read_checkpoint_file as read_checkpoint_file
    from bob.formats.input_record import read_input_file as read_input_file
    from bob.formats.predictions import read_predictions_file as read_predictions_file
    from bob.formats.input_record import InputRecord as InputRecord
    from bob.formats.input_record import build_input as build_input
    from bob.formats.input_record import input_findings as input_findings
    from bob.formats.input_record import load_input as load_input
    from bob.formats.predictions import Predictions as Predictions
    from bob.formats.predictions import load_predictions as load_predictions
    from bob.formats.predictions import predictions_findings as predictions_findings
    from bob.formats.trace import Trace as Trace
    from bob.formats.trace import load_trace as load_trace
    from bob.formats.trace import read_trace_file as read_trace_file
    from bob.formats.trace import trace_findings as trace_findings
    from bob.invocation import Invocation as Invocation
    from bob.invocation import invoke as invoke
