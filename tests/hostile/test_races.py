"""Races made deterministic: a second process meets a bob-run at every point of its commit window
(the race hook, bob.lock.pause_at; bob.fuzz.race). No round relies on the scheduler's luck."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bob
import bob.lock
from bob.lock import COMMIT_WINDOW, pause_at
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from bob.fuzz import race

RECORD = bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "rec.bin").write_bytes(RECORD)
    return tmp_path


def argv(work: Path) -> list[str]:
    return ["--json", "--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"),
            "--predictions", str(work / "pred.bin")]


def first_run_meets(work: Path, point: str, meet) -> tuple[int, object]:
    """The first bob-run (a child) waits at ``point`` while ``meet()`` runs; its exit and what meet gave."""
    with race.Meeting(point, meet) as meeting:
        first = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env,
                               capture_output=True, text=True, timeout=120)
    assert meeting.met, f"the first run never came to {point}: {first.stderr[-300:]}"
    return first.returncode, meeting.result


@pytest.mark.parametrize("point", COMMIT_WINDOW)
def test_two_concurrent_runs_lose_no_update(work: Path, point: str) -> None:
    """A second bob-run --wait started at each point of the first one's commit waits for the lock,
    then trains from the first one's checkpoint: both updates are kept."""
    first, second = first_run_meets(work, point, lambda: race.second_run(argv(work)))
    out, err = second.communicate(timeout=120)
    assert (first, second.returncode) == (0, 0), err
    want = bob.invoke(RECORD, bob.invoke(RECORD, b"", threads=1).checkpoint_bytes(), threads=1)
    assert (work / "ck.bin").read_bytes() == want.checkpoint_bytes()
    assert (work / "pred.bin").read_bytes() == want.predictions_bytes()
    assert json.loads(out)["step_after"] == 2 * U
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.parametrize("point", COMMIT_WINDOW)
def test_concurrent_runs_without_wait_either_run_or_say_75(work: Path, point: str) -> None:
    def without_wait() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=race.child_env(),
                              capture_output=True, text=True, timeout=120)

    first, second = first_run_meets(work, point, without_wait)
    assert first == 0 and second.returncode == 75, second.stderr
    assert "in use by another bob-run" in json.loads(second.stdout)["error"]["message"]
    assert bob.load_checkpoint((work / "ck.bin").read_bytes()).step == U


