"""Which distribution bob is, and how to get one of its optional extras.

The import name is ``bob``; the distribution (what ``pip`` installs) is
``bob-fp32``: ``bob`` on PyPI is another, unrelated project, and a hint
naming it would install that one over this. Every install hint in bob's
messages comes from :func:`install_hint` (tests/test_distribution.py holds
them to it): in a source checkout it names the checkout's bootstrap command,
which builds the native core and installs the extra into its ``.venv``;
anywhere else, ``pip install 'bob-fp32[EXTRA]'``.

Also the distribution's version (``--version``), and :func:`plotting_problem` and
:func:`quiet_plot_directories` for the ``plot`` extra. Standard library only (but
matplotlib, which the extra's check imports), and imported only when a hint or
the version is shown, or a plot drawn.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import logging
    from contextlib import AbstractContextManager

__all__ = ["DISTRIBUTION", "EXTRAS", "checkout", "install_hint", "plot_style", "plotting_problem",
           "quiet_plot_directories", "version"]

DISTRIBUTION = "bob-fp32"
EXTRAS = ("plot", "fuzz", "interop")  # pyproject.toml's [project.optional-dependencies]


def checkout() -> str | None:
    """The source checkout this bob runs from (``maturin develop`` installs
    it in place: the package is the checkout's ``python/bob``), or None for
    an installed wheel."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bootstrap = os.path.join(root, "scripts", "bootstrap.sh")
    if os.path.isfile(bootstrap) and os.path.isfile(os.path.join(root, "pyproject.toml")):
        return root
    return None


def install_hint(extra: str) -> str:
    """The command that installs the optional ``extra`` for this bob."""
    if extra not in EXTRAS:
        raise ValueError(f"{extra!r} is not an extra of {DISTRIBUTION} (one of {', '.join(EXTRAS)})")
    root = checkout()
    if root is not None:
        import shlex  # lazily: only a hint needs it

        return f"{shlex.quote(os.path.join(root, 'scripts', 'bootstrap.sh'))} {extra}"
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def version() -> str:
    """bob's distribution version (looked up only for ``--version``: start-up)."""
    try:
        from importlib.metadata import PackageNotFoundError, version as distribution_version
    except ImportError:  # pragma: no cover
        return "unknown"
    try:
        return distribution_version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


def quiet_plot_directories() -> None:
    """Called before matplotlib is imported. Where its configuration or cache directory cannot be written (HOME
    unset, read-only or gone), matplotlib takes a temporary one of its own (removed at exit) and logs two lines
    on stderr saying so, before a command's one line there. Only those are dropped (the records of the function
    that picks the directory); whatever else matplotlib logs, and everything where HOME is fine, is as it was."""
    import logging

    logging.getLogger("matplotlib").addFilter(_not_about_directories)  # (added once however often called)


def plot_style() -> "AbstractContextManager[object]":
    """matplotlib's own default style, whatever a matplotlibrc of the user's says (``text.usetex`` without LaTeX
    failed every plot, once a qualification was done): bob's pictures are the same everywhere. The caller's
    settings are restored as the block ends."""
    import matplotlib.style

    return matplotlib.style.context("default")


def plotting_problem() -> str | None:
    """Why the ``plot`` extra cannot draw here, said before a command does any work, or None. matplotlib is
    imported, and its Figure (no backend chosen, no pyplot: a library caller's own are left as they are): one
    that is installed but does not import (a broken Pillow, say) was found only once a whole run was done."""
    quiet_plot_directories()
    backend = os.environ.pop("MPLBACKEND", None)  # (matplotlib's import refuses one it has not, ValueError: Jupyter's
    try:  # inline one where matplotlib-inline is not installed; bob draws into files, with no backend of the user's)
        import matplotlib  # noqa: F401 - first: a missing one is then the ImportError named "matplotlib"
        import matplotlib.figure  # noqa: F401
    except ImportError as exc:
        broken = "" if exc.name == "matplotlib" else f", which does not import here ({exc})"
        return f"needs matplotlib (the optional extra plot){broken}: {install_hint('plot')}"
    finally:
        if backend is not None:  # (for the children, and a library caller's pyplot later)
            os.environ["MPLBACKEND"] = backend
    return None


def _not_about_directories(record: logging.LogRecord) -> bool:
    return record.funcName != "_get_config_or_cache_dir"
