"""The typed option converters every command's parser uses: each number finite and in range, and
anything else a :class:`~bob.refusals.Refused` naming the option (``nan``, ``inf``, ``1e309``, ``-1``,
``soon``, ``1.5`` for a count), the words of a usage error, and what a command line says before its
parser reads it (its ``command`` key, a ``--json``). :mod:`bob.commands` exports the converters with the
rest of the shared runner. Standard library only."""

from __future__ import annotations

import contextlib
import math

from bob.refusals import Refused
from bob.text import bounded, show_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import argparse
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = ["number_option", "seconds_option", "integer_option", "count_option", "checked_text", "hex_bytes", "MOST_ULP",
           "MOST_ATOL", "shown_argv", "with_unknown_words", "answered", "ANSWERING",
           "command_of", "given_before_dashes", "flag_read", "leftover", "subcommand_first"]

ANSWERING = ("-h", "--help", "--version")  # the options a command answers, whatever else its command line asks

# The bounds of --ulp and --atol (bob-inspect diff), and of bob.diff's ulp and atol (bob.ulp.tolerance):
MOST_ULP = 2**32  # past any two float32 values' distance on bob.ulp's ordered line
MOST_ATOL = 7e38  # past twice FLT_MAX: a tolerance can cover every difference of two finite values


def _plain(text: str) -> str:
    """``text`` if it is written as a shell user writes a number, else a ValueError: Python's
    ``int()`` and ``float()`` also read ``1_0`` as 10, a full-width ``２`` as 2 and `` 1 `` as 1."""
    if not text.isascii() or "_" in text or text != text.strip():
        raise ValueError(text)
    return text


def number_option(option: str, *, minimum: float = 0.0, positive: bool = False, maximum: float | None = None,
                  what: str = "a finite number") -> "Callable[[str], float]":
    """An argparse ``type``: a finite number, at least ``minimum`` (above it when
    ``positive``), at most ``maximum``; anything else (``nan``, ``inf``,
    ``1e309``, ``-1``, ``soon``) is a :class:`~bob.refusals.Refused` naming ``option``."""
    bound = f"> {minimum:g}" if positive else f">= {minimum:g}"
    if maximum is not None:
        bound += f" and <= {maximum:.0f}" if maximum < 1e16 else f" and <= {maximum:g}"  # (7e+38, not 39 digits)

    def convert(text: str) -> float:
        try:
            value = float(_plain(text))
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value) or value < minimum or (positive and value <= minimum) \
                or (maximum is not None and value > maximum):
            raise Refused(f"must be {what} {bound}, got \"{shown_argv(text)}\"", option=option)
        return value + 0.0  # (-0 is 0: a tolerance or a wait is never shown as -0.0)

    return convert


def seconds_option(option: str, *, minimum: float = 0.0, positive: bool = False,
                   maximum: float | None = None) -> "Callable[[str], float]":
    """:func:`number_option` for a number of seconds (``--wait``, ``--time``, ``--timeout``)."""
    return number_option(option, minimum=minimum, positive=positive, maximum=maximum,
                         what="a finite number of seconds")


def integer_option(option: str, *, minimum: int, maximum: int, what: str = "an integer") -> "Callable[[str], int]":
    """An argparse ``type``: a whole number (decimal, leading zeros and all, as ``seq -w`` writes
    them; or with a base prefix, ``0x``, ``0o``, ``0b``; a sign allowed) in ``[minimum, maximum]``;
    ``1.5``, ``nan``, ``1e309`` or a value out of range is a :class:`~bob.refusals.Refused` naming ``option``."""

    def convert(text: str) -> int:
        value: int | None = None
        for base in (10, 0):  # (base 0 alone, Python's literals, refuses 05 and reads 0x5)
            try:
                value = int(_plain(text), base)
                break
            except (TypeError, ValueError):
                pass
        if value is None or not minimum <= value <= maximum:
            raise Refused(f"must be {what} from {minimum} to {maximum}, got \"{shown_argv(text)}\"", option=option)
        return value

    return convert


