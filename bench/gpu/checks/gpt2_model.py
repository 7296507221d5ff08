"""The GPT-2 (12 layers, width 1024, bf16, DDP, fused AdamW) the one-GPU checks
train: `step()` runs one forward, backward and optimizer step on a fixed batch
and returns the loss."""
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel


def ddp_gpt2_step(dev, batch, seq):
    cfg = GPT2Config(n_layer=12, n_embd=1024, n_head=16, n_positions=seq, vocab_size=50257,
                     attn_implementation="sdpa")
    model = DDP(GPT2LMHeadModel(cfg).to(dev, dtype=torch.bfloat16), device_ids=[dev.index])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev)

    def step():
        out = model(input_ids=idx, labels=idx)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return out.loss

    return step
