# nn.Module.__call__ is typed as returning Any; the forwards return its result as a Tensor, as PyTorch code does.
# mypy: disable-error-code="no-any-return"
"""The tiny transformer LM: causal self-attention, an MLP, pre-norm blocks and the model around them.

Every step is written out one operation per line (no fused scaled_dot_product_attention), so a
per-line profile of `Block.forward` or `Attention.forward` shows what each line costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    """Model sizes; the defaults make a training step take tens of milliseconds on two CPU cores."""

    vocab: int = 256  # byte tokens
    dim: int = 128
    heads: int = 4
    layers: int = 4
    seq: int = 64  # the longest context; sizes the position table and the causal mask


class Attention(nn.Module):
    """Causal multi-head self-attention."""

    mask: torch.Tensor

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        if cfg.dim % cfg.heads:
            raise ValueError(f"dim {cfg.dim} is not divisible by heads {cfg.heads}")
        self.heads = cfg.heads
        self.head_dim = cfg.dim // cfg.heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)
        self.proj = nn.Linear(cfg.dim, cfg.dim)
        # True above the diagonal: the future positions a token may not attend to.
        future = torch.ones(cfg.seq, cfg.seq, dtype=torch.bool).triu(diagonal=1)
        self.register_buffer("mask", future, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        qkv = self.qkv(x)
        q, k, v = qkv.split(c, dim=-1)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) * self.scale
        att = att.masked_fill(self.mask[:t, :t], float("-inf"))
        att = att.softmax(dim=-1)
        y = att @ v
        y = y.transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class MLP(nn.Module):
    """The position-wise feed-forward network, 4x wide."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.dim, 4 * cfg.dim)
        self.act = nn.GELU()
        self.out = nn.Linear(4 * cfg.dim, cfg.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        h = self.act(h)
        return self.out(h)


class Block(nn.Module):
    """A pre-norm transformer block: attention then MLP, each around a residual connection."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.dim)
        self.attn = Attention(cfg)
        self.ln2 = nn.LayerNorm(cfg.dim)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.ln1(x)
        h = x + self.attn(a)
        m = self.ln2(h)
        return h + self.mlp(m)


class TinyLM(nn.Module):
    """Token and position embeddings, a stack of Blocks, a final LayerNorm and the LM head."""

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.dim)
        self.pos = nn.Embedding(cfg.seq, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (batch, time, vocab) for token ids (batch, time), and the cross-entropy when targets are given."""
        t = idx.shape[1]
        if t > self.cfg.seq:
            raise ValueError(f"sequence of {t} tokens is longer than the model's context of {self.cfg.seq}")
        positions = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Extend idx (batch, time) by max_new_tokens: greedy when top_k is None, else top-k sampling."""
        for _ in range(max_new_tokens):
            # The position table ends at cfg.seq: condition on the most recent window only.
            logits, _ = self(idx[:, -self.cfg.seq :])
            last = logits[:, -1, :]
            if top_k is None:
                nxt = last.argmax(dim=-1, keepdim=True)
            else:
                values, indices = last.topk(min(top_k, last.shape[-1]), dim=-1)
                probs = values.softmax(dim=-1)
                choice = torch.multinomial(probs, num_samples=1, generator=generator)
                nxt = indices.gather(-1, choice)
            idx = torch.cat([idx, nxt], dim=1)
        return idx
