"""Model shapes from their published config.json, and what follows from them.

Parameter counts, weight bytes and KV bytes per token are *derived* from the shapes, never
typed in, so a test can pin them against the published figures (see tests/test_kit.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions.hardware import DTYPE_BYTES


def vocab_bytes_per_param(dtype: str) -> float:
    """Bytes per parameter of the embedding and the LM head in a checkpoint of `dtype`: a
    quantised one (under 16 bits) keeps them in BF16, as vLLM 0.33.0 does (`Model.weight_bytes`)."""
    return max(DTYPE_BYTES[dtype], DTYPE_BYTES["bf16"])


@dataclass(frozen=True)
class MambaMixer:
    """A Mamba-2 mixer's shapes (per layer). State per request = conv state + SSM state."""

    n_heads: int
    head_dim: int
    d_state: int
    n_groups: int
    d_conv: int

    @property
    def d_inner(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_channels(self) -> int:
        """Channels the causal conv1d runs over: x, B and C (Mamba-2 convolves all three)."""
        return self.d_inner + 2 * self.n_groups * self.d_state

    def params(self, hidden: int) -> int:
        in_proj = hidden * (2 * self.d_inner + 2 * self.n_groups * self.d_state + self.n_heads)
        conv = self.conv_channels * self.d_conv + self.conv_channels  # weights + bias
        per_head = 3 * self.n_heads  # A_log, D, dt_bias
        gated_norm = self.d_inner
        out_proj = self.d_inner * hidden
        return in_proj + conv + per_head + gated_norm + out_proj

    def state_bytes(self, conv_dtype: str = "bf16", ssm_dtype: str = "bf16") -> float:
        """Bytes one request holds in this layer: conv window (d_conv - 1 steps) + SSM state."""
        conv = self.conv_channels * (self.d_conv - 1) * DTYPE_BYTES[conv_dtype]
        ssm = self.n_heads * self.head_dim * self.d_state * DTYPE_BYTES[ssm_dtype]
        return conv + ssm


@dataclass(frozen=True)
class Model:
    """A decoder-only model. `attention_layers`, `mlp_layers` and `mamba_layers` count blocks:
    a plain transformer has one attention and one MLP block per layer; a hybrid mixes them."""

    name: str
    hf_id: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    source: str
    qkv_bias: bool = False
    num_experts: int = 1
    experts_per_token: int = 1
    attention_layers: int | None = None  # default: num_layers
    mlp_layers: int | None = None  # default: num_layers
    mamba_layers: int = 0
    mamba: MambaMixer | None = None
    gated_mlp: bool = True  # SwiGLU (gate, up, down) vs a plain up/down MLP

    @property
    def n_attention(self) -> int:
        return self.num_layers if self.attention_layers is None else self.attention_layers

    @property
    def n_mlp(self) -> int:
        return self.num_layers if self.mlp_layers is None else self.mlp_layers

    # ---- parameters ---------------------------------------------------------------------
    @property
    def attention_params_per_layer(self) -> int:
        q = self.num_heads * self.head_dim
        kv = self.num_kv_heads * self.head_dim
        weights = self.hidden_size * (q + 2 * kv) + q * self.hidden_size
        bias = (q + 2 * kv) if self.qkv_bias else 0
        return weights + bias + self.hidden_size  # + its RMSNorm

    def mlp_params_per_layer(self, experts: float | None = None) -> float:
        """One MLP block; `experts` may be fractional (an expected count of experts read)."""
        experts = self.num_experts if experts is None else experts
        matrices = 3 if self.gated_mlp else 2
        per_expert = matrices * self.hidden_size * self.intermediate_size
        router = self.hidden_size * self.num_experts if self.num_experts > 1 else 0
        return experts * per_expert + router + self.hidden_size  # + its RMSNorm

    @property
    def mamba_params_per_layer(self) -> int:
        return 0 if self.mamba is None else self.mamba.params(self.hidden_size) + self.hidden_size

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    def _params(self, experts: int) -> int:
        body = (
            self.n_attention * self.attention_params_per_layer
            + self.n_mlp * self.mlp_params_per_layer(experts)
            + self.mamba_layers * self.mamba_params_per_layer
        )
        heads = self.embedding_params * (1 if self.tie_word_embeddings else 2)
        return body + heads + self.hidden_size  # + final norm

    @property
    def params(self) -> int:
        """Total parameters, as a checkpoint stores them."""
        return self._params(self.num_experts)

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (MoE: only its top-k experts)."""
        return self._params(self.experts_per_token)

    @property
    def matmul_params_per_token(self) -> int:
        """Active parameters that do a multiply-add per token: everything but the embedding
        lookup (a gather). The LM head is included; it runs only on positions that sample."""
        untied_embedding = 0 if self.tie_word_embeddings else self.embedding_params
        return self.active_params - untied_embedding

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """The weights as vLLM 0.33.0 holds them at `dtype`. A quantised checkpoint (under 16 bits)
        keeps the embedding and the LM head in BF16: vLLM's FP8 method quantizes linear layers
        only (`vllm==0.33.0:vllm/model_executor/layers/quantization/fp8.py`
        `if isinstance(layer, LinearBase):`), and `VocabParallelEmbedding` / `ParallelLMHead` are
        not linear layers. For Llama 3.1 8B in FP8 that is 9.08 GB, not 8.03."""
        vocab = self.embedding_params * (1 if self.tie_word_embeddings else 2)
        return (self.params - vocab) * DTYPE_BYTES[dtype] + vocab * vocab_bytes_per_param(dtype)

    # ---- state per token / per request --------------------------------------------------
    def kv_bytes_per_token(self, dtype: str = "bf16") -> float:
        """K and V, every attention layer, every KV head: 2 * layers * kv_heads * head_dim * bytes."""
        return 2 * self.n_attention * self.num_kv_heads * self.head_dim * DTYPE_BYTES[dtype]

    def recurrent_state_bytes(self, conv_dtype: str = "bf16", ssm_dtype: str = "bf16") -> float:
        """Fixed-size state one live request holds across all Mamba layers (0 for a transformer)."""
        if self.mamba is None:
            return 0.0
        return self.mamba_layers * self.mamba.state_bytes(conv_dtype, ssm_dtype)


LLAMA_3_1_8B = Model(
    name="Llama 3.1 8B",
    hf_id="meta-llama/Llama-3.1-8B-Instruct",
    num_layers=32,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=128256,
    tie_word_embeddings=False,
    source="huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json; model card: 8.03B parameters",
)

LLAMA_3_3_70B = Model(
    name="Llama 3.3 70B",
    hf_id="meta-llama/Llama-3.3-70B-Instruct",
    num_layers=80,
    hidden_size=8192,
    num_heads=64,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=28672,
    vocab_size=128256,
    tie_word_embeddings=False,
    source="huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json; model card: 70.6B parameters",
)

LLAMA_3_1_405B = Model(
    name="Llama 3.1 405B",
    hf_id="meta-llama/Llama-3.1-405B-Instruct",
    num_layers=126,
    hidden_size=16384,
    num_heads=128,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=53248,
    vocab_size=128256,
    tie_word_embeddings=False,
    source="huggingface.co/meta-llama/Llama-3.1-405B-Instruct/blob/main/config.json; "
    "Llama 3 paper (arXiv:2407.21783) Table 3: 126 layers, model dim 16,384, 405B parameters",
)

MIXTRAL_8X7B = Model(
    name="Mixtral 8x7B",
    hf_id="mistralai/Mixtral-8x7B-Instruct-v0.1",
    num_layers=32,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=32000,
    tie_word_embeddings=False,
    num_experts=8,
    experts_per_token=2,
    source="huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/main/config.json; "
    "Mixtral paper (arXiv:2401.04088): 47B total, 13B active parameters",
)

QWEN2_5_7B = Model(
    name="Qwen2.5 7B",
    hf_id="Qwen/Qwen2.5-7B-Instruct",
    num_layers=28,
    hidden_size=3584,
    num_heads=28,
    num_kv_heads=4,
    head_dim=128,
    intermediate_size=18944,
    vocab_size=152064,
    tie_word_embeddings=False,
    qkv_bias=True,
    source="huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/config.json; model card: 7.61B parameters",
)

QWEN2_5_72B = Model(
    name="Qwen2.5 72B",
    hf_id="Qwen/Qwen2.5-72B-Instruct",
    num_layers=80,
    hidden_size=8192,
    num_heads=64,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=29568,
    vocab_size=152064,
    tie_word_embeddings=False,
    qkv_bias=True,
    source="huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/config.json; model card: 72.7B parameters",
)

MODELS = {m.name: m for m in (LLAMA_3_1_8B, LLAMA_3_3_70B, LLAMA_3_1_405B, MIXTRAL_8X7B, QWEN2_5_7B, QWEN2_5_72B)}

NEMOTRON_H_8B = Model(
    name="Nemotron-H 8B",
    hf_id="nvidia/Nemotron-H-8B-Base-8K",
    num_layers=52,  # hybrid_override_pattern: 24 Mamba-2 (M), 4 attention (*), 24 MLP (-) blocks
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=21504,
    vocab_size=131072,
    tie_word_embeddings=False,
    attention_layers=4,
    mlp_layers=24,
    mamba_layers=24,
    mamba=MambaMixer(n_heads=128, head_dim=64, d_state=128, n_groups=8, d_conv=4),
    gated_mlp=False,  # squared-ReLU MLP: up and down only
    source="huggingface.co/nvidia/Nemotron-H-8B-Base-8K/blob/main/config.json (hybrid_override_pattern "
    "'M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-'); state shapes as vLLM computes them in "
    "`vllm==0.33.0:vllm/model_executor/layers/mamba/mamba_utils.py` `conv_dim = intermediate_size + 2 * n_groups * state_size` "
    "(conv state (d_conv-1, d_inner + 2*n_groups*d_state), SSM state (heads, head_dim, d_state))",
)

MODELS[NEMOTRON_H_8B.name] = NEMOTRON_H_8B

# Qwen3 dense models, for the published vLLM runs in solutions/calibration/vllm_serving_runs.py. Their per-head
# q/k RMSNorm weights (2 x 128 per layer) are left out: under 0.001% of the parameters.
QWEN3_8B = Model(
    name="Qwen3 8B",
    hf_id="Qwen/Qwen3-8B",
    num_layers=36,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=12288,
    vocab_size=151936,
    tie_word_embeddings=False,
    source="huggingface.co/Qwen/Qwen3-8B/blob/main/config.json, as restated in zyzshishui/slime@"
    "f80d8133bb059096920cb7e95b4f5fa134b77911:scripts/models/qwen3-8B.sh; model card: 8.2B parameters",
)

QWEN3_14B = Model(
    name="Qwen3 14B",
    hf_id="Qwen/Qwen3-14B",
    num_layers=40,
    hidden_size=5120,
    num_heads=40,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=17408,
    vocab_size=151936,
    tie_word_embeddings=False,
    source="huggingface.co/Qwen/Qwen3-14B/blob/main/config.json, as restated in zyzshishui/slime@"
    "aa3375040b9b7fd90832fb03099776d0a34ce41c:scripts/models/qwen3-14B.sh; model card: 14.8B parameters",
)

QWEN3_32B = Model(
    name="Qwen3 32B",
    hf_id="Qwen/Qwen3-32B",
    num_layers=64,
    hidden_size=5120,
    num_heads=64,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=25600,
    vocab_size=151936,
    tie_word_embeddings=False,
    source="huggingface.co/Qwen/Qwen3-32B/blob/main/config.json, as restated in zyzshishui/slime@"
    "b806b5ca502edfa5d6007edd97f53d2c41fb2795:scripts/models/qwen3-32B.sh; model card: 32.8B parameters",
)

# A small same-tokenizer draft model for Llama 3.x targets (speculative decoding answers).
LLAMA_3_2_1B = Model(
    name="Llama 3.2 1B",
    hf_id="meta-llama/Llama-3.2-1B-Instruct",
    num_layers=16,
    hidden_size=2048,
    num_heads=32,
    num_kv_heads=8,
    head_dim=64,
    intermediate_size=8192,
    vocab_size=128256,
    tie_word_embeddings=True,
    source="huggingface.co/meta-llama/Llama-3.2-1B-Instruct/blob/main/config.json "
    "(commit 4e20de362430cd3b72f300e6b0f18e50e7166e08, as vendored in kevinstephano/thunder_model_blocks "
    "hf_llama/llama_config.py): 16 layers, hidden 2048, 32 heads, 8 KV heads, head_dim 64, tied embeddings",
)

# The context a model's config declares (max_position_embeddings): what vLLM takes as
# max_model_len when none is given. Llama 3.1 and 3.3 configs: 131,072
# (huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json, and the 3.1 8B and 405B configs).
MAX_POSITION_EMBEDDINGS = {LLAMA_3_1_8B.name: 131072, LLAMA_3_3_70B.name: 131072, LLAMA_3_1_405B.name: 131072}

# The model of Sarathi-Serve's single-GPU capacity runs (microsoft/sarathi-serve@
# 02d2567eb169d947c7093f57b5b74ad602615947:osdi-experiments/figure-5-6/mistral7b_strict.yml).
MISTRAL_7B = Model(
    name="Mistral 7B v0.2",
    hf_id="mistralai/Mistral-7B-Instruct-v0.2",
    num_layers=32,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=32000,
    tie_word_embeddings=False,
    source="huggingface.co/mistralai/Mistral-7B-Instruct-v0.2/blob/main/config.json (as duplicated in "
    "huggingface.co/model-hub/Mistral-7B-Instruct-v0.2 at 784a191): 32 layers, hidden 4096, 32 heads, "
    "8 KV heads, intermediate 14336, vocab 32000, untied embeddings, sliding_window null",
)
MODELS[MISTRAL_7B.name] = MISTRAL_7B
