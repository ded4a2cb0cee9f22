"""A model's shape from its Hugging Face `config.json`, and its exact parameter count, for the planner:
`python -m helpers.memory --config PATH` (notebook 09 introduces the planner).

Counted as the Hugging Face implementations build the weights, for the model types below:

- llama, mistral: embedding V·h; per layer q (h × heads·d), k and v (h × kv_heads·d each), o (heads·d × h), biases
  on q, k, v and o only when `attention_bias` is true (llama); SwiGLU MLP gate and up (h × I) and down (I × h),
  biases when `mlp_bias` is true (llama); two RMSNorm weights (h each); a final RMSNorm; an output layer V·h
  unless `tie_word_embeddings` (then the embedding is reused).
- qwen2: as llama, with biases on q, k and v always and never on o or the MLP.
- mixtral: as mistral, but each layer's MLP is `num_local_experts` SwiGLU experts (w1, w3: h × I, w2: I × h) and
  a router (h × experts, no bias); `num_experts_per_tok` of them run for each token.
- qwen3: as llama, with an RMSNorm weight of d on each query and key head (q_norm, k_norm: 2d a layer); d is 128
  when the config has no `head_dim` (Qwen3Config's default); biases on q, k, v and o when `attention_bias` is true.
- qwen3_moe: as qwen3, but the layers with experts (all of them unless `mlp_only_layers` or `decoder_sparse_step`
  says otherwise, as transformers' Qwen3MoeDecoderLayer) have `num_experts` SwiGLU experts of width
  `moe_intermediate_size` (transformers 5 writes the count as `num_local_experts`: both are read) and a router;
  the others a plain MLP of `intermediate_size`.

d is `head_dim` when the config gives it, else h / heads (refused when heads do not divide h: give head_dim).
The flags `tie_word_embeddings`, `attention_bias` and `mlp_bias` must be JSON true or false (a string such as
"false" is refused: Python would read it as true). Parameters counted this way equal the published counts
of Llama-2-7B (6,738,415,616), Mistral-7B (7,241,732,096), Qwen2-7B (7,615,616,512), Qwen2-0.5B (494,032,768)
and Mixtral-8x7B (46,702,792,704), and the totals Qwen's model cards give for Qwen3-8B (8.2B; 6.95B without the
embeddings) and Qwen3-30B-A3B (30.5B, 3.3B activated; 29.9B without the embeddings); the tests check them.
The memory and time of a mixture of experts are planned per layer with the experts' width (`intermediate`); the
plain MLPs of a qwen3_moe's `mlp_only_layers` are counted in its parameters only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MODEL_TYPES = ("llama", "mistral", "qwen2", "mixtral", "qwen3", "qwen3_moe")


class ConfigError(ValueError):
    """A config.json the planner cannot read; the message names the file and the field."""


@dataclass(frozen=True)
class ModelShape:
    model_type: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    experts: int = 1            # 1: a dense MLP
    experts_per_token: int = 1
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    tied_embeddings: bool = False
    qk_norm: bool = False       # qwen3, qwen3_moe: an RMSNorm weight of head_dim on each query and key head
    dense_layers: int = 0       # qwen3_moe: layers with a plain MLP of width dense_intermediate, not experts
    dense_intermediate: int = 0

    def layer_parameters(self, experts: bool = True) -> int:
        """One layer's parameters: a layer with the experts (in a mixture of experts), or with experts=False one
        with a plain MLP of dense_intermediate."""
        h, d = self.hidden, self.head_dim
        attention = h * self.heads * d + 2 * h * self.kv_heads * d + self.heads * d * h
        attention += (self.heads * d + 2 * self.kv_heads * d) * self.qkv_bias + h * self.o_bias + 2 * d * self.qk_norm
        if not experts:
            return attention + 3 * h * self.dense_intermediate + 2 * h
        mlp = 3 * h * self.intermediate + (2 * self.intermediate + h) * self.mlp_bias
        router = h * self.experts if self.experts > 1 else 0
        return attention + self.experts * mlp + router + 2 * h      # two RMSNorm weights

    def parameters(self) -> int:
        """The exact parameter count."""
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        layers = (self.layers - self.dense_layers) * self.layer_parameters() + \
            self.dense_layers * self.layer_parameters(experts=False)
        return embeddings + layers + self.hidden   # + the final RMSNorm

    def expert_parameters(self) -> int:
        """The routed experts' parameters (0 for a dense model): what expert parallelism splits."""
        if self.experts == 1:
            return 0
        return (self.layers - self.dense_layers) * self.experts * (
            3 * self.hidden * self.intermediate + (2 * self.intermediate + self.hidden) * self.mlp_bias)

    def active_parameters(self) -> int:
        """Parameters one token passes through (a mixture of experts runs experts_per_token of its experts)."""
        idle = (self.experts - self.experts_per_token) * 3 * self.hidden * self.intermediate
        return self.parameters() - (self.layers - self.dense_layers) * idle


