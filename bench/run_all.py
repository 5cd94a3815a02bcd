"""`make bench`: run every figure, print one table, write bench/results.md.

    python bench/run_all.py [--quick] [--only hash_array ...] [--out PATH]

Each figure runs in its own process (`bench/NAME.py --json FILE`), one after the other,
so that a 1 GB figure's memory is given back before the next starts. Within a figure,
this project and its anchors are timed round-robin in the same process. The table has
one row per method: the median, min and max of its runs, how many times longer than this
project's median it took (`anchor / ours`), and on this project's rows the target and
whether it was met.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Row, fmt_time, module_versions  # noqa: E402

FIGURES = ["hash_array", "hash_frame", "hash_dict", "hash_functions", "store_restore"]
FIGURES += ["store_frame", "trivial_hit"]
FIGURES += ["live_step", "sharing"]
FIGURES += ["step_100mb", "chain_1gb", "keep_share", "keep_unit", "records_step", "audit_hook"]
FIGURES += ["resume", "long_record", "chain_resume", "remote_hit", "bucket_hit", "seal", "corpus"]
FIGURES += ["sidebar_view", "sidebar_scale"]  # need `make ui-deps` (and labext)
TIMEOUT = 900  # seconds for one figure
TIMEOUTS = {"corpus": 2400}  # verify over the corpus, twice: four passes of 31 notebooks


def ensure_bench_deps() -> None:
    """Install the `bench` extra's missing packages (the anchors) into this interpreter:
    `make bench` builds its venv with the test extra only."""
    import importlib.util
    import re

    try:
        import tomllib
    except ImportError:  # Python 3.10: install them by hand (pip install -e '.[bench]')
        return
    extra = tomllib.loads((HERE.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["bench"]
    missing = []
    for req in extra:
        dist = re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]
        if importlib.util.find_spec(dist.replace("-", "_")) is None:
            missing.append(req)
    if missing:
        print(f"installing the bench extra's missing anchors: {' '.join(missing)}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=False)


def run_figure(name: str, quick: bool) -> list[Row]:
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as out:
        cmd = [sys.executable, str(HERE / f"{name}.py"), "--json", out.name]
        if quick:
            cmd.append("--quick")
        t0 = time.perf_counter()
        timeout = TIMEOUTS.get(name, TIMEOUT)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return [Row(name, "", "(figure)", [], note=f"timed out after {timeout} s")]
        took = time.perf_counter() - t0
        rows = [Row(**json.loads(line)) for line in out.read().splitlines() if line.strip()]
    if proc.returncode != 0 or not rows:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return [Row(name, "", "(figure)", [], note=f"failed: {err[:200]}")]
    print(f"  {name}: {took:.0f} s", file=sys.stderr)
    return rows


def with_ratios(rows: list[Row]) -> list[tuple[Row, float | None]]:
    """Each row with `its median / the median of this project's row it compares to`:
    the closest earlier row of ours in the same figure and size."""
    out = []
    ours: Row | None = None
    for r in rows:
        if r.ours:
            ours = r
            out.append((r, None))
            continue
        same = ours is not None and (ours.figure, ours.size) == (r.figure, r.size)
        ratio = r.median / ours.median if same and r.median and ours.median else None
        out.append((r, ratio))
    return out


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def met_text(r: Row) -> str:
    if not r.ours or not r.target:
        return ""
    if r.met is None:
        return "n/a"
    return "yes" if r.met else "NO"


COLUMNS = ["figure", "size", "method", "median", "min", "max", "anchor / ours", "target", "met"]


def cells(r: Row, ratio: float | None) -> list[str]:
    lo, hi = (min(r.times), max(r.times)) if r.times else (None, None)
    method = f"**{r.method}**" if r.ours else r.method
    note = f" ({r.note})" if r.note else ""
    return [
        r.figure,
        r.size,
        method + note,
        fmt_time(r.median),
        fmt_time(lo),
        fmt_time(hi),
        fmt_ratio(ratio),
        r.target,
        met_text(r),
    ]


def text_table(rows: list[Row]) -> str:
    data = [COLUMNS] + [[c.replace("**", "") for c in cells(r, x)] for r, x in with_ratios(rows)]
    widths = [min(max(len(row[i]) for row in data), 60) for i in range(len(COLUMNS))]
    lines = []
    for i, row in enumerate(data):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def md_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r, x in with_ratios(rows):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells(r, x)) + " |")
    return "\n".join(lines)


def summary_table(rows: list[Row]) -> str:
    """One line per row of ours: its median, each anchor's median (with the ratio), the
    target and whether it was met. docs/benchmarks.md shows this table, copied by hand
    with the run's date: nothing here writes that page."""
    lines = [
        "| figure | size | resumable-cells | anchors (median, anchor / ours) | target | met |",
        "|---|---|---|---|---|---|",
    ]
    pairs = with_ratios(rows)
    for i, (r, _) in enumerate(pairs):
        if not r.ours:
            continue
        anchors = []
        for other, ratio in pairs[i + 1 :]:
            if other.ours or (other.figure, other.size) != (r.figure, r.size):
                break
            anchors.append(f"{other.method} {fmt_time(other.median)} ({fmt_ratio(ratio)})")
        ours = f"{fmt_time(r.median)}" + (f" ({r.note})" if r.note else "")
        cols = [r.figure, r.size, f"{r.method}: {ours}", "; ".join(anchors), r.target]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cols) + f" | {met_text(r)} |")
    return "\n".join(lines)


