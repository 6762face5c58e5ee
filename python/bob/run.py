"""``bob-run``: one invocation of contract §7 on files — the command line, the files and the lock.

The math is :func:`bob.invocation.advance`, the same code ``bob.invoke``
runs. What this module adds is what a command on shared files needs:

* exit 0 done; 2 the command line, the input or the checkpoint is refused
  (one line naming the option, the path and the field; no traceback);
  75 a file it replaces is in use by another ``bob-run``; 128 + the signal
  (130 for Ctrl-C, 143, 129) interrupted before the commit, nothing changed;
  1 anything unexpected (a traceback only under ``--debug``);
* only regular files are read or replaced; links are followed, and each file
  it replaces is locked by its resolved path (:mod:`bob.fileio`, :mod:`bob.lock`);
* nothing is lost: every check, and the invocation's updates, happen before the first
  write; the predictions are replaced before the checkpoint, and put back
  exactly if the checkpoint cannot be replaced; a state that would not be
  resumable is refused, not written;
* each file is read once: a fast path for the files bob itself writes
  needs neither construct nor NumPy (:mod:`bob.formats.canonical`,
  :mod:`bob.formats.checkpoint`'s header); anything
  else goes to the schemas, which judge the same bytes and accept them or
  say what is wrong.

Only the standard library is imported up front.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from bob.lock import TargetLock
    from bob.run_options import QuickArgs
    from bob.signals import Deferral

from bob.commands import EXIT_BUSY, EXIT_OK, Outcome, Refused, about, run_command
from bob.lock import lock_path_for  # noqa: F401 - where tests and tools have always found it
from bob.run_options import PROG, quick_args, refuse_bad_pin, run_parser, wait_seconds
from bob.text import note, show_byte, show_path


# --------------------------------------------------------------------------- #
# Reading (fast path for bob's own files, the schemas for everything else)
# --------------------------------------------------------------------------- #

def _read_once(path: str, limit: int, *, record: bool) -> "bytearray | None":
    """The bytes of the regular file at ``path`` (None when it is missing),
    read once: the fast path and the schemas both judge these bytes.
    ``record``: the file is meant to be an input record, else a checkpoint."""
    from bob.fileio import FileTooLarge, read_bounded_buffer

    try:
        return read_bounded_buffer(path, limit)
    except FileTooLarge as big:
        # Larger than any valid file: refused unread, worded by the formats
        # layer from the first bytes the reader saw (a foreign format by name).
        from bob.formats import files

        raise files.too_large(big, limit, files.INPUT_FILE if record else files.CHECKPOINT_FILE) from None


def _read_record(path: str) -> "tuple[bytes, bytes, tuple[int, ...]]":
    """(contexts, targets, prompt words) of the input record at ``path``."""
    from bob.formats import canonical
    from bob.formats.constants import RECORD_BYTES

    data = _read_once(path, RECORD_BYTES, record=True)
    if data is None:
        raise FileNotFoundError(2, "no such file", path)
    fast = canonical.recognize_record(data)
    if fast is not None:
        return fast
    from bob.failures import load_numpy

    load_numpy()  # (as bob.invocation.state_buffer's schemas)
    from bob.formats.input_record import load_input

    record = load_input(bytes(data))  # the schemas say what is wrong with the bytes read above
    return record.contexts.tobytes(), record.targets.tobytes(), record.prompt_words


def _read_state(path: str, pin: "str | None" = None, shown: str = "") -> "tuple[int, bytearray, int | None, bool]":
    """(step, buffer, header_bytes, fresh) of the checkpoint at ``path``, read once
    (:func:`bob.invocation.state_buffer`); a missing or empty file is the fresh state (a file at step 0 is not).
    ``pin`` (``--expect-checkpoint``): the bytes read are refused, before anything
    else, unless their SHA-256 is that one (a missing or empty file never is)."""
    from bob.formats.constants import MAX_CHECKPOINT_BYTES
    from bob.invocation import state_buffer

    data = _read_once(path, MAX_CHECKPOINT_BYTES, record=False)
    if pin is not None:
        from bob.errors import IntegrityError
        from bob.formats.checkpoint import check_pin

        try:
            check_pin(data or b"", pin, "--expect-checkpoint")
        except IntegrityError as err:
            got = "" if err.actual is None else f", got {err.actual}"
            raise Refused(f"{err.message} (expected {err.expected}{got}); nothing was trained or written",
                          option="--expect-checkpoint", path=shown) from None
    return (*state_buffer(data), not data)


# --------------------------------------------------------------------------- #
# One invocation on files
# --------------------------------------------------------------------------- #


def run_files(input_path: str, checkpoint_path: str, predictions_path: str, *,
              wait_seconds: float = 0.0, threads: int = 0, deferral: "Deferral | None" = None,
              expect_checkpoint: "str | None" = None, trace_path: "str | None" = None) -> dict:
    """One invocation (§7) on files; returns its summary as a JSON-ready dict.

    Every refusal is a :class:`bob.commands.Refused` naming the option and path. The invocation is committed
    exactly when the checkpoint's rename succeeds (:mod:`bob.commit`). ``deferral`` is begun (``main`` begins it
    at its start) at the latest before the lock is taken, and left open, so the caller decides when signals act
    again; a signal that arrives before the commit is raised as :class:`bob.signals.Interrupted` at the next safe
    point (the lock's wait, after the updates, just before the commit), with everything rolled back.
    ``expect_checkpoint`` pins the checkpoint (:func:`_read_state`); ``trace_path`` (``--trace``): the trace of
    the updates (formats/trace.md), committed with the pair.
    """
    from bob.commit import Commit, file_version, refuse_replacing_a_checkpoint
    from bob.temporaries import clean_stale_temporaries
    from bob.fileio import refuse_unreplaceable
    from bob.formats import canonical
    from bob.formats.checkpoint import sha256
    from bob.invocation import advance, buffer_planes, sealed_buffer
    from bob.lock import lock_targets, release
    from bob.signals import Deferral

    deferral = Deferral() if deferral is None else deferral
    deferral.check()  # a signal since bob-run began: nothing has been touched
    refuse_bad_pin(expect_checkpoint)
    outputs = _outputs(input_path, checkpoint_path, predictions_path, trace_path)
    (_, _, checkpoint_target), (_, _, predictions_target), *traced = outputs
    with about("--input", input_path, "input record"):
        contexts, targets, prompt_words = _read_record(input_path)

    # From the lock on (from the start, under main), a signal acts only at the checks here and in the
    # lock's wait: never between creating a file and the code that removes it.
    deferral.begin()
    locks = lock_targets(outputs, wait_seconds, deferral)
    cleaned: "list[str]" = []
    commit: "Commit | None" = None
    try:
        _unchanged(outputs, None, locks, deferral)  # (a link, FIFO or directory put there while it waited for them)
        named = [input_path, *(path for _, path, _ in outputs)]  # (a file named like a temporary is still the user's)
        for _, _, target in outputs:
            cleaned += clean_stale_temporaries(target, holding_lock=True, keep=named)
        read_from = {target: file_version(target) for _, _, target in outputs}  # what the commit may replace, before
        for option, path, target in outputs:  # it is judged: a file moved there since is another process's (75)
            with about(option, path):  # now that no backup link of a killed run is a second name
                refuse_unreplaceable(target)
                if option != "--checkpoint":  # (under the lock: no other bob-run's checkpoint there since)
                    refuse_replacing_a_checkpoint(target)
        with about("--checkpoint", checkpoint_path, "checkpoint"):
            step_before, buffer, header_bytes, fresh = _read_state(checkpoint_target, expect_checkpoint,
                                                                   checkpoint_path)
            digests: "list[tuple[bytes, bytes, bytes]] | None" = [] if traced else None
            step_after, losses, records = advance(*buffer_planes(buffer), contexts, targets, prompt_words,
                                                  step_before, threads=threads, digests=digests)
        deferral.check()  # a signal during the updates ends the run here, nothing written
        prediction_bytes = canonical.predictions_bytes(records)
        checkpoint_data = sealed_buffer(step_after, buffer, header_bytes)

        more = tuple((target, canonical.run_trace(contexts, targets, prompt_words, step_before, losses, digests or [],
                                                  sha256), about(option, path)) for option, path, target in traced)
        commit = Commit(checkpoint_target, checkpoint_data, about("--checkpoint", checkpoint_path),
                        predictions_target, prediction_bytes, about("--predictions", predictions_path), more)
        try:
            commit.stage()
            _unchanged(outputs, read_from, locks, deferral)  # before any rename: every file
            commit.apply(lambda: _unchanged(outputs[:1], read_from, locks, deferral))  # the last word: the checkpoint
        finally:
            commit.close()
    except BaseException as ended:
        _ended_before_its_summary(ended, locks, cleaned, lost=commit is not None and commit.lost)
        raise
    finally:
        release(locks)

    summary = _summary(step_before, step_after, losses, prompt_words, records, checkpoint_path,
                       sha256(checkpoint_data), predictions_path, prediction_bytes, cleaned, commit.problems, fresh)
    return summary if trace_path is None else {**summary, "trace_file": show_path(trace_path)}


def _ended_before_its_summary(ended: BaseException, locks: "list[TargetLock]", cleaned: "list[str]",
                              lost: bool = False) -> None:
    """A refusal of a run whose target's directory another process moved or replaced under its lock is that
    (exit 75, nothing changed: :meth:`TargetLock.still_held`), not the path it left behind (exit 2), unless the
    commit ``lost`` a file (one not put back: that refusal names it and where its old bytes are); what the
    clean-up removed is said however the run ends (a refusal, a signal, a lock lost), first."""
    if cleaned:
        note("bob-run", "removed the stale temporaries beside its targets: " + ", ".join(map(show_path, cleaned)))
    if isinstance(ended, Refused) and ended.code != EXIT_BUSY and not lost:
        for lock in locks:
            lock.still_held()


def _unchanged(files: "tuple[tuple[str, str, str], ...]", read_from: "dict[str, tuple[int, ...] | None] | None",
               locks: list, deferral: "Deferral") -> None:
    """Nothing since the start: no signal, every lock still the run's, and each of ``files`` (option, path,
    target) still the one its path named (no link planted or re-pointed) and the file seen then (``read_from``: nothing
    renamed, relinked, chmodded or rewritten), or, before it is read, a regular file or none (no link, FIFO or
    directory put there while the run waited for its locks)."""
    from bob.commit import file_version

    deferral.check()
    for lock in locks:
        lock.still_held()
    for option, path, target in files:
        now = file_version(target)
        if _resolved(path) not in (None, target) or (now != read_from[target] if read_from is not None
                                                      else now is not None and not stat.S_ISREG(now[-1])):
            raise Refused(f"was changed, replaced or removed by another process since this run "
                          f"{'began' if read_from is None else 'read it'}; nothing was changed", option=option,
                          path=path, code=EXIT_BUSY)


def _resolved(path: str) -> "str | None":
    """The file ``path`` names now, links resolved (None when that cannot be told: the working directory is gone)."""
    try:
        return os.path.realpath(path)
    except OSError:
        return None


def _trace_target(trace_path: str, input_path: str, checkpoint_target: str, predictions_target: str) -> str:
    """``--trace``'s target, decided as :func:`_outputs` decides the others':
    links resolved, and none of the run's other files."""
    from bob.fileio import replace_target, same_file

    with about("--trace", trace_path):
        target = replace_target(trace_path, check_replaceable=False)
    for other, what in ((input_path, "--input"), (checkpoint_target, "--checkpoint"),
                        (predictions_target, "--predictions")):
        if same_file(target, other):
            raise Refused(f"names the same file as {what}; each needs its own", option="--trace", path=trace_path)
    return target


