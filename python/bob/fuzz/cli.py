"""The ``bob-fuzz`` command line (also ``python -m bob fuzz``) on bob's shared runner; its epilog lists the exit
codes."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import tempfile
from collections import Counter
from typing import Any, Callable, Iterator

from bob.commands import (EXIT_FOUND, EXIT_OK, EXIT_SOFTWARE, Outcome, Refused, about, add_common_options,
                          argument_parser, count_option, integer_option, output_directory, run_command, seconds_option)
from bob.formats.kinds import ALIASES, FORMATS
from bob.text import one_line, show_path

PROG = "bob-fuzz"
MAX_SECONDS = 30 * 24 * 3600.0  # a month: past that a number of seconds is a typo
SEED_MAX = 2**32 - 1  # libFuzzer's -seed is an unsigned int
MIN_TIMEOUT = 0.1  # seconds: below, a scheduler's delay is a "timeout" (minimize shrank a fast failure to zeros)


def max_jobs() -> int:
    """What ``--jobs`` may ask: twice this machine's usable CPUs (a worker waits on I/O and its reloads), at least 2."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(2, 2 * cpus)


def _format(text: str) -> str:
    name = ALIASES.get(text, text)
    if name not in FORMATS:
        raise Refused(f"usage: unknown format {show_path(text)}; one of {', '.join(FORMATS)}", option="--format")
    return name


def _parser() -> argparse.ArgumentParser:
    p = argument_parser(prog=PROG, description="Fuzz bob's formats, commands and native core; write and check "
                        "a conformance corpus for other implementations.",
                        epilog="exit codes: 0 nothing found, 1 found something (a finding, a failing replay, a "
                        "disagreement), 2 refused or a usage error, 70 unexpected or no verdict")
    add_common_options(p)
    sub = p.add_subparsers(dest="command", required=True, metavar="{targets,run,replay,minimize,conformance,check}")

    sub.add_parser("targets", help="list the targets and the property each checks")

    r = sub.add_parser("run", help="a coverage-guided campaign (atheris/libFuzzer)")
    r.add_argument("target", metavar="TARGET", help="a target name, or package.module:function")
    when = r.add_mutually_exclusive_group()
    when.add_argument("--time", type=seconds_option("--time", positive=True, maximum=MAX_SECONDS),
                      metavar="SECONDS", help="how long the engines run (default 60 s; their start-up comes on top)")
    when.add_argument("--runs", type=count_option("--runs"), metavar="N", help="how many executions, over all jobs")
    r.add_argument("--jobs", type=count_option("--jobs", maximum=max_jobs()), default=1, metavar="N",
                   help=f"worker processes sharing one corpus (1 to {max_jobs()} here: twice the usable CPUs)")
    r.add_argument("--corpus", metavar="DIR", help="the corpus directory (default .bob-fuzz/TARGET/corpus)")
    r.add_argument("--artifacts", default="fuzz-artifacts", metavar="DIR", help="for findings (default %(default)s)")
    r.add_argument("--seed", type=integer_option("--seed", minimum=0, maximum=SEED_MAX), metavar="N",
                   help="seed the engine (and the mutator) for a repeatable run")
    r.add_argument("--format", type=_format, metavar="{input,checkpoint,predictions}",
                   help="the format of a package.module:function target, for the field-aware mutator")
    r.add_argument("--engine", choices=("atheris", "loop"), default="atheris",
                   help="atheris (coverage-guided) or loop (seeded mutations, no engine, needs --runs)")

    rp = sub.add_parser("replay", help="re-run files or directories through their targets")
    rp.add_argument("paths", nargs="+", metavar="PATH")
    rp.add_argument("--target", help="the target (default: from the layout bob writes: .bob-fuzz/TARGET/..., "
                    "fuzz/regressions/TARGET/..., a conformance corpus's FORMAT/accepted|refused/..., or the name prefix)")

    mz = sub.add_parser("minimize", help="shrink a finding, keeping its failure (candidates run out of process)")
    mz.add_argument("path", metavar="PATH")
    mz.add_argument("--target", help="the target (default: inferred as for replay)")
    mz.add_argument("--output", "--out", dest="output", metavar="PATH",
                    help="where to write the smaller file, atomically (default PATH.min)")
    mz.add_argument("--max-tries", type=count_option("--max-tries", maximum=10**7), default=2000, metavar="N",
                    help="candidates run at most (default %(default)s)")
    timeout = seconds_option("--timeout", minimum=MIN_TIMEOUT, maximum=MAX_SECONDS)
    mz.add_argument("--timeout", type=timeout, default=60.0, metavar="SECONDS",
                    help="per candidate (default 60): longer is a hang (a failure of its own)")

    cf = sub.add_parser("conformance", help="write the labelled conformance corpus with manifest.json")
    cf.add_argument("outdir", metavar="OUTDIR")

    ck = sub.add_parser("check", help="run another reader over the conformance corpus: "
                        "bob-fuzz check --format F [--corpus DIR] -- COMMAND ... {}")
    ck.add_argument("--format", required=True, type=_format, metavar="{input,checkpoint,predictions}")
    ck.add_argument("--corpus", metavar="DIR", help="a corpus written by `bob-fuzz conformance` "
                    "(default: a fresh one in a temporary directory)")
    ck.add_argument("--timeout", type=timeout, default=30.0, metavar="SECONDS", help="per file (default 30)")
    ck.add_argument("reader", nargs=argparse.REMAINDER, metavar="-- COMMAND {}")
    for command in sub.choices.values():
        add_common_options(command)
    return p