@pytest.mark.parametrize("point", COMMIT_WINDOW)
def test_two_runs_on_two_checkpoints_sharing_the_predictions_exclude_each_other(work: Path, point: str) -> None:
    """Every file a run replaces is locked, not only the checkpoint: a second run on another checkpoint
    that names the same --predictions says 75 naming it, at every point of the first one's commit, and
    leaves the first one's backup of the old predictions alone (it removed it before: a rollback lost them)."""
    (work / "pred.bin").write_bytes(b"old predictions")
    other = [*argv(work)[:4], str(work / "other.ck"), *argv(work)[5:]]

    def second() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bob", "run", *other], env=race.child_env(),
                              capture_output=True, text=True, timeout=120)

    first, second_run = first_run_meets(work, point, second)
    error = json.loads(second_run.stdout)["error"]
    assert first == 0 and second_run.returncode == 75, second_run.stderr
    assert (error["option"], error["path"]) == ("--predictions", str(work / "pred.bin"))
    assert "in use by another bob-run" in error["message"] and not (work / "other.ck").exists()
    assert (work / "pred.bin").read_bytes() == bob.invoke(RECORD, b"", threads=1).predictions_bytes()
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.parametrize("option", ["--predictions", "--trace"])
def test_a_checkpoint_committed_while_another_run_waits_to_write_over_it_is_kept(work: Path, option: str) -> None:
    """A second run waiting for the lock of a file it would write predictions or a trace to, while the first
    commits a checkpoint there: the look at what the file holds is under the lock, after the wait (before it,
    the file was no checkpoint yet, and the second run replaced the first one's new checkpoint)."""
    over = str(work / "ck.bin")
    other = ["--json", "--input", str(work / "rec.bin"), "--checkpoint", str(work / "other.ck"), "--predictions",
             over if option == "--predictions" else str(work / "other.pred"),
             *["--trace", over] * (option == "--trace")]
    first, second = first_run_meets(work, "locked", lambda: race.second_run(other))
    out, err = second.communicate(timeout=120)
    error = json.loads(out)["error"]
    assert (first, second.returncode) == (0, 2), err
    assert (error["option"], error["path"]) == (option, str(work / "ck.bin"))
    assert error["message"].startswith("holds a bob checkpoint")
    assert (work / "ck.bin").read_bytes() == bob.invoke(RECORD, b"", threads=1).checkpoint_bytes()
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.parametrize("name,option", [("pred.bin", "--predictions"), ("run.trace", "--trace")])
def test_a_companion_s_lock_file_deleted_while_held_stops_the_run(work: Path, name: str, option: str) -> None:
    """Each lock is checked before the commit, not only the checkpoint's: the predictions' or the trace's lock
    file deleted while the run holds it is exit 75 naming it, nothing changed."""
    traced = [*argv(work), "--trace", str(work / "run.trace")]
    lock = Path(bob.lock.lock_path_for(str(work / name)))
    with race.Meeting("staged", lambda: lock.unlink()) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *traced], env=meeting.env, capture_output=True,
                             text=True, timeout=120)
    error = json.loads(run.stdout)["error"]
    assert meeting.met and run.returncode == 75 and (error["option"], error["path"]) == (option, str(work / name))
    assert "was deleted or replaced while this run held it" in error["message"]
    assert sorted(p.name for p in work.iterdir()) == ["rec.bin"]


@pytest.mark.parametrize("point", COMMIT_WINDOW)
def test_the_lock_free_clean_up_spares_a_live_run_at_every_point(work: Path, point: str) -> None:
    """The library's clean-up removes no file of a run that is alive, even from another PID namespace,
    where every pid looks dead (race.lock_free_clean_up): it removed the run's temporaries and its
    backups, the only copies of the old predictions; it now leaves a target whose lock a bob-run holds."""
    (work / "ck.bin").write_bytes(b"")
    (work / "pred.bin").write_bytes(b"old predictions")  # (a backup link holds them from predictions-renamed on)
    first, removed = first_run_meets(work, point, lambda: race.lock_free_clean_up(str(work / "ck.bin"),
                                                                                   str(work / "pred.bin")))
    assert first == 0 and removed == []
    assert bob.load_checkpoint((work / "ck.bin").read_bytes()).step == U