def count_option(option: str, *, minimum: int = 1, maximum: int = 10**12) -> "Callable[[str], int]":
    """An argparse ``type``: a count (``--runs``, ``--jobs`` …) in ``[minimum, maximum]``."""
    return integer_option(option, minimum=minimum, maximum=maximum, what="a whole number")


def checked_text(check: "Callable[[str], object]") -> "Callable[[str], str]":
    """An argparse ``type`` that refuses a word as ``check`` does and keeps it as given (the command reads it again,
    also from a command line argparse never reads): a bad value before ``--help`` or ``--version`` is refused there
    as everywhere (:func:`answered` reads the words before them again)."""

    def checked(text: str) -> str:
        check(text)
        return text

    return checked


def hex_bytes(option: str, text: str) -> bytes:
    """The bytes a command-line value writes in hex (``--rows-hex``, ``--prompt-hex``): whole bytes, each a pair of
    digits, case aside; between bytes nothing or a separator (ASCII blanks, ``,`` or ``:``), each token perhaps after a
    ``0x`` (``6162``, ``61,62``, ``0x61 0x62``); anything else (``6,1`` is not 61, ``0x`` alone no byte, nor a value
    of separators only: only ``''`` is no bytes) a refusal naming ``option``."""
    import re

    tokens = re.split(r"[ \t\n\r\f\v,:]+", text)  # (ASCII blanks: re's \s took U+3000 and \x1c too)
    digits = [t[2:] if t[:2] in ("0x", "0X") else t for t in tokens]
    try:
        if any(len(d) % 2 or (t and not d) for t, d in zip(tokens, digits)) or (text and not any(tokens)):
            raise ValueError(text)
        return bytes.fromhex("".join(digits))
    except ValueError:
        raise Refused(f"{bounded(shown_argv(text))} is not hex (pairs of digits 0-9a-f, as 6162, 61,62 or 0x61 0x62)",
                      option=option) from None


def shown_argv(text: str) -> str:
    r"""argv's bytes as every refusal shows a path's (\xff\xe2\x80\xae, and \x5c, \x22), not as code points
    (\udcff\u202e): the one escaping of a command-line value in a refusal, applied once to the raw value (a usage
    error's whole message: argparse's own words hold neither a backslash nor a double quote, and the values it
    would quote with repr reach it raw, bob.commands.argument_parser)."""
    return "".join(ch if ch.isascii() and ch.isprintable() and ch not in '\\"' else show_path(ch) for ch in text)


def with_unknown_words(parser: "argparse.ArgumentParser", argv: "list[str]", refusal: Refused) -> Refused:
    """A usage error about missing arguments that also names the words of ``argv`` argparse does not know,
    which it reports only once none is missing ('bob-run --inpt a' said only that --input was required); an option
    given no value says how to give one that starts with '-' (argparse takes ``--prompt -a`` for two options);
    any other ``refusal`` as it is."""
    if refusal.message.startswith("usage: expected one argument") and refusal.option:
        return Refused(refusal.message.replace("argument", f"argument; a value that starts with '-' goes as "
                                               f"{refusal.option}=VALUE", 1), option=refusal.option)
    if not refusal.message.startswith(("usage: the following arguments", "usage: one of the arguments")):
        return refusal
    unknown = " ".join(shown_argv(word) if word else "''" for word in _unknown_words(parser, argv))  # ('' seen)
    return Refused(refusal.message.replace("usage: ", f"usage: unrecognized arguments: {unknown}; ", 1),
                   option=refusal.option) if unknown else refusal


def answered(parser: "argparse.ArgumentParser", argv: "list[str]", answer: "T") -> "T":
    """``answer`` (to ``--help`` or ``--version``) unless a word before it is one bob does not take: argparse
    answers as it meets the option and reports unknown words only at the end ('bob-run --js --version' printed
    the version). The command line up to the answering word is read as without it, and refused as that is."""
    end = next((i for i, word in enumerate(argv) if word in ANSWERING or word == "--"), len(argv))
    with _nothing_required(parser):
        parser.parse_args(argv[:end])  # (its words were read once already: no value's refusal is new here)
    return answer


