#!/usr/bin/env python3
"""The worst interop import: peak memory and time of ``from_npz_bytes`` /
``from_safetensors_bytes`` on the largest valid export and on hostile files
up to the import limit (``bob.interop.MAX_EXPORT_BYTES``).

    .venv/bin/python benchmarks/bench_interop.py [--runs N] [--json]

Memory is the peak of Python's and NumPy's allocations during one import
(``tracemalloc``; the file's bytes are allocated before), as a multiple of
the largest valid export's size; time is the median of N imports. Each
hostile file is as large as the limit allows or declares the most it can:
members at their bounds, a deflated member declaring 64 MiB, metadata
nested to its size bound, a safetensors header at its bound, a zip whose
central directory declares the most entries.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import struct
import sys
import time
import tracemalloc
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import bob  # noqa: E402
from bob import interop, interop_archive  # noqa: E402
from bob.formats.constants import CHUNK_BYTES  # noqa: E402

GOLDEN = os.path.join(ROOT, "python", "bob", "data", "golden")


def npy(descr: str, shape: tuple, data: bytes, pad: int = 0) -> bytes:
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape!r}, }}" + " " * pad
    text += " " * (-(11 + len(text)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode() + data


def archive(members, compression=zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as z:
        for name, data in members:
            z.writestr(name, data)
    return out.getvalue()


def files(ck: bob.Checkpoint) -> dict[str, tuple[str, bytes]]:
    meta = json.dumps(interop.metadata(ck))
    table = (256, 256)
    wide_meta = meta + " " * (interop_archive.MAX_METADATA_CHARS - len(meta))  # valid JSON at its bound
    at_bounds = [("bob.npy", npy(f"<U{len(wide_meta)}", (), wide_meta.encode("utf-32-le"),
                                 pad=interop_archive.MAX_NPY_HEADER - 128))]
    planes = [(f"{n}.npy", npy("<f4", table, p.astype("<f4").tobytes())) for n, p in ck.planes.items()]
    at_bounds += [(f"{n}.npy", npy("<f4", table, p.astype("<f4").tobytes(), pad=interop_archive.MAX_NPY_HEADER - 128))
                  for n, p in ck.planes.items()]
    deep = "[" * (interop_archive.MAX_METADATA_CHARS // 2) + "]" * (interop_archive.MAX_METADATA_CHARS // 2)
    st_header = json.dumps({"P": {"dtype": "F32", "shape": [256, 256], "data_offsets": [0, CHUNK_BYTES]},
                            "__metadata__": {"x": " " * (interop_archive.MAX_METADATA_CHARS - 200)}}).encode()
    limit = interop.MAX_EXPORT_BYTES
    return {
        "valid .npz (bob's export)": ("npz", interop.npz_bytes(ck)),
        "valid safetensors (bob's export)": ("safetensors", interop.safetensors_bytes(ck)),
        ".npz: every member at its bound": ("npz", archive(at_bounds)),
        ".npz: a member deflated from 64 MiB": ("npz", archive(planes[1:] + [("P.npy", npy("<f4", (4096, 4096),
                                                                                         bytes(64 << 20)))],
                                                              zipfile.ZIP_DEFLATED)),
        ".npz: metadata nested to its bound": ("npz", archive([("bob.npy", npy(f"<U{len(deep)}", (),
                                                                               deep.encode("utf-32-le")))] + planes)),
        ".npz: the limit's size of junk": ("npz", b"PK" + bytes(limit - 2)),
        "safetensors: header at its bound": ("safetensors", struct.pack("<Q", len(st_header)) + st_header
                                             + bytes(limit - 8 - len(st_header))),
        "safetensors: a header length past the file": ("safetensors", struct.pack("<Q", 1 << 62) + bytes(limit - 8)),
    }


def measure(fmt: str, data: bytes, runs: int) -> dict:
    load = interop.from_npz_bytes if fmt == "npz" else interop.from_safetensors_bytes

    def once() -> str:
        try:
            load(data, bob.Checkpoint)
        except bob.FormatError as err:
            return f"{type(err).__name__} {err.field}"
        return "accepted"

    verdict = once()
    tracemalloc.start()
    once()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        once()
        samples.append(time.perf_counter_ns() - t0)
    return {"size": len(data), "verdict": verdict, "peak_bytes": peak, "median_us": statistics.median(samples) / 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(GOLDEN, "checkpoint-abracadabra-step10.bin"), "rb") as f:
        ck = bob.load_checkpoint(f.read())
    cases = files(ck)
    results = {name: measure(fmt, data, args.runs) for name, (fmt, data) in cases.items()}
    largest = max(r["size"] for name, r in results.items() if r["verdict"] == "accepted")
    for r in results.values():
        r["peak_over_largest_valid"] = r["peak_bytes"] / largest
    if args.json:
        print(json.dumps({"largest_valid_bytes": largest, "cases": results}, indent=2))
        return 0
    print(f"largest valid export: {largest} bytes; import limit {interop.MAX_EXPORT_BYTES} bytes")
    print(f"{'file':45} {'bytes':>9} {'peak':>10} {'x valid':>8} {'median':>10}  verdict")
    for name, r in results.items():
        print(f"{name:45} {r['size']:>9} {r['peak_bytes']:>10} {r['peak_over_largest_valid']:>8.2f} "
              f"{r['median_us']:>8.0f} us  {r['verdict']}")
    worst = max(results.values(), key=lambda r: r["peak_bytes"])
    slowest = max(results.values(), key=lambda r: r["median_us"])
    print(f"worst peak {worst['peak_over_largest_valid']:.2f}x the largest valid export; "
          f"slowest {slowest['median_us'] / 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
