"""The machine fingerprint: what a qualification is a statement about.

CPU model and the instruction-set extensions the kernel choice depends on,
the kernel ``auto`` resolves to, thread counts, bob's version, the contract
identity, Python and the native core's build.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from bob import core
from bob.distribution import DISTRIBUTION
from bob.formats.contract import contract_document
from bob.formats.constants import DATA, LEARNER, SEED, STATE
from bob.formats.trace import contract_sha256
from bob.qualify.processes import package_root

# The flags bob-core's run-time dispatch reads (kernel.rs: is_x86_feature_detected).
KERNEL_FLAGS = {"avx2": ("avx2",), "avx512": ("avx512f", "avx512vl", "avx2")}


def _cpuinfo() -> tuple[str, set[str]]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return platform.processor() or platform.machine(), set()
    model, flags = "", set[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Processor", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return model or platform.processor() or platform.machine(), flags


def contract_identity() -> dict[str, Any]:
    """The contract this build implements: its name and a digest of the
    identities and sizes a checkpoint must carry (§2)."""
    return {
        "document": f"bob v1, errata of 2026-11-30 ({contract_document()})",
        "state": STATE.decode("ascii"),
        "learner_f32_hex": LEARNER[-20:].hex(),
        "data": DATA.decode("ascii"),
        "seed": SEED.decode("ascii"),
        "identity_sha256": contract_sha256().hex(),  # (a trace's contract_sha256, an export's identity)
    }


def _core_build() -> dict[str, Any]:
    path = core._core.__file__ or ""
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        digest = None
    info: dict[str, Any] = {"file": path, "sha256": digest, "abi3": path.endswith(".abi3.so") or ".abi3." in path}
    try:
        from importlib import metadata

        dist = metadata.distribution(DISTRIBUTION)
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
        editable = direct.get("dir_info", {}).get("editable") is True
        home = url2pathname(urlparse(direct["url"]).path) if editable else str(dist.locate_file("bob"))
        if not _within(os.path.join(package_root(), "bob"), home):  # the installed distribution is not the bob imported
            raise LookupError(home)
        info["distribution_version"] = dist.version
        wheel = dist.read_text("WHEEL") or ""
        info["wheel_tags"] = [line.split(":", 1)[1].strip() for line in wheel.splitlines()
                              if line.startswith("Tag:")]
        info["installed_from"] = "a source checkout (editable)" if editable else "a wheel"
    except Exception:  # noqa: BLE001 - metadata is informative only; a missing piece is not a failure
        info["distribution_version"] = None
        info["installed_from"] = f"not an installed distribution: bob imported from {package_root()}"
    return info


def _within(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def fingerprint() -> dict[str, Any]:
    """Everything that identifies what was qualified, JSON-ready."""
    import bob

    model, flags = _cpuinfo()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return {
        "cpu_model": model,
        "machine": platform.machine(),
        "cpu_flags": {flag: flag in flags for flag in sorted({f for fs in KERNEL_FLAGS.values() for f in fs})},
        "kernels": core.kernels(),
        "auto_kernel": core._core.resolved_kernel("auto"),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "bob_version": bob.__version__,
        "contract": contract_identity(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "platform": platform.platform(),
        },
        "core": _core_build(),
    }