def test_the_hook_holds_none_of_what_its_writer_sends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipe is read until its writer closes it, and what comes is dropped: a hook pointed at a large
    file (or a writer that sends much) held it all in memory."""
    import tracemalloc

    large = tmp_path / "large"
    with open(large, "wb") as f:
        f.truncate(256 << 20)  # sparse: no disk, 256 MiB to read
    monkeypatch.setenv("BOB_COMMIT_PAUSE", f"staged:{large}")
    tracemalloc.start()
    try:
        pause_at("staged")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 and "BOB_COMMIT_PAUSE" not in os.environ


def test_the_hook_is_inert_unless_set_and_pauses_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOB_COMMIT_PAUSE", raising=False)
    pause_at("staged")  # nothing set: returns at once
    monkeypatch.setenv("BOB_COMMIT_PAUSE", f"checked:{tmp_path / 'no-such-pipe'}")
    pause_at("staged")  # another point: returns at once, the hook still set
    pause_at("checked")  # no such pipe: the run goes on (a wrong hook never fails a commit)
    assert "BOB_COMMIT_PAUSE" not in os.environ
    seen: list[str] = []
    with race.Meeting("staged", lambda: seen.append("met")) as meeting:
        pause_at("locked")
        pause_at("staged")
        pause_at("staged")  # once: the hook is gone
    assert meeting.met and seen == ["met"]


@pytest.mark.parametrize("how", ["a link to the predictions", "the trace made read-only",
                                 "the predictions rewritten", "the checkpoint's link re-pointed"])
def test_a_file_changed_while_a_run_trained_stops_it_with_nothing_renamed(work: Path, how: str) -> None:
    """Only the checkpoint was checked again before the commit: a second link to the predictions, a
    read-only trace (both refused at the start) or a re-pointed checkpoint link, made while the run
    trained, were replaced anyway, exit 0 (the names split, the mode lost, the run's checkpoint written
    where the link no longer pointed). Now exit 75 naming the file, every file as it was."""
    step10 = bob.invoke(RECORD, b"", threads=1).checkpoint_bytes()
    (work / "a.ck").write_bytes(step10)
    (work / "b.ck").write_bytes(step10)
    (work / "ck.bin").symlink_to("a.ck")
    (work / "pred.bin").write_bytes(b"old predictions")
    (work / "run.trace").write_bytes(b"old trace")
    change, option, name = {
        "a link to the predictions": (lambda: os.link(work / "pred.bin", work / "pred.link"), "--predictions",
                                      "pred.bin"),
        "the trace made read-only": (lambda: os.chmod(work / "run.trace", 0o444), "--trace", "run.trace"),
        "the predictions rewritten": (lambda: (work / "pred.bin").write_bytes(b"other predictions"), "--predictions",
                                      "pred.bin"),
        "the checkpoint's link re-pointed": (lambda: (work / "ck.bin").unlink() or (work / "ck.bin").symlink_to("b.ck"),
                                             "--checkpoint", "ck.bin"),
    }[how]
    def files() -> dict[str, tuple[bytes, int]]:  # (bob's own .NAME.bob-lock and temporaries aside)
        return {p.name: (p.read_bytes(), p.stat().st_mode) for p in work.iterdir() if not p.name.startswith(".")}

    changed: dict[str, tuple[bytes, int]] = {}
    with race.Meeting("staged", lambda: [change(), changed.update(files())]) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work), "--trace", str(work / "run.trace")],
                             env=meeting.env, capture_output=True, text=True, timeout=120)
    error = json.loads(run.stdout)["error"]
    assert meeting.met and run.returncode == 75 and (error["option"], error["path"]) == (option, str(work / name))
    assert changed and files() == changed and not [p.name for p in work.iterdir() if p.name.startswith(".")]


def test_a_link_planted_where_the_predictions_will_go_stops_the_run(work: Path) -> None:
    """A missing file and a link that resolves nowhere (a loop) both had no version (None): the link
    planted while the run trained was replaced by the predictions, exit 0."""
    with race.Meeting("staged", lambda: os.symlink("pred.bin", work / "pred.bin")) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env, capture_output=True,
                             text=True, timeout=120)
    assert meeting.met and run.returncode == 75 and json.loads(run.stdout)["error"]["option"] == "--predictions"
    assert os.readlink(work / "pred.bin") == "pred.bin" and not (work / "ck.bin").exists()


@pytest.mark.parametrize("also_the_checkpoint", [False, True])
def test_predictions_a_library_writer_wrote_during_the_commit_are_kept(work: Path, also_the_checkpoint: bool) -> None:
    """Between the predictions' rename and the checkpoint's, a library writer (no lock) wrote the
    predictions: bob-run committed beside them (its JSON naming other predictions), or, when it also
    wrote the checkpoint, bob-run's rollback put the old predictions back over the library's. Now
    exit 75 naming --predictions, and the library's files are left as it wrote them."""
    step10 = bob.invoke(RECORD, b"", threads=1)
    step10.checkpoint.write(work / "ck.bin")
    step10.predictions.write(work / "pred.bin")
    other = bob.invoke(RECORD, bob.invoke(RECORD, step10.checkpoint, threads=1).checkpoint, threads=1)

    def library_writer() -> None:
        other.predictions.write(work / "pred.bin")
        if also_the_checkpoint:
            other.checkpoint.write(work / "ck.bin")

    code, _ = first_run_meets(work, "predictions-renamed", library_writer)
    assert code == 75
    assert (work / "pred.bin").read_bytes() == other.predictions_bytes()
    want = other.checkpoint_bytes() if also_the_checkpoint else step10.checkpoint_bytes()
    assert (work / "ck.bin").read_bytes() == want
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.parametrize("option, name", [("--predictions", "pred.bin"), ("--trace", "run.trace")])
def test_a_file_written_in_place_during_the_commit_is_kept(work: Path, option: str, name: str) -> None:
    """Another process wrote into the predictions (or the trace) bob-run had just renamed into place:
    the same inode, so bob-run committed beside bytes that were not its own, exit 0. Now exit 75
    naming the file, which is left as the other process wrote it; the checkpoint is the old one."""
    step10 = bob.invoke(RECORD, b"", threads=1)
    step10.checkpoint.write(work / "ck.bin")

    def write_in_place() -> None:
        with open(work / name, "r+b") as f:
            f.write(b"foreign")

    with race.Meeting("predictions-renamed", write_in_place) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work), "--trace", str(work / "run.trace")],
                             env=meeting.env, capture_output=True, text=True, timeout=120)
    assert meeting.met and run.returncode == 75 and json.loads(run.stdout)["error"]["option"] == option
    assert (work / name).read_bytes()[:7] == b"foreign" and (work / "ck.bin").read_bytes() == step10.checkpoint_bytes()


