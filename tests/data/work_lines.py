"""Functions with known work per line, for tests/worker/test_work.py."""

import torch

M, K, N = 256, 192, 128


def make_matmul() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(M, K), torch.randn(K, N)


def matmul_then_elementwise(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    c = a @ b
    d = c * c
    e = torch.nn.functional.linear(a, b.T)
    return d + e.sum(dim=-1, keepdim=True)


def big_elementwise(x: torch.Tensor) -> torch.Tensor:
    y = x * 2.0
    return y


def make_big() -> torch.Tensor:
    return torch.randn(1024, 1024)


def temporary(x: torch.Tensor) -> torch.Tensor:
    big = torch.empty(4096, 4096)
    s = big.fill_(1.0).sum()
    del big
    return x + s


def big_matmul(a: torch.Tensor) -> torch.Tensor:
    c = a @ a
    return c


def tiny_ops(x: torch.Tensor) -> torch.Tensor:
    for _ in range(50):
        x = x + 1
    return x


def make_tiny() -> torch.Tensor:
    return torch.ones(4)


def make_huge() -> torch.Tensor:
    """64 MiB: past the last-level cache, so an elementwise line is bound by the memory (DRAM)."""
    return torch.randn(4096, 4096)


def _block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x @ w
    return torch.relu(y) * 2 + y


_compiled_block = torch.compile(_block)


def calls_compiled(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    z = _compiled_block(x, w)
    return z.sum()
