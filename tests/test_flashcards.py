"""Every numeric flashcard of the episode has an exercise somewhere in the book (issue 14).

Dwarkesh published 27 flashcards with the episode (paraphrased in the project's source notes,
never shown to readers). A card is *numeric* when its answer is a number a reader can compute:
the ~300 FLOP per byte (7), the critical batch of DeepSeek-V3 (8), the ~15 ms drain time (9),
scale-out ~8x slower than scale-up (10), the 6 of 6ND (15), the split of compute over a
model's life (16, 18-20), the KV bytes read from a price step (23), decode's utilisation from the
price ratio (24), the ~10x cheaper cached input (25). Each maps to the label of the
``{exercise}`` that covers it, in the book's own words and with the card's slips corrected.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"

#: card number -> (what the card asks, the exercise label that covers it)
COVERED = {
    7: ("typical FLOP per byte of HBM bandwidth, about 300", "hardware-ex-ratio"),
    8: ("critical batch about 300 x sparsity; DeepSeek-V3 with its real sparsity",
        "batching-ex-deepseek"),
    9: ("HBM drain time of a Rubin GPU, about 15 ms", "hardware-ex-rubin"),
    10: ("scale-out bandwidth about 8x below scale-up: one MoE layer over two racks",
         "moe-ex-tworacks"),
    15: ("the 6 in 6ND: forward 2, backward 4", "training-ex-six"),
    16: ("total compute: 6 N D_pre + f_RL N D_RL / u + 2 N D_inf / u", "overtraining-ex-equation"),
    18: ("C_pre = C_RL = C_inf with decode at a third of prefill's MFU: D_pre = 1.5 D_RL = D_inf",
         "overtraining-ex-split"),
    19: ("50M tokens/s for two months: 259T inference tokens (the card rounds to 200T)",
         "overtraining-ex-served"),
    20: ("a 100B-active model on that many tokens: about 130x past compute-optimal "
         "(the card says 100x)", "overtraining-ex-factor"),
    23: ("KV bytes per token implied by a 200k-token price step, about 1.7 kB",
         "prefill-ex-kvbytes"),
    24: ("decode MFU implied by output costing 3-5x input", "prefill-ex-mfu"),
    25: ("cached input about 10x cheaper: recompute against hold and fetch", "prefill-ex-cache"),
}

def _labels():
    found = {}
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = "".join(cell["source"])
            for m in re.finditer(r"```\{exercise\}[^\n]*\n:label: (\S+)", text):
                found[m.group(1)] = path.stem
    return found


LABELS = _labels()


@pytest.mark.parametrize("card", sorted(COVERED))
def test_numeric_card_has_an_exercise(card):
    topic, label = COVERED[card]
    assert label in LABELS, f"card {card} ({topic}): no exercise labelled {label!r} in book/"


def test_each_exercise_has_a_solution():
    text = "\n".join("".join(c["source"]) for p in BOOK.glob("*.ipynb")
                     for c in json.loads(p.read_text())["cells"] if c["cell_type"] == "markdown")
    for card, (_, label) in COVERED.items():
        assert re.search(r"```\{solution\} " + re.escape(label) + r"\b", text), (card, label)
