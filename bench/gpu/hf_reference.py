"""Reference for the CUDA backend: a random-initialised Qwen2 (or Qwen3) checkpoint and its
per-token log-probs and loss gradients from Hugging Face transformers (fp32,
TF32 off, eager attention), for bench/gpu/reference.ts to compare against.

Writes into OUT_DIR: the checkpoint (config.json + model.safetensors, by
save_pretrained) and reference.safetensors with
  tokens, positions, targets (I32, T), cu_seqlens (I32, B + 1), lengths (F32, B),
  logp (F32, T): log softmax(logits)[target] per token,
  grad.<HF name> (F32): gradient of loss = -mean over all T tokens of logp.
A tied embedding is one parameter in transformers (named_parameters lists
model.embed_tokens.weight only), so its gradient holds the LM head's part too.

With ARCH qwen3: a Qwen3-0.6B-shaped checkpoint (4 layers; head_dim 128 beside hidden
1024) whose q_norm / k_norm weights are set away from one, so they matter.

With ARCH llama3: a Llama-3.2-1B-shaped checkpoint (4 layers) with its RoPE scaling (llama3,
factor 32): the sequences' positions stay below 8192, where the scaled table still differs.

With ARCH yarn: the Qwen2 checkpoint with YaRN (factor 4 over an original context of 64, so
that the ramp and the divided frequencies turn visibly within the sequences;
max_position_embeddings 256, 4 x 64, so that transformers 4.5x's factor, the ratio of the two,
is 4 too) and its attention factor.

Every ARCH also writes the rotary embedding's table and attention scaling
(rope.inv_freq, rope.attention_scaling), which reference.ts compares with ours.

Usage: python3 bench/gpu/hf_reference.py OUT_DIR [qwen2|qwen3|llama3|yarn]
"""
import os
import sys
import time

import torch
from safetensors.torch import save_file
from transformers import Qwen2Config, Qwen2ForCausalLM

LENGTHS = [37, 64, 91]
LAST_TARGET = 0  # the target of each sequence's last token


def make_config(arch: str):
    if arch == "llama3":
        from transformers import LlamaConfig

        return LlamaConfig(  # Llama-3.2-1B-shaped, 4 layers, its RoPE scaling
            vocab_size=128256,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=4,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=64,
            max_position_embeddings=131072,
            rope_theta=500000.0,
            rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
            attention_bias=False,
            mlp_bias=False,
        )
    if arch == "qwen3":
        from transformers import Qwen3Config  # transformers >= 4.51

        config = Qwen3Config(
            vocab_size=151936,
            hidden_size=1024,
            intermediate_size=3072,
            num_hidden_layers=4,
            num_attention_heads=16,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=4096,
            rope_theta=1000000.0,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            attention_bias=False,
            use_sliding_window=False,
        )
    else:
        config = Qwen2Config(
            vocab_size=151936,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=4,
            num_attention_heads=14,
            num_key_value_heads=2,
            max_position_embeddings=256 if arch == "yarn" else 4096,
            rope_theta=1000000.0,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            use_sliding_window=False,
        )
    if arch == "yarn":
        yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
        if isinstance(getattr(config, "rope_parameters", None), dict):  # transformers 5
            config.rope_parameters.update(yarn)
        else:
            config.rope_scaling = yarn
    # transformers 5 keeps the RoPE base in rope_parameters; make sure it is 1e6 either way
    rp = getattr(config, "rope_parameters", None)
    if isinstance(rp, dict):
        rp["rope_theta"] = 1000000.0
    else:
        config.rope_theta = 1000000.0
    return config


def set_attn(model, impl: str) -> str:
    try:
        model.set_attn_implementation(impl)
    except Exception:  # older/newer API: the config attribute is what forward reads
        model.config._attn_implementation = impl
    return str(getattr(model.config, "_attn_implementation", impl))


def make_model(config, arch: str):
    if arch == "llama3":
        from transformers import LlamaForCausalLM

        return LlamaForCausalLM(config)
    if arch == "qwen3":
        from transformers import Qwen3ForCausalLM

        return Qwen3ForCausalLM(config)
    return Qwen2ForCausalLM(config)


