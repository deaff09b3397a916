"""Async scheduling's placeholder trick, replayed one request at a time.

With async scheduling the engine plans step n+1 while step n is still on the GPU, so the tokens
step n will sample are unknown when n+1 is planned. vLLM's scheduler counts them as placeholders
(`Request.num_output_placeholders`): a decoding request's gap `num_tokens + placeholders -
num_computed_tokens` is 1 before its last token is known, and the worker writes the real token id
into that slot on the GPU. The price: when step n samples an end-of-sequence token, step n+1 has
already computed one more slot for the request, which is thrown away. A request that stops at
`max_tokens` pays nothing: the scheduler knows the count in advance and skips it. A stop *string*
is found in the API server, after detokenising, so the engine keeps computing until the abort it
sends back arrives.

`replay` runs one request through sync or async scheduling and counts the token slots computed,
the ones that were useful and the ones wasted. It models the order of events in
`EngineCore.step` / `step_with_batch_queue` (schedule, then wait for the previous step's output,
then update), not the batch: other requests do not change one request's slot count.
"""

from __future__ import annotations

from dataclasses import dataclass

ENDINGS = ("eos", "max_tokens", "stop_string")
MODES = ("sync", "async")


@dataclass(frozen=True)
class Replay:
    """What one request cost: token slots computed, useful and wasted, and engine steps spent."""

    computed: int
    useful: int
    steps: int

    @property
    def wasted(self) -> int:
        return self.computed - self.useful


def replay(prompt: int, output: int, ending: str = "eos", mode: str = "async",
           abort_delay_steps: int = 1) -> Replay:
    """One request: a `prompt`-token prefill, then decoding until its `output`-th token ends it.

    ending: "eos" (the output-th token is end-of-sequence), "max_tokens" (max_tokens = output),
    or "stop_string" (the output-th token completes a stop string; the engine core learns of it
    from the API server's abort, after scheduling the request `abort_delay_steps` more times:
    at least once, since the busy loop moves on as soon as it has sent the step's outputs)."""
    for name, value in (("prompt", prompt), ("output", output), ("abort_delay_steps", abort_delay_steps)):
        if type(value) is not int or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if ending not in ENDINGS:
        raise ValueError(f"ending must be one of {ENDINGS}, got {ending!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    max_tokens = output if ending == "max_tokens" else output + 1_000_000
    known = prompt            # tokens whose ids the scheduler knows (prompt + sampled outputs)
    computed = 0              # tokens whose KV has been computed (scheduled so far)
    placeholders = 0          # scheduled samples whose token ids are not known yet
    finished = False          # known to the engine core
    abort_at = None           # schedule index at which a stop-string abort lands
    in_flight = None          # (tokens scheduled, samples a token) of the step on the GPU
    total, steps, schedule_index = 0, 0, 0

    def process(step):
        nonlocal known, placeholders, finished, abort_at
        _, samples = step
        if not samples or finished:
            return
        placeholders -= 1
        known += 1
        outputs = known - prompt
        if outputs == max_tokens or (ending == "eos" and outputs == output):
            finished = True
        elif ending == "stop_string" and outputs == output and abort_at is None:
            abort_at = schedule_index + abort_delay_steps

    while True:
        if abort_at is not None and schedule_index >= abort_at:
            finished = True
        scheduled = None
        if not finished:
            need = known + placeholders - computed
            at_max = placeholders > 0 and computed + 2 - placeholders >= prompt + max_tokens
            if need > 0 and not at_max:  # the scheduler's max_tokens guard
                samples = computed + need >= known  # this step reaches the end of the known tokens
                scheduled = (need, samples)
                computed += need
                placeholders += int(samples)
        schedule_index += 1
        if mode == "sync":
            if scheduled is None:
                break
            total, steps = total + scheduled[0], steps + 1
            process(scheduled)
        else:
            if in_flight is not None:
                process(in_flight)  # wait for step n's output after planning step n+1
            if scheduled is None and in_flight is None:
                break
            if scheduled is not None:
                total, steps = total + scheduled[0], steps + 1
            in_flight = scheduled
    return Replay(computed=total, useful=prompt + output - 1, steps=steps)
