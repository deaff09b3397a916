"""Reference solution for q44: a continuous-batching scheduler over three queues and a budget.

The loop order is vLLM's (v1 `Scheduler.schedule`, and v0's chunked-prefill policy once issue
#5578 was fixed): serve the running requests oldest first, preempting the newest when the KV
pool runs short; then, only if nothing was preempted, resume swapped requests; then, only if
none is left swapped, admit waiting requests first come, first served. Every step's plan is
plain data: prefill chunks, decodes and the preempted, by request id.
"""

from collections import deque

MODES = ("recompute", "swap")


class Request:
    __slots__ = ("id", "prompt_len", "max_tokens", "computed", "outputs", "held")

    def __init__(self, request_id: int, prompt_len: int, max_tokens: int):
        self.id, self.prompt_len, self.max_tokens = request_id, prompt_len, max_tokens
        self.computed = 0  # tokens whose KV is cached (prompt first, then outputs)
        self.outputs = 0  # tokens sampled so far
        self.held = 0  # KV blocks it holds on the GPU

    @property
    def need(self) -> int:
        """Tokens to compute before it samples again: 1 for a decode."""
        return self.prompt_len + self.outputs - self.computed


class Scheduler:
    def __init__(self, token_budget: int, max_seqs: int, num_blocks: int, block_size: int,
                 preemption: str = "recompute"):
        for name, value in (("token_budget", token_budget), ("max_seqs", max_seqs),
                            ("num_blocks", num_blocks), ("block_size", block_size)):
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if token_budget < max_seqs:
            raise ValueError(f"token_budget ({token_budget}) must be >= max_seqs ({max_seqs})")
        if preemption not in MODES:
            raise ValueError(f"preemption must be one of {MODES}, got {preemption!r}")
        self.token_budget, self.max_seqs = token_budget, max_seqs
        self.block_size, self.num_blocks, self.free = block_size, num_blocks, num_blocks
        self.preemption = preemption
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []  # admission order: the last one is the newest
        self.swapped: deque[Request] = deque()
        self.requests: dict[int, Request] = {}
        self.step: list[Request] = []  # scheduled in the current step

    def add_request(self, request_id: int, prompt_len: int, max_tokens: int) -> None:
        if request_id in self.requests:
            raise ValueError(f"request_id {request_id} was already added")
        for name, value in (("prompt_len", prompt_len), ("max_tokens", max_tokens)):
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self._blocks(prompt_len + max_tokens - 1) > self.num_blocks:
            raise ValueError(f"request {request_id} needs more than num_blocks={self.num_blocks}")
        self.requests[request_id] = request = Request(request_id, prompt_len, max_tokens)
        self.waiting.append(request)

    def schedule(self) -> dict:
        budget, planned, preempted = self.token_budget, {}, []
        for request in list(self.running):  # oldest first
            if budget == 0 or request not in self.running:
                break  # out of budget, or preempted from the tail: so is everyone after it
            n = min(request.need, budget)
            while self._extra(request, n) > self.free:
                victim = self.running.pop()  # the newest admission pays
                self._preempt(victim)
                preempted.append(victim.id)
                if victim is request:
                    break
            else:
                budget -= self._take(request, n, planned)
        if not preempted:  # a step that had to preempt has no room for anyone new
            for queue in (self.swapped, self.waiting):
                while queue and budget and len(self.running) < self.max_seqs:
                    request = queue[0]
                    n = min(request.need, budget)
                    if self._extra(request, n) > self.free:
                        break  # first come, first served: nobody overtakes the head
                    queue.popleft()
                    self.running.append(request)
                    budget -= self._take(request, n, planned)
                if queue:
                    break  # swapped requests resume before any new admission
        self.step = [self.requests[i] for i in planned]
        decode = [r.id for r in self.step  # one token, after the prompt (and any recompute)
                  if planned[r.id] == 1 and r.outputs and r.computed == r.prompt_len + r.outputs]
        return {"prefill": [[i, n] for i, n in planned.items() if i not in decode],
                "decode": decode, "preempted": preempted}

    def update(self, eos: list) -> list:
        """After the forward pass: a request whose tokens are all computed sampled one token."""
        eos, finished = set(eos), []
        for request in self.step:
            if request.computed < request.prompt_len + request.outputs:
                continue  # a chunk that did not finish its prompt samples nothing
            request.outputs += 1
            if request.outputs == request.max_tokens or request.id in eos:
                self.running.remove(request)
                self.free += request.held
                del self.requests[request.id]
                finished.append(request.id)
        self.step = []
        return sorted(finished)

    def queues(self) -> dict:
        return {"waiting": [r.id for r in self.waiting], "running": [r.id for r in self.running],
                "swapped": [r.id for r in self.swapped]}

    # ---- KV blocks ---------------------------------------------------------------------
    def _blocks(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def _extra(self, request: Request, n: int) -> int:
        """Blocks to add so that n more tokens of `request` fit."""
        return self._blocks(request.computed + n) - request.held

    def _take(self, request: Request, n: int, planned: dict) -> int:
        self.free -= self._extra(request, n)
        request.held = self._blocks(request.computed + n)
        request.computed += n
        planned[request.id] = n
        return n

    def _preempt(self, victim: Request) -> None:
        """Recompute drops the KV and restarts the prefill; swap keeps it (host memory)."""
        self.free += victim.held
        victim.held = 0
        if self.preemption == "swap":
            self.swapped.appendleft(victim)
        else:
            victim.computed = 0
            self.waiting.appendleft(victim)