@pytest.mark.parametrize("point", ["staged", "predictions-renamed"])
@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_the_checkpoint_s_temporary_written_during_the_commit_stops_the_run(work: Path, point: str, how: str) -> None:
    """Another process wrote into (or renamed a file over) the new checkpoint bob-run had staged: bob-run
    committed it, exit 0, printing the SHA-256 of bytes it never wrote, beside its new predictions. Now
    exit 75 naming the checkpoint; the old checkpoint and predictions are where they were, and no temporary."""
    step10 = bob.invoke(RECORD, b"", threads=1)
    step10.checkpoint.write(work / "ck.bin")
    step10.predictions.write(work / "pred.bin")

    def write_the_temporary() -> None:
        [tmp] = [p for p in work.iterdir() if p.name.startswith(".ck.bin.bob-tmp-")]
        if how == "in place":
            with open(tmp, "r+b") as f:
                f.write(step10.checkpoint_bytes()[:4096])
        else:
            (work / "other").write_bytes(step10.checkpoint_bytes())
            os.replace(work / "other", tmp)

    with race.Meeting(point, write_the_temporary) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env,
                             capture_output=True, text=True, timeout=120)
    assert meeting.met and meeting.error is None and run.returncode == 75, run.stdout + run.stderr
    error = json.loads(run.stdout)["error"]
    assert (error["option"], error["path"]) == ("--checkpoint", str(work / "ck.bin"))
    assert "its new file was written by another process" in error["message"]
    assert (work / "ck.bin").read_bytes() == step10.checkpoint_bytes()
    assert (work / "pred.bin").read_bytes() == step10.predictions_bytes()
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.parametrize("how", ["in place", "replaced twice"])
def test_a_checkpoint_changed_while_a_run_trained_is_never_overwritten(work: Path, how: str) -> None:
    """The check before the commit compared (device, inode) only: a checkpoint rewritten in place kept
    it, and two atomic replaces on ext4 gave the path its first inode number again; bob-run then wrote
    its step 20 over the other writer's checkpoint and exited 0 (an update lost)."""
    step10 = bob.invoke(RECORD, b"", threads=1).checkpoint
    (work / "ck.bin").write_bytes(step10.to_bytes())
    step20 = bob.invoke(RECORD, step10, threads=1).checkpoint
    step30 = bob.invoke(RECORD, step20, threads=1).checkpoint

    def change() -> None:
        if how == "in place":
            with open(work / "ck.bin", "r+b") as f:
                f.write(step30.to_bytes())
        else:
            for checkpoint in (step20, step30):
                checkpoint.write(work / "ck.bin")

    code, _ = first_run_meets(work, "staged", change)
    assert code == 75 and (work / "ck.bin").read_bytes() == step30.to_bytes()


