"""Hugging Face GPT-2 (random init, nothing downloaded) trained with DDP in bf16.

Default size: 12 layers, width 1024, 16 heads, batch 8 x 1024 tokens per rank
(about 63 ms per step on an H200). Usage: torchrun --nproc_per_node=N gpt2_ddp.py
"""
import argparse
import os
import sys

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=15)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--nvtx", action="store_true",
                   help="annotate like Megatron: a train_step range, forward/backward/optimizer "
                        "ranges and one range per transformer block forward")
    a = p.parse_args()
    rank, dev = common.setup()
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.width, n_head=a.heads, n_positions=a.seq,
                     vocab_size=50257, attn_implementation="sdpa")
    model = GPT2LMHeadModel(cfg).to(dev, dtype=torch.bfloat16)
    model = DDP(model, device_ids=[dev.index])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    idx = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device=dev)

    def step():
        out = model(input_ids=idx, labels=idx)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    if a.nvtx:
        nvtx = torch.cuda.nvtx
        # Hooks must return None: a value would replace the block's input or output.
        def push(module, args):
            nvtx.range_push(module.xpu_range_name)

        def pop(module, args, out):
            nvtx.range_pop()

        for i, block in enumerate(model.module.transformer.h):
            block.xpu_range_name = "block%d" % i
            block.register_forward_pre_hook(push)
            block.register_forward_hook(pop)

        def step():  # noqa: F811  the same step, annotated
            with nvtx.range("train_step"):
                nvtx.range_push("forward")
                out = model(input_ids=idx, labels=idx)
                nvtx.range_pop()
                nvtx.range_push("backward")
                out.loss.backward()
                nvtx.range_pop()
                nvtx.range_push("optimizer")
                opt.step()
                opt.zero_grad(set_to_none=True)
                nvtx.range_pop()

    times = common.run_steps(step, a.warmup, a.steps)
    common.report(rank, "gpt2_ddp", times, {"params": sum(p.numel() for p in model.parameters())})


if __name__ == "__main__":
    main()