def _outputs(input_path: str, checkpoint_path: str, predictions_path: str,
             trace_path: "str | None") -> "tuple[tuple[str, str, str], ...]":
    """The files the run will replace (checkpoint, predictions, trace), each as (option, path, target:
    links resolved), decided before anything is read or created: the kernel resolves every path
    (a deleted working directory is named here), and no two options may name one file, nor one
    another's lock."""
    from bob.fileio import check_directory, replace_target, same_file
    from bob.commit import refuse_unsafe_target
    from bob.lock import refuse_if_lock_of

    with about("--input", input_path):
        check_directory(input_path)
    with about("--checkpoint", checkpoint_path):
        checkpoint_target = replace_target(checkpoint_path, check_replaceable=False)
    with about("--predictions", predictions_path):
        predictions_target = replace_target(predictions_path, check_replaceable=False)
    for a, b, first, option, path in (  # the targets as resolved above: each path is resolved once
        (checkpoint_target, predictions_target, "--checkpoint", "--predictions", predictions_path),
        (input_path, checkpoint_target, "--input", "--checkpoint", checkpoint_path),
        (input_path, predictions_target, "--input", "--predictions", predictions_path),
    ):
        if same_file(a, b):  # refused naming the option of the file that would be replaced
            raise Refused(f"names the same file as {first}; each needs its own", option=option, path=path)
    outputs: "tuple[tuple[str, str, str], ...]" = (("--checkpoint", checkpoint_path, checkpoint_target),
                                                   ("--predictions", predictions_path, predictions_target))
    if trace_path is not None:
        outputs += (("--trace", trace_path, _trace_target(trace_path, input_path, checkpoint_target,
                                                          predictions_target)),)
    refuse_if_lock_of(outputs)
    for option, path, target in outputs:
        with about(option, path):
            refuse_unsafe_target(target)
    return outputs


