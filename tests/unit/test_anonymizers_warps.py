"""Warping functions and parameter grids of PROTOCOLS.md section 7."""

from __future__ import annotations

import numpy as np
import pytest

from services.anonymizers.warps import (
    IDENTITY_PARAMETER,
    PARAMETER_RANGES,
    WARP_FAMILIES,
    fit_warp_to_scale,
    inverse_warp,
    parameter_grid,
    piecewise_linear_boundary,
    warp,
)

OMEGA = np.linspace(0.0, np.pi, 2001)


@pytest.mark.parametrize("family", WARP_FAMILIES)
def test_every_grid_warp_is_monotone_and_fixes_0_and_pi(family: str) -> None:
    for a in parameter_grid(family):
        w = warp(family, OMEGA, float(a))
        assert np.all(np.diff(w) > 0), (family, a)
        assert w[0] == pytest.approx(0.0, abs=1e-12)
        assert w[-1] == pytest.approx(np.pi, abs=1e-12)
        assert np.all((w >= 0) & (w <= np.pi + 1e-12))


@pytest.mark.parametrize("family", WARP_FAMILIES)
def test_identity_parameter_is_the_identity(family: str) -> None:
    np.testing.assert_allclose(warp(family, OMEGA, IDENTITY_PARAMETER[family]), OMEGA, atol=1e-12)


def test_formulas_at_a_point() -> None:
    w = np.array([np.pi / 2])
    assert warp("quadratic", w, 1.0)[0] == pytest.approx(np.pi / 2 + 0.25)
    assert warp("power", w, 0.5)[0] == pytest.approx(np.pi * 0.5**1.5)
    assert warp("piecewise_linear", w, 0.8)[0] == pytest.approx(0.8 * np.pi / 2)
    z = np.exp(1j * np.pi / 2)
    expected = abs(np.angle((z - 0.2) / (1 - 0.2 * z)))
    assert warp("bilinear", w, 0.2)[0] == pytest.approx(expected)


def test_piecewise_linear_knee_and_continuity() -> None:
    assert piecewise_linear_boundary(0.7) == pytest.approx(7 * np.pi / 8)
    assert piecewise_linear_boundary(1.4) == pytest.approx(7 * np.pi / (8 * 1.4))
    for a in (0.5, 1.3, 1.5):
        w0 = piecewise_linear_boundary(a)
        left = warp("piecewise_linear", np.array([w0 - 1e-9]), a)[0]
        right = warp("piecewise_linear", np.array([w0 + 1e-9]), a)[0]
        assert left == pytest.approx(right, abs=1e-6)
        assert left == pytest.approx(a * w0, abs=1e-6)


def test_bilinear_parameters_a_and_minus_a_are_inverse_maps() -> None:
    for a in (0.1, 0.3):
        back = warp("bilinear", warp("bilinear", OMEGA, a), -a)
        np.testing.assert_allclose(back, OMEGA, atol=1e-9)


@pytest.mark.parametrize("family", WARP_FAMILIES)
def test_inverse_warp_inverts(family: str) -> None:
    lo, hi, _ = PARAMETER_RANGES[family]
    for a in (lo, hi):
        w = np.linspace(0.1, 3.0, 50)
        np.testing.assert_allclose(warp(family, inverse_warp(family, w, a), a), w, atol=1e-5)


def test_parameter_grids_match_table_1() -> None:
    expected_sizes = {
        "pitch": 23,
        "bilinear": 31,
        "quadratic": 21,
        "power": 21,
        "piecewise_linear": 21,
    }
    for family, size in expected_sizes.items():
        grid = parameter_grid(family)
        lo, hi, step = PARAMETER_RANGES[family]  # type: ignore[index]
        assert len(grid) == size
        assert grid[0] == pytest.approx(lo) and grid[-1] == pytest.approx(hi)
        np.testing.assert_allclose(np.diff(grid), step, atol=1e-9)
        assert np.any(np.isclose(grid, IDENTITY_PARAMETER[family]))  # type: ignore[index]


def test_unknown_family_and_out_of_domain_values_raise() -> None:
    with pytest.raises(ValueError, match="unknown"):
        parameter_grid("cubic")
    with pytest.raises(ValueError, match="unknown warp"):
        warp("cubic", OMEGA, 0.1)
    with pytest.raises(ValueError, match=r"\[0, pi\]"):
        warp("power", np.array([4.0]), 0.1)
    with pytest.raises(ValueError):
        warp("bilinear", OMEGA, 1.0)


@pytest.mark.parametrize("family", WARP_FAMILIES)
def test_fit_warp_to_scale_moves_peaks_by_the_requested_factor(family: str) -> None:
    assert fit_warp_to_scale(family, 1.0) == pytest.approx(IDENTITY_PARAMETER[family], abs=0.02)
    for scale in (0.9, 1.1):
        a = fit_warp_to_scale(family, scale)
        f = np.array([800.0, 1500.0, 2500.0])
        moved = inverse_warp(family, np.pi * f / 8000.0, a) / np.pi * 8000.0
        ratio = np.exp(np.mean(np.log(moved / f)))
        # Direction always right; magnitude within 5 % of the request.
        assert (ratio - 1.0) * (scale - 1.0) > 0
        assert ratio == pytest.approx(scale, rel=0.05)
