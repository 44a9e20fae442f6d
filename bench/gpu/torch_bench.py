"""PyTorch eager baseline for bench/gpu/bench.ts: a Qwen2.5-0.5B-shaped model
(random weights) through Hugging Face transformers on the same shapes as ours.
Writes one JSON object of rates (rewritten after every part, so a part that
fails or a timeout keeps what was measured; a failed part's rate is null and
its error is under "errors").

Parts (warm-up, then the median of REPS timed repetitions):
  copy_bw_gbs        device-to-device copy of a 1 GiB fp32 tensor, bytes read + written
  train_tokens_s     forward + backward, 8 x 512 tokens, next-token log-prob loss
                     (cross-entropy), fp32 weights + bf16 autocast, sdpa
  logprob_tokens_s   the same forward without grad
  decode_tokens_s    batch 32, prompt 128, 64 greedy tokens with past_key_values
                     (DynamicCache), bf16 autocast; the 64 decode steps timed
  decode1_tokens_s   the same at batch 1; decode1_bf16_* with bf16 weights (2 bytes a
                     parameter) and its fraction of the copy-bandwidth bound

Usage: python3 bench/gpu/torch_bench.py OUT_JSON [--small]
"""
import json
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F
from transformers import Qwen2Config, Qwen2ForCausalLM

SMALL = "--small" in sys.argv
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TRAIN_B, TRAIN_LEN = (2, 64) if SMALL else (8, 512)
DECODE_B, PROMPT, NEW = (4, 16, 8) if SMALL else (32, 128, 64)
REPS = 3 if SMALL else 5
DECODE_REPS = 3


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def config() -> Qwen2Config:
    if SMALL:
        return Qwen2Config(vocab_size=1000, hidden_size=128, intermediate_size=256,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           tie_word_embeddings=True)
    return Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                       num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                       max_position_embeddings=32768, rope_theta=1000000.0, rms_norm_eps=1e-6,
                       tie_word_embeddings=True)


def set_attn(model, impl: str) -> str:
    try:
        model.set_attn_implementation(impl)
    except Exception:
        model.config._attn_implementation = impl
    return str(getattr(model.config, "_attn_implementation", impl))


def timed(fn, reps=REPS):
    fn()  # warm-up
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def tokens(b, n, vocab, salt):
    g = torch.Generator().manual_seed(salt)
    return torch.randint(0, vocab, (b, n), generator=g).to(DEVICE)


def next_targets(ids):
    # the next token; the last token of each sequence targets id 0 (as ours)
    return torch.cat([ids[:, 1:], torch.zeros_like(ids[:, :1])], dim=1)


def logprob_loss(model, ids, targets):
    logits = model(input_ids=ids, use_cache=False).logits
    return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def decode_rate(model, b, ctx, info):
    ids = tokens(b, PROMPT, model.config.vocab_size, 3)

    def run():
        with torch.no_grad(), ctx():
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            info["cache"] = type(past).__name__
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            sync()
            t0 = time.perf_counter()
            for _ in range(NEW):
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
            nxt.cpu()  # a synchronize
            return time.perf_counter() - t0

    run()  # warm-up
    per_step = statistics.median([run() for _ in range(DECODE_REPS)]) / NEW
    return b / per_step


def main(out_path):
    t_start = time.time()
    res = {"device": DEVICE, "torch": torch.__version__, "errors": {}}
    try:
        import transformers
        res["transformers"] = transformers.__version__
        if DEVICE == "cuda":
            res["gpu"] = torch.cuda.get_device_name(0)
    except Exception:
        pass

    def save():
        res["elapsed_s"] = time.time() - t_start
        with open(out_path, "w") as f:
            json.dump(res, f, indent=2)

    def part(key, fn):
        t0 = time.time()
        try:
            res[key] = fn()
            print(f"torch_bench: {key} = {res[key]:.1f} ({time.time() - t0:.1f} s)", flush=True)
        except Exception as e:
            res[key] = None
            res["errors"][key] = f"{type(e).__name__}: {e}"
            print(f"torch_bench: {key} FAILED ({time.time() - t0:.1f} s)", flush=True)
            traceback.print_exc()
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
        save()

    # device-to-device copy bandwidth (bytes read + written)
    def copy_bw():
        n = (1 << 20) if SMALL else (1 << 28)
        x = torch.empty(n, dtype=torch.float32, device=DEVICE).normal_()
        y = torch.empty_like(x)
        s = timed(lambda: y.copy_(x), 10)
        return 2 * x.numel() * 4 / s / 1e9

    part("copy_bw_gbs", copy_bw)

    torch.manual_seed(0)
    cfg = config()
    try:
        with torch.device(DEVICE):
            model = Qwen2ForCausalLM(cfg)
        model = model.to(DEVICE, torch.float32)
        attn = set_attn(model, "sdpa")
    except Exception as e:
        res["errors"]["model"] = f"{type(e).__name__}: {e}"
        traceback.print_exc()
        save()
        sys.exit(1)
    params = sum(p.numel() for p in model.parameters())  # a tied embedding counts once
    autocast = lambda: torch.autocast(DEVICE, dtype=torch.bfloat16)  # noqa: E731
    res["mode"] = f"transformers eager, fp32 weights + bf16 autocast, attn {attn}"
    res["params"] = params
    res["shapes"] = {"train": [TRAIN_B, TRAIN_LEN], "decode": [DECODE_B, PROMPT, NEW]}
    save()

    ids = tokens(TRAIN_B, TRAIN_LEN, cfg.vocab_size, 2)
    tgt = next_targets(ids)
    n_tok = TRAIN_B * TRAIN_LEN

    def train_step():
        model.zero_grad(set_to_none=False)
        with autocast():
            loss = logprob_loss(model, ids, tgt)
        loss.backward()

    part("train_tokens_s", lambda: n_tok / timed(train_step))
    model.zero_grad(set_to_none=True)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()

    def forward():
        with torch.no_grad(), autocast():
            logprob_loss(model, ids, tgt)

    part("logprob_tokens_s", lambda: n_tok / timed(forward))
    info = {}
    part("decode_tokens_s", lambda: decode_rate(model, DECODE_B, autocast, info))
    part("decode1_tokens_s", lambda: decode_rate(model, 1, autocast, info))
    res["cache"] = info.get("cache")
    bw = res.get("copy_bw_gbs")
    if bw and res.get("decode1_tokens_s"):
        # fp32 weights, 4 bytes a parameter (autocast reads them and casts every step)
        res["decode1_bw_fraction_4byte"] = res["decode1_tokens_s"] * params * 4 / (bw * 1e9)
    # the same decode with bf16 weights (half the bytes per token)
    try:
        model = model.to(torch.bfloat16)
        part("decode1_bf16_tokens_s", lambda: decode_rate(model, 1, torch.no_grad, info))
    except Exception as e:
        res["errors"]["decode1_bf16_tokens_s"] = f"{type(e).__name__}: {e}"
    if bw and res.get("decode1_bf16_tokens_s"):
        res["decode1_bf16_bw_fraction"] = res["decode1_bf16_tokens_s"] * params * 2 / (bw * 1e9)
    save()
    print(json.dumps(res, indent=2), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("--"):
        print("usage: python3 bench/gpu/torch_bench.py OUT_JSON [--small]", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