def corpus_table(rows: list[Row]) -> str:
    """The corpus figure (`corpus.py`) as one line per notebook, then the whole corpus:
    the plain Run All, the first run under `%%step` and the resume, each with its ratio
    to the plain run and whether it met its target. Empty without corpus rows."""
    by_size: dict[str, dict[str, Row]] = {}
    for r in rows:
        kind = r.extra.get("corpus")
        if kind:
            by_size.setdefault(r.size, {})[kind] = r
    if not by_size:
        return ""
    lines = [
        "| notebook | plain | first run | first / plain | resume | resume / plain |",
        "|---|---|---|---|---|---|",
    ]
    for size, got in by_size.items():
        plain = got.get("plain")
        cols = [size, fmt_time(plain.median) if plain else "-"]
        for kind in ("stepped", "replay"):
            r = got.get(kind)
            ratio = r.extra.get("ratio") if r else None
            mark = "" if r is None or r.met is None else (" (met)" if r.met else " (**not met**)")
            cols += [fmt_time(r.median) if r else "-", f"{ratio:.2f}x{mark}" if ratio else "-"]
        lines.append("| " + " | ".join(cols) + " |")
    return "\n".join(lines)


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
    except OSError:
        pass
    return {
        "cores (nproc)": str(len(os.sched_getaffinity(0))),
        "CPU": cpu,
        "RAM": ram,
        "OS": f"{platform.system()} {platform.release()}",
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
    }


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", nargs="+", choices=FIGURES, help="run only these figures")
    ap.add_argument("--no-install", action="store_true", help="do not pip install anchors")
    ap.add_argument("--out", help="markdown file (default: bench/results.md; none if --quick)")
    args = ap.parse_args()
    if not args.no_install:
        ensure_bench_deps()
    started = dt.datetime.now(dt.timezone.utc)
    load_before = load()
    t0 = time.perf_counter()
    rows: list[Row] = []
    for name in args.only or FIGURES:
        rows += run_figure(name, args.quick)
    took = time.perf_counter() - t0
    print()
    print(text_table(rows))
    print(f"\n{len(rows)} rows in {took:.0f} s; load average {load_before} before, {load()} after")
    out = args.out or (None if args.quick else str(HERE / "results.md"))
    if out:
        write_markdown(Path(out), rows, started, took, load_before, args.quick)
        print(f"wrote {out}")
    return 0


def write_markdown(path, rows, started, took, load_before, quick) -> None:
    import resumable_cells

    versions = module_versions(
        "resumable-cells", "numpy", "pandas", "xxhash", "diskcache", "joblib", "marimo",
        "ipykernel", "jupyter_client",
    )  # fmt: skip
    versions.setdefault("resumable-cells", getattr(resumable_cells, "__version__", "?"))
    mach = machine()
    met = [r for r in rows if r.ours and r.target]
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `make bench` (`python bench/run_all.py{' --quick' if quick else ''}`) "
        f"on {started:%Y-%m-%d %H:%M} UTC in {took:.0f} s.",
        "",
        "**Machine:** "
        + "; ".join(f"{k} {v}" for k, v in mach.items())
        + f"; load average {load_before} at the start, {load()} at the end"
        " (the machine is shared: anchors are interleaved with this project's runs so that"
        " ratios hold, absolute times move with the load).",
        "",
        "**Versions:** " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        "",
        f"Targets met: {sum(1 for r in met if r.met)} of {len(met)}. "
        "`anchor / ours`: how many times this project's median the anchor took.",
        "",
        "## Summary",
        "",
        summary_table(rows),
        "",
        "## Every method (this project's rows in bold)",
        "",
        md_table(rows),
        "",
    ]
    corpus = corpus_table(rows)
    if corpus:
        lines += [
            "## Corpus: each notebook against its plain Run All",
            "",
            "`bench/corpus.py` (`resumable-cells verify`): the first run under `%%step` "
            "(target: at most 1.1x the plain run) and the resume after a restart (target: "
            "no longer than the plain run), per notebook and over the whole corpus.",
            "",
            corpus,
            "",
        ]
    analysis = HERE / "ANALYSIS.md"
    if analysis.exists():
        lines += [analysis.read_text().strip(), ""]
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