def _summary(step_before: int, step_after: int, losses: "list[float]", prompt_words: "tuple[int, ...]",
             records: "list[tuple[int, int]]", checkpoint_path: str, checkpoint_sha256: bytes, predictions_path: str,
             prediction_bytes: bytes, cleaned: "list[str]", problems: "list[str]", fresh: bool) -> dict:
    """The JSON-ready summary of a committed invocation (:func:`run_files`)."""
    from bob.formats.constants import EMPTY_PROMPT

    return {
        "step_before": step_before,
        "step_after": step_after,
        "fresh": fresh,
        "losses": [float(x) for x in losses],
        "predictions": [
            {
                "prompt": i,
                "last_byte": None if word == EMPTY_PROMPT else word,
                "token": token,
                "valid": bool(validity),
            }
            for i, (word, (token, validity)) in enumerate(zip(prompt_words, records))
        ],
        "checkpoint": show_path(checkpoint_path),
        "checkpoint_sha256": checkpoint_sha256.hex(),
        "predictions_file": show_path(predictions_path),
        "predictions_hex": prediction_bytes.hex(),
        "stale_temporaries_removed": [show_path(p) for p in cleaned],
        "problems_after_commit": problems,
    }


# --------------------------------------------------------------------------- #
# The command line
# --------------------------------------------------------------------------- #


