"""Check that mechanical edits (line wrapping, string splitting) left Python code unchanged.

For every .py file that differs from a git ref (default ``main``), parse the old version
(``git show REF:path``) and the new one (the working tree) with ``ast.parse`` and compare
``ast.dump`` of both after collapsing each run of whitespace in string constants to one
space. Adjacent string literals are joined by the parser, so a string correctly split over
two lines gives the same constant; a space lost at a join still shows up. Doubled spaces
would not, so any string constant whose text differs at all is also reported, except in
docstrings (rewrapping a docstring changes its line breaks, which is allowed).

A string whose text differs only by line breaks (with their indentation) added or removed
(embedded JavaScript or CSS rewrapped) is printed as a note, not a difference: every other
character is unchanged, so a space lost or doubled at a join is still caught.

Prints each differing file with its first differing node and exits 1 if any differ; files
new or deleted since REF are listed and skipped.

Usage: python scripts/same_ast.py [REF] [--paths lib tests ...]
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import subprocess
import sys
from pathlib import Path

_WS = re.compile(r"\s+")


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.add(id(body[0].value))
    return found


def _normalised(tree: ast.AST) -> ast.AST:
    """The tree with every run of whitespace in str constants collapsed to one space."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = _WS.sub(" ", node.value)
    return tree


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """Every str constant node outside docstrings, in walk order."""
    docs = _docstring_nodes(tree)
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
    ]


def _line_breaks_only(old: str, new: str) -> bool:
    """True when ``new`` is ``old`` with only line breaks (and their indentation) added or removed.

    Every edit that turns one into the other must be whitespace on both sides with a line break
    on at least one side: a space lost or doubled where two literals join holds no line break,
    so it is still caught.
    """
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        x, y = old[i1:i2], new[j1:j2]
        if x.strip() or y.strip() or ("\n" not in x and "\n" not in y):
            return False
    return True


def _first_difference(old: ast.AST, new: ast.AST) -> str:
    """The first pair of nodes (in walk order) whose dumps differ, as a short message."""
    for a, b in zip(ast.walk(old), ast.walk(new), strict=False):
        if type(a) is not type(b):
            return f"node types differ: {type(a).__name__} vs {type(b).__name__}"
        fields_a = {
            k: v for k, v in ast.iter_fields(a) if not isinstance(v, ast.AST | list)
        }
        fields_b = {
            k: v for k, v in ast.iter_fields(b) if not isinstance(v, ast.AST | list)
        }
        if fields_a != fields_b:
            line = getattr(b, "lineno", "?")
            return (
                f"line {line} (new): {type(a).__name__} fields differ:\n"
                f"    old: {fields_a!r}\n    new: {fields_b!r}"
            )
        len_a = [len(v) for _, v in ast.iter_fields(a) if isinstance(v, list)]
        len_b = [len(v) for _, v in ast.iter_fields(b) if isinstance(v, list)]
        if len_a != len_b:
            line = getattr(b, "lineno", "?")
            return f"line {line} (new): {type(a).__name__} child counts differ"
    return "trees differ in length"


def compare(old_src: str, new_src: str, path: str) -> tuple[str | None, list[str]]:
    """(what differs or None, notes) for two versions of one file.

    A string constant (outside docstrings) whose text differs only by line breaks added or
    removed (JavaScript or CSS embedded in a test, rewrapped) is not a difference but a note,
    so a reviewer sees it.
    """
    notes: list[str] = []
    try:
        old_tree = ast.parse(old_src, filename=path)
    except SyntaxError as exc:
        return f"old version does not parse: {exc}", notes
    try:
        new_tree = ast.parse(new_src, filename=path)
    except SyntaxError as exc:
        return f"new version does not parse: {exc}", notes
    old_strings, new_strings = _strings(old_tree), _strings(new_tree)
    if len(old_strings) != len(new_strings):
        return "number of string constants changed", notes
    for old_node, new_node in zip(old_strings, new_strings, strict=True):
        a, b = old_node.value, new_node.value
        if a == b:
            continue
        if _line_breaks_only(a, b):
            first = a.strip().splitlines()[0][:60] if a.strip() else ""
            notes.append(f"line breaks moved inside the string starting {first!r}")
            new_node.value = a  # accepted: compare the rest of the tree as if unchanged
            continue
        return f"string constant changed:\n    old: {a!r}\n    new: {b!r}", notes
    old_norm, new_norm = _normalised(old_tree), _normalised(new_tree)
    if ast.dump(old_norm) != ast.dump(new_norm):
        return _first_difference(old_norm, new_norm), notes
    return None, notes


def _git(*args: str, root: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=root)


def changed_files(ref: str, paths: list[str], root: Path) -> list[str]:
    """The .py files (relative to ``root``) that differ between ``ref`` and the working tree."""
    out = _git("diff", "--name-only", ref, "--", *paths, root=root)
    if out.returncode != 0:
        raise SystemExit(f"git diff against {ref!r} failed: {out.stderr.strip()}")
    return [p for p in out.stdout.splitlines() if p.endswith(".py")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", nargs="?", default="main", help="git ref to compare with")
    parser.add_argument("--paths", nargs="*", default=[],
                        help="limit to these paths (relative to the repository root)")
    args = parser.parse_args(argv)
    root = Path(_git("rev-parse", "--show-toplevel").stdout.strip() or ".")
    bad = 0
    files = changed_files(args.ref, args.paths, root)
    for path in files:
        old = _git("show", f"{args.ref}:{path}", root=root)
        if old.returncode != 0 or not (root / path).exists():
            print(f"{path}: new or deleted since {args.ref}; skipped")
            continue
        new_src = (root / path).read_text(encoding="utf-8")
        problem, notes = compare(old.stdout, new_src, path)
        for note in notes:
            print(f"{path}: note: {note}")
        if problem:
            bad += 1
            print(f"{path}: {problem}")
    print(f"{len(files)} changed .py file(s) checked against {args.ref}; {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
