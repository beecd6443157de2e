"""A tiny llama-architecture GGUF model for tests that run real llama.cpp: random weights (seeded), real
architecture metadata (``general.architecture = "llama"``, its ``llama.*`` hyperparameters, all F32) and
a minimal SentencePiece-style vocabulary that llama.cpp's loader accepts (``<unk>``, ``<s>``, ``</s>``,
byte tokens, letters and a few words). It writes ~0.4 MB with the ``gguf`` package (llama.cpp's own
writer) and answers a completion with nonsense, which is all a test of where it runs needs.

Only the ASCII byte tokens (``<0x00>`` … ``<0x7F>``) are in the vocabulary: with random weights a model
that may emit bytes 0x80–0xFF strings invalid UTF-8 together, and llama-server then fails the completion
("The model produced output that does not match the expected Content-only format", its chat parser's
``unparsed Content-only output``)."""

from __future__ import annotations

from pathlib import Path

EMBED, HEADS, LAYERS, FEED_FORWARD, CONTEXT = 64, 4, 2, 128, 2048
WORDS = ("the", "a", "is", "hello", "world")


def write_tiny_llama(path: Path, *, seed: int = 29) -> Path:
    import gguf
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(128)), "▁", *letters]
    tokens += [f"▁{w}" for w in WORDS]
    special = 3 + 128
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 128 + [gguf.TokenType.NORMAL] * (len(tokens) - special)
    scores = [0.0] * special + [-float(i) for i in range(len(tokens) - special)]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("gputray-tiny-llama")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(EMBED // HEADS)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)

    def weights(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    weights("token_embd.weight", len(tokens), EMBED)
    writer.add_tensor("output_norm.weight", np.ones(EMBED, np.float32))
    weights("output.weight", len(tokens), EMBED)
    for i in range(LAYERS):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(EMBED, np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(EMBED, np.float32))
        for part in ("q", "k", "v", "output"):
            weights(f"blk.{i}.attn_{part}.weight", EMBED, EMBED)
        weights(f"blk.{i}.ffn_gate.weight", FEED_FORWARD, EMBED)
        weights(f"blk.{i}.ffn_up.weight", FEED_FORWARD, EMBED)
        weights(f"blk.{i}.ffn_down.weight", EMBED, FEED_FORWARD)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def prompt(words: int, *, seed: int = 1) -> str:
    """``words`` of the vocabulary's words (about 4 tokens each), different for each seed (llama-server
    caches prompts: the same one twice is answered from its cache)."""
    import random

    pick = random.Random(seed)
    return " ".join(pick.choice(WORDS) for _ in range(words))
