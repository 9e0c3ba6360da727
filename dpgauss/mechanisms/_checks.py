"""Guards that a mechanism's calibration is usable in float64, checked before any spend.

A clipping radius must lie where squares and sums of clipped rows stay exact
enough; a noise scale must be positive, finite and small enough that the
eigendecompositions and projections after the release stay inside float64's
range; an exact lattice sampler must be able to calibrate its integer
arithmetic for the release's size.
"""

import inspect
import math

__all__ = [
    "MAX_NOISE_SCALE",
    "MAX_RADIUS",
    "MIN_RADIUS",
    "build_key",
    "calibration_error",
    "check_noise_scale",
    "check_plan",
    "check_radius",
    "check_release",
]


#: Largest noise scale a vector or matrix release may have: its entries then stay
#: far inside float64's range through the eigendecompositions and projections
#: that follow (which square and sum them).
MAX_NOISE_SCALE = 1e150


#: Clipping radii (data_norm, and every radius a search may reach) must lie in
#: [MIN_RADIUS, MAX_RADIUS]: then r^2 / n and n r^2 are normal float64 numbers
#: for any n up to 1e20, so no sum overflows and no squared norm is subnormal.
MIN_RADIUS, MAX_RADIUS = 1e-140, 1e140


def check_radius(radius, what="data_norm"):
    """Raise ValueError unless ``MIN_RADIUS <= radius <= MAX_RADIUS``.

    Parameters
    ----------
    radius : float
        A clipping radius.
    what : str, default="data_norm"
        What it is, for the message.
    """
    if not MIN_RADIUS <= radius <= MAX_RADIUS:
        raise ValueError(
            f"{what}={radius:.3g} is outside [{MIN_RADIUS:g}, {MAX_RADIUS:g}], where "
            "squares and sums of clipped rows stay exact enough in float64"
        )


def check_noise_scale(mechanism, *, bounded=True, size=1):
    """Raise ValueError unless the mechanism's noise is usable in float64.

    Also calibrates the exact lattice sampler for a release of ``size``
    (entries of a vector, or the dimension of a symmetric matrix), which refuses
    budgets too small for its integer arithmetic.

    Parameters
    ----------
    mechanism : object
        A calibrated mechanism with a ``scale``, or a composite one whose
        ``parts()`` yields ``(mechanism, size, bounded)`` triples, each checked
        in turn.
    bounded : bool, default=True
        Also require ``scale <= MAX_NOISE_SCALE`` (for releases whose values
        are squared or decomposed afterwards; a scalar clipped at once needs
        only a finite scale).
    size : int, default=1
        The release's size, for the lattice calibration.

    Returns
    -------
    object
        The mechanism.
    """
    parts = getattr(mechanism, "parts", None)
    if callable(parts):
        # A composite release (a search of many steps, a nested plan): each
        # part is checked at its own size and bound.
        for part, part_size, part_bounded in parts():
            check_noise_scale(part, bounded=part_bounded, size=part_size)
        return mechanism
    scale = getattr(mechanism, "scale", 1.0)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"the noise scale would be {scale!r}")
    if bounded and scale > MAX_NOISE_SCALE:
        raise ValueError(f"the noise scale would be {scale:.3g} > {MAX_NOISE_SCALE:g}")
    if getattr(mechanism, "exact", False):
        for method in ("lattice_variance", "lattice_scale"):
            if hasattr(mechanism, method):
                getattr(mechanism, method)(size)
                break
    return mechanism


def calibration_error(owner, what, exc):
    """A clear error for a noise scale or grid that float64 cannot represent."""
    return ValueError(
        f"{owner}: {what} cannot be calibrated in float64 ({exc}). Nothing was "
        "spent. data_norm, the privacy parameters and n must give noise scales "
        f"that are positive, finite and at most {MAX_NOISE_SCALE:g}."
    )


def check_plan(plan, owner, fit_case=None):
    """Build and check every mechanism a plan may use, before anything is spent.

    Each planned release (every option of every choice) is built by its own
    factory at each of its public cases (:class:`~dpgauss.accounting._plan.Release`)
    and checked by :func:`check_noise_scale`, so a noise scale or lattice that
    float64 cannot hold is refused before the spend, never after it.

    A case is the largest noise the release could need, but the exact
    samplers' limits are not monotone in the noise (the lattice step is a
    power of two near the scale, so a slightly smaller scale can need a larger
    integer variance). So each case is also built with the values the fit
    itself will pass (``fit_case``, public: the number of chunk sums of its
    pass, say), for the factories that take them.

    Parameters
    ----------
    plan : ReleasePlan
        The fit's plan.
    owner : str
        The estimator, for the message.
    fit_case : dict, default=None
        Keyword values the fit will pass to the factories that accept them.

    Returns
    -------
    dict of str to object
        Each release's mechanism at its worst public case (the first case), for
        predictions from public values; none of them draws.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.accounting._plan import Release, ReleasePlan
    >>> from dpgauss.mechanisms import GaussianMechanism
    >>> from dpgauss.mechanisms._checks import check_plan
    >>> def make(cost, n=100):
    ...     return GaussianMechanism(sensitivity=1.0 / n, rho=cost.rho)
    >>> plan = ReleasePlan(ZCDP(1.0), [Release("mean", ZCDP(1.0), "gaussian", make)])
    >>> check_plan(plan, "Example")["mean"].scale
    0.00707...
    """
    built, checked = {}, {}
    for release in plan.releases():
        try:
            for case in _cases(release, fit_case or {}):
                # Releases that share a factory, a cost and a case (the equal
                # rounds of a plan) are built and checked once.
                key = build_key(release, case)
                mechanism = checked.get(key)
                if mechanism is None:
                    mechanism = checked[key] = check_release(release, **case)
                built.setdefault(release.name, mechanism)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            what = f"the release {release.name!r}"
            raise calibration_error(owner, what, exc) from exc
    return built


def build_key(release, case):
    """What makes two builds of planned releases the same mechanism: the
    factory, the cost, the size, the bound and the case (a build and check
    may be shared by every release with the same key)."""
    key = (release.make, release.cost, release.size, release.bounded)
    return (*key, tuple(sorted(case.items())))


def check_release(release, **case):
    """Build a planned release's mechanism at ``case`` with its own factory and
    check it (:func:`check_noise_scale` at the release's size and bound).

    Raises ValueError, OverflowError or ZeroDivisionError when float64 cannot
    hold it; returns the mechanism otherwise.
    """
    mechanism = release.build(**case)
    return check_noise_scale(mechanism, bounded=release.bounded, size=release.size)


def _cases(release, fit_case):
    """The release's public cases, then each with the fit's own values for the
    keywords its factory takes."""
    cases = list(release.cases)
    if release.make is None:
        return cases
    try:
        accepted = inspect.signature(release.make).parameters
    except (TypeError, ValueError):  # a callable without a signature
        return cases
    own = {k: v for k, v in fit_case.items() if k in accepted}
    if own:
        cases += [{**case, **own} for case in release.cases]
    return cases
