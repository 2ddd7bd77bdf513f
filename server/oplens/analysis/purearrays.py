"""A pure-Python stand-in for the part of numpy the analysis uses (`arrays.py` picks it where numpy is
missing): one-dimensional arrays of ints, floats or bools held in a list, with numpy's semantics for
what columns.py, attribution.py and worker/events.py call, and nothing more.

Its rules are numpy's, so the two give the same figures: indexing by an int (a Python scalar), a
slice, an array or list of indices, or a mask of bools; arithmetic, comparisons and `& | ~ -`
element-wise against an array of the same length or a scalar; ints with a float make floats, `/` makes
floats, bools with ints make ints; `unique` sorted with the first index and the inverse; `argsort`
stable; `lexsort` by its last key first; `bincount` summing in index order (the same float sums).
Each operation is a list comprehension or a `map` over the elements, slower than numpy's loops in C;
what that costs a profile and its re-analysis is measured by bench/pure_python.py (docs/benchmarks.md).
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from typing import Any


class _DType:
    """An element type: what a value is cast to, and its kind ("b" < "i" < "f", the order numpy promotes in)."""

    __slots__ = ("cast", "kind", "name")

    def __init__(self, name: str, kind: str, cast: Callable[[Any], Any]) -> None:
        self.name, self.kind, self.cast = name, kind, cast

    def __repr__(self) -> str:
        return self.name


bool_ = _DType("bool", "b", bool)
int8 = _DType("int8", "i", int)
int32 = _DType("int32", "i", int)
int64 = _DType("int64", "i", int)
intp = int64
float64 = _DType("float64", "f", float)
_KINDS = {"b": bool_, "i": int64, "f": float64}


def _kind_of(value: Any) -> str:
    return "b" if isinstance(value, bool) else "i" if isinstance(value, int) else "f"


def _promote(a: str, b: str) -> _DType:
    """The dtype of an operation on kinds `a` and `b` (arithmetic: bool with bool stays int)."""
    return _KINDS[max(a, b, key="bif".index)]


class ndarray:  # noqa: N801  (numpy's name)
    """A one-dimensional array: `v` its elements (a list), `dtype` their type."""

    __slots__ = ("dtype", "v")
    __hash__ = None  # type: ignore[assignment]  # == is element-wise, as numpy's

    def __init__(self, v: list[Any], dtype: _DType) -> None:
        self.v = v
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"array({self.v!r}, dtype={self.dtype!r})"

    def __len__(self) -> int:
        return len(self.v)

    def __iter__(self) -> Any:
        return iter(self.v)

    def tolist(self) -> list[Any]:
        return list(self.v)

    def copy(self) -> ndarray:
        return ndarray(list(self.v), self.dtype)

    def astype(self, dtype: _DType) -> ndarray:
        if dtype.kind == self.dtype.kind:
            return ndarray(list(self.v), dtype)
        return ndarray(list(map(dtype.cast, self.v)), dtype)

    def reshape(self, *shape: int) -> ndarray:
        if shape not in ((-1,), (len(self.v),)):
            raise ValueError(f"purearrays holds one dimension only (reshape{shape})")
        return self

    def sum(self) -> Any:
        return sum(self.v)

    def any(self) -> bool:
        return any(self.v)

    def max(self) -> Any:
        return max(self.v)

    # ---- indexing

    def _indices(self, key: Any) -> list[int]:
        if isinstance(key, ndarray) and key.dtype.kind == "b":
            return list(compress(range(len(self.v)), key.v))
        if isinstance(key, ndarray):
            return key.v
        if isinstance(key, range | list | tuple):
            return list(key)
        raise TypeError(f"purearrays cannot index by {type(key).__name__}")

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, int):
            return self.v[key]
        if isinstance(key, slice):
            return ndarray(self.v[key], self.dtype)
        if isinstance(key, ndarray) and key.dtype.kind == "b":
            return ndarray(list(compress(self.v, key.v)), self.dtype)
        return ndarray(list(map(self.v.__getitem__, self._indices(key))), self.dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        v, cast = self.v, self.dtype.cast
        if isinstance(key, int):
            v[key] = cast(value)
            return
        at = range(len(v))[key] if isinstance(key, slice) else self._indices(key)
        if isinstance(value, ndarray):
            for i, x in zip(at, value.v, strict=True):
                v[i] = cast(x)
        else:
            x = cast(value)
            for i in at:
                v[i] = x

    # ---- element-wise

    def _binary(self, other: Any, op: Callable[[Any, Any], Any], dtype: _DType | None = None) -> ndarray:
        if isinstance(other, ndarray):
            out = dtype or _promote(self.dtype.kind, other.dtype.kind)
            if len(other.v) != len(self.v):
                raise ValueError(f"operands of lengths {len(self.v)} and {len(other.v)}")
            values = list(map(op, self.v, other.v))
        else:
            out = dtype or _promote(self.dtype.kind, _kind_of(other))
            values = [op(x, other) for x in self.v]
        return ndarray(values, out)

    def _reflected(self, other: Any, op: Callable[[Any, Any], Any]) -> ndarray:
        return ndarray([op(other, x) for x in self.v], _promote(self.dtype.kind, _kind_of(other)))

    def __add__(self, other: Any) -> ndarray:
        return self._binary(other, operator.add)

    def __radd__(self, other: Any) -> ndarray:
        return self._reflected(other, operator.add)

    def __sub__(self, other: Any) -> ndarray:
        return self._binary(other, operator.sub)

    def __rsub__(self, other: Any) -> ndarray:
        return self._reflected(other, operator.sub)

    def __mul__(self, other: Any) -> ndarray:
        return self._binary(other, operator.mul)

    def __rmul__(self, other: Any) -> ndarray:
        return self._reflected(other, operator.mul)

    def __truediv__(self, other: Any) -> ndarray:
        return self._binary(other, operator.truediv, float64)

    def __neg__(self) -> ndarray:
        return ndarray(list(map(operator.neg, self.v)), self.dtype)

    def __invert__(self) -> ndarray:
        if self.dtype.kind == "b":
            return ndarray(list(map(operator.not_, self.v)), bool_)
        return ndarray(list(map(operator.invert, self.v)), self.dtype)

    def _logical(self, other: Any, op: Callable[[Any, Any], Any]) -> ndarray:
        result = self._binary(other, op)
        if result.dtype.kind == "b":
            result.v = list(map(bool, result.v))
        return result

    def __and__(self, other: Any) -> ndarray:
        return self._logical(other, operator.and_)

    def __or__(self, other: Any) -> ndarray:
        return self._logical(other, operator.or_)

    def __eq__(self, other: Any) -> ndarray:  # type: ignore[override]
        return self._binary(other, operator.eq, bool_)

    def __ne__(self, other: Any) -> ndarray:  # type: ignore[override]
        return self._binary(other, operator.ne, bool_)

    def __lt__(self, other: Any) -> ndarray:
        return self._binary(other, operator.lt, bool_)

    def __le__(self, other: Any) -> ndarray:
        return self._binary(other, operator.le, bool_)

    def __gt__(self, other: Any) -> ndarray:
        return self._binary(other, operator.gt, bool_)

    def __ge__(self, other: Any) -> ndarray:
        return self._binary(other, operator.ge, bool_)


def _values(a: Any) -> list[Any]:
    return a.v if isinstance(a, ndarray) else list(a)


# ---- making arrays


def fromiter(iterable: Iterable[Any], dtype: _DType, count: int = -1) -> ndarray:
    return ndarray(list(map(dtype.cast, iterable)), dtype)


def asarray(a: Any, dtype: _DType | None = None) -> ndarray:
    if isinstance(a, ndarray):
        return a if dtype is None or dtype.kind == a.dtype.kind else a.astype(dtype)
    values = list(a)
    if dtype is None:
        dtype = _KINDS[max((_kind_of(x) for x in values), key="bif".index, default="f")]
    return ndarray(list(map(dtype.cast, values)), dtype)


def zeros(n: int, dtype: _DType = float64) -> ndarray:
    return ndarray([dtype.cast(0)] * n, dtype)


def ones(n: int, dtype: _DType = float64) -> ndarray:
    return ndarray([dtype.cast(1)] * n, dtype)


def full(n: int, value: Any, dtype: _DType) -> ndarray:
    return ndarray([dtype.cast(value)] * n, dtype)


def empty(n: int, dtype: _DType = float64) -> ndarray:
    return zeros(n, dtype)


def arange(n: int) -> ndarray:
    return ndarray(list(range(n)), int64)


# ---- element-wise functions


def where(condition: ndarray, a: Any, b: Any) -> ndarray:
    kinds = [x.dtype.kind if isinstance(x, ndarray) else _kind_of(x) for x in (a, b)]
    dtype = _promote(*kinds)
    n = len(condition.v)
    av = a.v if isinstance(a, ndarray) else [a] * n
    bv = b.v if isinstance(b, ndarray) else [b] * n
    return ndarray([dtype.cast(x if c else y) for c, x, y in zip(condition.v, av, bv, strict=True)], dtype)


def minimum(a: ndarray, b: Any) -> ndarray:
    return a._binary(b, min)


def maximum(a: ndarray, b: Any) -> ndarray:
    return a._binary(b, max)


def trunc(a: ndarray) -> ndarray:
    return ndarray([float(math.trunc(x)) for x in a.v], float64)


def diff(a: ndarray) -> ndarray:
    v = a.v
    return ndarray(list(map(operator.sub, v[1:], v)), _promote(a.dtype.kind, "i"))


# ---- searching and sorting


def flatnonzero(a: ndarray) -> ndarray:
    return ndarray(list(compress(range(len(a.v)), a.v)), int64)


def argsort(a: ndarray, kind: str = "stable") -> ndarray:
    v = a.v
    return ndarray(sorted(range(len(v)), key=v.__getitem__), int64)


def lexsort(keys: Sequence[ndarray]) -> ndarray:
    """Indices sorted by the last key, then the one before it, ... (stable)."""
    rows = list(zip(*(k.v for k in reversed(keys)), strict=True))
    return ndarray(sorted(range(len(rows)), key=rows.__getitem__), int64)


def searchsorted(a: ndarray, v: Any, side: str = "left") -> Any:
    find = bisect.bisect_right if side == "right" else bisect.bisect_left
    values = a.v
    if isinstance(v, ndarray):
        return ndarray([find(values, x) for x in v.v], int64)
    return find(values, v)


def unique(a: ndarray, return_index: bool = False, return_inverse: bool = False) -> Any:
    """The sorted distinct values; with `return_index` each one's first index, with `return_inverse`
    each element's place among them."""
    v = a.v
    first = dict(zip(reversed(v), range(len(v) - 1, -1, -1), strict=True))  # a repeated key keeps its last: the first index
    keys = sorted(first)
    out: list[ndarray] = [ndarray(keys, a.dtype)]
    if return_index:
        out.append(ndarray(list(map(first.__getitem__, keys)), int64))
    if return_inverse:
        place = {k: i for i, k in enumerate(keys)}
        out.append(ndarray(list(map(place.__getitem__, v)), int64))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(x: ndarray, weights: ndarray | None = None, minlength: int = 0) -> ndarray:
    """Per value of `x` (ints from 0): how often it occurs, or the sum of its `weights` (in index order)."""
    v = x.v
    size = max(max(v) + 1 if v else 0, minlength)
    if weights is None or not v:  # numpy's, too: no values, no weights to sum: int zeros
        counts = [0] * size
        for i in v:
            counts[i] += 1
        return ndarray(counts, int64)
    sums = [0.0] * size
    for i, w in zip(v, weights.v, strict=True):
        sums[i] += w
    return ndarray(sums, float64)
