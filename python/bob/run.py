"""``bob-run`` and ``bob-fixture``: one invocation of contract §7, end to end.

``bob-run`` reads the input record, takes a lock on the checkpoint, reads the
checkpoint (missing or empty: a fresh run), makes exactly 10 updates in the
native core, and replaces the predictions and then the checkpoint
atomically. It is written for loops of thousands of invocations:

* exit 0 done; 2 the input or checkpoint is refused (one line naming the
  field, no traceback); 75 the checkpoint is in use by another ``bob-run``;
  1 anything unexpected (a traceback only under ``--debug``);
* nothing is lost: every check happens before the first write; the
  predictions are replaced before the checkpoint, so a run killed between the
  two renames leaves the old checkpoint beside the predictions its rerun
  will write again (the math is deterministic); if replacing the checkpoint
  fails, the old predictions are put back;
* there is no fallback: if the native core cannot be loaded, it says so and
  exits 1.

Only the standard library is imported up front; the formats and the core
come in when an invocation needs them.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from types import SimpleNamespace

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_REFUSED = 2
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later


class CheckpointBusy(Exception):
    """Another bob-run holds the checkpoint's lock."""


class UsageRefused(Exception):
    """A command line that names an impossible job (e.g. one path used twice)."""


# --------------------------------------------------------------------------- #
# Showing bytes
# --------------------------------------------------------------------------- #


def show_byte(value: int) -> str:
    """A byte for people: 'a' when printable ASCII, else '\\x0a'."""
    if 0x20 <= value < 0x7F and value not in (0x27, 0x5C):
        return f"'{chr(value)}'"
    return f"'\\x{value:02x}'"


# --------------------------------------------------------------------------- #
# The lock
# --------------------------------------------------------------------------- #


def lock_path_for(checkpoint: str) -> str:
    directory, name = os.path.split(os.path.abspath(checkpoint))
    return os.path.join(directory, f".{name}.bob-lock")