def main(argv: list[str] | None = None) -> int:
    return run_command(PROG, _parser, _work, argv, unexpected_code=EXIT_SOFTWARE,
                       subcommands={name: name for name in COMMANDS})


def _work(args: argparse.Namespace) -> Outcome:
    from bob.fuzz.common import NoVerdict

    try:
        return COMMANDS[args.command](args)
    except NoVerdict as exc:  # no verdict, the machine's (a full disk) or the build's: said as it is, exit 70
        raise Refused(str(exc), code=EXIT_SOFTWARE) from None


def _known_target(name: str, fmt: str | None = None, option: str = "--target") -> None:
    """An unknown target is a usage error naming ``option``, before anything starts; what a target's module
    prints as it is imported goes to stderr, as what it prints when it runs (stdout: one object under --json)."""
    from bob.fuzz.common import load_target, stdout_on_stderr

    try:
        with stdout_on_stderr():
            load_target(name, fmt)
    except (ValueError, ImportError, AttributeError) as exc:
        raise Refused(f"usage: {exc}", option=option) from None


def cmd_targets(args: argparse.Namespace) -> Outcome:
    from bob.fuzz.targets import TARGETS

    width = max(map(len, TARGETS))
    text = "\n".join(f"{t.name:<{width}}  {t.property}" for t in TARGETS.values())
    return Outcome(EXIT_OK, {"targets": [{"name": t.name, "property": t.property, "format": t.format}
                                         for t in TARGETS.values()]}, text)


def cmd_run(args: argparse.Namespace) -> Outcome:
    from bob.fuzz.campaign import run_campaign
    from bob.fuzz.common import stdout_on_stderr
    from bob.fuzz.loop import seeded_loop
    from bob.fuzz.replay import OUTSIDE_SECONDS

    _known_target(args.target, None, "TARGET")
    if args.format is not None:  # (a named target's format is its own)
        _known_target(args.target, args.format, "--format")
    if args.engine == "loop":  # (--corpus would be ignored, a user looking there for one; nor would --jobs share runs)
        for option, wrong, said in (
                ("--runs", args.runs is None, "needs --runs N"),
                ("--corpus", args.corpus is not None, "keeps no corpus; --corpus goes with atheris"),
                ("--jobs", args.jobs != 1, "runs in this one process; --jobs goes with atheris")):
            if wrong:
                raise Refused(f"usage: --engine loop {said}", option=option)
        artifacts = output_directory("--artifacts", args.artifacts)
        with stdout_on_stderr():
            result = seeded_loop(args.target, args.runs, args.seed or 0, fmt=args.format, stop_on_finding=False,
                                 artifacts=artifacts, progress=True)
    else:
        import importlib.util

        if importlib.util.find_spec("atheris") is None:
            from bob.distribution import install_hint

            raise Refused(f"atheris is not installed: `{install_hint('fuzz')}`, or use --engine loop --runs N",
                          option="--engine")
        result = run_campaign(args.target, seconds=args.time, runs=args.runs, jobs=args.jobs, corpus=args.corpus,
                              artifacts=args.artifacts, seed=args.seed, fmt=args.format)
    share = "" if result.fast_path_share is None else f", fast path reached {result.fast_path_share:.0%}"
    lines = [f"{PROG} run {args.target}: {result.executions} executions in {result.seconds:.0f} s, "
             f"coverage {result.coverage}, corpus {result.corpus}{share}, {len(result.findings)} finding(s)"
             + (f" ({result.crashes} failing inputs)" if result.crashes > len(result.findings) else "")]
    for f in result.findings:  # (a target's words: escaped; an input not saved: no command to reproduce it)
        hang = OUTSIDE_SECONDS if f.key == "crash: timeout" else 0  # (the campaign's replay of it ran that long)
        lines.append(f"  {one_line(f.message)}\n    at {one_line(f.where)}"
                     + (f"\n    reproduce: {_replay_command(f.path, args.target, hang)}" if f.path else ""))
    lines += [f"  not counted: {one_line(f.message)}" for f in result.discarded]
    lines += [f"  note: {one_line(note)}" for note in result.notes]
    return Outcome(EXIT_FOUND if result.findings else EXIT_OK, result.as_dict(), "\n".join(lines))


