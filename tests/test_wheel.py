"""The wheel, as a user gets it: build it with maturin (abi3), install it
into a fresh virtual environment, and run it from outside the source tree.

Slow (a release build, a venv and a pip install: ~30-60 s) but in the default
suite: it is the only test that sees the package as installed rather than as
a checkout. The build reuses cargo's target directory, so it is incremental.
numpy, construct and rich come from PyPI (or pip's cache); the installed
bob-qualify --quick must qualify the wheel."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bob
import bob.core

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

SMOKE = r"""
import hashlib, json, sys
import bob, bob.core

corpus = b"abracadabra"
contexts = bytes(corpus[k % 11] for k in range(256))
targets = bytes(corpus[(k + 1) % 11] for k in range(256))

def run():
    p, m, v = bob.core.initial_planes()
    before = p[:4].view("uint32").tolist()
    losses = bob.core.train(p, m, v, contexts, targets, 0, 10)
    return before, p[:4].view("uint32").tolist(), hashlib.sha256(p.tobytes() + m.tobytes() + v.tobytes()).hexdigest(), losses

first, second = run(), run()
print(json.dumps({
    "bob_file": bob.__file__,
    "core_file": bob.core._core.__file__,
    "before": first[0], "after": first[1], "sha256": first[2], "losses": first[3],
    "deterministic": first == second,
    "kernels": bob.core.kernels(),
}))
"""


@pytest.mark.slow
def test_wheel_builds_installs_and_trains(tmp_path):
    maturin = BIN / "maturin"
    assert maturin.exists(), "maturin is installed by scripts/bootstrap.sh"
    dist = tmp_path / "dist"
    # -i: the same interpreter as `maturin develop`, so cargo reuses its build.
    subprocess.run(
        [str(maturin), "build", "--release", "--locked", "--quiet", "--out", str(dist), "-i", sys.executable],
        cwd=ROOT, check=True,
    )
    (wheel,) = dist.glob("*.whl")
    assert wheel.name.startswith("bob_fp32-0.1.0-") and "cp311-abi3" in wheel.name, wheel.name

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, env=env)

    away = tmp_path / "elsewhere"
    away.mkdir()
    out = subprocess.run([str(python), "-c", SMOKE], cwd=away, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    # The installed package, not the checkout.
    assert Path(got["bob_file"]).is_relative_to(venv), got["bob_file"]
    assert Path(got["core_file"]).name == "_core.abi3.so", got["core_file"]

    p, m, v = bob.core.initial_planes()
    assert got["before"] == p[:4].view("uint32").tolist() == [0xBBA84A70, 0x3C19EFF0, 0xBACA6D7B, 0x3B9B54D4]
    losses = bob.core.train(p, m, v, bytes(b"abracadabra"[k % 11] for k in range(256)),
                            bytes(b"abracadabra"[(k + 1) % 11] for k in range(256)), 0, 10)
    assert got["deterministic"]
    assert got["after"] != got["before"]
    # Same bits as the checkout's build, and §8's losses.
    assert got["after"] == p[:4].view("uint32").tolist()
    assert got["sha256"] == hashlib.sha256(p.tobytes() + m.tobytes() + v.tobytes()).hexdigest()
    assert got["losses"] == losses
    assert round(got["losses"][0], 6) == 5.548397 and round(got["losses"][-1], 6) == 4.663767
    assert got["kernels"] == bob.core.kernels()

    # The distribution's metadata, as pip shows it (-v: classifiers, the licence file).
    show = subprocess.run([str(python), "-m", "pip", "show", "-v", "-f", "bob-fp32"], cwd=away, env=env,
                          capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(": ", 1) for line in show.splitlines() if ": " in line and not line.startswith(" "))
    assert fields["Name"] == "bob-fp32" and fields["Version"] == "0.1.0"
    assert fields["Summary"].startswith("bob: binary formats")
    assert "Typing :: Typed" in show and "Programming Language :: Rust" in show
    assert "bob_fp32-0.1.0.dist-info/licenses/LICENSE" in show
    assert "bob/py.typed" in show
    installed = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert (installed / "bob_fp32-0.1.0.dist-info" / "licenses" / "LICENSE").read_bytes() == \
        (ROOT / "LICENSE").read_bytes()
    meta = subprocess.run(
        [str(python), "-c", "import json; from importlib import metadata as m; d = m.metadata('bob-fp32'); "
         "print(json.dumps({'extras': d.get_all('Provides-Extra'), 'type': d['Description-Content-Type'], "
         "'license': d['License-Expression'], "
         "'readme': d.get_payload()}))"],
        cwd=away, env=env, capture_output=True, text=True, check=True)
    got_meta = json.loads(meta.stdout)
    assert sorted(got_meta["extras"]) == ["fuzz", "interop", "plot"]  # no test or mutation tooling
    assert got_meta["type"] == "text/markdown"
    assert got_meta["license"] == "MIT"  # PEP 639 (pip show of pip < 24.1 leaves "License:" empty)
    assert got_meta["readme"].strip() == (ROOT / "README.md").read_text().strip()

    # The contract travels with the wheel, as package data.
    where = subprocess.run([str(python), "-c", "import bob; print(bob.contract_document())"], cwd=away, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    assert Path(where).read_bytes() == Path(bob.contract_document()).read_bytes()

    # Installed, an install hint is pip with the distribution's own name.
    no_plot = subprocess.run(
        [str(python), "-c", "import sys; sys.modules['matplotlib'] = None; from bob.inspect.cli import main; "
         "sys.exit(main(['ckpt', 'none.bin', '--heatmap', 'h.png']))"],
        cwd=away, env=env, capture_output=True, text=True)
    assert no_plot.returncode == 2, no_plot.stderr
    assert "pip install 'bob-fp32[plot]'" in no_plot.stderr, no_plot.stderr

    help_out = subprocess.run([str(venv / "bin" / "bob-run"), "--help"], cwd=away, env=env,
                              capture_output=True, text=True)
    assert help_out.returncode == 0, help_out.stderr

    # bob-qualify from the installed wheel (its golden files come from the package, rich is a dependency).
    env.pop("BOB_QUALIFY_PERTURB", None)
    qualify = subprocess.run([str(venv / "bin" / "bob-qualify"), "--quick", "--json"], cwd=away, env=env,
                             capture_output=True, text=True, timeout=300)
    assert qualify.returncode == 0, qualify.stderr + qualify.stdout[-2000:]
    result = json.loads(qualify.stdout)
    assert result["qualified"] and not result["failures"]
    assert Path(result["fingerprint"]["core"]["file"]).is_relative_to(venv)
    assert result["fingerprint"]["core"]["installed_from"] == "a wheel"
    assert result["fingerprint"]["contract"]["document"].endswith(f"({where})")
    assert {row["check"] for row in result["checks"]} >= {"public-vector/bob-run", "formats", "kernels", "resume"}
