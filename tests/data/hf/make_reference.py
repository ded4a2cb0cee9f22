"""Make the Hugging Face fixtures of tests/test_hf.py: tiny random models saved by `transformers`, and their logits.

Made with torch 2.13.0+cpu and transformers 5.25.0 (safetensors 0.8.0), Python 3.11, in a virtual environment of
its own (torch is several GB and never installed for the tests):

    python3 -m venv /tmp/hfref && /tmp/hfref/bin/pip install torch==2.13.0 transformers==5.25.0 numpy
    /tmp/hfref/bin/python tests/data/hf/make_reference.py

Each folder tests/data/hf/<name>/ holds what `save_pretrained` wrote (config.json, safetensors) plus ids.npy, fixed
token ids (2 x 12, some above 255), and logits.npy, the model's float32 logits for them (eager attention). The
models: llama with grouped key/value heads (4 heads, 2 key/value heads), rope_theta 500000, saved in shards;
qwen2 with its q/k/v biases and tied embeddings (no lm_head in the file); mistral with head_dim 32 (not
hidden / heads = 16), no sliding window, saved in bfloat16 (its logits are those of the bfloat16 weights, run in
float32). Vocabulary 300, hidden 64, 2 layers: about 1 MB in all. And llama3_scaled, notebook 16's model: Llama 3's
rope scaling (rope_type "llama3", as Llama-3.2-1B, with original_max_position_embeddings 16 so that the scaling
changes every frequency band within 12 tokens), 16 heads and 8 key/value heads (tensor parallelism up to 8 divides
them), vocabulary 256 (byte ids), hidden 128, 2 layers (1.7 MB). `--only NAME` makes one folder again.

    /tmp/hfref/bin/python tests/data/hf/make_reference.py --check SAVED NAME

loads a folder that scripts/hf.py saved (SAVED, from the weights of fixture NAME) with `transformers` and prints the
largest gap to NAME's logits: hf.py's writer, checked by the library that reads it. With 5.25.0 each of the three
fixtures, loaded by hf.load and saved by hf.save (in one file and in shards), gave a gap of 0.0.
"""
import argparse
from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).resolve().parent
COMMON = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "max_position_embeddings": 64}
MODELS = {
    "llama_gqa": (transformers.LlamaConfig, transformers.LlamaForCausalLM,
                  {"num_key_value_heads": 2, "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
                   "rms_norm_eps": 1e-5}, {"max_shard_size": "100KB"}),
    "qwen2_tied": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM,
                   {"num_key_value_heads": 2, "tie_word_embeddings": True,
                    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}, {}),
    "mistral_bf16": (transformers.MistralConfig, transformers.MistralForCausalLM,
                     {"num_key_value_heads": 4, "head_dim": 32, "sliding_window": None}, {"bf16": True}),
    "llama3_scaled": (transformers.LlamaConfig, transformers.LlamaForCausalLM,
                      {"vocab_size": 256, "hidden_size": 128, "intermediate_size": 352, "num_attention_heads": 16,
                       "num_key_value_heads": 8, "rms_norm_eps": 1e-5,
                       "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 16}}, {}),
}


def main(only=None):
    all_ids = np.random.default_rng(0).integers(0, COMMON["vocab_size"], (2, 12))
    for seed, (name, (config_class, model_class, extra, how)) in enumerate(MODELS.items()):
        if only and name != only:
            continue
        torch.manual_seed(seed)
        config = config_class(**{**COMMON, **extra})
        ids = all_ids % config.vocab_size   # the same ids for vocabulary 300; below 256 for a byte vocabulary
        config._attn_implementation = "eager"
        model = model_class(config).float().eval()
        with torch.no_grad():   # larger than the default init, every weight random (norm weights about 1)
            for pname, p in model.named_parameters():
                p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in pname else 0.1 * torch.randn_like(p))
                if how.get("bf16"):   # the logits of the weights the file holds
                    p.copy_(p.to(torch.bfloat16).float())
            logits = model(torch.tensor(ids)).logits.float().numpy()
        folder = HERE / name
        (model.to(torch.bfloat16) if how.get("bf16") else model).save_pretrained(
            folder, max_shard_size=how.get("max_shard_size", "50GB"))
        np.save(folder / "ids.npy", ids.astype(np.int32))
        np.save(folder / "logits.npy", logits.astype(np.float32))
        print(name, sorted(p.name for p in folder.iterdir()), f"max |logit| {np.abs(logits).max():.3f}")
    print("torch", torch.__version__, "transformers", transformers.__version__)


def check(saved, name):
    model = transformers.AutoModelForCausalLM.from_pretrained(saved, attn_implementation="eager", dtype=torch.float32)
    with torch.no_grad():
        logits = model.eval()(torch.tensor(np.load(HERE / name / "ids.npy")).long()).logits.numpy()
    print(f"{saved}: largest gap to {name}'s logits {np.abs(logits - np.load(HERE / name / 'logits.npy')).max():.2e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", nargs=2, metavar=("SAVED", "NAME"), help="check a folder hf.save wrote")
    parser.add_argument("--only", metavar="NAME", choices=MODELS, help="make this fixture only")
    args = parser.parse_args()
    check(*args.check) if args.check else main(args.only)