class CheckpointLock:
    """An exclusive ``flock`` on a lock file beside the checkpoint.

    The checkpoint itself is replaced by rename, so its inode changes every
    invocation; the lock file stays put (it is never removed, which would let
    two runs lock two different files). The kernel drops the lock when the
    holder dies, even by SIGKILL.
    """

    def __init__(self, checkpoint: str, wait_seconds: float) -> None:
        self.path = lock_path_for(checkpoint)
        self.wait_seconds = wait_seconds
        self.fd: int | None = None

    def __enter__(self) -> "CheckpointLock":
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileNotFoundError:
            directory = os.path.dirname(self.path)
            raise FileNotFoundError(errno.ENOENT, "the checkpoint's directory does not exist", directory) from None
        deadline = time.monotonic() + max(self.wait_seconds, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise CheckpointBusy(
                        f"the checkpoint is in use by another bob-run{holder}; "
                        "nothing was changed (use --wait SECONDS to wait for it)"
                    ) from None
                time.sleep(0.02)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the flock
            self.fd = None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


# --------------------------------------------------------------------------- #
# One invocation
# --------------------------------------------------------------------------- #


def _same_file(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def invoke(input_path: str, checkpoint_path: str, predictions_path: str, *, wait_seconds: float = 0.0) -> dict:
    """Run one invocation (§7) and return its summary as a JSON-ready dict.

    Raises :class:`bob.FormatError` for a refused record or checkpoint,
    :class:`CheckpointBusy` when another run holds the checkpoint, and
    :class:`bob.core.NativeCoreUnavailable` when there is no native core.
    """
    for a, b, what in (
        (checkpoint_path, predictions_path, "--checkpoint and --predictions"),
        (input_path, checkpoint_path, "--input and --checkpoint"),
        (input_path, predictions_path, "--input and --predictions"),
    ):
        if _same_file(a, b):
            raise UsageRefused(f"{what} name the same file ({a}); each needs its own")

    import hashlib

    from bob import core  # no fallback: NativeCoreUnavailable propagates
    from bob.atomic import clean_stale_temporaries
    from bob.formats import canonical
    from bob.formats.constants import UPDATES_PER_INVOCATION

    contexts, targets, prompt_words = _read_record(input_path)

    with CheckpointLock(checkpoint_path, wait_seconds):
        cleaned = clean_stale_temporaries(checkpoint_path) + clean_stale_temporaries(predictions_path)
        step_before, planes, header_bytes = _read_state(checkpoint_path)
        p, m, v = _plane_views(planes)
        losses = core.train(p, m, v, contexts, targets, step_before, UPDATES_PER_INVOCATION)
        step_after = step_before + UPDATES_PER_INVOCATION
        records = core.predict(p, prompt_words)
        prediction_bytes = canonical.predictions_bytes(records)
        checkpoint_bytes = _checkpoint_bytes(step_after, planes, header_bytes)
        _replace_both(checkpoint_path, checkpoint_bytes, predictions_path, prediction_bytes)

    return {
        "step_before": step_before,
        "step_after": step_after,
        "fresh": step_before == 0,
        "losses": [float(x) for x in losses],
        "predictions": [
            {
                "prompt": i,
                "last_byte": None if word == core.EMPTY_PROMPT else word,
                "token": token,
                "valid": bool(validity),
            }
            for i, (word, (token, validity)) in enumerate(zip(prompt_words, records))
        ],
        "checkpoint": checkpoint_path,
        "checkpoint_sha256": hashlib.sha256(checkpoint_bytes).hexdigest(),
        "predictions_file": predictions_path,
        "predictions_hex": prediction_bytes.hex(),
        "stale_temporaries_removed": cleaned,
    }


# The fast path below recognizes the files bob itself writes with the standard
# library alone (bob.formats.canonical); anything it does not recognize goes
# to the construct schemas, which either accept it or raise the FormatError
# that names what is wrong. So refusals always come from the schemas, and a
# run on good files imports neither construct nor NumPy.

_FAST = sys.byteorder == "little"  # the planes are little-endian float32 in memory too


def _read_record(path: str) -> "tuple[bytes, bytes, tuple[int, ...]]":
    """(contexts, targets, prompt words) of the input record at ``path``."""
    from bob.formats import canonical

    if _FAST:
        try:
            data = canonical.read_at_most(path, canonical.RECORD_BYTES)
        except canonical.TooLarge:
            pass  # larger than any record: the schemas' reader says so
        else:
            if data is None:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
            fast = canonical.recognize_record(data)
            if fast is not None:
                return fast
    import bob

    try:
        record = bob.read_input_file(path)
    except bob.FormatError as exc:
        raise _in_file(exc, "input record", path) from None
    return record.contexts.tobytes(), record.targets.tobytes(), record.prompt_words


def _read_state(path: str) -> "tuple[int, bytearray, int | None]":
    """(step, planes, header_bytes) of the checkpoint at ``path``: the planes
    as one bytearray (P, M, V, little-endian float32); header_bytes None for
    the canonical layout. A missing or empty file is the fresh state."""
    from bob import core
    from bob.formats import canonical

    if _FAST:
        try:
            data = canonical.read_at_most(path, canonical.CHECKPOINT_BYTES)
        except canonical.TooLarge:
            pass  # larger than bob writes: a wide header, or refused by the schemas
        else:
            if not data:  # missing or empty: a fresh run
                planes = bytearray(canonical.PAYLOAD_BYTES)
                core.initialize(_plane_views(planes)[0])
                return 0, planes, None
            step = canonical.recognize_checkpoint(data)
            if step is not None:
                planes = bytearray(memoryview(data)[canonical.HEADER_BYTES:])
                if core.resume_problem(*_plane_views(planes), step) is None:
                    return step, planes, None
    import bob

    try:
        checkpoint = bob.read_checkpoint_file(path)
    except bob.FormatError as exc:
        raise _in_file(exc, "checkpoint", path) from None
    planes = bytearray(b"".join(a.astype("<f4").tobytes() for a in (checkpoint.p, checkpoint.m, checkpoint.v)))
    return checkpoint.step, planes, checkpoint.header_bytes


def _plane_views(planes: bytearray) -> "tuple[memoryview, memoryview, memoryview]":
    from bob.formats.constants import CHUNK_BYTES

    view = memoryview(planes)
    return tuple(view[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES].cast("f") for i in range(3))  # type: ignore[return-value]


def _checkpoint_bytes(step: int, planes: bytearray, header_bytes: "int | None") -> bytes:
    from bob.formats import canonical

    if header_bytes in (None, canonical.HEADER_BYTES):
        return canonical.build_checkpoint(step, planes)
    # A valid checkpoint with a larger header keeps it (formats/DECISIONS.md D9).
    import numpy as np

    import bob

    p, m, v = (np.frombuffer(view, dtype="<f4").copy() for view in _plane_views(planes))
    return bob.Checkpoint(step, p, m, v, header_bytes=header_bytes).to_bytes()


def _in_file(exc: Exception, what: str, path: str) -> Exception:
    """Note which file a refusal came from, for the one-line message."""
    exc.source_file = f"{what} {path}"  # type: ignore[attr-defined]
    return exc


def _replace_both(checkpoint_path: str, checkpoint_bytes: bytes, predictions_path: str, prediction_bytes: bytes) -> None:
    """Predictions first, then the checkpoint; undo the predictions if the checkpoint cannot be replaced."""
    from bob.atomic import write_atomic

    try:
        with open(predictions_path, "rb") as f:
            old_predictions: bytes | None = f.read(4096)
    except FileNotFoundError:
        old_predictions = None
    write_atomic(predictions_path, prediction_bytes)
    try:
        write_atomic(checkpoint_path, checkpoint_bytes)
    except BaseException:
        try:
            if old_predictions is None:
                os.unlink(predictions_path)
            else:
                write_atomic(predictions_path, old_predictions)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- #
# Command lines
# --------------------------------------------------------------------------- #


def _human_summary(result: dict) -> str:
    lines = [
        f"bob-run: step {result['step_before']} -> {result['step_after']}"
        + (" (fresh start)" if result["fresh"] else ""),
    ]
    losses = result["losses"]
    lines.append("  loss " + " ".join(f"{x:.6f}" for x in losses))
    for p in result["predictions"]:
        if p["last_byte"] is None:
            lines.append(f"  prompt {p['prompt']} (empty): no prediction (validity 0)")
        elif not p["valid"]:
            lines.append(f"  prompt {p['prompt']} (last byte {show_byte(p['last_byte'])}): no prediction (row not finite)")
        else:
            lines.append(
                f"  prompt {p['prompt']} (last byte {show_byte(p['last_byte'])}): next {show_byte(p['token'])} (valid)"
            )
    lines.append(f"  checkpoint {result['checkpoint']} sha256 {result['checkpoint_sha256']}")
    return "\n".join(lines)


def _fail(prog: str, code: int, message: str, debug: bool) -> int:
    if debug:
        import traceback

        traceback.print_exc()
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def run_parser() -> "argparse.ArgumentParser":
    import argparse

    parser = argparse.ArgumentParser(
        prog="bob-run",
        description="One bob invocation: 10 AdamW updates from CKPT (missing or empty: fresh), "
        "then CKPT and PRED replaced atomically.",
        epilog="exit codes: 0 done, 2 input or checkpoint refused, 75 checkpoint in use, 1 unexpected",
    )
    parser.add_argument("--input", required=True, metavar="RECORD", help="the input record (bob-input v1)")
    parser.add_argument("--checkpoint", required=True, metavar="CKPT", help="read, then replaced atomically")
    parser.add_argument("--predictions", required=True, metavar="PRED", help="written atomically (24 bytes)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long for a checkpoint another bob-run holds (default: refuse at once, exit 75)")
    parser.add_argument("--debug", action="store_true", help="show a traceback for unexpected errors")
    return parser


def _quick_args(argv: list[str]) -> "SimpleNamespace | None":
    """The common command lines, read without building the argparse parser
    (which costs more than a whole invocation's work). Anything else — help,
    an unknown or repeated option, a missing value — returns None and goes to
    argparse, which prints its usual messages."""
    values = {"input": None, "checkpoint": None, "predictions": None, "wait": 0.0, "json": False, "debug": False}
    seen = set()
    items = list(argv)
    while items:
        item = items.pop(0)
        name, eq, value = item.partition("=")
        key = name[2:] if name.startswith("--") else None
        if key not in values or key in seen:
            return None
        seen.add(key)
        if key in ("json", "debug"):
            if eq:
                return None
            values[key] = True
            continue
        if not eq:
            if not items:
                return None
            value = items.pop(0)
        if value.startswith("-") and key != "wait":
            return None
        if key == "wait":
            try:
                values[key] = float(value)
            except ValueError:
                return None
        else:
            values[key] = value
    if None in (values["input"], values["checkpoint"], values["predictions"]):
        return None
    return SimpleNamespace(**values)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _quick_args(argv) or run_parser().parse_args(argv)
    try:
        result = invoke(args.input, args.checkpoint, args.predictions, wait_seconds=args.wait)
    except CheckpointBusy as exc:
        return _fail("bob-run", EXIT_BUSY, str(exc), False)
    except UsageRefused as exc:
        return _fail("bob-run", EXIT_REFUSED, f"refused: {exc}", False)
    except ImportError as exc:
        return _fail("bob-run", EXIT_UNEXPECTED, str(exc), args.debug)
    except ValueError as exc:
        from bob.errors import FormatError

        if isinstance(exc, FormatError):
            where = getattr(exc, "source_file", None)
            return _fail("bob-run", EXIT_REFUSED, f"refused: {where + ': ' if where else ''}{exc}", args.debug)
        return _fail("bob-run", EXIT_UNEXPECTED, f"unexpected error: {type(exc).__name__}: {exc}", args.debug)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        return _fail("bob-run", EXIT_REFUSED, f"refused: {exc.strerror}: {exc.filename}", args.debug)
    except KeyboardInterrupt:
        return _fail("bob-run", 130, "interrupted; nothing was changed", False)
    except Exception as exc:  # noqa: BLE001 - the promise is: exit 1, traceback only under --debug
        return _fail("bob-run", EXIT_UNEXPECTED, f"unexpected error: {type(exc).__name__}: {exc}", args.debug)
    if args.json:
        import json

        print(json.dumps(result, sort_keys=True))
    else:
        print(_human_summary(result))
    return EXIT_OK


# --------------------------------------------------------------------------- #
# bob-fixture
# --------------------------------------------------------------------------- #


def fixture_parser() -> "argparse.ArgumentParser":
    import argparse

    class _PromptAction(argparse.Action):
        """--prompt and --prompt-hex append to one list, in command-line order."""

        def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
            prompts = getattr(namespace, self.dest) or []
            if option_string == "--prompt-hex":
                try:
                    value = bytes.fromhex(values)
                except ValueError:
                    parser.error(f"--prompt-hex: {values!r} is not hex (pairs of 0-9a-f)")
            else:
                value = os.fsencode(values)
            prompts.append(value)
            setattr(namespace, self.dest, prompts)

    parser = argparse.ArgumentParser(
        prog="bob-fixture",
        description="Write a bob input record (bob-input v1) from a corpus and exactly three prompts.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", metavar="TEXT", help="the corpus, as the OS gives the argument")
    source.add_argument("--corpus", metavar="FILE", help="the corpus, read from a file as raw bytes")
    parser.add_argument("--prompt", dest="prompts", action=_PromptAction, metavar="P",
                        help="a prompt, as the OS gives the argument ('' for an empty prompt)")
    parser.add_argument("--prompt-hex", dest="prompts", action=_PromptAction, metavar="HEX",
                        help="a prompt given as hex, for any bytes")
    parser.add_argument("--output", required=True, metavar="FILE", help="the record, written atomically")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--debug", action="store_true", help="show a traceback for unexpected errors")
    return parser


MAX_CORPUS_BYTES = 1 << 30


def fixture_main(argv: list[str] | None = None) -> int:
    args = fixture_parser().parse_args(argv)
    prompts = args.prompts or []
    if len(prompts) != 3:
        return _fail("bob-fixture", EXIT_REFUSED,
                     f"refused: prompts: exactly 3 prompts are needed (--prompt/--prompt-hex), got {len(prompts)}",
                     False)
    try:
        import hashlib

        import bob
        from bob.atomic import write_atomic

        if args.text is not None:
            corpus = os.fsencode(args.text)
        else:
            with open(args.corpus, "rb") as f:
                corpus = f.read(MAX_CORPUS_BYTES + 1)
            if len(corpus) > MAX_CORPUS_BYTES:
                raise UsageRefused(f"corpus: {args.corpus} is larger than {MAX_CORPUS_BYTES} bytes; only 256 pairs are used")
        record = bob.build_input(corpus, prompts)
        data = record.to_bytes()
        write_atomic(args.output, data)
    except UsageRefused as exc:
        return _fail("bob-fixture", EXIT_REFUSED, f"refused: {exc}", False)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        return _fail("bob-fixture", EXIT_REFUSED, f"refused: {exc.strerror}: {exc.filename}", args.debug)
    except ValueError as exc:
        from bob.errors import FormatError

        if isinstance(exc, FormatError):
            return _fail("bob-fixture", EXIT_REFUSED, f"refused: {exc}", args.debug)
        return _fail("bob-fixture", EXIT_UNEXPECTED, f"unexpected error: {type(exc).__name__}: {exc}", args.debug)
    except Exception as exc:  # noqa: BLE001
        return _fail("bob-fixture", EXIT_UNEXPECTED, f"unexpected error: {type(exc).__name__}: {exc}", args.debug)
    summary = {
        "output": args.output,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "corpus_bytes": len(corpus),
        "prompts_hex": [p.hex() for p in prompts],
    }
    if args.json:
        import json

        print(json.dumps(summary, sort_keys=True))
    else:
        print(f"bob-fixture: wrote {args.output} ({len(data)} bytes, sha256 {summary['sha256']})")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
