"""The PyTorch peer of the benchmark's training rows (bench/training.ts runs it in .bench/torch).

  python bench/torch_train.py --model GGUF --batches FILE --row bench|full|lora
                              --mode eager|compile --threads N --warmup 2 --steps 3

The same model as toy's: a llama read from the same GGUF (quantized tensors dequantized to
float32 with the `gguf` package), written here in plain PyTorch in the file's conventions (ggml
dims [in, out] are torch's [out, in]; RoPE on adjacent pairs, as llama.cpp's "normal" mode, which
is what the GGUF's permuted q/k weights expect; tied output when the file has no output.weight).
The same batches (int32 file: steps × {input, target} × batch × seq, written by bench/training.ts),
the same optimizer as toy's defaults (AdamW, betas 0.9/0.95, eps 1e-8, weight decay 0.1, clip 1).
Rows: bench and full train every weight; lora freezes them and trains rank-r adapters
W + (alpha/r)·B·A on q, k, v and o of every layer (B starts at zero).
Prints one JSON line: tokens/s (median of the timed steps), each step's tokens/s and the first
step's loss (which toy's must equal: the same model on the same batch).
"""

import argparse
import json
import math
import os
import statistics
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--model", required=True)
p.add_argument("--batches", required=True)
p.add_argument("--row", choices=["bench", "full", "lora"], required=True)
p.add_argument("--mode", choices=["eager", "compile"], required=True)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--rank", type=int, default=8)
p.add_argument("--alpha", type=float, default=16)
p.add_argument("--lr", type=float, default=1e-3)
args = p.parse_args()

os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
import torch  # noqa: E402  (after OMP_NUM_THREADS)
import torch.nn.functional as F  # noqa: E402
from gguf import GGUFReader  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(0)

reader = GGUFReader(args.model)


def field(key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    return v.tobytes().decode() if f.types and f.types[0].name == "STRING" else v.item()


arch = field("general.architecture")
if arch != "llama":
    raise SystemExit(f"{args.model}: torch_train.py models llama files only, this one is {arch}")
d = field(f"{arch}.embedding_length")
n_layer = field(f"{arch}.block_count")
n_head = field(f"{arch}.attention.head_count")
n_kv = field(f"{arch}.attention.head_count_kv", n_head)
eps = field(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
rope_base = field(f"{arch}.rope.freq_base", 10000.0)
head_dim = d // n_head

weights = {}
for t in reader.tensors:
    w = dequantize(t.data, t.tensor_type).astype(np.float32).reshape([int(x) for x in reversed(t.shape.tolist())])
    weights[t.name] = torch.from_numpy(np.ascontiguousarray(w))
tied = "output.weight" not in weights


class LoraLinear(torch.nn.Module):
    """y = x Wᵀ + (alpha/r) · (x Aᵀ) Bᵀ with W frozen."""

    def __init__(self, w, rank, alpha):
        super().__init__()
        self.w = torch.nn.Parameter(w, requires_grad=False)
        out_f, in_f = w.shape
        bound = 1 / math.sqrt(in_f)
        self.a = torch.nn.Parameter(torch.empty(rank, in_f).uniform_(-bound, bound))
        self.b = torch.nn.Parameter(torch.zeros(out_f, rank))
        self.scale = alpha / rank

    def forward(self, x):
        return F.linear(x, self.w) + self.scale * F.linear(F.linear(x, self.a), self.b)


class Plain(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)

    def forward(self, x):
        return F.linear(x, self.w)


def linear(name, adapt):
    return LoraLinear(weights[name], args.rank, args.alpha) if adapt else Plain(weights[name])


class Block(torch.nn.Module):
    def __init__(self, l, lora):
        super().__init__()
        b = f"blk.{l}"
        self.attn_norm = torch.nn.Parameter(weights[f"{b}.attn_norm.weight"])
        self.ffn_norm = torch.nn.Parameter(weights[f"{b}.ffn_norm.weight"])
        self.q, self.k, self.v, self.o = (linear(f"{b}.{n}.weight", lora) for n in ("attn_q", "attn_k", "attn_v", "attn_output"))
        self.gate, self.up, self.down = (linear(f"{b}.{n}.weight", False) for n in ("ffn_gate", "ffn_up", "ffn_down"))

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        h = F.rms_norm(x, (d,), self.attn_norm, eps)
        q = rope(self.q(h).view(B, T, n_head, head_dim), cos, sin).transpose(1, 2)
        k = rope(self.k(h).view(B, T, n_kv, head_dim), cos, sin).transpose(1, 2)
        v = self.v(h).view(B, T, n_kv, head_dim).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=n_kv != n_head)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, d))
        h = F.rms_norm(x, (d,), self.ffn_norm, eps)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def rope(x, cos, sin):
    """Rotate adjacent pairs (x[2i], x[2i+1]) by position · base^(−2i/head_dim)."""
    x0, x1 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), -1).flatten(-2)


class Llama(torch.nn.Module):
    def __init__(self, lora):
        super().__init__()
        self.embd = torch.nn.Parameter(weights["token_embd.weight"])
        self.blocks = torch.nn.ModuleList(Block(l, lora) for l in range(n_layer))
        self.norm = torch.nn.Parameter(weights["output_norm.weight"])
        self.out = None if tied else torch.nn.Parameter(weights["output.weight"])
        inv = rope_base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        ang = torch.outer(torch.arange(args.seq, dtype=torch.float32), inv)  # [T, head_dim/2]
        self.register_buffer("cos", ang.cos()[None, :, None, :], persistent=False)
        self.register_buffer("sin", ang.sin()[None, :, None, :], persistent=False)

    def forward(self, ids, targets):
        x = F.embedding(ids, self.embd)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        x = F.rms_norm(x, (d,), self.norm, eps)
        logits = F.linear(x, self.embd if self.out is None else self.out)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


model = Llama(args.row == "lora")
if args.row == "lora":
    for name, prm in model.named_parameters():
        prm.requires_grad_(name.endswith(".a") or name.endswith(".b"))
trainable = [prm for prm in model.parameters() if prm.requires_grad]
opt = torch.optim.AdamW(trainable, lr=args.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
loss_fn = torch.compile(model) if args.mode == "compile" else model

tokens = np.fromfile(args.batches, dtype=np.int32).reshape(-1, 2, args.batch, args.seq)
if len(tokens) < args.warmup + args.steps:
    raise SystemExit(f"{args.batches}: {len(tokens)} batches, {args.warmup + args.steps} needed")


def step(i):
    ids, tgt = (torch.from_numpy(tokens[i, j].astype(np.int64)) for j in (0, 1))
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(ids, tgt)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    opt.step()
    return loss.item()


first_loss, rates, warmup_s = None, [], 0.0
for i in range(args.warmup + args.steps):
    t0 = time.perf_counter()
    loss = step(i)
    dt = time.perf_counter() - t0
    if i == 0:
        first_loss = loss
    if i >= args.warmup:
        rates.append(args.batch * args.seq / dt)
    else:
        warmup_s += dt
import resource  # noqa: E402

print(json.dumps({
    "tokens_per_s": statistics.median(rates), "steps_tps": rates, "loss0": first_loss,
    "params": sum(prm.numel() for prm in model.parameters()), "trainable": sum(prm.numel() for prm in trainable),
    "warmup_s": warmup_s, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "torch": torch.__version__,
}))
