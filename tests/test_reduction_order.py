"""The ordered sums and bf16 rounding behind q39: exact, in the stated order, on every machine."""

import numpy as np
import pytest

from solutions.correctness_operations.reduction_order import ToyLM, bf16_ulp, ordered_matmul, ordered_sum, to_bf16


def test_to_bf16_rounds_to_nearest_with_ties_to_even():
    step = 2.0 ** -7  # bf16 spacing in [1, 2)
    x = np.array([1.0, 1 + step / 2, 1 + 1.5 * step, 1 + step / 2 + 2 ** -20, -3.0e38, 1e-30], np.float32)
    out = to_bf16(x)
    assert out[0] == 1.0
    assert out[1] == 1.0                 # tie: to the even neighbour
    assert out[2] == 1 + 2 * step        # tie: to the even neighbour, upwards this time
    assert out[3] == 1 + step            # just above the tie: up
    assert np.all(out.view(np.uint32) & 0xFFFF == 0)


def test_to_bf16_error_is_at_most_half_a_step_on_random_values():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10_000) * 10.0 ** rng.uniform(-5, 5, 10_000)).astype(np.float32)
    out = to_bf16(x)
    assert np.all(np.abs(out.astype(np.float64) - x) <= bf16_ulp(out) / 2 * (1 + 1e-12))


def test_to_bf16_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        to_bf16([1.0, np.inf])


@pytest.mark.parametrize("splits", [1, 2, 4, 8])
def test_ordered_sum_is_the_stated_loop(splits):
    rng = np.random.default_rng(splits)
    terms = (rng.standard_normal((64, 5)) * 10.0 ** rng.uniform(-3, 3, (64, 5))).astype(np.float32)
    chunk = 64 // splits
    expect = np.zeros(5, np.float32)
    for s in range(splits):
        part = np.zeros(5, np.float32)
        for k in range(s * chunk, (s + 1) * chunk):
            part = (part + terms[k]).astype(np.float32)
        expect = (expect + part).astype(np.float32)
    assert np.array_equal(ordered_sum(terms, splits), expect)


def test_order_changes_bits_but_not_value():
    rng = np.random.default_rng(1)
    x = to_bf16(rng.standard_normal(4096))
    w = to_bf16(rng.standard_normal((4096, 64)) / 64)
    one, four = ordered_matmul(x, w, 1), ordered_matmul(x, w, 4)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    assert (one != four).mean() > 0.5
    assert np.allclose(one, exact, rtol=0, atol=1e-4) and np.allclose(four, exact, rtol=0, atol=1e-4)


def test_ordered_matmul_rows_are_independent_of_the_other_rows():
    rng = np.random.default_rng(2)
    x = to_bf16(rng.standard_normal((3, 256)))
    w = to_bf16(rng.standard_normal((256, 8)))
    assert np.array_equal(ordered_matmul(x, w, 4)[1], ordered_matmul(x[1], w, 4))


def test_bad_split_and_shapes_are_clear_errors():
    with pytest.raises(ValueError, match="dividing"):
        ordered_sum(np.ones((10, 2), np.float32), 3)
    with pytest.raises(ValueError, match="multiply"):
        ordered_matmul(np.ones(3), np.ones((4, 2)))


def test_toy_lm_is_deterministic_for_one_split_and_validates_prompts():
    toy = ToyLM(vocab=64, hidden=32, ffn=64, layers=2)
    prompts = np.array([[1, 2, 3], [4, 5, 6]])
    a, b = toy.run(prompts, 5, 2), toy.run(prompts, 5, 2)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.logits, b.logits)
    assert a.tokens.shape == (2, 5) and a.residual.shape == (3, 2, 5, 32)
    assert np.array_equal(a.tokens[:, 0], a.logits[:, 0].argmax(axis=1))
    with pytest.raises(ValueError, match="token ids"):
        toy.run(np.array([[64]]), 1)
    with pytest.raises(ValueError, match="2-D"):
        toy.run(np.array([1, 2]), 1)


def test_heuristic_split_k_fills_idle_sms_and_depends_on_the_batch():
    from solutions.correctness_operations.reduction_order import heuristic_split_k, output_tiles
    assert output_tiles(1, 4096) == 32 and output_tiles(129, 4096) == 64
    assert heuristic_split_k(1, 4096, 132) == 4       # 32 tiles x 4 = 128 <= 132 SMs
    assert heuristic_split_k(200, 4096, 132) == 2     # 64 tiles x 2 = 128
    assert heuristic_split_k(4096, 4096, 132) == 1    # 1,024 tiles: the SMs are full already
    assert heuristic_split_k(1, 128, 132, max_split=8) == 8