def _unknown_words(parser: "argparse.ArgumentParser", argv: "list[str]") -> "list[str]":
    """What argparse leaves of ``argv`` once nothing is required (a word a REMAINDER takes is never one)."""
    read = _read_leniently(parser, argv)
    return [] if read is None else leftover(argv, read[1])


def leftover(argv: "list[str]", extras: "list[str]") -> "list[str]":
    """The words argparse left of ``argv``, but for its options' end: the first ``--``, when nothing follows it
    (no positional came to take what follows it: every ``--`` of ``argv`` is among them). One that words follow
    stays, which says why they are no options (``-- --input``)."""
    if extras[-1:] == ["--"] and extras.count("--") == argv.count("--") == 1:  # (after an unknown word too)
        return extras[:-1]
    return extras


def flag_read(parser: "argparse.ArgumentParser", argv: "list[str]", dest: str) -> "bool | None":
    """Whether the parser, reading ``argv`` with nothing required, sets the flag ``dest`` (``json``: a usage error's
    envelope, not a ``--json`` inside bob-fuzz check's reader command); None if it cannot read it even so."""
    read = _read_leniently(parser, argv)
    return None if read is None else bool(getattr(read[0], dest, False))


def _read_leniently(parser: "argparse.ArgumentParser", argv: "list[str]") -> "tuple[Any, list[str]] | None":
    with _nothing_required(parser), contextlib.suppress(Refused, SystemExit):  # (SystemExit: --help, --version)
        return parser.parse_known_args(argv)
    return None


@contextlib.contextmanager
def _nothing_required(parser: "argparse.ArgumentParser") -> "Iterator[None]":
    """No argument required, in the command or a subcommand, for the block: the parser is read again for the
    words it does not know (bob's parsers have no action that a second reading would repeat)."""
    import argparse

    required: "list[Any]" = []
    parsers, seen = [parser], set()
    while parsers:
        if id(p := parsers.pop()) in seen:  # (an alias is the same parser)
            continue
        seen.add(id(p))
        everything: "list[Any]" = [*p._actions, *p._mutually_exclusive_groups]
        required += [a for a in everything if a.required]
        parsers += [c for a in p._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices.values()]
    try:
        for a in required:
            a.required = False
        yield
    finally:
        for a in required:
            a.required = True


def given_before_dashes(argv: "list[str]", name: str) -> bool:
    """Whether ``name`` is a word of ``argv`` before its ``--`` (the options' end), if any: what a command
    line says before its parser has read it (``--json`` for a usage error's envelope)."""
    return name in argv[: argv.index("--")] if "--" in argv else name in argv


def subcommand_first(argv: "list[str]", subcommands: "dict[str, str] | None") -> "list[str]":
    """``argv`` with a ``--`` given before the subcommand moved after it (``bob-fuzz -- targets``: the options end,
    the first word left is the subcommand, and what follows it stays operands). argparse took the ``--`` for it."""
    end = argv.index("--") if subcommands and "--" in argv else -1
    if 0 <= end < len(argv) - 1 and argv[end + 1] in (subcommands or {}) and \
            all(word.startswith("-") and word != "-" for word in argv[:end]):  # (no subcommand given before it)
        return [*argv[:end], argv[end + 1], "--", *argv[end + 2:]]
    return argv


def command_of(prog: str, argv: "list[str]", subcommands: "dict[str, str] | None") -> str:
    """The ``command`` key: ``prog``, and the subcommand's own name when the command
    line has one (its first word that is not an option, if that is a subcommand or an alias of one: a word
    after it may be an option's value; none after ``--help`` or ``--version``, which the command answers)."""
    if subcommands:
        for word in argv:
            if word == "--" or word in ANSWERING:
                break
            if not word.startswith("-") or word == "-":
                return f"{prog} {subcommands[word]}" if word in subcommands else prog
    return prog