@pytest.mark.parametrize("point", COMMIT_WINDOW[:5])
@pytest.mark.parametrize("option", ["--predictions", "--trace"])
def test_a_directory_moved_during_the_commit_keeps_its_old_file_or_the_new_one(work: Path, point: str,
                                                                              option: str) -> None:
    """The directory of the predictions (or the trace) renamed by another process during the commit: bob-run
    said 75 "written by another process" and left the new file there beside the old checkpoint, the old one
    under a temporary name the next run deletes, and its lock file; committed, it left its backup and lock
    there. Every call of the commit now goes through the directory's descriptor: the moved directory holds the
    old file when bob-run refuses, the new one when it commits, and nothing else."""
    step10 = bob.invoke(RECORD, b"", threads=1, trace=True)
    step10.checkpoint.write(work / "ck.bin")
    (work / "out").mkdir()
    name = {"--predictions": "pred.bin", "--trace": "run.trace"}[option]
    old = {"pred.bin": step10.predictions_bytes(), "run.trace": step10.trace_bytes()}
    files = {"pred.bin": work / "pred.bin", "run.trace": work / "run.trace", name: work / "out" / name}
    for each, path in files.items():
        path.write_bytes(old[each])
    args = ["--json", "--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions",
            str(files["pred.bin"]), "--trace", str(files["run.trace"])]
    with race.Meeting(point, lambda: os.rename(work / "out", work / "moved")) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *args], env=meeting.env, capture_output=True,
                             text=True, timeout=120)
    assert meeting.met and run.returncode in (0, 2, 75), run.stdout + run.stderr
    new = bob.invoke(RECORD, step10.checkpoint_bytes(), threads=1, trace=True)
    want = {"pred.bin": new.predictions_bytes(), "run.trace": new.trace_bytes()} if run.returncode == 0 else old
    assert [p.name for p in (work / "moved").iterdir()] == [name]
    assert (work / "moved" / name).read_bytes() == want[name]
    assert (work / "ck.bin").read_bytes() == (new if run.returncode == 0 else step10).checkpoint_bytes()


@pytest.mark.parametrize("point, name", [("staged", ".pred.bin.bob-tmp-"), ("predictions-renamed", "pred.bin"),
                                         ("checked", ".ck.bin.bob-tmp-")])
def test_a_new_file_removed_during_the_commit_is_75_with_the_old_files_back(work: Path, point: str, name: str) -> None:
    """Another process removed a file bob-run was committing: its staged predictions or checkpoint (exit 2,
    "no such file or directory" naming a file that was there), or the predictions just renamed into place
    (exit 75 "written by another process", no predictions left at all, the old ones dropped with the backup).
    Now exit 75 "removed by another process", and the old files are where they were."""
    bob.invoke(RECORD, b"", threads=1).checkpoint.write(work / "ck.bin")
    old = (work / "ck.bin").read_bytes()
    (work / "pred.bin").write_bytes(b"old predictions")

    def remove() -> None:
        [path] = [p for p in work.iterdir() if p.name.startswith(name)]
        path.unlink()

    code, _ = first_run_meets(work, point, remove)
    assert code == 75
    assert ((work / "ck.bin").read_bytes(), (work / "pred.bin").read_bytes()) == (old, b"old predictions")
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