def _replay_command(path: str, target: str, hang: float = 0.0) -> str:
    """The command replaying ``path``, each word as a shell takes it (a path starting with ``-`` as ``./-…``); a
    hang's under coreutils' ``timeout`` for ``hang`` seconds, as replay never would (docs/fuzzing.md, "Commands")."""
    word = _word(os.path.join(".", path) if path.startswith("-") else path)
    return f"timeout -k 5 {hang:g} " * (hang > 0) + f"{PROG} replay {word} --target {_word(target)}"


def _word(text: str) -> str:
    """``text`` as one shell word in printable ASCII: quoted, or as ``$'…'`` with ``\\xNN`` for any other byte."""
    raw = os.fsencode(text)
    if all(0x20 <= b < 0x7F for b in raw):
        return shlex.quote(text)
    return "$'" + "".join(chr(b) if 0x20 <= b < 0x7F and b not in b"'\\" else f"\\x{b:02x}" for b in raw) + "'"


def _target_of(path: Any, given: str | None) -> str:
    from bob.fuzz.replay import infer_target

    name = infer_target(path) if given is None else given  # ('' is a target name, refused as unknown)
    if name is None:
        raise Refused("usage: no target for this file: name one with --target (or keep it where bob puts it: "
                      ".bob-fuzz/TARGET/..., fuzz/regressions/TARGET/..., a conformance corpus's FORMAT/..., or name "
                      "it as an artifact: TARGET-<sha>.bin)", option="PATH", path=path)  # (never --target's value)
    return name


@contextlib.contextmanager
def _working_directory_kept() -> "Iterator[Callable[[], None]]":
    """A function that puts the working directory back where it is now, whatever a target did to it (by a
    descriptor: however deep, and as the kernel resolved each path given; with none left, nothing to return to)."""
    try:
        here = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield lambda: None
        return
    try:
        yield lambda: os.fchdir(here)
    finally:
        os.close(here)


def cmd_replay(args: argparse.Namespace) -> Outcome:
    from bob.failures import OUT_OF_MEMORY
    from bob.fuzz.common import NoVerdict, stdout_on_stderr
    from bob.fuzz.replay import files_under, read_input, replay_file, skipped
    from bob.progress import Progress

    if args.target is not None:
        _known_target(args.target)
    cargo = "`cargo test -p bob-core --test fuzz_replay` replays"  # (the Rust targets' files: fuzz/regressions/kernels)
    files, rust, passed_over = [], [], 0  # rust: the paths given under which some of those are passed over
    for path in args.paths:
        with about("PATH", path):  # (a directory under it that cannot be listed)
            found = list(files_under([path]))
            listed = [f for f in found if args.target or not skipped(f)]
            rust += [path] * (len(found) > len(listed))
            passed_over += len(found) - len(listed)  # (said: a directory's summary never reads as all of it replayed)
        for f in listed if os.path.isdir(path) else [path]:
            with about("PATH", f):  # a regular file bob can read, or refused before anything starts
                read_input(f)
        if not listed and not os.path.isdir(path):  # a file named is replayed or refused, never passed over
            raise Refused(f"a Rust target's file: {cargo} it (or name a --target)", option="PATH", path=path)
        files += [(f, _target_of(f, args.target)) for f in listed]
    if not files:
        raise Refused("no files to replay" + f"; those there are the Rust targets' ({cargo} them, or name a --target)"
                      * bool(rust), option="PATH", path=(rust or args.paths)[0])  # (the one that holds them)
    verdicts, unread = [], []
    with Progress(PROG, "replay", len(files)) as progress, stdout_on_stderr(), _working_directory_kept() as keep:
        for f, name in files:
            keep()  # (each path read from where it was listed: a target's os.chdir undone)
            try:
                with about("PATH", f):  # (one that went away since: refused, not a failing replay)
                    verdicts.append(replay_file(f, name))
            except Refused as exc:  # refused once the rest is replayed, unless a failure was found
                unread.append(exc)
            except (MemoryError, NoVerdict) as exc:  # the machine's, for this file: the others' verdicts stand
                said = str(exc) if isinstance(exc, NoVerdict) else f"{OUT_OF_MEMORY} while the target ran; no verdict"
                unread.append(Refused(said, option="PATH", path=f, code=EXIT_SOFTWARE))
            progress.advance()
    failed = sum(not v.passed for v in verdicts)
    if unread and not failed:
        raise unread[0]
    lines = [f"{'PASS' if v.passed else 'FAIL'}  {v.target}  {show_path(v.path)}"
             + ("" if v.passed else f"  {one_line(v.message)}") for v in verdicts]
    lines += [f"NOT REPLAYED  {exc.text}" for exc in unread]
    lines.append(f"{PROG} replay: {len(verdicts) - failed} passed, {failed} failed" + f", {len(unread)} not replayed"
                 * bool(unread) + f", {passed_over} passed over (the Rust targets': {cargo} them)" * bool(passed_over))
    data = {"passed": len(verdicts) - failed, "failed": failed, "passed_over": passed_over, "not_replayed":
            [exc.to_dict() for exc in unread], "files": [
                {"path": show_path(v.path), "target": v.target, "passed": v.passed, "message": one_line(v.message)}
                for v in verdicts]}
    return Outcome(EXIT_FOUND if failed else EXIT_OK, data, "\n".join(lines))


