"""``bob-fixture``: write a bob input record from a corpus and three prompts (contract §3).

The fixture builder uses at most the corpus's first VOCABULARY + 1 bytes (pair k is
``(corpus[k mod n], corpus[(k+1) mod n])`` for k < VOCABULARY, one pair per
vocabulary entry), so only those are
read: a multi-gigabyte file or an endless stream costs nothing more.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import argparse

from bob.commands import EXIT_OK, Outcome, Refused, about, add_common_options, argument_parser, run_command
from bob.formats.constants import PROMPTS
from bob.options import hex_bytes
from bob.text import show_path

PROG = "bob-fixture"


def fixture_parser() -> "argparse.ArgumentParser":
    import argparse

    class _PromptAction(argparse.Action):
        """--prompt and --prompt-hex append to one list, in command-line order."""

        def __call__(self, parser, namespace, values, option_string=None):
            prompts = getattr(namespace, self.dest) or []
            value = hex_bytes(option_string, values) if option_string == "--prompt-hex" else os.fsencode(values)
            prompts.append(value)
            setattr(namespace, self.dest, prompts)
            namespace.prompt_options = getattr(namespace, "prompt_options", set()) | {option_string}

    parser = argument_parser(
        prog=PROG,
        description=f"Write a bob input record (bob-input v1) from a corpus and exactly {PROMPTS} prompts.",
        epilog="exit codes: 0 written, 1 unexpected, 2 refused",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", metavar="TEXT", help="the corpus, as the OS gives the argument")
    source.add_argument("--corpus", metavar="FILE", help="the corpus, read from a regular file as raw bytes")
    parser.add_argument("--prompt", dest="prompts", action=_PromptAction, metavar="P",
                        help="a prompt, as the OS gives the argument ('' for an empty prompt)")
    parser.add_argument("--prompt-hex", dest="prompts", action=_PromptAction, metavar="HEX",
                        help="a prompt given as hex, for any bytes")
    parser.add_argument("--output", "--out", dest="output", required=True, metavar="FILE",
                        help="the record, written atomically")
    add_common_options(parser)
    return parser


def read_corpus(path: str) -> tuple[bytes, int]:
    """The corpus bytes the record needs (at most 257) and the file's size.

    Only a regular file is read, and only its first bytes.
    """
    from bob.fileio import open_regular, refuse_if_working_directory_gone
    from bob.formats.constants import VOCABULARY

    need = VOCABULARY + 1
    try:
        fd, st = open_regular(path, os.O_RDONLY)  # opened once, as every path bob is given
    except FileNotFoundError:
        refuse_if_working_directory_gone(path)  # (an empty path, the directory gone: said as such)
        raise FileNotFoundError(2, "no such file", path) from None
    try:
        head = b""
        while len(head) < need and (more := os.read(fd, need - len(head))):
            head += more
    finally:
        os.close(fd)
    # its size: what was read where it ended sooner (a /sys file says 4096), at least that (/proc says 0)
    return head, len(head) if len(head) < need else max(st.st_size, len(head))


def build(args) -> dict:
    """Build and write the record; return the summary."""
    import hashlib

    import bob
    from bob.commit import replace_all
    from bob.fileio import replace_target, same_file

    with about("--output", args.output):
        target = replace_target(args.output)
    if args.corpus is not None:
        if same_file(args.corpus, target):
            raise Refused("names the same file as --corpus; each needs its own", option="--output", path=args.output)
        with about("--corpus", args.corpus):
            corpus, corpus_bytes = read_corpus(args.corpus)
    else:
        corpus = os.fsencode(args.text)
        corpus_bytes = len(corpus)
    with about("--corpus" if args.corpus is not None else "--text", args.corpus):
        record = bob.build_input(corpus, args.prompts)
    data = record.to_bytes()
    kept = [] if args.corpus is None else [args.corpus]  # (a link to it planted at --output since the first look)
    replace_all([(args.output, data, about("--output", args.output))], keep=kept)
    return {
        "output": show_path(args.output),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "corpus_bytes": corpus_bytes,
        "prompts_hex": [p.hex() for p in args.prompts],
    }


def _work(args) -> Outcome:
    prompts = args.prompts or []
    if len(prompts) != PROMPTS:
        only_hex = getattr(args, "prompt_options", None) == {"--prompt-hex"}
        raise Refused(f"usage: exactly {PROMPTS} prompts are needed (--prompt and --prompt-hex together), "
                      f"got {len(prompts)}", field="prompts", option="--prompt-hex" if only_hex else "--prompt")
    args.prompts = prompts
    summary = build(args)
    return Outcome(EXIT_OK, summary,
                   f"bob-fixture: wrote {summary['output']} ({summary['bytes']} bytes, sha256 {summary['sha256']})",
                   committed=f"wrote {summary['output']}")


def fixture_main(argv: list[str] | None = None) -> int:
    return run_command(PROG, fixture_parser, _work, argv)


main = fixture_main

if __name__ == "__main__":  # pragma: no cover
    from bob.signals import run_module

    run_module(fixture_main)
