"""llmmath.capacity at its edges, by hand (issue 20: what the mutation run found untested).

Chips are built with exactly the HBM a case needs, so each answer is a whole number in real
arithmetic and the tolerances in the code (floor of x (1 + 1e-12), ceil of x (1 - 1e-12)) are
what keeps float rounding from dropping it by one. Model figures, from the model cards:
- Llama-3-8B: 8,030,261,248 parameters (16,060,522,496 B in bf16); 32 layers x 8 KV heads x 128
  x 2 (K, V) x 2 B = 131,072 B of KV per token (4096 per layer).
- gpt-oss-120b: 116,829,154,368 parameters (233,658,308,736 B); 36 layers, 18 of them with a
  128-token window; 8 KV heads x 64 x 2 x 2 B = 2048 B per layer-token.
- DeepSeek-V3.2: 671,026,419,200 parameters (1,342,052,838,400 B); 61 MLA layers of 576 elements
  (1152 B in bf16) plus the indexer's 132-byte key per token per layer: 1284 B per layer-token.
"""

import numpy as np
import pytest

from llmmath import models
from llmmath.capacity import fits_in_memory, max_batch, max_context, memory_held, min_chips
from llmmath.chips import Chip

L8 = models.get("Llama-3-8B")
GPT_OSS = models.get("gpt-oss-120b")
DSV32 = models.get("DeepSeek-V3.2")
W_L8 = 16_060_522_496
SEQ_8K = 8192 * 131_072  # one 8192-token Llama-3-8B cache: 1,073,741,824 B


def chip(capacity):
    return Chip(name="exact", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=capacity)


def test_exactly_full_hbm_still_fits():
    # weights + 10 caches of 8192 tokens = 26,797,940,736 B: ten fit exactly, eleven do not
    c = chip(W_L8 + 10 * SEQ_8K)
    assert max_batch(L8, c, 8192) == 10
    assert fits_in_memory(L8, c, 10, 8192) is True
    assert fits_in_memory(L8, c, 11, 8192) is False
    assert min_chips(L8, c, 10, 8192) == 1
    assert min_chips(L8, c, 11, 8192) == 2
    # the weights alone fill the chip: they fit, with room for no sequence
    assert max_batch(L8, chip(W_L8), 8192) == 0
    # weights + 4 caches of 1000 tokens (524,288,000 B): 1000 tokens fit exactly
    assert max_context(L8, chip(W_L8 + 4 * 1000 * 131_072), 4) == 1000
    # two chips' worth exactly: (16,060,522,496 + 1,073,741,824) / 2 = 8,567,132,160 B a chip
    assert min_chips(L8, chip((W_L8 + SEQ_8K) / 2), 1, 8192) == 2


def test_min_chips_up_to_the_largest_machine():
    # 29,571 caches of 8192 tokens beside the weights: 31,767,680,000,000 B = 1e7 x 3,176,768,
    # exactly the largest machine the library accepts (MAX_CHIPS = 10,000,000)
    c = chip(3_176_768)
    assert min_chips(L8, c, 29_571, 8192) == 10_000_000
    with pytest.raises(ValueError, match="more chips than any machine"):
        min_chips(L8, c, 29_572, 8192)


def test_max_context_under_sliding_windows_by_hand():
    # gpt-oss-120b, 4 sequences. Below the window every layer holds S tokens:
    # 36 x 100 x 2048 = 7,372,800 B a sequence at 100 tokens.
    assert max_context(GPT_OSS, chip(233_658_308_736 + 4 * 7_372_800), 4) == 100
    # Past it the 18 windowed layers stop at 128: 18 x 1000 x 2048 + 18 x 128 x 2048
    # = 41,582,592 B a sequence at 1000 tokens.
    assert max_context(GPT_OSS, chip(233_658_308_736 + 4 * 41_582_592), 4) == 1000
    # every layer windowed (Llama-3-8B with 32 windows of 128): a sequence never holds more
    # than 32 x 128 x 4096 = 16,777,216 B; below that, 4 x 32 x 100 x 4096 B hold 100 tokens
    win = L8.replace(sliding_window=128, n_sliding_layers=32)
    assert max_context(win, chip(W_L8 + 4 * 32 * 100 * 4096), 4) == 100
    with pytest.raises(ValueError, match="^model 'Llama-3-8B': every layer uses a 128-token "
                                         "window, so the KV cache stops growing and any "
                                         "context fits$"):
        max_context(win, chip(W_L8 + 4 * 16_777_216), 4)  # room for exactly a full window


def test_max_context_with_an_indexer_by_hand(deepseek_v32_windowed):
    # DeepSeek-V3.2, 8 sequences at 1000 tokens: 61 x 1284 x 1000 = 78,324,000 B each
    assert max_context(DSV32, chip(1_342_052_838_400 + 8 * 78_324_000), 8) == 1000
    # with 31 of its 61 layers given a 512-token window (no indexer keys on those): at 300
    # tokens 30 x 1284 x 300 + 31 x 1152 x 300 = 22,269,600 B; at 1000 tokens
    # 30 x 1284 x 1000 + 31 x 1152 x 512 = 56,804,544 B
    mixed = deepseek_v32_windowed
    assert max_context(mixed, chip(1_342_052_838_400 + 8 * 22_269_600), 8) == 300
    assert max_context(mixed, chip(1_342_052_838_400 + 8 * 56_804_544), 8) == 1000


