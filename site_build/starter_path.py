"""The starter path: an ordered route through the bank, one or two questions per topic, each
with why it comes at that point. The route is editorial (which question teaches what the next
one needs); the page shows each stop's title and difficulty from the bank, so it cannot drift
from the question files, and the build fails if a stop names a question that is not there."""

from __future__ import annotations

from mkdocs.exceptions import PluginError

from solutions.bank import TOPICS

from .chips import difficulty_badge, graded_chip
from .layout import prompt_uri

START_PAGE = "start-here.md"
ROUTE = (
    ("q01", "MBU is one division: it fixes the two operands every later answer prices, the bytes a "
            "decode step reads (weights and KV) and the HBM peak it reads them at."),
    ("q02", "The decode step as a fixed part plus a per-sequence part: where batching stops paying "
            "(the critical batch) and where the KV pool stops it first."),
    ("q08", "Little's law on a GPU: arrival rate, latency and the batch are one equation; the "
            "capacity of a replica follows."),
    ("q04", "What a KV block is, what paging wastes and what sets the block size: the unit the "
            "memory, prefix-caching and scheduling questions count in."),
    ("q22", "Where the memory goes at start-up (weights, activations, the KV pool) and the three "
            "flags that size it."),
    ("q23", "One request through vLLM's prefix cache, block by block: hashes, hits and what a "
            "cache salt changes."),
    ("q52", "Chunked prefill as a timeline: one long prompt among decodes, step by step, and what "
            "each request waits."),
    ("q49", "Batch size against an SLO: more tokens per second is not more goodput."),
    ("q16", "Speculative decoding with no draft model: acceptance rate and what a drafted token "
            "buys."),
    ("q21", "vLLM v1 from the inside: its processes and a scheduler with no prefill phase; the "
            "engine questions build on this map."),
    ("q20", "Tensor against pipeline parallelism on one node, priced in all-reduces per token."),
    ("q26", "Eight tenants, eight adapters, one batch: what multi-LoRA serving costs per step."),
    ("q14", "Is a quantized model good enough: the statistics an evaluation needs before a "
            "number means anything."),
    ("q43", "The first graded exercise: the reference-counted block pool behind paging, with "
            "copy-on-write, against a property-testing grader."),
)


def start_page(questions) -> str:
    by_id = {q.id: q for q in questions}
    missing = [qid for qid, _ in ROUTE if qid not in by_id]
    if missing:
        raise PluginError(f"{__name__}.ROUTE names questions the bank lacks: {missing}")
    rows = []
    for n, (qid, why) in enumerate(ROUTE, 1):
        q = by_id[qid]
        rows.append(f"{n}. [{q.id} · {q.title}]({prompt_uri(q)}) "
                    f"{difficulty_badge(q.difficulty)}{graded_chip(q)} "
                    f"<span class=\"qb-route__topic\">{TOPICS[q.topic]}</span>  \n   {why}")
    return ("# Start here\n\n"
            f"A route through the bank in {len(ROUTE)} questions, ordered so that each one uses "
            "what the ones before it taught: the numbers of a decode step first, then memory, "
            "caching, scheduling, decoding, the engine, parallelism, tenancy, evaluation, and "
            "the first coding exercise. Work each on paper before you reveal its answer, rate "
            "your confidence at the end of the page, and the [review queue](index.md#review-queue) "
            "brings back what was shaky.\n\n"
            + "\n".join(rows)
            + "\n\nAfter the route: the rest of each topic, easiest first, in the "
            "[question table](questions/index.md) (sort by difficulty), and the "
            '<a href="../questions/?difficulty=hard">hard questions</a> last.\n')
