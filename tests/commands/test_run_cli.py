"""bob-run and bob-fixture through the real commands (subprocesses): the §8
vector, fresh-process resume, every exit code and refusal path, SIGKILL at
random moments (concurrent runs on one checkpoint: tests/hostile/test_races.py)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bob
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CKPT_10_SHA256 as CKPT_SHA_10
from conftest import CKPT_20_SHA256 as CKPT_SHA_20
from conftest import PRED_HEX
from conftest import RECORD_SHA256 as RECORD_SHA
import bob.core
from bob.run import lock_path_for

BIN = Path(sys.executable).parent
HEADER = 448
# magic..step 32, four length-prefixed contract strings 209, sizes 28, chunk
# table 156: the header digest covers bytes 0..415 and sits at 415..447,
# then one zero byte of padding to 448.
DIGEST_AT = 415


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cmd(name: str, *args: str, check: int | None = 0, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=120, **kw)
    if check is not None:
        assert out.returncode == check, (out.returncode, out.stdout, out.stderr)
    return out


def run(tmp: Path, *extra: str, check: int | None = 0, ckpt: str = "ck.bin", pred: str = "pred.bin"):
    return cmd("bob-run", "--input", str(tmp / "rec.bin"), "--checkpoint", str(tmp / ckpt),
               "--predictions", str(tmp / pred), *extra, check=check)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "rec.bin").write_bytes(bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes())
    return tmp_path


def reseal(data: bytearray) -> bytearray:
    """Recompute the header digest of a canonical (448-byte header) checkpoint."""
    data[DIGEST_AT:DIGEST_AT + 32] = hashlib.sha256(bytes(data[:DIGEST_AT])).digest()
    return data


def assert_untouched(work: Path, ckpt_before: bytes | None, pred_before: bytes | None) -> None:
    ck, pr = work / "ck.bin", work / "pred.bin"
    assert (ck.read_bytes() if ck.exists() else None) == ckpt_before
    assert (pr.read_bytes() if pr.exists() else None) == pred_before
    leftovers = [p.name for p in work.iterdir() if ".bob-tmp-" in p.name]
    assert leftovers == []


# --------------------------------------------------------------------- §8 ---
def test_contract_vector_through_the_commands(tmp_path: Path) -> None:
    out = cmd("bob-fixture", "--text", "abracadabra", "--prompt", "abra", "--prompt", "cad", "--prompt", "",
              "--output", str(tmp_path / "rec.bin"))
    assert RECORD_SHA in out.stdout
    assert sha(tmp_path / "rec.bin") == RECORD_SHA
    first = json.loads(run(tmp_path, "--json").stdout)
    assert sha(tmp_path / "ck.bin") == CKPT_SHA_10 == first["checkpoint_sha256"]
    assert (tmp_path / "pred.bin").read_bytes().hex() == PRED_HEX
    assert first["step_before"] == 0 and first["step_after"] == 10 and first["fresh"]
    assert first["losses"][0] == pytest.approx(5.548397, abs=1e-6)
    assert first["losses"][-1] == pytest.approx(4.663767, abs=1e-6)
    second = run(tmp_path)
    assert sha(tmp_path / "ck.bin") == CKPT_SHA_20
    assert (tmp_path / "pred.bin").read_bytes().hex() == PRED_HEX
    assert "step 10 -> 20" in second.stdout and "4.566657" in second.stdout and "3.710753" in second.stdout
    assert "next 'c'" in second.stdout
    run(tmp_path)
    assert bob.load_predictions((tmp_path / "pred.bin").read_bytes()).records[0] == (ord("b"), 1)


def test_python_dash_m_runs_the_same_commands(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "bob", "fixture", "--text", "abracadabra", "--prompt", "abra",
                    "--prompt", "cad", "--prompt", "", "--output", str(tmp_path / "rec.bin")], check=True,
                   capture_output=True)
    assert sha(tmp_path / "rec.bin") == RECORD_SHA
    subprocess.run([sys.executable, "-m", "bob", "run", "--input", str(tmp_path / "rec.bin"), "--checkpoint",
                    str(tmp_path / "ck.bin"), "--predictions", str(tmp_path / "pred.bin")], check=True,
                   capture_output=True)
    assert sha(tmp_path / "ck.bin") == CKPT_SHA_10


@pytest.mark.parametrize("flag", ["--json", "--debug"])
def test_an_option_of_bob_s_after_wait_is_no_value_of_it(work: Path, flag: str) -> None:
    """bob-run's fast reading took ``--wait --json`` for a wait of "--json": the refusal was text, where
    argparse's reading of the same line says the option has no value, in the envelope asked for."""
    out = run(work, "--wait", flag, check=2)
    assert "--wait: usage: expected one argument" in out.stderr
    assert (json.loads(out.stdout)["error"]["option"] == "--wait") if flag == "--json" else out.stdout == ""