def test_the_predictions_touched_during_the_commit_are_still_its_own(work: Path) -> None:
    """A touch of the predictions bob-run had just renamed into place (its bytes, a new mtime) was taken
    for another process's write: exit 75, the new predictions left beside the old checkpoint and the old
    ones dropped. The same inode with the same bytes is bob-run's file: it commits."""
    (work / "pred.bin").write_bytes(b"old predictions")
    code, _ = first_run_meets(work, "predictions-renamed", lambda: os.utime(work / "pred.bin", (1, 1)))
    assert code == 0 and bob.load_checkpoint((work / "ck.bin").read_bytes()).step == U


@pytest.mark.parametrize("name, option", [("pred.bin", "--predictions"), ("run.trace", "--trace")])
@pytest.mark.parametrize("to", ["victim", "itself", "a FIFO", "a directory"])
def test_a_file_replaced_by_a_link_while_the_run_waited_for_its_lock_is_busy(work: Path, name: str, option: str,
                                                                             to: str) -> None:
    """A link put where the predictions (or the trace) were while bob-run waited for its locks: it refused "could not
    be read to tell whether it holds a checkpoint (too many levels of symbolic links)", exit 2, a bad path to a
    script, where another process changed the file it would replace (exit 75, nothing changed); a FIFO was "illegal
    seek", a directory "it has 2 hard links"."""
    bob.invoke(RECORD, b"", threads=1).checkpoint.write(work / "ck.bin")
    (work / name).write_bytes(b"old")
    (work / "victim").write_bytes(b"VICTIM")
    before = {p.name: p.read_bytes() for p in work.iterdir()}

    def plant() -> None:
        (work / name).unlink()
        if to == "a FIFO":
            os.mkfifo(work / name)
        elif to == "a directory":
            (work / name).mkdir()
        else:
            (work / name).symlink_to(to if to == "victim" else name)

    with race.Meeting("locked", plant) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work), "--trace", str(work / "run.trace")],
                             env=meeting.env, capture_output=True, text=True, timeout=120)
    assert meeting.met and run.returncode == 75, run.stdout + run.stderr
    error = json.loads(run.stdout)["error"]
    assert (error["option"], error["path"]) == (option, str(work / name))
    assert error["message"] == "was changed, replaced or removed by another process since this run began; nothing " \
        "was changed"
    (work / name).rmdir() if to == "a directory" else (work / name).unlink()
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.name != name} == {
        n: data for n, data in before.items() if n != name}  # (no temporary, no lock; the victim untouched)


def test_a_link_given_the_inode_number_of_a_renamed_file_is_not_the_run_s_file(tmp_path: Path) -> None:
    """ext4 gives a removed file's inode number to the next new one: a link put where bob-run had just renamed its
    predictions was taken for its file, whose open then failed (ELOOP), and bob-run said it could not put the old
    file back (exit 2). A link is another process's file (exit 75, as for any other)."""
    from bob.backup import holds as _holds

    (tmp_path / "f").symlink_to("elsewhere")
    st = os.lstat(tmp_path / "f")
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _holds("f", directory, (st.st_dev, st.st_ino, st.st_mtime_ns), b"elsewhere") is False
    finally:
        os.close(directory)


@pytest.mark.parametrize("point", ["locked", "staged"])
@pytest.mark.parametrize("replaced", [False, True])
def test_a_directory_moved_away_while_the_run_holds_its_lock_is_busy_not_a_bad_path(tmp_path: Path, point: str,
                                                                                    replaced: bool) -> None:
    """The targets' directory renamed (or replaced by a file) once the locks were taken: bob-run refused
    "--predictions ...: no such file or directory" (or "not a directory"), exit 2, a bad path to a script, where
    another process changed its files under its lock (exit 75, nothing changed)."""
    (work := tmp_path / "run").mkdir()
    (work / "rec.bin").write_bytes(RECORD)
    assert subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], capture_output=True,
                          timeout=120).returncode == 0
    before = {p.name: p.read_bytes() for p in work.iterdir()}

    def move() -> None:
        os.rename(work, tmp_path / "moved")
        if replaced:
            work.write_bytes(b"")

    with race.Meeting(point, move) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env,
                             capture_output=True, text=True, timeout=120)
    assert meeting.met and run.returncode == 75, run.stdout
    assert "was deleted or replaced while this run held it" in json.loads(run.stdout)["error"]["message"]
    assert {p.name: p.read_bytes() for p in (tmp_path / "moved").iterdir()} == before  # (no temporary, no lock)


