"""A conformance corpus for other implementations of bob's formats, and ``bob-fuzz check``: docs/fuzzing.md's
"The conformance corpus" (its layout, its manifest, the reader's convention, ``python -m bob.fuzz.conformance``)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import random
import resource
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bob
from bob.children import readable, signal_group, spawned
from bob.commands import EXIT_REFUSED, EXIT_SOFTWARE, Refused, about, os_reason
from bob.errors import FormatError
from bob.failures import one_blas_thread
from bob.fileio import (FileTooLarge, make_directory, read_bounded, refuse_if_working_directory_gone,
                        remove_empty_directories)
from bob.formats.constants import (EMPTY_PROMPT, MAX_CHECKPOINT_BYTES, MAX_HEADER_BYTES, U64_MAX,
                                   UPDATES_PER_INVOCATION, VOCABULARY)
from bob.formats.kinds import ALIASES, FORMATS
from bob.fuzz.common import read_input
from bob.fuzz.targets import golden_dir
from bob.scratch import scratch_directory
from bob.text import one_line, show_path

__all__ = ["FORMATS", "open_corpus", "judge", "write_corpus", "check", "render_table", "reader_main"]

PER_FIELD = 3  # refused examples kept per (format, field)
ATTEMPTS = {"input": 600, "predictions": 600, "checkpoint": 400}
OUTPUT_LIMIT = 64 << 20  # bytes a reader may print per file (a hex dump of the largest file is 2 MiB)
LISTED = 50  # disagreements the table names one by one (--json has them all)
HEAD, LINE_CUT = 1 << 16, "(a first line past 64 KiB)"  # what is kept of a reader's output; its field when cut there


def judge(fmt: str, data: bytes) -> dict[str, Any]:
    """bob's verdict on ``data`` as format ``fmt`` (a checkpoint as for resuming: the loaders' default):
    accept, or refuse naming field and offset (the loader's), and ``fields``: every field bob's findings name."""
    try:
        getattr(bob, f"load_{fmt}")(data)
    except FormatError as err:
        fields = [err.field] + [f.field for f in getattr(bob, f"{fmt}_findings")(data)]
        return {"verdict": "refuse", "field": err.field, "offset": err.offset, "error": type(err).__name__,
                "message": str(err), "fields": list(dict.fromkeys(f for f in fields if f is not None))}
    return {"verdict": "accept", "field": None, "offset": None, "error": None, "message": None, "fields": []}


def _accepted(fmt: str) -> list[tuple[str, bytes]]:
    out = [(p.stem, read_input(p)) for p in sorted(golden_dir().glob(f"{fmt}*.bin"))]
    if fmt == "input":
        return out + [
            ("built-two-bytes", bob.build_input(b"ab", [b"", b"", b""]).to_bytes()),
            ("built-all-bytes", bob.build_input(bytes(range(255, -1, -1)), [b"\xff", b"\0", b"x"]).to_bytes())]
    if fmt == "predictions":
        return out + [("all-invalid", bob.Predictions(((0, 0), (0, 0), (0, 0))).to_bytes()),
                      ("edge-tokens", bob.Predictions(((0, 1), (255, 1), (0, 0))).to_bytes())]
    return out + [("fresh-zero-bytes", b""),
                  ("wide-header-512", bob.load_checkpoint(out[0][1]).to_bytes(header_bytes=512)),
                  ("fresh-state-step0", bob.Checkpoint.fresh().to_bytes())]


def _edges(fmt: str, base: bytes) -> list[tuple[str, bytes]]:
    """Files at the rules' edges, which the mutations seldom reach: a reader off by one, or skipping a rule the
    mutated files break only beside another, is caught by them. Judged as every other file."""
    from bob.formats.layout import ENVELOPE_HEAD, INPUT, PREDICTION_FIELDS, U32, U64

    def patched(*edits: "tuple[Any, int, int]") -> bytes:  # (number, offset, value) each
        out = bytearray(base)
        for number, at, value in edits:
            number.pack_into(out, at, value)
        return bytes(out)

    if fmt == "input":
        word = INPUT["prompt_words"].item(0)
        return [("edge-prompt-word-vocabulary", patched((U32, word, VOCABULARY))),
                ("edge-prompt-word-empty-less-1", patched((U32, word, EMPTY_PROMPT - 1))),
                ("edge-version-high-word", patched((U64, INPUT["version"].offset, 2**32 + 1)))]
    if fmt == "predictions":
        token, validity = (PREDICTION_FIELDS[name].offset for name in ("token", "validity"))
        return [("edge-token-vocabulary", patched((U32, token, VOCABULARY), (U32, validity, 1))),
                ("edge-token-without-validity", patched((U32, token, 1), (U32, validity, 0)))]
    def state(step: int, *values: "tuple[str, float]") -> bytes:  # the golden state, or the fresh one at step 0
        c = bob.Checkpoint.fresh() if step == 0 else bob.load_checkpoint(base)
        c.step = step
        for plane, value in values:
            getattr(c, plane)[9] = value
        return c.to_bytes(for_resume=False)

    room, inf = U64_MAX - UPDATES_PER_INVOCATION, float("inf")  # (D7: -0.0 is zero, never negative; inf non-finite)
    return [("edge-P-infinity", state(10, ("p", inf))), ("edge-V-minus-infinity", state(10, ("v", -inf))),
            ("edge-V-minus-zero", state(10, ("v", -0.0))), ("edge-step0-V-subnormal", state(0, ("v", 1e-45))),
            ("edge-step0-moments-minus-zero", state(0, ("m", -0.0), ("v", -0.0))),
            ("edge-step0-moment", state(0, ("m", 1.0))),
            ("edge-step-room-last", state(room)), ("edge-step-room-over", state(room + 1)),
            ("edge-cut-in-state-string", base[:40]), ("edge-magic-prefix", base[:5]),
            ("edge-header-bytes-largest", bob.load_checkpoint(base).to_bytes(header_bytes=MAX_HEADER_BYTES)),
            ("edge-header-bytes-over", patched((U64, ENVELOPE_HEAD["header_bytes"].offset, MAX_HEADER_BYTES + 64))),
            ("edge-over-the-size-bound", base + bytes(MAX_CHECKPOINT_BYTES + 1 - len(base))),
            ("edge-short-not-bob", bytes(16))]


def write_corpus(outdir: "str | os.PathLike[str]", *, seed: int = 20261130,
                 outcome: bool = True) -> list[dict[str, Any]]:
    """Write the labelled corpus and its manifest; the manifest's entries. Every file is staged before any is
    replaced (:func:`bob.commit.replace_all`; ``outcome``: the command's, not a scratch corpus read next),
    never through a link inside OUTDIR (it could lead out of the corpus); cut short (a full disk, a signal),
    it removes the directories it made: the corpus is whole, or the files there before are."""
    from bob.commit import replace_all
    from bob.fuzz.mutator import mutate, mutate_field, refresh_digests, spots
    from bob.progress import Progress  # (looked up when it runs: a test shows it on a terminal)

    root = Path(outdir)
    entries: list[dict[str, Any]] = []
    made: list[str] = []  # its directories, outermost first
    files: list[tuple[str, bytes, about]] = []

    def own(sub: Path) -> Path:
        for link in (root.joinpath(*sub.parts[:k]) for k in range(1, len(sub.parts) + 1)):
            if os.path.islink(link):
                raise Refused("is a symbolic link; the corpus's files are its own, never written through one",
                              option="OUTDIR", path=link)
        return root / sub

    def add(fmt: str, name: str, data: bytes, verdict: dict[str, Any]) -> None:
        sub = Path(fmt) / ("accepted" if verdict["verdict"] == "accept" else f"refused/{verdict['field']}")
        path = own(sub / f"{name}.bin")
        with about("OUTDIR", path.parent):  # the directory or file it could not make (a file in the way, a full
            make_directory(root / sub, made)  # disk, ulimit -f), not OUTDIR
        files.append((os.fspath(path), data, about("OUTDIR", path)))
        entries.append({"file": str(sub / f"{name}.bin"), "format": fmt, **verdict,
                        "sha256": hashlib.sha256(data).hexdigest()})

    try:
        with Progress("bob-fuzz", "conformance", sum(ATTEMPTS.values())) as progress:  # (ended on errors too)
            for fmt in FORMATS:
                rnd = random.Random(f"{seed}-{fmt}")
                accepted = _accepted(fmt)
                for name, data in accepted:
                    verdict = judge(fmt, data)
                    assert verdict["verdict"] == "accept", (fmt, name, verdict)
                    add(fmt, name, data, verdict)
                base = accepted[0][1]
                for name, data in _edges(fmt, base):
                    add(fmt, name, data, judge(fmt, data))
                kept: dict[str, tuple[int, int]] = {}  # field: files kept, how many of them break that rule alone
                seen: set[bytes] = set()
                names = [s.name for s in spots(base, fmt)]
                for attempt in range(ATTEMPTS[fmt]):
                    progress.advance(extra=f"{len(entries)} files")
                    if attempt < 4 * len(names):  # every spot first, then mixed mutations
                        data, spot = mutate_field(base, rnd, fmt, names[attempt % len(names)])
                    else:
                        data, spot = mutate(base, rnd, fmt, refresh=0.5), "mixed"
                    if fmt == "checkpoint" and rnd.random() < 0.5:
                        data = refresh_digests(data)
                    if data in seen:
                        continue
                    seen.add(data)
                    verdict = judge(fmt, data)
                    field, alone = verdict["field"], verdict["fields"] == [verdict["field"]]
                    count, alones = kept.get(field, (0, 0))  # one place kept for a file breaking its rule alone:
                    if verdict["verdict"] != "refuse" or count >= PER_FIELD or (  # a reader that skips the rule
                            not alone and count - alones >= PER_FIELD - 1):  # agrees where another one is broken too
                        continue
                    kept[field] = (count + 1, alones + alone)
                    add(fmt, f"{spot.replace('[', '').replace(']', '').replace('.', '-')}-{attempt:04d}", data, verdict)
        manifest = json.dumps({"format": "bob-conformance-1", "files": entries}, indent=1).encode("utf-8")
        files.append((os.fspath(own(Path("manifest.json"))), manifest, about("OUTDIR", root / "manifest.json")))
        for path, _, _ in files:  # again, just before: a link planted while the corpus was made
            own(Path(path).relative_to(root))
        replace_all(files, outcome=outcome)
    except BaseException:
        remove_empty_directories(made)
        raise
    return entries


def open_corpus(corpus: "str | os.PathLike[str]") -> list[dict[str, Any]]:
    """A corpus's manifest entries; a corpus that is missing, not a directory, without a readable
    ``manifest.json`` or with one bob did not write is a :class:`bob.commands.Refused` naming ``--corpus``."""
    if not os.path.isdir(corpus):
        with about("--corpus", corpus):  # (a deleted working directory is named as such)
            refuse_if_working_directory_gone(corpus)
            raise Refused("is not a directory (a corpus written by `bob-fuzz conformance`)" if os.path.lexists(corpus)
                          else "no such directory", option="--corpus", path=corpus)
    manifest = Path(corpus) / "manifest.json"
    with about("--corpus", manifest):
        try:
            text = read_bounded(manifest, 64 << 20)
        except FileTooLarge:
            raise Refused("manifest.json is larger than any bob writes", option="--corpus", path=manifest) from None
        if text is None:
            raise FileNotFoundError(2, "no manifest.json (write a corpus with `bob-fuzz conformance DIR`)",
                                    os.fspath(manifest))
    try:  # (not assert: the checks hold under python -O too)
        document = json.loads(text)
        files = document["files"]
        ours = document.get("format") == "bob-conformance-1" and isinstance(files, list) and all(
            isinstance(e["file"], str) and e["format"] in FORMATS and e["verdict"] in ("accept", "refuse")
            and isinstance(e.get("field", 0), (str, type(None))) and isinstance(e.get("fields", []), list)
            and isinstance(e.get("sha256", ""), str) and "\0" not in e["file"] and os.fsencode(e["file"])
            and (parts := Path(e["file"]).parts) and ".." not in parts and parts[0] != "/"  # (a link out: _as_labelled)
            for e in files)
    except (ValueError, KeyError, TypeError, RecursionError):
        ours = False
    if not ours:
        raise Refused("manifest.json is not a bob-conformance-1 manifest", option="--corpus", path=manifest)
    for e in files:  # before any reader runs
        _as_labelled(corpus, e)
    return files


def _as_labelled(corpus: "str | os.PathLike[str]", entry: dict[str, Any]) -> None:
    """The entry's file is a regular file of the corpus that bob can read, holding the bytes the manifest labels
    (its ``sha256``, where the manifest gives one): a file changed or removed is refused, never a disagreement."""
    path = Path(corpus) / entry["file"]
    if not os.path.realpath(path).startswith(os.path.join(os.path.realpath(corpus), "")):  # (a link planted since)
        raise Refused("leads out of the corpus, whose files are its own", option="--corpus", path=path)
    with about("--corpus", path):
        data = read_input(path)
    digest = hashlib.sha256(data).hexdigest()
    if entry.get("sha256", digest) != digest:
        raise Refused("is not the file manifest.json labels (another SHA-256): changed since the corpus was written",
                      option="--corpus", path=path)


def _bounded_output() -> None:
    """(In the reader, before it runs.) Past :data:`OUTPUT_LIMIT` bytes a file it writes ends it (SIGXFSZ, a crash)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)  # (never above the ulimit -f it inherits)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft if 0 <= soft < OUTPUT_LIMIT else OUTPUT_LIMIT, hard))


def _reader_verdict(command: list[str], path: Path, timeout: float) -> tuple[str, str | None]:
    shown = f".{os.sep}{path}" if str(path).startswith("-") else str(path)  # (a corpus -n: no option to the reader)
    argv = [a.replace("{}", shown) for a in command]
    if not any("{}" in a for a in command):
        argv.append(shown)
    code, printed = _ran(argv, timeout)
    if code is None or code < 0:
        return "timeout" if code is None else "crash", None
    verdict, said = ("accept" if code == 0 else "refuse"), None
    first = printed.split(b"\n", 1)[0]  # (json.loads takes bytes after a UTF-8 BOM too)
    if len(first) > HEAD and first.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r")[:1] in (b"{", b""):  # an object (or
        # blanks) cut where _ran stops keeping it: the field it names unread (no object: verdicts alone, as ever)
        return verdict, LINE_CUT
    with contextlib.suppress(ValueError, RecursionError):  # a line that is no JSON, or nested past the stack
        said = json.loads(first.strip())
    return verdict, said.get("field") if isinstance(said, dict) and isinstance(said.get("field"), str) else None


def _ran(argv: list[str], timeout: float) -> tuple[int | None, bytes]:
    """The reader's exit status (None: past ``timeout``) and the first 64 KiB it printed; why a process group of its
    own, a pipe and :data:`OUTPUT_LIMIT` (a crash past it): docs/fuzzing.md, "The conformance corpus"."""
    head, seen, code = b"", 0, None
    try:
        with spawned(argv, end=lambda proc: signal_group(proc, signal.SIGKILL), stdin=subprocess.DEVNULL,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                     preexec_fn=_bounded_output) as proc:
            read, deadline = proc.stdout.fileno(), time.monotonic() + timeout  # type: ignore[union-attr]
            while (code := proc.poll()) is not None or (left := deadline - time.monotonic()) > 0:
                ready = readable(read, 0 if code is not None else min(left, 0.05))
                chunk = os.read(read, 1 << 16) if ready else b""
                if not chunk and (code is not None or ready):  # exited, all read; or its output ended: wait for it
                    code = code if code is not None else proc.wait(timeout=max(left, 0))
                    break
                head, seen = (head + chunk)[:HEAD + 1], seen + len(chunk)  # (+ 1: a line of 64 KiB, then its end)
                if seen > OUTPUT_LIMIT:  # (once it exited, what comes is a child's that left its group: its own)
                    if code is None:
                        signal_group(proc, signal.SIGKILL)
                        code = proc.wait()
                    break
    except subprocess.TimeoutExpired:
        code = None
    except OSError as exc:  # (only its spawning raises one: a process limit is the machine's, as no descriptor is)
        raise Refused(f"cannot run the reader: {os_reason(exc)}", option="COMMAND", path=argv[0],
                      code=EXIT_SOFTWARE if exc.errno == errno.EAGAIN else EXIT_REFUSED) from None
    return code, head


def check(fmt: str, command: list[str], *, corpus: "str | os.PathLike[str] | None" = None,
          timeout: float = 30.0) -> dict[str, Any]:
    """Run ``command`` over the corpus's files of ``fmt``; agreements and disagreements by field."""
    from bob.commit import file_version
    from bob.progress import Progress

    if corpus is not None and not os.fspath(corpus):  # (Path("") is the working directory)
        raise Refused("an empty path", option="--corpus", path=corpus)
    if os.sep in command[0]:  # (./reader once the working directory is gone: said as for every path; the other
        with about("COMMAND", command[0]):  # words are the reader's to read, a sed script's slashes no path)
            refuse_if_working_directory_gone(command[0])
    fresh = scratch_directory("bob-conformance-") if corpus is None else contextlib.nullcontext(os.fspath(corpus))
    with fresh as root:  # a corpus given is refused (open_corpus) before the reader runs once
        if corpus is None:
            try:
                write_corpus(root, outcome=False)
            except Refused as exc:  # bob's own temporary (a full TMPDIR, ulimit -f): the machine's, no option's
                raise Refused(f"its temporary corpus: {exc.path}: {exc.message}", code=EXIT_SOFTWARE) from None
        by_field: dict[str, dict[str, int]] = {}
        disagreements: list[dict[str, Any]] = []
        every, seen = open_corpus(root), dict[str, "tuple[int, ...] | None"]()  # each file's version last labelled
        files = [e for e in every if e["format"] == fmt]
        if not files:  # (a reader that met no file agreed with nothing)
            raise Refused(f"its manifest lists no {fmt} file: nothing to check", option="--corpus", path=str(root))
        with Progress("bob-fuzz", f"check {fmt}", len(files)) as progress:  # ends its line, if one was shown
            for e in files:
                verdict, field = _reader_verdict(command, Path(root) / e["file"], timeout)
                for other in every:  # (every file as the reader left it: one whose stat changed, by its bytes)
                    try:
                        if seen.get(other["file"], ()) != (now := file_version(os.path.join(root, other["file"]))):
                            _as_labelled(root, other)  # (the stat before the read: a change during it is seen next)
                            seen[other["file"]] = now
                    except Refused as exc:  # bob's temporary corpus, gone with the check: the reader changed it
                        raise exc if corpus is not None else Refused(
                            f"changed or removed {show_path(other['file'])} of the temporary corpus it read: "
                            f"{exc.message}", option="COMMAND", path=command[0]) from None
                row = by_field.setdefault(show_path(e["field"] or "(accepted)"), dict(files=0, agree=0, disagree=0))
                row["files"] += 1
                problem, said = None, field and show_path(field)  # (said: the reader's field, escaped as outside text)
                if verdict != e["verdict"]:
                    problem = verdict if verdict in ("crash", "timeout") else f"{verdict}s what bob {e['verdict']}s"
                elif verdict == "refuse" and field is not None and field not in (e.get("fields") or [e["field"]]):
                    problem = "its first line passes 64 KiB" if field == LINE_CUT else f"names field '{said}'"
                row["agree" if problem is None else "disagree"] += 1
                if problem is not None:
                    disagreements.append({"file": show_path(e["file"]), "field": e["field"] and show_path(e["field"]),
                                          "bob": e["verdict"], "reader": verdict, "problem": problem,
                                          "reader_field": said})
                progress.advance(extra=f"{len(disagreements)} disagreeing")
    shown = os.fsencode(shlex.join(command)).decode("ascii", "backslashreplace")  # (argv's bytes: \xff, not \udcff)
    return {"format": fmt, "reader": one_line(shown), "files": len(files),  # (escaped: the user's bytes)
            "agreements": len(files) - len(disagreements), "disagreements": disagreements, "by_field": by_field}


def render_table(report: dict[str, Any]) -> str:
    rows: list[tuple[str, ...]] = [("field", "files", "agree", "disagree")]  # (the header names each count)
    rows += [(one_line(f), *(str(r[k]) for k in rows[0][1:])) for f, r in sorted(report["by_field"].items())]
    widths = [max(map(len, column)) for column in zip(*rows)]
    lines = [f"bob-fuzz check {report['format']}: {one_line(report['reader'])}"]
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.append(f"{report['agreements']} of {report['files']} files agree, {len(report['disagreements'])} disagree")
    lines += [f"  {one_line(d['file'])}: {one_line(d['problem'])}" for d in report["disagreements"][:LISTED]]
    if len(report["disagreements"]) > LISTED:
        lines.append(f"  and {len(report['disagreements']) - LISTED} more (--json lists every one)")
    return "\n".join(lines)


def reader_main(argv: list[str]) -> int:
    """bob's reader in the ``check`` convention: exit 0 accepts; else ``{"field": …}`` and exit 2
    (a file it cannot read: 66, a command line it does not take: 64)."""
    if len(argv) != 2 or ALIASES.get(argv[0], argv[0]) not in FORMATS:
        print(f"usage: python -m bob.fuzz.conformance {{{','.join(FORMATS)}}} FILE", file=sys.stderr)
        return 64  # EX_USAGE
    try:  # NumPy, where reading loads it, as bob's commands load it: an idle BLAS pool's start cost each file's
        with one_blas_thread():  # process about as much CPU as reading the file
            verdict = judge(ALIASES.get(argv[0], argv[0]), read_input(argv[1]))
    except OSError as exc:
        print(f"python -m bob.fuzz.conformance: cannot read {argv[1]!a}: {os_reason(exc)}", file=sys.stderr)
        return 66  # EX_NOINPUT
    if verdict["verdict"] == "accept":
        return 0
    print(json.dumps({"field": verdict["field"], "offset": verdict["offset"]}))
    return 2


if __name__ == "__main__":
    sys.exit(reader_main(sys.argv[1:]))
