"""The grader's side of q44: the engine that runs each step's plan, and its record of every request.

The record knows nothing of the candidate's policy. It holds what an engine knows for certain:
how many tokens of each request are computed, how many it has sampled, which queue it must be
in, and when it was last admitted. The properties are statements about how a plan may change it.
"""

from __future__ import annotations

from dataclasses import dataclass

WAITING = "waiting"  # never admitted
PREEMPTED = "preempted"  # preempted for recompute: back in the waiting queue, its KV dropped
SWAPPED = "swapped"  # preempted by swapping: its KV kept in host memory
RUNNING = "running"
FINISHED = "finished"

QUEUE_OF = {WAITING: "waiting", PREEMPTED: "waiting", SWAPPED: "swapped", RUNNING: "running"}


def blocks(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


@dataclass
class Record:
    """One request as the engine sees it. Request ids are given in arrival order."""

    id: int
    prompt_len: int
    max_tokens: int
    eos_at: int  # the output count at which the sampled token is end-of-sequence; 0: never
    arrived: int  # engine steps run before it arrived
    bound: int  # steps after arrival by which it must have finished
    computed: int = 0
    outputs: int = 0
    status: str = WAITING
    admitted: int = -1  # admission counter at its latest admission (resumption counts)
    sampled_since: bool = False  # sampled a token since its latest admission

    @property
    def need(self) -> int:
        """Tokens to compute before it samples its next token (1 for a decode)."""
        return self.prompt_len + self.outputs - self.computed

    @property
    def prefilling(self) -> bool:
        """Admitted and holding blocks, but not sampled since: its prefill (or re-prefill
        after a recompute, even one stopped with only its last sampled token left) is under
        way, and a scheduler may list it in running or, as nano-vllm does, in waiting."""
        return self.status == RUNNING and not self.sampled_since

    @property
    def decoding(self) -> bool:
        """Its prompt (and, after a recompute, its earlier outputs) is computed: one token to go."""
        return self.outputs >= 1 and self.need == 1

    def alone_steps(self, token_budget: int) -> int:
        """Steps it needs once it is the oldest unfinished request (a scheduler serves that one
        first, with up to the whole budget, and never preempts it): its prefill in budget-sized
        chunks, then one decode per remaining output. After a recompute the prefill also covers
        the outputs, but each of those is an output that no longer needs its own step, so
        ceil(prompt_len / budget) + max_tokens - 1 bounds every case."""
        return blocks(self.prompt_len, token_budget) + self.max_tokens - 1

    def describe(self) -> str:
        return (f"request {self.id} (prompt {self.prompt_len}, max_tokens {self.max_tokens}, "
                f"{self.computed} computed, {self.outputs} sampled)")


@dataclass(frozen=True)
class Plan:
    prefill: list  # [(request id, tokens)]
    decode: list  # [request id]
    preempted: list  # [request id], in the order preempted

    @property
    def tokens(self) -> int:
        return sum(n for _, n in self.prefill) + len(self.decode)

    @property
    def scheduled(self) -> dict:
        return {**dict(self.prefill), **{i: 1 for i in self.decode}}

    @property
    def names(self) -> list:
        return [i for i, _ in self.prefill] + list(self.decode) + list(self.preempted)


def parse_plan(value) -> Plan | None:
    """The plan as data, or None if it is not the documented shape."""
    if type(value) is not dict or set(value) != {"prefill", "decode", "preempted"}:
        return None
    prefill, decode, preempted = value["prefill"], value["decode"], value["preempted"]
    if not all(type(x) is list for x in (prefill, decode, preempted)):
        return None
    if not all(type(c) is list and len(c) == 2 and all(type(v) is int for v in c) for c in prefill):
        return None
    if not all(type(i) is int for i in decode + preempted):
        return None
    return Plan([tuple(c) for c in prefill], decode, preempted)


def parse_queues(value) -> dict | None:
    if type(value) is not dict or set(value) != {"waiting", "running", "swapped"}:
        return None
    if not all(type(q) is list and all(type(i) is int for i in q) for q in value.values()):
        return None
    return value
