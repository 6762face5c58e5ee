"""What OSS-Fuzz / ClusterFuzzLite needs beside the binaries: ``python -m bob.fuzz.oss HARNESS_DIR OUT``
(from the checkout) in ``.clusterfuzzlite/build.sh``; what it writes: docs/fuzzing.md's "Scaling out"."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from bob.fuzz.campaign import WORKER
from bob.fuzz.dictionary import write_dict
from bob.fuzz.replay import RUST_TARGETS
from bob.fuzz.common import seed_paths
from bob.fuzz.targets import TARGETS


def harness(name: str) -> str:
    """The OSS-Fuzz harness of target ``name``: the campaign's worker, its spec written in."""
    spec = f"{{'target': {name!r}, 'argv': sys.argv}}"
    return (f'"""OSS-Fuzz harness for bob\'s {name!r} target (written by bob.fuzz.oss; see docs/fuzzing.md)."""\n'
            + WORKER.replace("json.loads(sys.argv[1])", spec, 1))


def _zip(path: Path, files: "list[Path]") -> None:
    if files:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for i, f in enumerate(files):
                z.write(f, f"{i:04d}-{f.name}")


def write(harness_dir: Path, out: Path, root: Path) -> list[str]:
    """``root`` is the checkout (its fuzz/regressions and fuzz/corpus are read)."""
    harness_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TARGETS:
        fuzzer = f"fuzz_{name}"
        (harness_dir / f"{fuzzer}.py").write_text(harness(name), encoding="utf-8")
        write_dict(out / f"{fuzzer}.dict")
        _zip(out / f"{fuzzer}_seed_corpus.zip", seed_paths(name, root=root))
        written.append(fuzzer)
    for name in RUST_TARGETS:
        found = [p for sub in ("corpus", "regressions") for p in sorted((root / "fuzz" / sub / name).glob("*"))]
        _zip(out / f"{name}_seed_corpus.zip", [p for p in found if p.is_file()])
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m bob.fuzz.oss HARNESS_DIR OUT   (run from the checkout)")
    print(" ".join(write(Path(sys.argv[1]), Path(sys.argv[2]), Path.cwd())))
