"""PyTorch eager baseline for bench/gpu/bench.ts: a Qwen2.5-0.5B-shaped model
(random weights) through Hugging Face transformers on the same shapes as ours.
Writes one JSON object of rates.

Usage: python3 bench/gpu/torch_bench.py OUT_JSON [--small]
"""
import json
import statistics
import sys
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

SMALL = "--small" in sys.argv
TRAIN_B, TRAIN_LEN = (2, 64) if SMALL else (8, 512)
DECODE_B, PROMPT, NEW = (4, 16, 8) if SMALL else (32, 128, 64)
REPS = 2 if SMALL else 5


def config() -> Qwen2Config:
    if SMALL:
        return Qwen2Config(vocab_size=1000, hidden_size=128, intermediate_size=256,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           tie_word_embeddings=True)
    return Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                       num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                       max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                       tie_word_embeddings=True)


def timed(fn, reps=REPS):
    fn()  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def tokens(b, n, vocab, salt):
    g = torch.Generator().manual_seed(salt)
    return torch.randint(0, vocab, (b, n), generator=g).cuda()


def logprob_loss(model, ids):
    logits = model(input_ids=ids).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(2, ids[:, 1:].unsqueeze(2))
    return -logp.mean()


def decode_rate(model, b, dtype_ctx):
    ids = tokens(b, PROMPT, model.config.vocab_size, 3)

    def run():
        with torch.no_grad(), dtype_ctx():
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(NEW):
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            return time.perf_counter() - t0

    run()
    per_step = statistics.median([run() for _ in range(3)]) / NEW
    return b / per_step


def main(out_path):
    torch.manual_seed(0)
    cfg = config()
    model = Qwen2ForCausalLM(cfg).cuda().float()
    model.config._attn_implementation = "sdpa"
    params = sum(p.numel() for p in model.parameters())
    autocast = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731
    res = {"mode": "transformers eager, fp32 weights + bf16 autocast, sdpa", "params": params}

    # device-to-device copy bandwidth (bytes read + written)
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda").normal_()
    y = torch.empty_like(x)
    res["copy_bw_gbs"] = 2 * x.numel() * 4 / timed(lambda: y.copy_(x), 10) / 1e9
    del x, y

    ids = tokens(TRAIN_B, TRAIN_LEN, cfg.vocab_size, 2)
    n_tok = TRAIN_B * TRAIN_LEN

    def train_step():
        model.zero_grad(set_to_none=False)
        with autocast():
            loss = logprob_loss(model, ids)
        loss.backward()

    res["train_tokens_s"] = n_tok / timed(train_step)

    def forward():
        with torch.no_grad(), autocast():
            logprob_loss(model, ids)

    res["logprob_tokens_s"] = n_tok / timed(forward)
    model.zero_grad(set_to_none=True)
    res["decode_tokens_s"] = decode_rate(model, DECODE_B, autocast)
    res["decode1_tokens_s"] = decode_rate(model, 1, autocast)
    # the same decode with bf16 weights (half the bytes per token)
    model = model.to(torch.bfloat16)
    res["decode1_bf16_tokens_s"] = decode_rate(model, 1, torch.no_grad)
    res["decode1_bf16_bw_fraction"] = res["decode1_bf16_tokens_s"] * params * 2 / (
        res["copy_bw_gbs"] * 1e9)
    res["shapes"] = {"train": [TRAIN_B, TRAIN_LEN], "decode": [DECODE_B, PROMPT, NEW]}
    with open(out_path, "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
