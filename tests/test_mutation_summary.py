"""scripts/mutation_summary.py: the mutation record's arithmetic (issue 20), on a made-up run."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stage(tmp_path, codes):
    src = tmp_path / "stage" / "mutants" / "src" / "llmmath"
    src.mkdir(parents=True)
    for module, by_key in codes.items():
        (src / f"{module}.py.meta").write_text(json.dumps({"exit_code_by_key": by_key}))
    (tmp_path / "stage" / "pyproject.toml").write_text(
        '[tool.mutmut]\npytest_add_cli_args_test_selection = ["tests/test_a.py"]\n')
    return tmp_path / "stage"


def _run(stage, out, *extra):
    subprocess.run([sys.executable, str(ROOT / "scripts" / "mutation_summary.py"), str(stage),
                    "--out", str(out), "--no-diff", *extra], check=True, capture_output=True)
    return json.loads((out / "summary.json").read_text()), (out / "summary.md").read_text()


def test_kill_rate_counts_timeouts_as_kills_and_leaves_out_equivalents(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "equivalent.txt").write_text("llmmath.foo.x_f__mutmut_4  same float either way\n")
    # foo: 2 killed (exit 1 and 3), 1 timeout (-24), 1 survivor judged equivalent, 1 survivor,
    # 1 not checked: (2 + 1) / (6 - 1 - 1) = 75%; bar: everything killed; baz: no code
    stage = _stage(tmp_path, {
        "foo": {f"llmmath.foo.x_f__mutmut_{i}": c for i, c in
                enumerate([1, 3, -24, 0, 0, None], start=1)},
        "bar": {"llmmath.bar.x_g__mutmut_1": 1},
        "baz": {}})
    data, md = _run(stage, out)
    foo = data["modules"]["foo"]
    assert (foo["killed"], foo["timeout"], foo["equivalent"], foo["survived"],
            foo["not checked"]) == (2, 1, 1, 1, 1)
    assert foo["kill_rate"] == 0.75 and data["modules"]["bar"]["kill_rate"] == 1.0
    assert [s["mutant"] for s in data["survivors"]] == ["llmmath.foo.x_f__mutmut_5"]
    assert "| foo | 6 | 2 | 1 | 1 | 1 | 0 | 1 | 75.0% | not yet |" in md
    assert "| bar | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 100.0% | met |" in md
    assert "| baz |" not in md and "No code of its own to mutate: baz" in md
    assert "same float either way" in md
    # a later run of bar alone keeps foo's record (and its survivor) with --merge
    stage2 = _stage(tmp_path / "again", {"bar": {"llmmath.bar.x_g__mutmut_1": 0}})
    data, md = _run(stage2, out, "--merge")
    assert data["modules"]["foo"]["kill_rate"] == 0.75
    assert data["modules"]["bar"]["kill_rate"] == 0.0
    assert {s["mutant"] for s in data["survivors"]} == {"llmmath.foo.x_f__mutmut_5",
                                                        "llmmath.bar.x_g__mutmut_1"}