def test_weights_that_do_not_fit_name_the_chips_needed(small_chip):
    # 16.06 GB of weights on 10 GB chips, half of each usable: ceil(16.06 / 5) = 4 chips
    msg = ("^n_chips, weight_bytes, memory_fraction: got n_chips=1; the Llama-3-8B weights "
           r"alone \(16.06 GB at 2 B/weight\) do not fit; at least 4 x small are needed "
           r"\(memory_fraction=0.5\)$")
    with pytest.raises(ValueError, match=msg):
        max_batch(L8, small_chip, 8192, memory_fraction=0.5)
    with pytest.raises(ValueError, match=msg):
        max_context(L8, small_chip, 1, memory_fraction=0.5)


def test_counts_no_integer_holds_are_refused_by_name():
    # a vanishing context (or batch) asks for more sequences (tokens) than an int64 holds
    with pytest.raises(ValueError, match="^context, n_chips, weight_bytes, kv_bytes, "
                                         "memory_fraction: the batch is .*not a count"):
        max_batch(L8, chip(1e11), 1e-300)
    with pytest.raises(ValueError, match="^batch, n_chips, weight_bytes, kv_bytes, "
                                         "memory_fraction, kv_fraction, kv_replicas: the "
                                         "context is .*not a count"):
        max_context(L8, chip(1e11), 1e-300)


@pytest.mark.parametrize("call, name", [
    (lambda: memory_held(L8, -1, 8192), "batch"),
    (lambda: fits_in_memory(L8, chip(1e11), 1, 8192, memory_fraction=1.5), "memory_fraction"),
    (lambda: max_batch(L8, chip(1e11), 0), "context"),
    (lambda: max_batch(L8, chip(1e11), 8192, memory_fraction=0), "memory_fraction"),
    (lambda: max_context(L8, chip(1e11), 0), "batch"),
    (lambda: max_context(L8, chip(1e11), 1, kv_replicas=0), "kv_replicas"),
    (lambda: max_context(L8, chip(1e11), 1, memory_fraction=2), "memory_fraction"),
    (lambda: max_context(L8, chip(1e11), 1, kv_fraction=1.5), "kv_fraction"),
    (lambda: min_chips(L8, chip(1e11), memory_fraction=0), "memory_fraction"),
])
def test_bad_input_names_its_argument(call, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        call()


def test_scalar_answers_are_python_numbers():
    assert type(fits_in_memory(L8, chip(1e11), 1, 8192)) is bool
    assert type(max_batch(L8, chip(1e11), 8192)) is int
    assert type(memory_held(L8, 1, 8192)) is float
    got = fits_in_memory(L8, chip(W_L8 + 10 * SEQ_8K), np.array([10, 11]), 8192)
    assert got.dtype == bool and list(got) == [True, False]


def test_held_and_read_bytes_differ_under_sparse_attention_and_windows():
    # DeepSeek-V3.2 at 131,072 tokens, fp8 cache: every layer HOLDS 131,072 rows of 656 B (the
    # fp8 latent, FlashMLA's format) + 132 B of indexer key, but a step READS only the top 2,048
    # rows of latent and every indexer key: held 61 x 131,072 x 788 B = 6,300,368,896 B,
    # read 61 x (2,048 x 656 + 131,072 x 132) = 1,137,344,512 B.
    from llmmath.step import decode_step
    h200 = Chip(name="h200-like", flops={"bf16": 989.4e12}, hbm_bandwidth=4.8e12,
                hbm_capacity=141e9)
    assert DSV32.kv_cache_bytes(131_072, 1) == 6_300_368_896
    assert DSV32.kv_read_bytes(131_072, 1) == 1_137_344_512
    step = decode_step(DSV32, h200, 10, 131_072, n_chips=8, weight_bytes=1, kv_bytes=1)
    assert step.kv_bytes_read == pytest.approx(10 * 1_137_344_512, rel=1e-12)
    assert step.held_per_chip == pytest.approx((671_026_419_200 + 10 * 6_300_368_896) / 8,
                                               rel=1e-12)
    # gpt-oss-120b at 8,192 tokens: 18 windowed layers hold and read 128 rows, 18 global layers
    # 8,192, each 2,048 B in bf16: 18 x (128 + 8,192) x 2,048 = 306,708,480 B held and read
    assert GPT_OSS.kv_cache_bytes(8192) == GPT_OSS.kv_read_bytes(8192) == 306_708_480
    # and the largest batch on one 141 GB chip, weights in fp8, is what the weights leave over
    # that: (141,000,000,000 - 116,829,154,368) / 306,708,480 = 78.8, so 78
    assert max_batch(GPT_OSS, h200, 8192, weight_bytes=1) == 78
