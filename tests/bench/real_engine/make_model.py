"""Build a randomly initialised Llama and a tokenizer in DIR, with nothing downloaded.

    python tests/bench/real_engine/make_model.py DIR [--layers 16] [--hidden 2048]

The weights are noise, the compute is real: `transformers serve DIR` loads it as it would any
Llama checkpoint, so batching, KV memory and kernels behave as for a 0.9B model. The tokenizer is
a byte-level BPE trained here on generated text (the `tokenizers` package), saved as the
`PreTrainedTokenizerFast` files transformers reads.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

WORDS = [
    "amber", "basalt", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo",
    "jasper", "kelp", "lumen", "meadow", "nickel", "onyx", "prairie", "quartz", "river",
    "sierra", "tundra", "umber", "valley", "willow", "xenon", "yarrow", "zephyr", "the",
    "a", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as", "was",
    "at", "by", "be", "this", "from", "or", "an", "are", "which", "not", "have",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def training_text(lines: int = 20000, seed: int = 1) -> list[str]:
    """The workload's words and made-up ones, so merges fill a vocabulary of thousands: a
    random model then emits tokens that decode to text (a stream event each), and EOS is one
    token in thousands."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    made_up = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
               for _ in range(6000)]
    vocabulary = WORDS + made_up
    return [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(5, 40)))
            for _ in range(lines)]


def build_tokenizer(out: Path, vocab_size: int) -> int:
    """Train and save the tokenizer; returns its vocabulary size (the model's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return int(tok.get_vocab_size())


def build_model(out: Path, layers: int, hidden: int, vocab_size: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 11 // 4,
                      num_hidden_layers=layers, num_attention_heads=16, num_key_value_heads=8,
                      vocab_size=vocab_size, max_position_embeddings=8192,
                      bos_token_id=0, eos_token_id=1, pad_token_id=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=8000, help="most tokens to train")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    vocab = build_tokenizer(args.dir, args.vocab)
    build_model(args.dir, args.layers, args.hidden, vocab)
    print(f"model and tokenizer in {args.dir}")


if __name__ == "__main__":
    main()
