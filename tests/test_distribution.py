"""The distribution's name and its extras, and every install hint bob prints.

The import name is ``bob``; the distribution is ``bob-fp32`` (``bob`` on PyPI
is another project, which a hint naming it would install). A hint comes from
:func:`bob.distribution.install_hint` only: in a checkout it is the
checkout's bootstrap command, installed it is pip with ``bob-fp32``
(tests/test_wheel.py sees the installed form from a real wheel).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bob import distribution
from bob.distribution import DISTRIBUTION, EXTRAS, install_hint

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "bob"


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_the_distribution_name_and_extras_are_pyprojects():
    project = _pyproject()["project"]
    assert project["name"] == DISTRIBUTION == "bob-fp32"
    # Only what a user installs is an extra; the test and mutation tooling is
    # a dependency group of the checkout, never published.
    assert tuple(project["optional-dependencies"]) == EXTRAS == ("plot", "fuzz", "interop")
    assert set(_pyproject()["dependency-groups"]) == {"test", "mutants"}


def test_the_metadata_a_user_sees():
    project = _pyproject()["project"]
    assert project["readme"]["file"] == "README.md"
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "Typing :: Typed" in project["classifiers"]
    assert (PACKAGE / "py.typed").exists()


def test_every_install_hint_in_the_package_comes_from_install_hint():
    """No module spells out an install command or an extra of a name other
    than bob-fp32: a hint is install_hint(EXTRA), nothing else."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "distribution.py":
            continue
        text = path.read_text()
        for pattern in (r"pip install", r"\bbob\[", r"bootstrap\.sh \w"):
            for m in re.finditer(pattern, text):
                line = text.count("\n", 0, m.start()) + 1
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {pattern}")
    assert offenders == []
    used = {m.group(1) for path in PACKAGE.rglob("*.py")
            for m in re.finditer(r"install_hint\('(\w+)'\)", path.read_text())}
    assert used == {"plot", "fuzz", "interop"}


def test_in_a_checkout_the_hint_is_the_bootstrap_command():
    assert distribution.checkout() == str(ROOT)
    hint = install_hint("plot")
    assert hint == f"{ROOT}/scripts/bootstrap.sh plot"
    assert Path(hint.split()[0]).is_file()


def test_installed_the_hint_is_pip_with_the_distribution(monkeypatch):
    monkeypatch.setattr(distribution, "checkout", lambda: None)
    assert [install_hint(e) for e in EXTRAS] == [
        "pip install 'bob-fp32[plot]'", "pip install 'bob-fp32[fuzz]'", "pip install 'bob-fp32[interop]'"]


def test_a_checkout_needs_its_bootstrap_script(tmp_path, monkeypatch):
    """A copy of the package without scripts/ beside it (as mutmut stages
    it, or site-packages) is not a checkout."""
    (tmp_path / "python" / "bob").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.setattr(distribution, "__file__", str(tmp_path / "python" / "bob" / "distribution.py"))
    assert distribution.checkout() is None
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "bootstrap.sh").write_text("")
    assert distribution.checkout() == str(tmp_path)


def test_an_unknown_extra_is_refused_by_name():
    with pytest.raises(ValueError, match="'test' is not an extra of bob-fp32"):
        install_hint("test")


def test_qualify_report_without_matplotlib_names_the_bootstrap_command(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from bob.qualify.cli import main; "
            f"sys.exit(main(['--quick', '--report', {str(tmp_path / 'r')!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert out.stderr.endswith(f"needs matplotlib (the optional extra plot): {ROOT}/scripts/bootstrap.sh plot\n")


@pytest.mark.parametrize("command, option", [(["qualify", "--quick"], "--report"),
                                             (["inspect", "ckpt", "CK"], "--heatmap")])
def test_a_matplotlib_that_does_not_import_is_refused_before_any_work(tmp_path, command, option):
    """A matplotlib installed but broken (its Pillow, say) passed bob-qualify's check, which only looked for the
    package: the whole run was done, then lost to the import (exit 70, no verdict, no option named)."""
    broken = tmp_path / "site" / "PIL"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('cannot import name _imaging from PIL')\n")
    (tmp_path / "ck.bin").write_bytes(b"")
    argv = [str(tmp_path / "ck.bin") if word == "CK" else word for word in command]
    out = subprocess.run([sys.executable, "-m", "bob", *argv, option, str(tmp_path / "out"), "--json"],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{PACKAGE.parent}"})
    error = json.loads(out.stdout)["error"]
    assert out.returncode == 2 and error["option"] == option, out.stdout
    assert "does not import here (cannot import name _imaging from PIL)" in error["message"]
    assert "seed" not in out.stderr and not (tmp_path / "out").exists()  # (bob-qualify says its seed as it starts)


def test_fuzz_run_without_atheris_names_the_bootstrap_command():
    code = ("import sys; sys.modules['atheris'] = None; from bob.fuzz import main; "
            "sys.exit(main(['run', 'checkpoint', '--time', '1']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert f"`{ROOT}/scripts/bootstrap.sh fuzz`" in out.stderr


def test_the_plot_extra_s_check_leaves_a_library_caller_s_backend_as_it_was(tmp_path):
    """The check chose the Agg backend (and imported pyplot) in the caller's process: a notebook's plt.show()
    after bob-inspect --heatmap as a library showed nothing."""
    pytest.importorskip("matplotlib")
    code = ("import sys, matplotlib; matplotlib.use('svg'); from bob.inspect import main; "
            f"main(['ckpt', {str(PACKAGE / 'data' / 'golden' / 'checkpoint-abracadabra-step10.bin')!r}, "
            f"'--heatmap', {str(tmp_path / 'h.png')!r}]); print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-2:] == ["svg", "False"] and (tmp_path / "h.png").exists(), out.stderr


def test_version_and_help_answer_where_numpy_does_not_import(tmp_path):
    """A NumPy that raises as it is imported ended ``--version`` and ``--help`` with exit 70 on four of the five
    commands (bob-run excepted): the runner loaded it before reading the command line. Any work still needs it."""
    broken = tmp_path / "site" / "numpy"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this NumPy does not import')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{PACKAGE.parent}"}

    def bob(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bob", *argv], capture_output=True, text=True, env=env,
                              timeout=120)

    for command in ("run", "fixture", "inspect", "qualify", "fuzz"):
        out = bob(command, "--version")
        assert (out.returncode, out.stdout) == (0, f"bob-{command} 0.1.0\n"), out.stderr
        out = bob(command, "--help")
        assert out.returncode == 0 and out.stdout.startswith(f"usage: bob-{command}"), out.stderr
    out = bob("inspect", "checkpoint", str(tmp_path / "missing.bin"), "--json")
    assert out.returncode == 70 and json.loads(out.stdout)["error"]["message"] == "this NumPy does not import"
    assert out.stderr == "bob-inspect: this NumPy does not import\n"
    out = bob("inspect", "checkpoint")  # (the user's mistake first)
    assert out.returncode == 2 and "required: FILE" in out.stderr
    # an import a Ctrl-C cut short (its ImportError from the KeyboardInterrupt) is the interruption, as before
    (broken / "__init__.py").write_text("try:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt as e:\n"
                                        "    raise ImportError('cut short') from e\n")
    out = subprocess.run([sys.executable, "-c", "import sys; from bob.inspect import main; sys.exit(main(['--version']))"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (130, "", "bob-inspect: interrupted\n")
