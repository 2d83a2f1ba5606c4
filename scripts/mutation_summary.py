"""Summarise a mutmut run (make mutate) into data/mutation/summary.md and summary.json.

Usage: python scripts/mutation_summary.py STAGE [--out data/mutation]

STAGE is the directory mutmut ran in (_build/mutate): its mutants/src/llmmath/*.py.meta files hold
each mutant's exit code. Per physics module: killed, survived, timeout, no tests, not checked, the
kill rate. Every survivor is listed with either its reason for being equivalent (the reviewed list
data/mutation/equivalent.txt, one "mutant_name  reason" a line) or its diff, to be killed by a test.
An equivalent mutant counts as neither killed nor survived: the rate is killed / (all - equivalent).
"""
import argparse
import json
import pathlib
import re
import sys

from llmmath import physics_modules

ROOT = pathlib.Path(__file__).resolve().parents[1]
KILLED = {1, 3}  # pytest failed (3: an internal error while the mutant ran also counts)
TIMEOUT = {36, -24, 24, 152, 255}
NO_TESTS = {5, 33}
TARGET = 0.90


def load_equivalent(path):
    """{mutant name: one-line reason} from equivalent.txt ('#' starts a comment)."""
    out = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        if not reason.strip():
            raise ValueError(f"{path}:{n}: {name} has no reason; each line is 'name  reason'")
        out[name] = reason.strip()
    return out


def classify(code):
    if code in KILLED:
        return "killed"
    if code == 0:
        return "survived"
    if code in TIMEOUT:
        return "timeout"
    if code in NO_TESTS:
        return "no tests"
    if code is None:
        return "not checked"
    return "suspicious"


