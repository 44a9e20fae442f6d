"""Reference for the CUDA backend: a random-initialised Qwen2 checkpoint and its
per-token log-probs and loss gradients from Hugging Face transformers (fp32,
TF32 off), for bench/gpu/reference.ts to compare against.

Usage: python3 bench/gpu/hf_reference.py OUT_DIR
"""
import sys

import torch
from safetensors.torch import save_file
from transformers import Qwen2Config, Qwen2ForCausalLM

LENGTHS = [37, 64, 91]


def main(out_dir: str) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=4,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    model = Qwen2ForCausalLM(config).to("cuda", torch.float32)
    # transformers initialises biases to zero; random ones exercise our bias path too
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.02)
    model.save_pretrained(out_dir, safe_serialization=True)

    gen = torch.Generator().manual_seed(1)
    seqs = [torch.randint(0, config.vocab_size, (n,), generator=gen) for n in LENGTHS]
    total = sum(LENGTHS)
    logps = []
    model.zero_grad()
    for seq in seqs:
        ids = seq.unsqueeze(0).cuda()
        logits = model(input_ids=ids).logits[0].float()
        targets = torch.cat([seq[1:], torch.zeros(1, dtype=seq.dtype)]).cuda()
        logp = torch.log_softmax(logits, dim=-1).gather(1, targets.unsqueeze(1)).squeeze(1)
        (-logp.sum() / total).backward()
        logps.append(logp.detach())
    out = {
        "logp": torch.cat(logps).cpu().contiguous(),
        "tokens": torch.cat(seqs).float().contiguous(),
        "lengths": torch.tensor(LENGTHS, dtype=torch.float32),
    }
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.detach().float().cpu().contiguous()
    save_file(out, f"{out_dir}/reference.safetensors")
    print(f"hf_reference: {len(out) - 3} gradients, {total} tokens -> {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1])
