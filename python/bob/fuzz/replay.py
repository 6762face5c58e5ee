"""Re-running findings through their targets, and shrinking them. No engine needed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from bob.fuzz.campaign import load_target
from bob.fuzz.targets import target_for_file

__all__ = ["Verdict", "files_under", "replay_file", "replay", "failure_of", "minimize"]


class Verdict(NamedTuple):
    path: str
    target: str | None
    passed: bool
    message: str


def files_under(paths: "list[str | os.PathLike[str]]") -> Iterator[Path]:
    """The files named, and every file under the directories named (sorted; hidden ones and notes skipped)."""
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts) \
                        and f.suffix not in (".txt", ".md", ".json"):
                    yield f
        else:
            yield p


def failure_of(run: Callable[[bytes], None], data: bytes) -> str | None:
    """None when ``run(data)`` passes, else the failure as ``Type: message`` (first line)."""
    try:
        run(data)
    except Exception as exc:  # noqa: BLE001 - any escape from a target is its verdict
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    except BaseException as exc:  # a pyo3 PanicException is a BaseException
        if isinstance(exc, KeyboardInterrupt):
            raise
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def replay_file(path: Path, target: str | None = None) -> Verdict:
    name = target or target_for_file(path)
    if name is None:
        return Verdict(str(path), None, False, "no target: name one with --target (or keep the file in a "
                                               "directory named after its target)")
    run, _ = load_target(name)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Verdict(str(path), name, False, f"cannot read: {exc.strerror or exc}")
    failure = failure_of(run, data)
    return Verdict(str(path), name, failure is None, failure or "ok")


RUST_TARGETS = ("kernels", "predict", "resume")  # fuzz/regressions/<these>: cargo test -p bob-core --test fuzz_replay


def replay(paths: "list[str | os.PathLike[str]]", target: str | None = None) -> list[Verdict]:
    """Each file through its target; the Rust targets' files (``fuzz/regressions/kernels`` …) are left out."""
    return [replay_file(f, target) for f in files_under(paths)
            if target is not None or f.parent.name not in RUST_TARGETS]


def minimize(run: Callable[[bytes], None], data: bytes, *, max_tries: int = 2000) -> bytes:
    """A smaller input failing the same way (same exception type and first line), by deleting
    ever smaller chunks and zeroing bytes; at most ``max_tries`` executions."""
    want = failure_of(run, data)
    if want is None:
        raise ValueError("the input does not fail its target; nothing to minimize")
    tries = 0

    def same(candidate: bytes) -> bool:
        nonlocal tries
        tries += 1
        return failure_of(run, candidate) == want

    best = data
    chunk = max(len(best) // 2, 1)
    while chunk >= 1 and tries < max_tries:
        at, shrunk = 0, False
        while at < len(best) and tries < max_tries:
            candidate = best[:at] + best[at + chunk:]
            if same(candidate):
                best, shrunk = candidate, True
            else:
                at += chunk
        if not shrunk:
            chunk //= 2
    for at in range(len(best)):  # simpler bytes: zero what need not be anything else
        if tries >= max_tries:
            break
        if best[at]:
            candidate = best[:at] + b"\0" + best[at + 1:]
            if same(candidate):
                best = candidate
    return best
