"""Input checks shared by the metrics: every failure is a ``ValueError`` naming the argument."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


def as_finite_1d(
    values: ArrayLike, name: str, *, allow_empty: bool = False, allow_inf: bool = False
) -> NDArray[np.float64]:
    """Return ``values`` as a contiguous 1-D float64 array; reject empty, NaN and (unless
    ``allow_inf``) +-inf."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers: {exc}") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty: at least one value is needed")
    bad = np.isnan(array) if allow_inf else ~np.isfinite(array)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        what = "NaN" if allow_inf else "NaN or infinite"
        raise ValueError(f"{name} contains {what} values (first at index {first})")
    return np.ascontiguousarray(array)


def as_int_1d(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """Return ``values`` as a 1-D int64 array; reject empty arrays and non-integral numbers."""
    array: NDArray[Any] = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty: at least one value is needed")
    if array.dtype.kind in "iu":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "b":
        raise ValueError(f"{name} must hold integers, got booleans")
    try:
        as_float = array.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold integers: {exc}") from exc
    if not np.isfinite(as_float).all() or not np.array_equal(as_float, np.round(as_float)):
        raise ValueError(f"{name} must hold integers (found non-integral or non-finite values)")
    return as_float.astype(np.int64)


def as_bool_1d(values: ArrayLike, name: str) -> NDArray[np.bool_]:
    """Return ``values`` as a 1-D bool array; numbers must be 0 or 1."""
    array: NDArray[Any] = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty: at least one value is needed")
    if array.dtype.kind == "b":
        return array
    if array.dtype.kind not in "iuf" or not np.isin(array, (0, 1)).all():
        raise ValueError(f"{name} must hold booleans or 0/1 values")
    return array.astype(bool)


def labels_1d(values: ArrayLike, name: str) -> NDArray[Any]:
    """Return speaker (or other group) labels as a 1-D array of any hashable dtype."""
    array: NDArray[Any] = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty: at least one value is needed")
    return array


def check_same_length(**arrays: NDArray[Any]) -> None:
    """Raise if the named 1-D arrays differ in length."""
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name}={length}" for name, length in lengths.items())
        raise ValueError(f"arguments must have the same length, got {listed}")