def test_empty_checkpoint_file_is_a_fresh_run(work: Path) -> None:
    (work / "ck.bin").write_bytes(b"")
    run(work)
    assert sha(work / "ck.bin") == CKPT_SHA_10


def test_a_checkpoint_file_at_step_0_is_no_fresh_start(work: Path) -> None:
    """bob-run called a step-0 checkpoint file a fresh start ("fresh": true) though P came from the file,
    where bob-inspect (and the contract: a missing or empty file) said otherwise."""
    zero = np.zeros(bob.core.PARAMETER_COUNT, np.float32)
    at_step_0 = bob.Checkpoint(0, np.full(bob.core.PARAMETER_COUNT, 0.5, np.float32), zero, zero)
    at_step_0.write(work / "ck.bin")
    out = json.loads(run(work, "--json").stdout)
    assert out["step_before"] == 0 and out["fresh"] is False
    at_step_0.write(work / "ck.bin")
    assert run(work).stdout.splitlines()[0] == "bob-run: step 0 -> 10"
    assert run(work, ckpt="missing.bin").stdout.splitlines()[0] == "bob-run: step 0 -> 10 (fresh start)"


# ------------------------------------------------------- fresh-process resume ---
def test_five_processes_equal_one_process_of_all_their_updates(work: Path) -> None:
    for _ in range(5):
        run(work)
    record = bob.load_input((work / "rec.bin").read_bytes())
    ckpt = bob.load_checkpoint(b"")
    bob.core.train(ckpt.p, ckpt.m, ckpt.v, record.contexts, record.targets, 0, 5 * U)
    ckpt.step = 5 * U
    preds = bob.Predictions.from_core(bob.core.predict(ckpt.p, record.prompt_words))
    assert (work / "ck.bin").read_bytes() == ckpt.to_bytes()
    assert (work / "pred.bin").read_bytes() == preds.to_bytes()


# ----------------------------------------------------------------- fixture ---
def test_fixture_prompts_mix_text_and_hex_in_command_line_order(tmp_path: Path) -> None:
    out = tmp_path / "r.bin"
    cmd("bob-fixture", "--text", "hello world", "--prompt-hex", "00ff", "--prompt", "", "--prompt", "wor",
        "--output", str(out))
    rec = bob.load_input(out.read_bytes())
    assert rec.prompt_words == (0xFF, 0xFFFFFFFF, ord("r"))
    assert rec.to_bytes() == bob.build_input(b"hello world", [b"\x00\xff", b"", b"wor"]).to_bytes()


