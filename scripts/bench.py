"""Measure the book's speed (`make bench`): library, explorers, notebooks, build, tests.

Prints one table and writes _build/bench/bench.json. Timings are measured, never asserted; the
targets are printed beside them. Medians and spreads are over repeats.

- library: `decode_step` over a 1e6-point (batch, context) grid in one vectorised call beside the
  bare numpy formula on the same grid (ns per configuration, ratio; target within 3x), the same
  point by point in a Python loop over 1e4 points, and one scalar call of `decode_step`,
  `prefill_step` and `critical_batch` (dense and MoE) beside the bare formula in plain Python
  (best of 10 x repeats runs of 200 calls, us per call; target 10 us). Wall clock and CPU time
  both: on a shared machine other processes stretch the wall clock, not this process's CPU time.
- explorers: one update (set the main slider, recompute, redraw to PNG) of each explorer, median
  and p95; and the same for a secondary control (a full redraw of the figure).
- notebooks: each book/*.ipynb executed in a fresh kernel with nbclient (not written back).
- book: `jupyter-book build . --all --path-output <tmpdir>` time, and each built page's size
  with the assets it loads (HTML + images + scripts + CSS it references; shared assets counted
  on every page that loads them); median page.
- pages: each page of _build/html (make book first) opened in Chromium on a throttled link
  (1.6 Mbit/s, 150 ms, gzip, empty cache): largest contentful paint and bytes transferred
  (scripts/page_load.py).
- tests: _build/bench/test_stages.json if `make test` wrote it.

Usage: python scripts/bench.py [--only library,explorers,notebooks,book,pages,tests] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "bench" / "bench.json"
TARGETS = {"sweep_s": 0.1, "sweep_over_bare": 3.0, "scalar_call_s": 10e-6,
           "update_median_s": 0.1, "notebook_s": 30.0, "build_s": 60.0,
           "median_page_bytes": 1.5e6}
SECTIONS = ("library", "explorers", "notebooks", "book", "pages", "tests")


def _stats(xs):
    xs = sorted(float(x) for x in xs)
    return {"median": statistics.median(xs), "min": xs[0], "max": xs[-1],
            "p95": float(np.percentile(xs, 95)), "n": len(xs)}


# ----- library ---------------------------------------------------------------------------------

def _bare_decode_time(m, c, B, S, n_chips=8, dtype="bf16"):
    """The decode bound as a bare numpy formula: the yardstick the library's speed is held to.

    ``max(2 B N_mm / (n C), (N_tot b_w + B S b_kv) / (n W))`` with bf16 weights and KV, no
    checks, no attention FLOPs, one output array.
    """
    N, C, W = m.matmul_params_active, c.peak(dtype), c.hbm_bandwidth
    kv = m.kv_bytes_per_token(2)
    return np.maximum(2.0 * B * N / (n_chips * C),
                      (m.total_params * 2 + B * S * kv) / (n_chips * W))


def _bare_decode_time_scalar(m, c, B, S, n_chips=8):
    """The same bare formula in plain Python for one configuration (no numpy, no checks)."""
    N, C, W = m.matmul_params_active, c.flops["bf16"], c.hbm_bandwidth
    kv = 2 * m.n_layers * m.kv_elements_per_token_per_layer
    return max(2.0 * B * N / (n_chips * C), (m.total_params * 2 + B * S * kv) / (n_chips * W))


def _per_call(fn, repeats, number):
    """Seconds per call, the best of ``repeats`` runs of ``number`` calls (load only adds): the
    wall clock and this process's CPU time (``time.process_time``). On a shared machine other
    processes stretch the wall clock of every run; the CPU time counts only this process's."""
    import itertools

    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        for _ in itertools.repeat(None, number):
            fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall) / number, min(cpu) / number


