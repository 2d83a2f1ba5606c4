"""Plant each bug of the issue-20 audit in a scratch copy of lib/ and run the value tests.

Usage: python scripts/plant_bugs.py. Each line must end "failed"; exit 1 if a bug survives.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEST = ROOT / "tests" / "test_values_planted_bugs.py"

bugs = [
 ("intensity.py", "ridge * (k * b_in + n * b_out)", "ridge * (k * b_in)"),
 ("capacity.py", "per_seq = model.kv_cache_bytes(context, kv_bytes)",
  "per_seq = model.kv_cache_bytes(context, 2)"),
 ("cost.py", "- 1.0, 0.0)\n                * np.asarray(s.batch))", "- 1.0, 0.0))"),
 ("capacity.py", "return _out(model.total_params * np.asarray(weight_bytes",
  "return _out(model.active_params * np.asarray(weight_bytes"),
 ("cost.py", "np.asarray(step.n_chips) * np.asarray(step.time) / np.asarray(step.tokens)",
  "np.asarray(step.time) / np.asarray(step.tokens)"),
 ("step.py", "kvbytes = batch * (written + model.kv_read_bytes(past, kv_bytes))",
  "kvbytes = batch * written"),
 ("models.py", "touched = E * -xp.expm1(tokens * xp.log1p(-k / E))",
  "touched = np.minimum(tokens * k, E)"),
 ("models.py", "kv_up = self.kv_lora_rank * nq * (self.qk_nope_head_dim + self.v_head_dim)",
  "kv_up = self.kv_lora_rank * nq * self.qk_nope_head_dim"),
]
survived = 0
for f, old, new in bugs:
    with tempfile.TemporaryDirectory() as tmp:
        lib = pathlib.Path(tmp) / "lib"
        shutil.copytree(ROOT / "lib", lib)
        p = lib / "llmmath" / f
        s = p.read_text()
        assert old in s, f"{f}: the code to mutate moved: {old!r}"
        p.write_text(s.replace(old, new, 1))
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p",
                            "no:cacheprovider", str(TEST)], cwd=tmp, capture_output=True,
                           text=True, env={**os.environ, "PYTHONPATH": str(lib)})
        last = r.stdout.strip().splitlines()[-1]
        survived += r.returncode == 0
        print(f"{f}: {new[:50]!r} -> {last}")
sys.exit(1 if survived else 0)