def test_fixture_says_a_corpus_files_size_as_read(tmp_path: Path) -> None:
    """/proc files say size 0: corpus_bytes was 0 (the record was built from 257 bytes); the size came
    from a second open of the path, not from the bytes read."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc here")
    out = cmd("bob-fixture", "--corpus", "/proc/self/status", "--prompt", "a", "--prompt", "b", "--prompt", "c",
              "--output", str(tmp_path / "r.bin"), "--json")
    assert json.loads(out.stdout)["corpus_bytes"] == 257


def test_fixture_names_prompt_hex_in_its_refusal(tmp_path: Path) -> None:
    """A bad --prompt-hex was a usage error naming no option ("option": null)."""
    out = cmd("bob-fixture", "--text", "abc", "--prompt-hex", "zz", "--prompt", "b", "--prompt", "c", "--output",
              str(tmp_path / "r.bin"), "--json", check=2)
    assert json.loads(out.stdout)["error"]["option"] == "--prompt-hex" and "zz is not hex" in out.stderr


def test_fixture_reads_prompt_hex_as_bob_inspect_reads_rows_hex(tmp_path: Path) -> None:
    """--prompt-hex took blanks and uppercase (bytes.fromhex) while its refusal said "pairs of 0-9a-f", and
    --rows-hex took 0x and commas too: one reader now, bob.options.hex_bytes, whose refusal says what it takes."""
    out = tmp_path / "r.bin"
    cmd("bob-fixture", "--text", "abc", "--prompt-hex", "0x61,62", "--prompt-hex", "6 1", "--prompt-hex", "",
        "--output", str(out), check=2)
    cmd("bob-fixture", "--text", "abc", "--prompt-hex", "0x61,62", "--prompt-hex", "0A:ff", "--prompt-hex", "",
        "--output", str(out))
    assert bob.load_input(out.read_bytes()).to_bytes() == bob.build_input(b"abc", [b"ab", b"\n\xff", b""]).to_bytes()


def test_a_bare_0x_or_a_separator_outside_ascii_is_no_hex(tmp_path: Path) -> None:
    """--prompt-hex 0x wrote the empty prompt (a 0x with no digits read as no byte), and U+3000 or \\x1c between
    two bytes was taken as a blank (re's \\s): each is refused now, naming the option."""
    for value, shown in (("0x", "0x"), ("61 0X", "61 0X"), ("61\u300062", "61\\xe3\\x80\\x8062"),
                         ("61\x1c62", "61\\x1c62")):
        out = cmd("bob-fixture", "--text", "abc", "--prompt-hex", value, "--prompt", "b", "--prompt", "c", "--output",
                  str(tmp_path / "r.bin"), "--json", check=2)
        assert json.loads(out.stdout)["error"]["option"] == "--prompt-hex", out.stdout
        assert f"--prompt-hex: {shown} is not hex" in out.stderr, out.stderr
    assert not (tmp_path / "r.bin").exists()


def test_fixture_names_the_prompt_option_given_when_the_count_is_wrong(tmp_path: Path) -> None:
    """Two --prompt-hex and no --prompt: the refusal named --prompt, an option not given."""
    for words, option in ((["--prompt-hex", "61"] * 2, "--prompt-hex"), (["--prompt-hex", "61", "--prompt", "b"],
                                                                         "--prompt"), ([], "--prompt")):
        out = cmd("bob-fixture", "--text", "abc", *words, "--output", str(tmp_path / "r.bin"), "--json", check=2)
        assert json.loads(out.stdout)["error"]["option"] == option, out.stdout


def test_fixture_reads_a_corpus_file(tmp_path: Path) -> None:
    (tmp_path / "corpus").write_bytes(bytes(range(256)) * 2)
    cmd("bob-fixture", "--corpus", str(tmp_path / "corpus"), "--prompt", "a", "--prompt", "b", "--prompt", "c",
        "--output", str(tmp_path / "r.bin"))
    assert bob.load_input((tmp_path / "r.bin").read_bytes()).context_counts().min() == 1


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--text", "abc", "--prompt", "a", "--prompt", "b"], "refused: --prompt: usage: exactly 3 prompts"),
        (["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "c", "--prompt", "d"], "got 4"),
        (["--text", "a", "--prompt", "a", "--prompt", "b", "--prompt", "c"], "corpus"),
        (["--text", "abc", "--prompt-hex", "zz", "--prompt", "b", "--prompt", "c"], "--prompt-hex"),
        (["--corpus", "/nonexistent/corpus", "--prompt", "a", "--prompt", "b", "--prompt", "c"], "/nonexistent/corpus"),
    ],
)
def test_fixture_refusals_exit_2_and_write_nothing(tmp_path: Path, args: list[str], needle: str) -> None:
    out = cmd("bob-fixture", *args, "--output", str(tmp_path / "r.bin"), check=2)
    assert needle in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "r.bin").exists()


# ------------------------------------------------------ refusals: exit code 2 ---
def trained(work: Path) -> bytes:
    run(work)
    return (work / "ck.bin").read_bytes()


def damage_learner(data: bytes) -> bytes:
    d = bytearray(data)
    at = d.index(b"softmax-cross-entropy-mean|adamw|") + len(b"softmax-cross-entropy-mean|adamw|")
    d[at:at + 4] = struct.pack("<f", 0.01)  # lr 0.05 -> 0.01
    return bytes(reseal(d))


def with_step(data: bytes, step: int) -> bytes:
    d = bytearray(data)
    d[24:32] = struct.pack("<Q", step)
    return bytes(reseal(d))


def with_plane_value(data: bytes, plane: int, index: int, value: float) -> bytes:
    """Set one plane value and re-digest its chunk and the header: a well-formed file with that state."""
    d = bytearray(data)
    at = HEADER + plane * 262144 + 4 * index
    d[at:at + 4] = struct.pack("<f", value)
    chunk = bytes(d[HEADER + plane * 262144: HEADER + (plane + 1) * 262144])
    table = d.index(b"PMV"[plane:plane + 1] + b"\0\0\0")
    d[table + 20: table + 52] = hashlib.sha256(chunk).digest()
    return bytes(reseal(d))