def bench_library(repeats):
    from llmmath import chips, models
    from llmmath.roofline import critical_batch, decode_step, prefill_step

    m, c = models.get("Llama-3-70B"), chips.get("H100-SXM")
    moe = models.get("DeepSeek-V3")
    B = np.geomspace(1, 4096, 1000)[None, :]
    S = np.geomspace(128, 8192, 1000)[:, None]
    vec, bare, vec_cpu, bare_cpu = [], [], [], []
    for _ in range(repeats):
        t, cpu = time.perf_counter(), time.process_time()
        s = decode_step(m, c, B, S, n_chips=8)
        np.asarray(s.time).sum()
        vec.append(time.perf_counter() - t)
        vec_cpu.append(time.process_time() - cpu)
        t, cpu = time.perf_counter(), time.process_time()
        np.asarray(_bare_decode_time(m, c, B, S)).sum()
        bare.append(time.perf_counter() - t)
        bare_cpu.append(time.process_time() - cpu)
    pts = [(float(b), float(x)) for b, x in zip(np.geomspace(1, 4096, 100).repeat(100),
                                                np.tile(np.geomspace(128, 8192, 100), 100),
                                                strict=True)]
    loop = []
    for _ in range(max(1, repeats // 2)):
        t = time.perf_counter()
        for b, x in pts:
            _ = decode_step(m, c, b, x, n_chips=8).time
        loop.append(time.perf_counter() - t)
    v, bv, lp = _stats(vec), _stats(bare), _stats(loop)
    # many short runs (200 calls, a few ms): on a loaded machine a run that the scheduler never
    # interrupts is then likely among them, and the best of them is the call's own cost
    n, runs = 200, 10 * repeats
    timed = {
        "decode_step": _per_call(lambda: decode_step(m, c, 64, 4096, n_chips=8), runs, n),
        "prefill_step": _per_call(lambda: prefill_step(m, c, 1, 4096, n_chips=8), runs, n),
        "critical_batch": _per_call(lambda: critical_batch(m, c), runs, n),
        "decode_step (MoE)": _per_call(lambda: decode_step(moe, c, 64, 4096, n_chips=8), runs, n),
        "critical_batch (MoE)": _per_call(lambda: critical_batch(moe, c), runs, n),
        "bare formula": _per_call(lambda: _bare_decode_time_scalar(m, c, 64.0, 4096.0), runs, n),
    }
    return {"sweep_points": B.size * S.size, "sweep_s": v, "bare_sweep_s": bv,
            "loop_points": len(pts), "loop_s": lp,
            "ns_per_config_vectorised": v["median"] / (B.size * S.size) * 1e9,
            "ns_per_config_bare": bv["median"] / (B.size * S.size) * 1e9,
            "sweep_over_bare": v["median"] / bv["median"],
            "sweep_over_bare_cpu": min(vec_cpu) / min(bare_cpu),
            "ns_per_config_loop": lp["median"] / len(pts) * 1e9,
            "speedup": (lp["median"] / len(pts)) / (v["median"] / (B.size * S.size)),
            "scalar_call_s": {k: wall for k, (wall, _) in timed.items()},
            "scalar_call_cpu_s": {k: cpu for k, (_, cpu) in timed.items()}}


# ----- explorers ---------------------------------------------------------------------------------

def bench_explorers(repeats):
    import matplotlib

    matplotlib.use("Agg")
    from llmmath import widgets

    out = {}
    for name, (factory, main, values) in widgets.EXPLORERS.items():
        t = time.perf_counter()
        e = factory()
        build = time.perf_counter() - t
        times = []
        for _ in range(repeats):
            for v in values:
                t = time.perf_counter()
                e.update(**{main: v})
                times.append(time.perf_counter() - t)
        other = next(k for k in e.controls if k not in ("model", "chip", main, "view"))
        opts = [o[1] if isinstance(o, tuple) else o for o in e.controls[other].options]
        full = []
        for _ in range(max(1, repeats // 2)):
            for o in opts[:6]:
                t = time.perf_counter()
                e.update(**{other: o})
                full.append(time.perf_counter() - t)
        out[name] = {"main": main, "update_s": _stats(times), "other": other,
                     "full_redraw_s": _stats(full), "build_s": build}
    return out


# ----- notebooks ---------------------------------------------------------------------------------

def bench_notebooks():
    import nbformat
    from nbclient import NotebookClient

    out = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=60, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
        t = time.perf_counter()
        try:
            client.execute()
            ok = True
        except Exception as exc:  # report, keep measuring the others
            lines = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines()
                     if ln.strip()]
            ok = f"{type(exc).__name__}: {(lines[-1] if lines else '')[:160]}"
        out[path.name] = {"s": time.perf_counter() - t, "ok": ok}
    return out


# ----- book ---------------------------------------------------------------------------------------

_REF = re.compile(r"""(?:src|href)\s*=\s*["']([^"'#?]+)""", re.I)


def _page_bytes(page: Path, html_root: Path, cache: dict) -> tuple[int, int]:
    text = page.read_text(encoding="utf-8", errors="replace")
    total, n_assets = len(text.encode("utf-8")), 0
    seen = set()
    for tag in re.finditer(r"<(img|script|link)\b[^>]*>", text, re.I):
        s = tag.group(0)
        if tag.group(1).lower() == "link" and "stylesheet" not in s and "preload" not in s:
            continue
        m = _REF.search(s)
        if not m:
            continue
        url = m.group(1)
        if (url.startswith("data:") or urlparse(url).scheme in ("http", "https")
                or url.startswith("//")):
            continue
        target = (page.parent / unquote(url)).resolve()
        if target in seen or not target.is_file():
            continue
        seen.add(target)
        if target not in cache:
            cache[target] = target.stat().st_size
        total += cache[target]
        n_assets += 1
    return total, n_assets


def bench_book():
    jb = (shutil.which("jupyter-book", path=str(ROOT / ".venv" / "bin"))
          or shutil.which("jupyter-book"))
    if jb is None:
        return {"error": "jupyter-book not found"}
    with tempfile.TemporaryDirectory(prefix="bench-book-") as tmp:
        t = time.perf_counter()
        proc = subprocess.run([jb, "build", ".", "--all", "--builder", "html",
                               "--path-output", tmp],
                              cwd=ROOT, capture_output=True, text=True)
        build_s = time.perf_counter() - t
        html_root = Path(tmp) / "_build" / "html"
        pages, cache = {}, {}
        for page in sorted(html_root.rglob("*.html")):
            rel = page.relative_to(html_root).as_posix()
            if rel in ("genindex.html", "search.html") or rel.startswith(("_static/", "_vendor/")):
                continue
            if page.stat().st_size < 1024 and "refresh" in page.read_text(errors="replace").lower():
                continue  # the root redirect, not a page
            size, n = _page_bytes(page, html_root, cache)
            pages[rel] = {"bytes": size, "assets": n, "html_bytes": page.stat().st_size}
        site = sum(f.stat().st_size for f in html_root.rglob("*") if f.is_file())
    sizes = [p["bytes"] for p in pages.values()]
    return {"build_s": build_s, "returncode": proc.returncode,
            "stderr_tail": proc.stderr[-800:] if proc.returncode else "",
            "pages": pages, "median_page_bytes": statistics.median(sizes) if sizes else None,
            "max_page_bytes": max(sizes) if sizes else None, "site_bytes": site}


# ----- report -------------------------------------------------------------------------------------

def _fmt_s(x):
    return "-" if x is None else (f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.1f} s")


def _fmt_b(x):
    return "-" if x is None else f"{x / 1e6:.2f} MB"


def report(res):
    rows = []
    if "library" in res:
        lib = res["library"]
        rows += [("library", f"decode_step sweep, {lib['sweep_points']:,} configs (one call)",
                  f"{_fmt_s(lib['sweep_s']['median'])} "
                  f"({lib['ns_per_config_vectorised']:.1f} ns/config)",
                  f"< {_fmt_s(TARGETS['sweep_s'])}"),
                 ("library", "same grid, bare numpy formula (no checks, time only)",
                  f"{_fmt_s(lib['bare_sweep_s']['median'])} "
                  f"({lib['ns_per_config_bare']:.1f} ns/config)",
                  f"sweep / bare {lib['sweep_over_bare']:.1f}x, CPU time "
                  f"{lib.get('sweep_over_bare_cpu', float('nan')):.1f}x (< "
                  f"{TARGETS['sweep_over_bare']:g}x)"),
                 ("library", f"same, Python loop over {lib['loop_points']:,} configs",
                  f"{lib['ns_per_config_loop']:,.0f} ns/config", f"speedup {lib['speedup']:,.0f}x")]
        bare = lib["scalar_call_s"]["bare formula"]
        cpu = lib.get("scalar_call_cpu_s", {})
        for name, sec in lib["scalar_call_s"].items():
            target = (f"< {TARGETS['scalar_call_s'] * 1e6:.0f} us" if name != "bare formula"
                      else "plain Python, no checks")
            on_cpu = f", CPU {cpu[name] * 1e6:.1f} us" if name in cpu else ""
            rows.append(("library", f"one scalar call: {name}",
                         f"{sec * 1e6:.1f} us ({sec / bare:.0f}x bare{on_cpu})", target))
    for name, e in res.get("explorers", {}).items():
        u, f = e["update_s"], e["full_redraw_s"]
        rows.append(("explorer", f"{name}: move {e['main']} (median / p95)",
                     f"{_fmt_s(u['median'])} / {_fmt_s(u['p95'])}",
                     f"< {_fmt_s(TARGETS['update_median_s'])} median"))
        rows.append(("explorer", f"{name}: change {e['other']}, full redraw (median / p95)",
                     f"{_fmt_s(f['median'])} / {_fmt_s(f['p95'])}", ""))
    for name, nb in res.get("notebooks", {}).items():
        rows.append(("notebook", name + ("" if nb["ok"] is True else f" FAILED: {nb['ok']}"),
                     _fmt_s(nb["s"]), f"< {TARGETS['notebook_s']:.0f} s"))
    if "book" in res and "build_s" in res["book"]:
        b = res["book"]
        rows.append(("book",
                     "jupyter-book build --all" + ("" if b["returncode"] == 0 else " (FAILED)"),
                     _fmt_s(b["build_s"]), f"< {TARGETS['build_s']:.0f} s"))
        rows.append(("book", f"median page with its assets ({len(b['pages'])} pages)",
                     _fmt_b(b["median_page_bytes"]), f"< {_fmt_b(TARGETS['median_page_bytes'])}"))
        rows.append(("book", "largest page with its assets", _fmt_b(b["max_page_bytes"]), ""))
        rows.append(("book", "whole site", _fmt_b(b["site_bytes"]), ""))
    if res.get("tests"):
        for k, v in res["tests"].items():
            rows.append(("tests", f"make test: {k}", f"{v} s", ""))
    elif "tests" in res:
        rows.append(("tests", "make test stages", "not measured (run make test first)", ""))
    w = [max(len(r[i]) for r in rows) for i in range(4)] if rows else [0] * 4
    line = "  ".join(f"{{:<{x}}}" for x in w)
    print(line.format("area", "measure", "measured", "target"))
    print(line.format(*("-" * x for x in w)))
    for r in rows:
        print(line.format(*r))


def bench_pages():
    """Each page of _build/html on a throttled link (scripts/page_load.py); None without a site."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import page_load

    if not (page_load.HTML / "index.html").exists():
        print("pages: no _build/html (run make book first); skipped")
        return None
    results = page_load.measure(page_load.toc_pages())
    print(page_load.report(results))
    lcps = [r["lcp_s"] for r in results.values() if r["lcp_s"]]
    return {"per_page": results, "lcp_max_s": max(lcps) if lcps else None,
            "lcp_median_s": statistics.median(lcps) if lcps else None,
            "lcp_target_s": page_load.LCP_TARGET_S}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help="comma-separated: " + ",".join(SECTIONS))
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = set(only) - set(SECTIONS)
    if bad:
        ap.error(f"--only: unknown {sorted(bad)}; choose from {SECTIONS}")
    os.chdir(ROOT)
    res = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                       "load_avg": os.getloadavg() if hasattr(os, "getloadavg") else None},
           "targets": TARGETS}
    t0 = time.perf_counter()
    if "library" in only:
        res["library"] = bench_library(args.repeats)
    if "explorers" in only:
        res["explorers"] = bench_explorers(max(1, args.repeats // 2))
    if "notebooks" in only:
        res["notebooks"] = bench_notebooks()
    if "book" in only:
        res["book"] = bench_book()
    if "pages" in only:
        res["pages"] = bench_pages()
    if "tests" in only:
        stages = ROOT / "_build" / "bench" / "test_stages.json"
        res["tests"] = json.loads(stages.read_text()) if stages.exists() else None
    res["bench_s"] = time.perf_counter() - t0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1, default=str))
    report(res)
    print(f"\n(bench took {res['bench_s']:.0f} s; load average {res['machine']['load_avg']}; JSON: "
          f"{OUT.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