@pytest.mark.parametrize("change", ["removed", "written"])
def test_the_predictions_changed_as_the_checkpoint_is_committed_are_said(work: Path, change: str) -> None:
    """Another process removed or rewrote the new predictions after the last check: bob-run said exit 0 and
    nothing, its predictions_hex not what the file holds (only the checkpoint was read back)."""
    def change_the_predictions() -> None:
        if change == "removed":
            os.unlink(work / "pred.bin")
        else:
            (work / "pred.bin").write_bytes(bytes(24))

    with race.Meeting("checked", change_the_predictions) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env,
                             capture_output=True, text=True, timeout=120)
    assert meeting.met and run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["problems_after_commit"] == [
        f"--predictions {work / 'pred.bin'}: its new file was {change} by another process as the checkpoint was "
        "committed"]


def test_the_checkpoint_written_as_it_is_committed_is_said(work: Path) -> None:
    """Another process wrote into the staged checkpoint after the last check: bob-run said exit 0 with the
    SHA-256 of bytes the file does not hold. It still commits (that instant is past its checks), and says so."""
    def write_the_temporary() -> None:
        [tmp] = [p for p in work.iterdir() if p.name.startswith(".ck.bin.bob-tmp-")]
        with open(tmp, "r+b") as f:
            f.write(b"foreign")

    with race.Meeting("checked", write_the_temporary) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env,
                             capture_output=True, text=True, timeout=120)
    assert meeting.met and run.returncode == 0, run.stderr
    [problem] = json.loads(run.stdout)["problems_after_commit"]
    assert problem.startswith("the new checkpoint was written by another process as it was committed")
    assert (work / "ck.bin").read_bytes()[:7] == b"foreign"


def test_a_file_not_put_back_is_said_even_when_the_run_s_lock_was_lost_too(work: Path) -> None:
    """Its lock files deleted by another process of its user, a second run took the locks and removed the first
    one's temporaries, its backup of the old predictions among them (DECISIONS.md: under the lock every temporary
    is stale). The first run, rolled back without it, said its lock was lost, "so nothing was committed": the
    refusal naming the file not put back was replaced by that one."""
    old = bob.invoke(RECORD, b"", threads=1)
    (work / "ck.bin").write_bytes(old.checkpoint_bytes())
    (work / "pred.bin").write_bytes(old.predictions_bytes())

    def take_the_deleted_locks() -> subprocess.CompletedProcess:
        for name in ("ck.bin", "pred.bin"):
            Path(bob.lock.lock_path_for(str(work / name))).unlink()
        pinned = [*argv(work), "--expect-checkpoint", "0" * 64]  # (refused after its clean-up: nothing written)
        return subprocess.run([sys.executable, "-m", "bob", "run", *pinned], env=race.child_env(),
                              capture_output=True, text=True, timeout=120)

    with race.Meeting("predictions-renamed", take_the_deleted_locks) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env, capture_output=True,
                             text=True, timeout=120)
    second = meeting.result
    assert second.returncode == 2 and "removed the stale temporaries beside its targets" in second.stderr
    error = json.loads(run.stdout)["error"]
    assert meeting.met and run.returncode == 2 and (error["option"], error["path"]) == ("--predictions",
                                                                                          str(work / "pred.bin"))
    assert error["message"].startswith("the run stopped before its commit (") and error["message"].endswith(
        "and this file could not be put back (no such file or directory); the checkpoint was not replaced")
    assert "nothing was committed" not in error["message"]  # (the stop's own outcome, quoted, said it was)
    assert (work / "ck.bin").read_bytes() == old.checkpoint_bytes()