def _field(config: dict, name: str, where: str, default=None):
    value = config.get(name)
    value = default if value is None else value      # a field may be absent, or present as null
    if value is None:
        raise ConfigError(f"{where}: no {name!r} field (a {config.get('model_type')} config needs it)")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{where}: {name!r} must be a positive whole number, got {value!r}")
    return value


def _flag(config: dict, name: str, where: str) -> bool:
    value = config.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {name!r} must be true or false, got {value!r} ({type(value).__name__}); "
                          f"write it as JSON true or false, without quotes")
    return value


def read_config(path: str | Path) -> ModelShape:
    """The shape of the model a Hugging Face config.json describes."""
    where = str(path)
    if Path(path).is_dir():
        raise ConfigError(f"{where}: is a folder; give the config.json inside it ({Path(path) / 'config.json'})")
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: not a text file (a config.json is UTF-8 JSON)") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: not a config.json (a JSON object)")
    model_type = config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise ConfigError(f"{where}: model_type {model_type!r} is not one the planner counts "
                          f"({', '.join(MODEL_TYPES)}); give --params and the shape flags instead")
    hidden = _field(config, "hidden_size", where)
    heads = _field(config, "num_attention_heads", where)
    kv_heads = _field(config, "num_key_value_heads", where, heads)
    qwen3 = model_type in ("qwen3", "qwen3_moe")
    if heads % kv_heads:
        raise ConfigError(f"{where}: num_key_value_heads {kv_heads} does not divide num_attention_heads {heads}")
    if config.get("head_dim") is None and hidden % heads and not qwen3:
        raise ConfigError(f"{where}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}, so the "
                          "width of a head is not hidden_size / heads; give 'head_dim' in the config")
    layers = _field(config, "num_hidden_layers", where)
    experts, per_token, width, dense = 1, 1, _field(config, "intermediate_size", where), 0
    if model_type == "mixtral":
        experts, per_token = _field(config, "num_local_experts", where), _field(config, "num_experts_per_tok", where)
    if model_type == "qwen3_moe":
        count = "num_experts" if "num_experts" in config else "num_local_experts"
        experts, per_token = _field(config, count, where), _field(config, "num_experts_per_tok", where)
        width = _field(config, "moe_intermediate_size", where)
        step, only = _field(config, "decoder_sparse_step", where, 1), config.get("mlp_only_layers") or []
        if not isinstance(only, list):
            raise ConfigError(f"{where}: 'mlp_only_layers' must be a list of layer numbers, got {only!r}")
        dense = sum(1 for i in range(layers) if i in only or (i + 1) % step)
    if per_token > experts:
        raise ConfigError(f"{where}: num_experts_per_tok {per_token} is more than the {experts} experts")
    bias = _flag(config, "attention_bias", where)
    mlp_bias = _flag(config, "mlp_bias", where)
    return ModelShape(
        model_type=model_type, vocab=_field(config, "vocab_size", where), hidden=hidden,
        layers=layers, heads=heads, kv_heads=kv_heads,
        head_dim=_field(config, "head_dim", where, 128 if qwen3 else hidden // heads),
        intermediate=width, experts=experts, experts_per_token=per_token,
        qkv_bias=model_type == "qwen2" or (model_type in ("llama", "qwen3", "qwen3_moe") and bias),
        o_bias=model_type in ("llama", "qwen3", "qwen3_moe") and bias,
        mlp_bias=model_type == "llama" and mlp_bias,
        tied_embeddings=_flag(config, "tie_word_embeddings", where), qk_norm=qwen3,
        dense_layers=dense, dense_intermediate=_field(config, "intermediate_size", where) if dense else 0)