CHECKPOINT_REFUSALS = {
    "not-bob": (lambda d: b"GGUF" + d[4:], "magic"),
    "learner": (damage_learner, "learner"),
    "chunk-digest": (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "V"),
    "truncated": (lambda d: d[:-100], "file_size"),
    "header-digest": (lambda d: d[:40] + bytes([d[40] ^ 0x20]) + d[41:], "header_digest"),
    "non-finite": (lambda d: with_plane_value(d, 0, 5, float("nan")), "P"),
    "negative-v": (lambda d: with_plane_value(d, 2, 7, -1.0), "V"),
    "step-overflow": (lambda d: with_step(d, 2**64 - 5), "step"),
    "step-zero-moments": (lambda d: with_step(d, 0), "step"),
}


@pytest.mark.parametrize("name", sorted(CHECKPOINT_REFUSALS))
def test_refused_checkpoint_exits_2_names_the_field_and_changes_nothing(work: Path, name: str) -> None:
    damage, field = CHECKPOINT_REFUSALS[name]
    good = trained(work)
    bad = damage(good)
    (work / "ck.bin").write_bytes(bad)
    pred_before = (work / "pred.bin").read_bytes()
    out = run(work, check=2)
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"checkpoint {work / 'ck.bin'}" in out.stderr
    assert field in out.stderr, out.stderr
    # The library names the same field.
    with pytest.raises(bob.FormatError) as info:
        bob.load_checkpoint(bad)
    assert info.value.field.startswith(field) or field in str(info.value)
    assert_untouched(work, bad, pred_before)


INPUT_REFUSALS = {
    "length": (lambda d: d[:-1], "file_size"),
    "magic": (lambda d: b"BOB-INPX" + d[8:], "magic"),
    "version": (lambda d: d[:8] + struct.pack("<Q", 2) + d[16:], "version"),
    "target-table": (lambda d: d[:528 + 4 * 9] + struct.pack("<I", 7) + d[528 + 4 * 10:], "targets"),
    "prompt-word": (lambda d: d[:1552] + struct.pack("<I", 256) + d[1556:], "prompt"),
}


@pytest.mark.parametrize("name", sorted(INPUT_REFUSALS))
def test_refused_input_exits_2_names_the_field_and_changes_nothing(work: Path, name: str) -> None:
    damage, field = INPUT_REFUSALS[name]
    good_ckpt = trained(work)
    pred_before = (work / "pred.bin").read_bytes()
    (work / "rec.bin").write_bytes(damage((work / "rec.bin").read_bytes()))
    out = run(work, check=2)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert f"--input {work / 'rec.bin'}: input record: " in out.stderr and field in out.stderr, out.stderr
    assert_untouched(work, good_ckpt, pred_before)


def test_missing_input_exits_2_and_creates_nothing(work: Path) -> None:
    (work / "rec.bin").unlink()
    out = run(work, check=2)
    assert "rec.bin" in out.stderr and "Traceback" not in out.stderr
    assert_untouched(work, None, None)


def test_checkpoint_in_a_missing_directory_is_refused(work: Path) -> None:
    out = run(work, check=2, ckpt="no-such-dir/ck.bin")
    assert "--checkpoint" in out.stderr and "its directory does not exist" in out.stderr and "no-such-dir" in out.stderr
    assert "Traceback" not in out.stderr
    assert_untouched(work, None, None)


def test_same_path_twice_is_refused(work: Path) -> None:
    out = run(work, check=2, pred="ck.bin")
    assert f"--predictions {work / 'ck.bin'}: names the same file as --checkpoint; each needs its own" in out.stderr
    assert_untouched(work, None, None)


