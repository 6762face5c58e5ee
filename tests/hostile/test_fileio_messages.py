"""bob.fileio's refusals, word for word (issue 13): each kind of special file
is named as what it is, with the errno and path a caller can act on; a file
too large to read keeps its size and first bytes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from bob.fileio import FileTooLarge, NotARegularFile, read_bounded, replace_target
from conftest import make_special

KINDS = {
    "directory": ("a directory", errno.EISDIR),
    "fifo": ("a FIFO (named pipe)", errno.EINVAL),
    "socket": ("a socket", errno.EINVAL),
    "char-device": ("a character device", errno.EINVAL),
    "block-device": ("a block device", errno.EINVAL),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_special_file_is_named_by_its_kind(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "special"
    keep = make_special(kind, path)
    name, code = KINDS[kind]
    for call in (lambda: read_bounded(path, 100), lambda: replace_target(path)):
        with pytest.raises(NotARegularFile) as info:
            call()
        exc = info.value
        assert (exc.kind, exc.errno, exc.filename) == (name, code, str(path))
        assert str(exc) == f"[Errno {code}] {name}, not a regular file: '{path}'"
    del keep


def test_an_unknown_file_type_is_still_refused_in_words() -> None:
    exc = NotARegularFile("/somewhere", 0)
    assert (exc.kind, exc.errno, str(exc)) == ("not a regular file", errno.EINVAL,
                                                "[Errno 22] not a regular file, not a regular file: '/somewhere'")


def test_a_file_over_the_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(bytes(range(40)))
    assert read_bounded(path, 40) == bytes(range(40))
    with pytest.raises(FileTooLarge) as info:
        read_bounded(path, 39)
    assert (info.value.size, info.value.head, str(info.value)) == (40, bytes(range(16)), "40 bytes")
    assert read_bounded(tmp_path / "missing", 10) is None