def diff_of(stage, name):
    """The lines a mutant changes, read from mutmut's mutated file and its .spans index (fast:
    `mutmut show` starts a Python per mutant)."""
    module, _, func = name.rpartition(".")
    path = stage / "mutants" / "src" / pathlib.Path(*module.split(".")).with_suffix(".py")
    spans = json.loads(path.with_name(path.name + ".spans").read_text())["spans"]
    lines = path.read_text(encoding="utf-8").splitlines()

    def body(key):  # spans are 0-based, inclusive; the mutant's own name made neutral
        lo, hi = spans[key]
        return [ln.strip().replace(key, "f") for ln in lines[lo:hi + 1]]

    orig = body(func.partition("__mutmut_")[0] + "__mutmut_orig")
    mut = body(func)
    changed = [f"- {o} + {m}" for o, m in zip(orig, mut, strict=False) if o != m]
    return " / ".join(changed)[:240]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "data" / "mutation")
    ap.add_argument("--no-diff", action="store_true", help="list survivors without their diff")
    ap.add_argument("--merge", action="store_true",
                    help="keep the recorded results of modules this run did not mutate")
    a = ap.parse_args(argv)
    metas = sorted((a.stage / "mutants" / "src" / "llmmath").glob("*.py.meta"))
    if not metas:
        sys.exit(f"no mutmut results under {a.stage}/mutants: run make mutate first")
    equivalent = load_equivalent(a.out / "equivalent.txt")
    modules, survivors = {}, []
    for meta in metas:
        module = meta.name[: -len(".py.meta")]
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        counts = dict.fromkeys(("killed", "survived", "equivalent", "timeout", "no tests",
                                "not checked", "suspicious"), 0)
        for name, code in sorted(codes.items()):
            status = classify(code)
            if status in ("survived", "no tests") and name in equivalent:
                status = "equivalent"
            counts[status] += 1
            if status in ("survived", "no tests", "suspicious"):
                survivors.append({"mutant": name, "status": status,
                                  "diff": "" if a.no_diff else diff_of(a.stage, name)})
        counts["total"] = len(codes)
        judged = counts["total"] - counts["equivalent"] - counts["not checked"]
        # a timeout is a kill: the mutant made the tests hang (mutmut's own convention)
        counts["kill_rate"] = ((counts["killed"] + counts["timeout"]) / judged) if judged else None
        modules[module] = counts
    seconds_file = a.stage / "seconds"
    seconds = int(seconds_file.read_text()) if seconds_file.exists() else None
    staged = (a.stage / "pyproject.toml").read_text()  # the selection this run used
    tests = re.findall(r'"([^"]+)"', re.search(
        r"pytest_add_cli_args_test_selection = \[(.*?)\]", staged, re.S).group(1))
    commit_file = a.stage / "commit"  # written when make mutate staged the code
    commit = commit_file.read_text().strip() if commit_file.exists() else None
    for module in modules:
        modules[module]["commit"] = commit  # the code this module's record was measured on
        modules[module]["wall_seconds"] = seconds if len(modules) == 1 else None
        modules[module]["tests"] = "every physics test" if tests == ["tests"] else \
            " ".join(pathlib.Path(t).name for t in tests)
    old_file = a.out / "summary.json"
    if a.merge and old_file.exists():  # a run over some modules: keep the others' record
        old = json.loads(old_file.read_text())
        for module, counts in old["modules"].items():
            modules.setdefault(module, counts)
        ran = {meta.name[: -len(".py.meta")] for meta in metas}
        survivors += [s for s in old["survivors"] if s["mutant"].split(".")[1] not in ran]
        seconds = None
    # a module with no code of its own (roofline.py re-exports the step, balance, capacity...
    # modules) has nothing to mutate: said once below instead of a row of zeros
    empty = sorted(m for m, c in modules.items() if c["total"] == 0)
    modules = dict(sorted(modules.items()))
    tot = {k: sum(m[k] for m in modules.values()) for k in
           ("killed", "survived", "equivalent", "timeout", "no tests", "not checked",
            "suspicious", "total")}
    judged = tot["total"] - tot["equivalent"] - tot["not checked"]
    tot["kill_rate"] = (tot["killed"] + tot["timeout"]) / judged if judged else None
    data = {"modules": modules, "total": tot, "wall_seconds": seconds, "target": TARGET,
            "survivors": survivors}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "summary.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    md = ["# Mutation testing summary (make mutate)", "",
          "mutmut 3.8.1 over the physics modules, unit tests only (pyproject.toml [tool.mutmut]). "
          "Kill rate = (killed + timeout) / (total - equivalent - not checked). Target "
          f"{pct(TARGET)} per module.", ""]
    if seconds is not None:
        md += [f"Wall time of the run: {seconds} s ({seconds / 60:.0f} min), one child, nice 15.",
               ""]
    md += ["| module | total | killed | survived | equivalent | timeout | no tests | "
           "not checked | kill rate | target | measured at | tests run |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for module, c in [*((m, c) for m, c in modules.items() if c["total"]), ("**all**", tot)]:
        met = "" if c["kill_rate"] is None else ("met" if c["kill_rate"] >= TARGET else "not yet")
        md.append(f"| {module} | {c['total']} | {c['killed']} | {c['survived']} | "
                  f"{c['equivalent']} | {c['timeout']} | {c['no tests']} | {c['not checked']} | "
                  f"{pct(c['kill_rate'])} | {met if module != '**all**' else ''} | "
                  f"{c.get('commit') or ''} | {c.get('tests', '')} |")
    if empty:
        md += ["", f"No code of its own to mutate: {', '.join(empty)} (re-exports)."]
    unmeasured = sorted(set(physics_modules()) - set(modules))
    if unmeasured:
        md += ["", f"Not measured yet (physics modules by rule, never mutated): "
                   f"{', '.join(unmeasured)}."]
    md += ["", "## Equivalent mutants (reviewed, data/mutation/equivalent.txt)", ""]
    md += [f"- `{k}`: {v}" for k, v in sorted(equivalent.items())] or ["(none)"]
    md += ["", "## Survivors still to kill", ""]
    md += [f"- `{s['mutant']}` ({s['status']}): `{s['diff']}`" for s in survivors] or ["(none)"]
    (a.out / "summary.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md[:len(modules) + 12]))


if __name__ == "__main__":
    main()