def main(out_dir: str, arch: str) -> None:
    t_start = time.time()
    try:  # full fp32 GEMMs (TF32 off; also torch's default for matmul)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except Exception as e:
        print(f"hf_reference: could not turn TF32 off: {e}", flush=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        print("hf_reference: no CUDA device, running on the CPU", flush=True)
    torch.manual_seed(0)
    config = make_config(arch)
    with torch.device(device):
        model = make_model(config, arch)
    model = model.to(device=device, dtype=torch.float32)
    attn = set_attn(model, "eager")
    model.train(False)  # no dropout (Qwen2 has none; to be explicit)
    # transformers initialises biases to zero; random ones exercise our bias path too
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.02)
            if name.endswith("q_norm.weight") or name.endswith("k_norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)

    gen = torch.Generator().manual_seed(1)
    seqs = [torch.randint(0, config.vocab_size, (n,), generator=gen) for n in LENGTHS]
    total = sum(LENGTHS)
    logps, targets_all, positions_all = [], [], []
    model.zero_grad(set_to_none=True)
    for seq in seqs:
        ids = seq.unsqueeze(0).to(device)
        pos = torch.arange(seq.numel(), device=device).unsqueeze(0)
        logits = model(input_ids=ids, position_ids=pos, use_cache=False).logits[0].float()
        targets = torch.cat([seq[1:], torch.full((1,), LAST_TARGET, dtype=seq.dtype)]).to(device)
        logp = torch.log_softmax(logits, dim=-1).gather(1, targets.unsqueeze(1)).squeeze(1)
        (-logp.sum() / total).backward()  # the sum over sequences is -mean(logp)
        logps.append(logp.detach())
        targets_all.append(targets.cpu())
        positions_all.append(torch.arange(seq.numel()))
    cu = [0]
    for n in LENGTHS:
        cu.append(cu[-1] + n)
    out = {
        "logp": torch.cat(logps).float().cpu().contiguous(),
        "tokens": torch.cat(seqs).to(torch.int32).contiguous(),
        "positions": torch.cat(positions_all).to(torch.int32).contiguous(),
        "targets": torch.cat(targets_all).to(torch.int32).contiguous(),
        "cu_seqlens": torch.tensor(cu, dtype=torch.int32),
        "lengths": torch.tensor(LENGTHS, dtype=torch.float32),
    }
    # the rotary embedding's table and cos/sin scale, as this transformers computes them
    rotary = getattr(getattr(model, "model", None), "rotary_emb", None)
    if rotary is not None and hasattr(rotary, "inv_freq"):
        out["rope.inv_freq"] = rotary.inv_freq.detach().float().cpu().contiguous()
        scaling = float(getattr(rotary, "attention_scaling", 1.0))
        out["rope.attention_scaling"] = torch.tensor([scaling], dtype=torch.float32)
    else:
        print("hf_reference: no model.model.rotary_emb.inv_freq to write", flush=True)
    n_grads = 0
    for name, p in model.named_parameters():
        if p.grad is None:
            print(f"hf_reference: no gradient for {name}", flush=True)
            continue
        out["grad." + name] = p.grad.detach().float().cpu().contiguous()
        n_grads += 1
    save_file(out, os.path.join(out_dir, "reference.safetensors"))
    import transformers

    rp = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None)
    print(
        f"hf_reference: {arch}, torch {torch.__version__}, transformers "
        f"{transformers.__version__}, {device}, attn {attn}, rope {rp}, "
        f"{n_grads} gradients, {total} tokens, mean logp {float(out['logp'].mean()):.4f} -> {out_dir} "
        f"({time.time() - t_start:.1f} s)",
        flush=True,
    )


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (
            len(sys.argv) == 3 and sys.argv[2] not in ("qwen2", "qwen3", "llama3", "yarn")):
        print("usage: python3 bench/gpu/hf_reference.py OUT_DIR [qwen2|qwen3|llama3|yarn]",
              file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "qwen2")
