"""The ops and dtypes OpLens knows, named as the profiler records them (pure data and two lookups):
the one table that the work rules (work.py) and the insights (insights.py) read.

    kind(name)               what an op is: matmul | attention | elementwise | reduction |
                             normalisation | copy | gather | view | unknown (work.py: the rule of each)
    tensors(shapes, dtypes)  an op's tensor inputs, each with its element size (DTYPE_BYTES)

One rule for a dtype the table does not know: the input is not counted as a tensor of known size
(a scalar, an absent argument, a dtype not listed here alike). Its size is never guessed, so a figure
that needs it (an op's bytes, an intermediate tensor's size) leaves it out or is not given.

Names: an aten op with its namespace (`aten::mul`, `aten::mul_`); in place (`op_`) is the same kind
as `op`. An op of another namespace is unknown.
"""

from __future__ import annotations

# Element sizes, by the profiler's names of the dtypes (its record_shapes "Input type"s).
DTYPE_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "long int": 8, "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16,
}  # fmt: skip
# The profiler's names of the floating-point dtypes as torch names them (the ceilings' keys).
TORCH_DTYPES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
                "c10::Float8_e4m3fn": "float8", "c10::Float8_e5m2": "float8"}  # fmt: skip

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
ATTENTION = {"aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu"}  # fmt: skip
# The rest by their name without `aten::` (and without an in-place op's trailing `_`).
ELEMENTWISE = {
    "add", "sub", "mul", "div", "neg", "abs", "exp", "exp2", "log", "log1p", "sqrt", "rsqrt", "pow", "tanh", "sigmoid",
    "relu", "gelu", "silu", "elu", "leaky_relu", "hardtanh", "clamp", "clamp_min", "clamp_max", "maximum", "minimum",
    "where", "masked_fill", "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "sin", "cos", "reciprocal", "erf", "lerp", "addcmul", "addcdiv", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
    "sign", "floor", "ceil", "round", "square", "rsub", "mish", "softplus",
}  # fmt: skip
REDUCTION = {"sum", "mean", "amax", "amin", "max", "min", "var", "std", "var_mean", "std_mean", "norm",
             "linalg_vector_norm", "prod", "argmax", "argmin", "logsumexp", "all", "any"}  # fmt: skip
# The fused normalisations, with their operations per input element.
NORMALISATION = {"_softmax": 5, "_log_softmax": 5, "native_layer_norm": 8, "native_group_norm": 8,
                 "native_batch_norm": 8, "_native_batch_norm_legit": 8, "_native_batch_norm_legit_no_training": 8}  # fmt: skip
COPY = {"copy_", "fill_", "zero_", "clone"}
GATHER = {"embedding"}
VIEW = {
    "t", "transpose", "as_strided", "view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "permute", "select",
    "slice", "unsqueeze", "squeeze", "resolve_conj", "resolve_neg", "detach", "alias", "numpy_T", "unbind", "split",
    "chunk", "narrow", "unflatten", "flatten", "view_as", "expand_as", "lift_fresh", "empty", "empty_strided",
    "empty_like", "zeros_like", "ones_like", "result_type", "item", "_local_scalar_dense", "is_nonzero", "size",
    "stride", "set_", "split_with_sizes",
}  # fmt: skip


def split_name(name: str) -> tuple[str, str, bool]:
    """`aten::mul_` → ("mul_", "mul", True): the name without `aten::`, without an in-place `_`, and
    whether the op is in place (`__and__` is not)."""
    base = name.removeprefix("aten::")
    in_place = base.endswith("_") and not base.endswith("__")
    return base, base[:-1] if in_place else base, in_place


def kind(name: str) -> str:
    """What op `name` is (module docstring)."""
    if name in MATMUL:
        return "matmul"
    if name in ATTENTION:
        return "attention"
    base, stem, _ = split_name(name)
    if base in COPY or stem in COPY:
        return "copy"
    if base in GATHER:
        return "gather"
    if base in VIEW or stem in VIEW:
        return "view"
    if stem in ELEMENTWISE:
        return "elementwise"
    if stem in NORMALISATION:
        return "normalisation"
    if stem in REDUCTION:
        return "reduction"
    return "unknown"


def tensors(shapes: list[list[int]], dtypes: list[str]) -> list[tuple[list[int], int]]:
    """(shape, element size) of each input whose dtype is in DTYPE_BYTES, in order; the others (a
    scalar, an absent argument, a dtype not listed) are left out."""
    out = []
    for shape, dtype in zip(shapes, dtypes, strict=False):
        size = DTYPE_BYTES.get(dtype)
        if size is not None:
            out.append((shape, size))
    return out
