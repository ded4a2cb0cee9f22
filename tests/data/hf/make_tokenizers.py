"""Make a tokenizer for each fixture model of tests/data/hf: a small byte-level BPE trained with Hugging Face's
`tokenizers` on the series' corpus (notebook 11's CORPUS, source files that ship with Python), its vocabulary exactly
the model's vocab_size. Run by hand; its output is committed beside each fixture's config.json:

    .venv/bin/python tests/data/hf/make_tokenizers.py

- tokenizer.json: what `tokenizers` (and transformers' fast tokenizers) read; byte-level pre-tokenizer and decoder, as
  GPT-2, Llama 3 and Qwen2 have. Its alphabet is the bytes the corpus uses (no byte fallback for others), so that a
  vocabulary of 256 still leaves room for merges.
- tokenizer_config.json: the end-of-text (eos) and start (bos) tokens by name, as a Hugging Face folder gives them.

The special tokens come first: <unk>, <s>, </s> (ids 0, 1, 2, as the llama and mistral fixtures' config.json give
bos_token_id 1 and eos_token_id 2; the mixtral fixture too), or Qwen2's <|endoftext|> (id 0; its fixture's config.json
names none; the Qwen3 and Qwen3-MoE fixtures alike). Made with
tokenizers 0.23.3 and Python 3.11's standard library; the fixtures' weights and reference logits do not change (the
logits are for fixed ids, ids.npy).
"""
import json
import os
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from helpers.scripts import notebook_scripts  # noqa: E402  (the notebooks' scripts, read back)

QWEN, LLAMA = (["<|endoftext|>"], None, "<|endoftext|>"), (["<unk>", "<s>", "</s>"], "<s>", "</s>")
SPECIALS = {"qwen2": QWEN, "qwen3": QWEN, "qwen3_moe": QWEN, "llama": LLAMA, "mistral": LLAMA, "mixtral": LLAMA}


def corpus_names():
    """notebook 11's CORPUS, read out of gpt.py's source without importing it (it imports MindSpore)."""
    source = notebook_scripts(HERE.parents[2] / "notebooks" / "11_gpt_tensor_parallel.ipynb")["scripts/gpt.py"]
    start = source.index("CORPUS = (")
    return eval(source[start + len("CORPUS = "):source.index(")", start) + 1])   # a tuple of file names


def make(folder, documents):
    config = json.loads((folder / "config.json").read_text())
    specials, bos, eos = SPECIALS[config["model_type"]]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=config["vocab_size"], special_tokens=specials, show_progress=False)
    tokenizer.train_from_iterator(documents, trainer)
    assert tokenizer.get_vocab_size() == config["vocab_size"], (folder.name, tokenizer.get_vocab_size())
    tokenizer.save(str(folder / "tokenizer.json"))
    settings = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "bos_token": bos,
                "model_max_length": config["max_position_embeddings"]}
    (folder / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    print(f"{folder.name}: {tokenizer.get_vocab_size()} tokens, eos {eos!r} = {tokenizer.token_to_id(eos)}, "
          f"{(folder / 'tokenizer.json').stat().st_size:,} bytes")


def main():
    documents = [(Path(os.__file__).parent / name).read_text() for name in corpus_names()]
    for folder in sorted(p for p in HERE.iterdir() if (p / "config.json").is_file()):
        make(folder, documents)


if __name__ == "__main__":
    main()
