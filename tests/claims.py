"""``each``: one test per claim, over a list of cases (``from claims import each``).

A chapter's claim ("batch 1 is memory-bound on every chip") holds over the whole catalogue. As
one pytest item per chip x model pair it was most of the suite's items and collection time; as
one test that runs every case and reports every failing case in one message it says the same
and costs one item.
"""

from __future__ import annotations

import itertools

import pytest


def _label(value) -> str:
    if isinstance(value, tuple):
        return "-".join(_label(v) for v in value)
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else repr(value)


def each(argnames, values, ids=None):
    """Decorator: the test runs once over every case of ``values``, like ``parametrize``, and
    fails once, listing every failing case by its id (stack it for a product of lists).

    ``argnames``, ``values`` and ``ids`` (a list, or a function of one value) as in
    ``pytest.mark.parametrize``. A case that calls ``pytest.skip`` is counted as skipped; if
    every case skips, the test skips.
    """
    names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else argnames
    values = list(values)
    if ids is None:
        labels = [_label(v) for v in values]
    elif callable(ids):  # as pytest does: the function names each argument of a case
        labels = [str(ids(v)) if len(names) == 1 else "-".join(str(ids(x)) for x in v)
                  for v in values]
    else:
        labels = [str(i) for i in ids]
    if len(labels) != len(values):
        raise ValueError(f"each: {len(values)} values but {len(labels)} ids")
    if not values:
        raise ValueError(f"each: no cases for {argnames!r}: a claim over nothing tests nothing")

    def decorate(fn):
        target = getattr(fn, "_each_target", fn)
        dims = [(names, list(zip(values, labels, strict=True)))] + getattr(fn, "_each_dims", [])

        def test():
            failures, skipped, cases = [], 0, 0
            for combo in itertools.product(*(cases_ for _, cases_ in dims)):
                kwargs, label = {}, []
                for (dim_names, _), (value, tag) in zip(dims, combo, strict=True):
                    if len(dim_names) == 1:
                        kwargs[dim_names[0]] = value
                    else:
                        kwargs.update(zip(dim_names, value, strict=True))
                    label.append(tag)
                cases += 1
                try:
                    target(**kwargs)
                except pytest.skip.Exception:
                    skipped += 1
                except Exception as exc:  # noqa: BLE001 - every failing case is reported
                    text = str(exc).strip().splitlines()
                    first = " / ".join(text[:3])[:400] if text else ""
                    failures.append(f"[{'-'.join(label)}] {type(exc).__name__}: {first}")
            if failures:
                pytest.fail(f"{len(failures)} of {cases} cases fail:\n" + "\n".join(failures),
                            pytrace=False)
            if skipped == cases:
                pytest.skip(f"all {cases} cases skipped")

        # not functools.wraps: pytest would read the wrapped function's arguments as fixtures
        test.__name__, test.__qualname__ = target.__name__, target.__qualname__
        test.__doc__, test.__module__ = target.__doc__, target.__module__
        test._each_target, test._each_dims = target, dims
        return test

    return decorate
