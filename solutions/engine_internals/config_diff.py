"""Diff two resolved vLLM configurations, the first step of "same command line, new version, lower
throughput".

vLLM prints the configuration it resolved at start-up ("Initializing a V1 LLM engine (vX) with
config: key=value, key=value, ..."). `parse_engine_config` turns that text into a flat dict
(nested JSON such as `compilation_config={...}` becomes dotted keys), `diff` lists what changed,
the throughput-relevant keys first, each with the mechanism by which it moves throughput, and
`revert_one_at_a_time` is the config bisection: put each changed value back, one at a time, and
see which one restores a measured number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# key (as vLLM prints it) -> how a change moves throughput. Aliases cover renames across releases.
THROUGHPUT_KEYS = {
    "max_num_batched_tokens": "token budget per step: prefill chunk size and mixed-step length",
    "max_num_seqs": "cap on the running batch: decode efficiency vs TPOT",
    "enable_chunked_prefill": "prefills split into budget-sized chunks that share steps with decodes",
    "chunked_prefill_enabled": "prefills split into budget-sized chunks that share steps with decodes",
    "enable_prefix_caching": "skips cached prompt blocks; costs block hashing when nothing is reused",
    "async_scheduling": "plans step n+1 while step n runs: hides CPU time per step",
    "use_async_output_proc": "(V0) overlaps output processing with the next step",
    "num_scheduler_steps": "(V0) multi-step scheduling: fewer CPU round trips per token",
    "enforce_eager": "no CUDA graphs: kernel launch overhead on every step",
    "compilation_config.level": "torch.compile level (3 = piecewise compilation)",
    "compilation_config.mode": "torch.compile mode",
    "compilation_config.cudagraph_mode": "which steps replay a CUDA graph (FULL, PIECEWISE, ...)",
    "compilation_config.max_cudagraph_capture_size": "batches above it run without CUDA graphs",
    "kv_cache_dtype": "KV bytes per token: pool size and attention bandwidth",
    "gpu_memory_utilization": "KV pool size, hence the batch that fits",
    "block_size": "KV block granularity: fragmentation and kernel choice",
    "dtype": "weight and activation precision",
    "quantization": "weight bytes and GEMM kernels",
    "tensor_parallel_size": "GPUs per replica",
    "max_seq_len": "max_model_len: profiling reserve and long-context behaviour",
    "model_runner": "which model runner turns scheduler output into GPU inputs",
}


@dataclass(frozen=True)
class Change:
    key: str
    old: object
    new: object

    @property
    def why(self) -> str | None:
        return THROUGHPUT_KEYS.get(self.key)

    @property
    def relevant(self) -> bool:
        return self.why is not None


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside (), [], {} or quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced '{ch}' at character {i} of the config text")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth or quote:
        raise ValueError("config text ends inside brackets or a quoted string (truncated log line?)")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _value(raw: str):
    raw = raw.strip()
    if raw in ("True", "False"):
        return raw == "True"
    if raw == "None":
        return None
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    if raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _flatten(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = value


def parse_engine_config(text: str) -> dict:
    """Parse vLLM's "with config: k=v, k=v, ..." text (with or without the prefix) into a flat dict."""
    if not isinstance(text, str) or "=" not in text:
        raise ValueError("expected vLLM's resolved-config text: 'key=value, key=value, ...'")
    marker = "with config:"
    if marker in text:
        text = text.split(marker, 1)[1]
    out: dict = {}
    for part in _split_top_level(text.strip()):
        if "=" not in part:
            raise ValueError(f"config entry without '=': {part[:60]!r}")
        key, raw = part.split("=", 1)
        _flatten(key.strip(), _value(raw), out)
    return out


def diff(old: dict, new: dict) -> list[Change]:
    """Keys whose value differs (a key present on one side only counts), relevant ones first."""
    missing = object()
    changes = [Change(k, old.get(k, missing), new.get(k, missing)) for k in sorted(set(old) | set(new))
               if old.get(k, missing) != new.get(k, missing)]
    changes = [Change(c.key, None if c.old is missing else c.old, None if c.new is missing else c.new)
               for c in changes]
    return sorted(changes, key=lambda c: (not c.relevant, c.key))


def revert_one_at_a_time(old: dict, new: dict, measure, keys=None) -> dict:
    """Config bisection: for each changed key, measure `new` with that one key set back to its old
    value. Returns {key: measured value}; the baseline runs are under "old" and "new"."""
    keys = [c.key for c in diff(old, new)] if keys is None else list(keys)
    results = {"old": measure(old), "new": measure(new)}
    for key in keys:
        trial = dict(new)
        if key in old:
            trial[key] = old[key]
        else:
            trial.pop(key, None)
        results[key] = measure(trial)
    return results