def test_a_checkpoint_removed_during_the_commit_is_said_removed_since_it_was_read(work: Path) -> None:
    """It was "changed or replaced by another process while this run trained": the run had trained long before,
    and nothing had replaced the file. The old predictions are back, and no checkpoint is made up."""
    old = bob.invoke(RECORD, b"", threads=1)
    (work / "ck.bin").write_bytes(old.checkpoint_bytes())
    (work / "pred.bin").write_bytes(old.predictions_bytes())
    with race.Meeting("predictions-renamed", lambda: (work / "ck.bin").unlink()) as meeting:
        run = subprocess.run([sys.executable, "-m", "bob", "run", *argv(work)], env=meeting.env, capture_output=True,
                             text=True, timeout=120)
    error = json.loads(run.stdout)["error"]
    assert meeting.met and run.returncode == 75 and error["option"] == "--checkpoint"
    assert error["message"] == ("was changed, replaced or removed by another process since this run read it; "
                                "nothing was changed")
    assert sorted(p.name for p in work.iterdir()) == ["pred.bin", "rec.bin"]
    assert (work / "pred.bin").read_bytes() == old.predictions_bytes()


def test_a_directory_moved_away_as_a_new_file_is_staged_is_busy(work: Path, monkeypatch) -> None:
    """The directory away for the instant its temporary was created (by path, not through the directory's
    descriptor): "its new file could not be written: no such file or directory", exit 2, where the same move a
    moment later is exit 75."""
    from bob import fileio
    from bob.run import main

    real, away = fileio._create_temporary, work.with_name(work.name + "-away")

    def moved_for_a_moment(target, made):
        work.rename(away)
        try:
            return real(target, made)
        finally:
            away.rename(work)

    monkeypatch.setattr(fileio, "_create_temporary", moved_for_a_moment)
    assert main(argv(work)[1:]) == 75
    assert sorted(p.name for p in work.iterdir()) == ["rec.bin"]


@pytest.mark.parametrize("moved", ["a checkpoint", "a file of two names"])
def test_a_file_moved_onto_an_output_as_it_is_judged_is_another_process_s(work: Path, monkeypatch, capsys,
                                                                         moved: str) -> None:
    """The file each output path holds was recorded after it was judged (not a checkpoint, one name): a
    checkpoint, or a file with a second name, moved onto --predictions in between was replaced, exit 0 (the
    checkpoint lost, the names split). It is recorded first: the file moved there since is another process's,
    75, every file as it was."""
    import bob.commit
    import bob.run

    step10 = bob.invoke(RECORD, b"", threads=1).checkpoint_bytes()
    (work / "ck.bin").write_bytes(step10)
    (work / "pred.bin").write_bytes(b"old predictions")
    (work / "precious").write_bytes(step10 if moved == "a checkpoint" else b"two names")
    if moved != "a checkpoint":
        os.link(work / "precious", work / "other name")
    real = bob.commit.refuse_replacing_a_checkpoint

    def judged_then_moved(target: str) -> None:  # another process, in the instant after the check
        real(target)
        os.replace(work / "precious", target)

    monkeypatch.setattr(bob.commit, "refuse_replacing_a_checkpoint", judged_then_moved)  # (bob.run imports it late)
    assert bob.run.main(argv(work)) == 75
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["option"], error["path"]) == ("--predictions", str(work / "pred.bin"))
    assert (work / "pred.bin").read_bytes() == (step10 if moved == "a checkpoint" else b"two names")
    assert (work / "ck.bin").read_bytes() == step10
    assert os.stat(work / "pred.bin").st_nlink == 1 + (moved != "a checkpoint")
