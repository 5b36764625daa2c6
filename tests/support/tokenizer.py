"""Build a local Hugging Face tokenizer directory offline, matching the simulator's vocabulary.

`build_tokenizer(directory) -> Path` writes `tokenizer.json` (a `tokenizers` WordLevel model over
console.sim.tokens.vocab(), whitespace pre-tokenizer) plus `tokenizer_config.json`, so
`transformers.AutoTokenizer.from_pretrained(directory)` loads it with HF_HUB_OFFLINE=1.
Because the simulator streams whole words from the same vocabulary, bench_serving's
"retokenized" count equals the server's completion tokens.

`build_bpe_tokenizer(directory) -> Path` writes a byte-level BPE as real models ship (the
`tokenizers` trainer, 8000 tokens, trained on Python's own documentation in
`pydoc_data.topics`, so nothing is downloaded and the same Python gives the same vocabulary):
a client tokenizer that is not the simulator's, whose decoded random ids run several tokens
into one word.

Run as a script: `python tests/support/tokenizer.py DIR`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.sim.tokens import vocab

SPECIAL = {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}
CHAT_TEMPLATE = (
    "{% for message in messages %}<s> {{ message['role'] }} {{ message['content'] }} </s> "
    "{% endfor %}{% if add_generation_prompt %}<s> assistant {% endif %}"
)


def build_tokenizer(directory: str | Path) -> Path:
    """Create (or refresh) the tokenizer in `directory`; return its path."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    words = vocab()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    tok.add_special_tokens(list(SPECIAL.values()))
    tok.save(str(path / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 131072,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
        **SPECIAL,
    }
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (path / "special_tokens_map.json").write_text(json.dumps(SPECIAL, indent=2))
    return path


def build_bpe_tokenizer(directory: str | Path, vocab_size: int = 8000) -> Path:
    """Train (deterministically) and save a byte-level BPE tokenizer in `directory`."""
    from pydoc_data.topics import topics

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<s>", "</s>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(sorted(topics.values()), trainer=trainer)
    tok.save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 131072,
              "clean_up_tokenization_spaces": False, "bos_token": "<s>", "eos_token": "</s>"}
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return path


if __name__ == "__main__":
    print(build_tokenizer(sys.argv[1] if len(sys.argv) > 1 else "sim-tokenizer"))