def cmd_minimize(args: argparse.Namespace) -> Outcome:
    from bob.commit import refuse_replacing_a_checkpoint, replace_all
    from bob.fileio import replace_target, same_file
    from bob.fuzz.replay import OUTSIDE_SECONDS, NotAlone, minimize_out_of_process, read_input

    with about("PATH", args.path):
        data = read_input(args.path)
    name = _target_of(args.path, args.target)
    _known_target(name)
    output = args.path + ".min" if args.output is None else args.output  # ("" is a path, refused as such)
    with about("--output", output):  # (last: its directory takes a file, O_TMPFILE none left: before hours of tries)
        target = replace_target(output)
        if same_file(args.path, target):
            raise Refused("is the file being minimized; bob-fuzz never replaces what it reads", option="--output",
                          path=output)
        refuse_replacing_a_checkpoint(target)  # (what the tries make, checkpoint or not, is unknown: refused before)
        tempfile.TemporaryFile(dir=os.path.dirname(target) or ".").close()
    try:
        small, failure, tries = minimize_out_of_process(name, data, max_tries=args.max_tries, timeout=args.timeout)
    except NotAlone as exc:
        raise Refused(str(exc), option="PATH", path=args.path) from None
    if failure is None:
        raise Refused("the input does not fail its target; nothing to minimize", option="PATH", path=args.path)
    replace_all([(output, small, about("--output", output))], keep=[args.path])  # (a link to it planted since)
    # a fixed-size format (a checkpoint) keeps its length: what shrinks is how many bytes are not zero
    d = {"input_bytes": len(data), "output_bytes": len(small), "input_nonzero_bytes": len(data) - data.count(0),
         "output_nonzero_bytes": len(small) - small.count(0), "output": show_path(output), "target": name,
         "failure": failure, "tries": tries}
    hang = max(args.timeout, OUTSIDE_SECONDS) * (failure == "timeout")  # (a replay starts its process first)
    text = (f"{PROG} minimize: {len(data)} -> {len(small)} bytes ({d['input_nonzero_bytes']} -> "
            f"{d['output_nonzero_bytes']} not zero) in {tries} tries: {show_path(output)} ({failure})\n"
            f"  reproduce: {_replay_command(output, name, hang)}")
    return Outcome(EXIT_OK, d, text, committed=f"wrote {show_path(output)}")


def cmd_conformance(args: argparse.Namespace) -> Outcome:
    from bob.fuzz.conformance import write_corpus

    outdir = output_directory("OUTDIR", args.outdir)
    with about("OUTDIR", outdir):
        entries = write_corpus(outdir)
    counts = dict(sorted(Counter(f"{e['format']} {e['verdict']}" for e in entries).items()))
    text = (f"{PROG} conformance: {len(entries)} files in {show_path(outdir)} (manifest.json): " +
            ", ".join(f"{k} {n}" for k, n in counts.items()))
    return Outcome(EXIT_OK, {"outdir": show_path(outdir), "files": len(entries), "counts": counts}, text,
                   committed=f"wrote {show_path(outdir)}")


def cmd_check(args: argparse.Namespace) -> Outcome:
    from bob.fuzz.conformance import check, render_table

    reader = args.reader[1:] if args.reader[:1] == ["--"] else args.reader
    if not reader:
        raise Refused("usage: give the reader's command after --, with {} where the file goes", option="COMMAND")
    report = check(args.format, reader, corpus=args.corpus, timeout=args.timeout)
    return Outcome(EXIT_FOUND if report["disagreements"] else EXIT_OK, report, render_table(report))


COMMANDS = {"targets": cmd_targets, "run": cmd_run, "replay": cmd_replay, "minimize": cmd_minimize,
            "conformance": cmd_conformance, "check": cmd_check}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