def _human_summary(result: dict) -> str:
    lines = [
        f"bob-run: step {result['step_before']} -> {result['step_after']}"
        + (" (fresh start)" if result["fresh"] else ""),
        "  loss " + " ".join(f"{x:.6f}" for x in result["losses"]),
    ]
    for p in result["predictions"]:
        if p["last_byte"] is None:
            lines.append(f"  prompt {p['prompt']} (empty): no prediction (validity 0)")
        elif not p["valid"]:
            lines.append(f"  prompt {p['prompt']} (last byte {show_byte(p['last_byte'])}): "
                         "no prediction (row not finite)")
        else:
            lines.append(f"  prompt {p['prompt']} (last byte {show_byte(p['last_byte'])}): "
                         f"next {show_byte(p['token'])} (valid)")
    lines.append(f"  checkpoint {result['checkpoint']} sha256 {result['checkpoint_sha256']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, until_exit: bool = False) -> int:
    """``bob-run``; returns the exit status. ``until_exit``: the caller ends
    the process with that status at once (the installed script, ``python -m
    bob run``), so signals stay deferred to the end: nothing that arrives
    after bob-run decided what happened can change what it says."""
    from bob import signals

    replaced = signals.install()  # SIGTERM and SIGHUP end bob-run as Ctrl-C does, and wait for a commit
    if until_exit:
        signals.until_exit()
    deferral = signals.Deferral()
    # From here on a signal acts only at the safe points (bob.signals): a
    # handler that raised anywhere could be swallowed (an exception raised
    # inside an import's callback is only printed), or cut a step in half.
    deferral.begin()
    committed: list[str] = []  # once committed: what was committed, then the signals its summary names
    try:
        code = run_command(PROG, run_parser, lambda args: _work(args, deferral, committed), argv, quick=quick_args,
                           interrupted="interrupted; nothing was changed", numpy=False)
        if committed[1:]:  # too late to undo: say what is true, and end as a completed run
            names = " and ".join(dict.fromkeys(committed[1:]))
            note(PROG, f"{names} arrived during the commit; {committed[0]}, so bob-run finished (exit 0)")
        return code
    finally:
        if until_exit:
            deferral.begin()  # whatever arrives now is recorded, and the process ends with what was said
        else:
            deferral.end()
            signals.restore(replaced)


def _work(args: "QuickArgs | argparse.Namespace", deferral: "Deferral", committed: list[str]) -> Outcome:
    from bob.signals import signal_name

    # One thread: in a fresh process the first parallel call pays for
    # starting the core's thread pool, which costs more than the call's
    # work saves (BENCHMARKS.md). Threads never change a bit.
    result = run_files(args.input, args.checkpoint, args.predictions, wait_seconds=wait_seconds(args.wait), threads=1,
                       deferral=deferral, expect_checkpoint=args.expect_checkpoint, trace_path=args.trace)
    committed.append(f"the invocation committed step {result['step_after']} to {result['checkpoint']}")
    for problem in result["problems_after_commit"]:  # the invocation happened: exit 0, and say what else is true
        note(PROG, f"{committed[0]}, but {problem}")
    result["signals_after_commit"] = [signal_name(s) for s in deferral.pending]
    committed.extend(result["signals_after_commit"])  # the ones stderr names too: a later one is only recorded
    return Outcome(EXIT_OK, result, _human_summary(result), committed=committed[0])


if __name__ == "__main__":  # pragma: no cover
    from bob.signals import run_module

    run_module(lambda: main(until_exit=True))