# --------------------------------------------------------- exit code 75: busy ---
def test_held_lock_exits_75_and_changes_nothing(work: Path) -> None:
    good = trained(work)
    pred_before = (work / "pred.bin").read_bytes()
    fd = os.open(lock_path_for(str(work / "ck.bin")), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        out = run(work, check=75)
        assert "in use by another bob-run" in out.stderr
        assert_untouched(work, good, pred_before)
    finally:
        os.close(fd)
    run(work)  # the lock released, the next run goes through


# ---------------------------------------------------- exit code 1: unexpected ---
def test_missing_native_core_exits_1_and_says_so(work: Path, tmp_path_factory) -> None:
    import shutil

    pkg = tmp_path_factory.mktemp("nocore")
    shutil.copytree(Path(bob.__file__).parent, pkg / "bob", ignore=shutil.ignore_patterns("_core*", "__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    out = subprocess.run([sys.executable, "-m", "bob", "run", "--input", str(work / "rec.bin"), "--checkpoint",
                          str(work / "ck.bin"), "--predictions", str(work / "pred.bin")],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 1, out.stderr
    assert "native core" in out.stderr and "scripts/bootstrap.sh" in out.stderr
    assert "Traceback" not in out.stderr
    assert_untouched(work, None, None)


def test_unexpected_failure_exits_1_traceback_only_with_debug(work: Path, monkeypatch, capsys) -> None:
    import bob.fileio
    import bob.run

    good = trained(work)
    pred_before = (work / "pred.bin").read_bytes()
    real = bob.fileio.stage

    def failing(path, data, *args, **kwargs):
        if str(path).endswith("ck.bin"):
            raise RuntimeError("disk on fire")
        return real(path, data, *args, **kwargs)

    monkeypatch.setattr(bob.fileio, "stage", failing)
    argv = ["--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions",
            str(work / "pred.bin")]
    assert bob.run.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("bob-run: unexpected error: RuntimeError: disk on fire") and "Traceback" not in err
    # The predictions written before the failed checkpoint were put back.
    assert_untouched(work, good, pred_before)
    assert bob.run.main([*argv, "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


# ------------------------------------------------------------- nothing lost ---
def test_sigkill_at_random_moments_leaves_a_whole_checkpoint(work: Path) -> None:
    rng = random.Random(1234)
    ck = work / "ck.bin"
    argv = [str(BIN / "bob-run"), "--input", str(work / "rec.bin"), "--checkpoint", str(ck),
            "--predictions", str(work / "pred.bin")]
    # How long a whole run takes here, so the kills land anywhere inside one.
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    duration = time.perf_counter() - t0
    step = U
    kills = 0
    for _ in range(40):
        before = ck.read_bytes() if ck.exists() else None
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 1.1 * duration))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        after = ck.read_bytes() if ck.exists() else None
        if after is None:
            assert before is None
            continue
        loaded = bob.load_checkpoint(after)  # whole and valid, or this raises
        assert loaded.step in (step, step + U)
        assert after == before or loaded.step == step + U
        step = loaded.step
    assert kills >= 5, "the schedule never caught a run in flight"
    # A later run cleans what killed runs left and goes on from the last whole file.
    run(work)
    assert bob.load_checkpoint(ck.read_bytes()).step == step + U
    assert not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


def test_stale_temporaries_of_dead_runs_are_removed(work: Path) -> None:
    stale = work / ".ck.bin.bob-tmp-999999999-deadbeef0000"
    stale.write_bytes(b"half a checkpoint")
    out = json.loads(run(work, "--json").stdout)
    assert not stale.exists()
    assert str(stale) in out["stale_temporaries_removed"]


def test_a_refused_run_says_which_stale_temporaries_it_removed(work: Path) -> None:
    """The clean-up comes before the checkpoint is read: a run refused after it says what it removed."""
    stale = work / ".ck.bin.bob-tmp-999999999-deadbeef0000"
    stale.write_bytes(b"half a checkpoint")
    (work / "ck.bin").write_bytes(b"not a checkpoint")
    done = run(work, "--json", check=2)
    assert not stale.exists() and json.loads(done.stdout)["error"]["option"] == "--checkpoint"
    assert f"bob-run: removed the stale temporaries beside its targets: {stale}\n" in done.stderr


def test_a_run_holding_the_lock_removes_its_targets_temporaries_whoever_left_them(work: Path) -> None:
    """Under the checkpoint's lock no other bob-run writes these targets, and a
    pid proves nothing (a process in another PID namespace, or a reused pid),
    so every temporary of the checkpoint and the predictions is stale. The
    library's clean_stale_temporaries, which holds no lock, still spares a
    live writer's."""
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        live = [work / f".ck.bin.bob-tmp-{writer.pid}-0123456789ab",
                work / f".pred.bin.bob-tmp-{writer.pid}-0a1b2c3d4e5f"]
        for path in live:
            path.write_bytes(b"left by a process whose pid is alive here")
        (work / "ck.bin").write_bytes(b"")
        assert bob.clean_stale_temporaries(work / "ck.bin") == [] and all(p.exists() for p in live)
        out = json.loads(run(work, "--json").stdout)
        assert not any(p.exists() for p in live)
        assert sorted(out["stale_temporaries_removed"]) == sorted(map(str, live))
    finally:
        writer.kill()
        writer.wait()
