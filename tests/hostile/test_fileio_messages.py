"""bob.fileio's refusals, word for word (issue 13): each kind of special file
is named as what it is, with the errno and path a caller can act on; a file
too large to read keeps its size and first bytes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from bob.fileio import FileTooLarge, NotARegularFile, read_bounded, read_bounded_buffer, replace_target
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
    make_special(kind, path)
    name, code = KINDS[kind]
    for call in (lambda: read_bounded(path, 100), lambda: replace_target(path)):
        with pytest.raises(NotARegularFile) as info:
            call()
        exc = info.value
        assert (exc.kind, exc.errno, exc.filename) == (name, code, str(path))
        assert str(exc) == f"[Errno {code}] {name}, not a regular file: '{path}'"


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


def test_the_buffer_reader_gives_the_very_buffer_it_read_into(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(bytes(range(200)))
    data = read_bounded_buffer(path, 200)
    assert type(data) is bytearray and data == bytes(range(200))
    assert type(read_bounded(path, 200)) is bytes
    path.write_bytes(b"")
    assert read_bounded_buffer(path, 200) == bytearray()
    assert read_bounded_buffer(tmp_path / "missing", 10) is None


def test_a_file_that_grows_while_it_is_read_is_read_to_the_limit_and_one_byte_past(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # fstat reports the size the file had when it was opened; writes since
    # then are read too, but never more than one byte past the limit.
    path = tmp_path / "growing"
    path.write_bytes(bytes(range(100)))
    real_fstat = os.fstat

    class Smaller:
        def __init__(self, st: os.stat_result) -> None:
            self._st = st
            self.st_size = 10

        def __getattr__(self, name: str) -> object:
            return getattr(self._st, name)

    monkeypatch.setattr(os, "fstat", lambda fd: Smaller(real_fstat(fd)))
    assert read_bounded_buffer(path, 100) == bytes(range(100))
    assert read_bounded(path, 1000) == bytes(range(100))
    with pytest.raises(FileTooLarge) as info:
        read_bounded_buffer(path, 50)
    assert (info.value.size, info.value.head) == (51, bytes(range(16)))


def test_the_growing_file_check_reaches_one_byte_past_the_limit_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # fstat says limit - 1 bytes (the buffer holds limit), the file has more by the time it is read.
    path = tmp_path / "growing"
    path.write_bytes(bytes(range(30)))
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: type("St", (), {"st_mode": real_fstat(fd).st_mode, "st_size": 19})())
    with pytest.raises(FileTooLarge) as info:
        read_bounded_buffer(path, 20)
    assert info.value.size == 21


def test_a_path_that_ends_in_a_slash_is_a_directory_to_be_replaced(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as info:
        replace_target(f"{tmp_path}/")
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.EISDIR, "a directory path, not a file", f"{tmp_path}/")
    with pytest.raises(IsADirectoryError, match="an empty path"):  # said as it is, not as a directory
        replace_target("")


def test_bytes_paths_are_written_like_str_paths(tmp_path: Path) -> None:
    from bob.fileio import write_atomic

    target = os.fsencode(tmp_path / "file.bin")
    assert replace_target(target) == str(tmp_path / "file.bin")
    write_atomic(target, b"payload")
    assert (tmp_path / "file.bin").read_bytes() == b"payload"


def test_a_backup_is_a_copy_where_hard_links_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bob.commit import Backup

    target = tmp_path / "pred.bin"
    target.write_bytes(b"old bytes")
    os.chmod(target, 0o640)

    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "hard links not allowed here")

    monkeypatch.setattr(os, "link", no_links)
    backup = Backup(str(target))
    assert backup.link is not None and Path(backup.link).read_bytes() == b"old bytes"
    target.write_bytes(b"new bytes")
    backup.restore()
    assert target.read_bytes() == b"old bytes" and (os.stat(target).st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.bin"]


def test_short_writes_are_continued_to_the_last_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bob.fileio import write_atomic

    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:7]))  # 7 bytes a call
    write_atomic(tmp_path / "out.bin", bytes(range(100)))
    assert (tmp_path / "out.bin").read_bytes() == bytes(range(100))


def test_the_directory_fsynced_is_the_target_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A rename is durable once its directory is fsynced: that directory, not the working one.
    from bob.fileio import write_atomic

    (tmp_path / "sub").mkdir()
    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    monkeypatch.chdir(tmp_path)
    write_atomic(tmp_path / "sub" / "out.bin", b"data")
    assert synced[-1] == str(tmp_path / "sub")


def test_a_path_too_long_to_open_is_that_os_error(tmp_path: Path) -> None:
    path = tmp_path / ("x" * 5000)
    with pytest.raises(OSError) as info:
        read_bounded(path, 10)
    assert info.value.errno == errno.ENAMETOOLONG and not isinstance(info.value, NotARegularFile)


def test_a_terminal_given_as_a_file_does_not_become_the_controlling_terminal(tmp_path: Path) -> None:
    # Opening a terminal without O_NOCTTY makes it the controlling terminal
    # of a session leader that has none (a daemon, a job run under setsid):
    # a --checkpoint naming a pty would then tie bob to it (SIGHUP on its
    # hang-up, /dev/tty opening it). bob refuses the path, and takes nothing.
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    try:
        name = os.ttyname(follower)
        os.close(follower)
        script = (
            "import errno, os, sys\n"
            "from bob.fileio import NotARegularFile, read_bounded_buffer\n"
            "try:\n"
            "    read_bounded_buffer(sys.argv[1], 100)\n"
            "except NotARegularFile as exc:\n"
            "    print(exc.kind)\n"
            "try:\n"
            "    os.close(os.open('/dev/tty', os.O_RDWR))\n"
            "    print('controlling terminal')\n"
            "except OSError as exc:\n"
            "    print(errno.errorcode[exc.errno])\n"
        )
        done = subprocess.run([sys.executable, "-c", script, name], capture_output=True, text=True,
                              start_new_session=True, stdin=subprocess.DEVNULL, timeout=60)
    finally:
        os.close(leader)
    assert done.stdout.split("\n") == ["a character device", "ENXIO", ""], done.stderr


def test_a_temporary_name_already_taken_is_never_written_through(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Temporary names carry 48 random bits, so a taken one means someone put
    # it there: a link to a file of theirs, say. It is skipped (O_EXCL),
    # never opened and written through, and the next name is used.
    import bob.fileio
    from bob.fileio import write_atomic

    victim = tmp_path / "victim"
    victim.write_bytes(b"theirs")
    target = tmp_path / "target"
    taken = tmp_path / ".target.bob-tmp-taken"
    os.symlink(victim, taken)
    names = iter([str(taken), str(taken), str(tmp_path / ".target.bob-tmp-fresh")])
    monkeypatch.setattr(bob.fileio, "temporary_name", lambda _target, pid=None: next(names))
    write_atomic(target, b"ours")
    assert victim.read_bytes() == b"theirs" and target.read_bytes() == b"ours"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".target.bob-tmp-taken", "target", "victim"]


def test_a_link_to_a_special_file_is_named_by_what_it_points_to(tmp_path: Path) -> None:
    # A socket cannot be opened at all, so its kind comes from stat of the
    # path; through a link that is the kind of the file linked to.
    make_special("socket", tmp_path / "socket")
    link = tmp_path / "link"
    os.symlink(tmp_path / "socket", link)
    with pytest.raises(NotARegularFile) as info:
        read_bounded(link, 100)
    assert (info.value.kind, info.value.errno, info.value.filename) == ("a socket", errno.EINVAL, str(link))


def test_a_new_file_gets_0o666_minus_the_umask(tmp_path: Path, umask: int) -> None:
    from bob.fileio import write_atomic

    write_atomic(tmp_path / "new", b"bytes")
    assert os.stat(tmp_path / "new").st_mode & 0o7777 == 0o666 & ~umask


def test_after_sixteen_taken_temporary_names_the_write_gives_up_and_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bob.fileio
    from bob.fileio import write_atomic

    target = tmp_path / "target"
    target.write_bytes(b"old")
    taken = tmp_path / ".target.bob-tmp-taken"
    taken.write_bytes(b"someone's")
    monkeypatch.setattr(bob.fileio, "temporary_name", lambda _target, pid=None: str(taken))
    with pytest.raises(FileExistsError) as info:
        write_atomic(target, b"new")
    assert (info.value.errno, info.value.filename) == (errno.EEXIST, str(target))
    assert str(info.value) == f"[Errno {errno.EEXIST}] could not create a temporary file: '{target}'"
    assert target.read_bytes() == b"old" and taken.read_bytes() == b"someone's"


@pytest.mark.parametrize("error", [PermissionError(errno.EACCES, "permission denied"),
                                   OSError(errno.EROFS, "read-only file system")])
def test_a_directory_that_cannot_be_made_keeps_its_reason(tmp_path: Path, monkeypatch, error: OSError) -> None:
    """mkdir's own reason (a read-only file system, no permission) is the one raised; it was
    hidden behind "no such file", from looking the name up after the failure."""
    from bob.fileio import make_directory

    def refuse(path, mode=0o777):
        raise error

    monkeypatch.setattr(os, "mkdir", refuse)
    with pytest.raises(OSError) as info:
        make_directory(tmp_path / "out")
    assert info.value.errno == error.errno and not (tmp_path / "out").exists()


@pytest.mark.parametrize("call, code", [("write", errno.ENOSPC), ("fsync", errno.EIO), ("open", errno.EACCES)])
def test_a_write_that_fails_names_the_file_it_was_for(tmp_path: Path, monkeypatch, call: str, code: int) -> None:
    """A full disk, a failing device or a directory this user cannot write: the error names the file the
    caller asked for (a disk full of anything was "[Errno 28] No space left on device", naming nothing, and a
    read-only directory named a temporary that was never made); the target stays as it was."""
    from bob.fileio import TEMP_MARK, write_atomic

    real = getattr(os, call)

    def failing(*args, **kwargs):
        if call != "open" or TEMP_MARK in os.fspath(args[0]):
            raise OSError(code, os.strerror(code), *([args[0]] if call == "open" else []))
        return real(*args, **kwargs)

    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    (tmp_path / "link.bin").symlink_to("out.bin")
    monkeypatch.setattr(os, call, failing)
    for given in (target, tmp_path / "link.bin"):  # named as given, as every other refusal of the write names it
        with pytest.raises(OSError) as info:
            write_atomic(given, b"new bytes")
        assert (info.value.errno, str(info.value)) == (code, f"[Errno {code}] {os.strerror(code)}: '{given}'")
    monkeypatch.undo()
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["link.bin", "out.bin"]


def test_an_error_of_no_os_call_keeps_its_words(tmp_path: Path, monkeypatch) -> None:
    """A ``TimeoutError("budget")`` a signal handler raises mid-write is no OS error about the file: it
    keeps its words (naming the file made it "[Errno None] None: '.../out.bin'")."""
    from bob.fileio import write_atomic

    def timeout(fd, data):
        raise TimeoutError("budget")

    monkeypatch.setattr(os, "write", timeout)
    with pytest.raises(TimeoutError) as info:
        write_atomic(tmp_path / "out.bin", b"new bytes")
    assert (str(info.value), info.value.filename) == ("budget", None)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_a_checkpoint_over_ulimit_f_names_its_path(tmp_path: Path) -> None:
    """``ulimit -f``: the library's own writer raises EFBIG naming the checkpoint, and leaves nothing."""
    import subprocess
    import sys

    target = tmp_path / "ck.bin"
    script = ("import resource, signal, sys\n"
              "from bob import Checkpoint\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the error, not the signal\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
              "try:\n    Checkpoint.fresh().write(sys.argv[1])\nexcept OSError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60)
    assert done.stdout == f"[Errno {errno.EFBIG}] File too large: '{target}'\n", done
    assert os.listdir(tmp_path) == []
