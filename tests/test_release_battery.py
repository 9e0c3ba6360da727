"""A fixed battery of seeded fits whose releases must stay bit-identical.

Every public estimator is fitted on small fixed data with an int
``random_state``, under each privacy form it accepts (zCDP ``rho``, pure
``epsilon``, approximate ``epsilon`` and ``delta``), with and without its public
hints and public rows, on numpy arrays, read-only memory maps and Dask arrays,
and for some cases charged to a fresh in-memory :class:`PrivacyBudget` (whose
event ids seed the noise stream together with the int). Every fitted attribute
(name ending in ``_``) that is a number, bool, string, array, or a list or
tuple of those, including those of nested fitted estimators, is compared with
``tests/release_battery.json``, plus ``repr(privacy_spent_)``. Floats are
stored with ``float.hex``, so the comparison is bit for bit.

Recording: ``DPGAUSS_RECORD_BATTERY=1 pytest tests/test_release_battery.py``
rewrites the record from the installed code (with ``-k``, only the selected
cases; cases no longer in the battery are dropped). The rule: a change that
does not mean to change outputs must pass this test unchanged; a commit that
means to change outputs re-records in the same commit and says in its message
which releases change and why.

The comparison is exact when numpy, scipy and scikit-learn (and, for Dask
inputs, dask) are the versions recorded with the case and their BLAS runs the
same kernels (threadpoolctl's library version and architecture: OpenBLAS
picks its kernels by CPU, and the same wheels on another CPU moved the last
bits of 171 cases). Otherwise it allows 1e-9 relative to each value, or to
an array's largest entry (an entry 1e-16 of its matrix's scale carries that
matrix's rounding, not its own): another LAPACK or BLAS may move the last
bits of an eigendecomposition or a matrix product without any change in
dpgauss.
"""

import functools
import json
import math
import os
from pathlib import Path

import dask
import numpy as np
import pytest
import scipy
import sklearn
from sklearn.base import BaseEstimator
from sklearn.linear_model import LinearRegression

import dpgauss
from dpgauss import (
    PrivacyBudget,
    PrivateCovariance,
    PrivateEllipticEnvelope,
    PrivateGaussianEstimator,
    PrivateLinearDiscriminantAnalysis,
    PrivateMean,
    PrivatePCA,
    PrivateProductDistribution,
    PrivateQuadraticDiscriminantAnalysis,
    PrivateStandardScaler,
    PrivateWhitener,
    PublicPrivateGMM,
    SubsampleAggregate,
    TailSensitiveCovariance,
)

da = pytest.importorskip("dask.array")

RECORD = Path(__file__).with_name("release_battery.json")
RECORDING = os.environ.get("DPGAUSS_RECORD_BATTERY") == "1"
if RECORDING and os.environ.get("PYTEST_XDIST_WORKER"):
    # Each xdist worker would write the cases it ran over the others'.
    raise RuntimeError(
        "record the release battery serially: DPGAUSS_RECORD_BATTERY=1 pytest "
        "tests/test_release_battery.py -n 0"
    )
RTOL_OTHER_VERSIONS = 1e-9

# -- privacy forms ------------------------------------------------------------
# The fit's own cost, and the total of the fresh budget some cases charge it to.
FORMS = {
    "zcdp": ({"rho": 0.5}, {"rho": 1.0}),
    "pure": ({"epsilon": 1.0}, {"epsilon": 2.0}),
    "approx": ({"epsilon": 1.0, "delta": 1e-6}, {"epsilon": 2.0, "delta": 1e-5}),
    # The populous aggregate needs hundreds of groups even at this epsilon and
    # delta; at the one above it would need thousands (too many rows to be
    # quick). The Gaussian's subsample center runs under it at n = 2000.
    "approx4": ({"epsilon": 4.0, "delta": 1e-3}, {"epsilon": 8.0, "delta": 1e-2}),
    # Small enough that the unbounded estimators' scales cannot be measured
    # at n = 2000, d = 3: they take the box route.
    "zcdp_small": ({"rho": 0.1}, {"rho": 0.2}),
}


# -- data (fixed seeds, small n, d from 2 to 4) -------------------------------
def _gauss(n=2000, d=3, seed=0, far=0.0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    C = Q @ np.diag(np.geomspace(1.0, 3.0, d)) @ Q.T
    mu = np.full(d, far / math.sqrt(d))
    return rng.multivariate_normal(mu, C, size=n)


def _classes(n=1000, d=2, seed=1):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-1, 1, (n, d)), rng.normal(1, 1.5, (n, d))])
    return X, np.repeat([0, 1], n)


def _regression(n=2000, d=3, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ np.array([1.0, -2.0, 0.5][:d]) + rng.normal(size=n)


def _mixture(n, seed):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0]])
    return centers[rng.integers(0, 3, n)] + rng.standard_normal((n, 2))


def _binary(n=2000, d=12, seed=4):
    rng = np.random.default_rng(seed)
    return rng.random((n, d)) < rng.uniform(0.0, 0.3, size=d)


DATA = {
    "gauss": lambda: (_gauss(), None, None),
    "gauss_large": lambda: (_gauss(n=5000), None, None),
    "gauss_far": lambda: (_gauss(far=50.0), None, None),
    "gauss_public": lambda: (_gauss(far=50.0), None, _gauss(n=200, seed=7, far=50.0)),
    "classes": lambda: (*_classes(), None),
    "regression": lambda: (*_regression(), None),
    "regression_large": lambda: (*_regression(n=5000), None),
    "mixture_public": lambda: (_mixture(3000, 5), None, _mixture(60, 6)),
    "binary": lambda: (_binary(), None, None),
    "bounded": lambda: (_gauss(d=2) + np.array([10.0, -5.0]), None, None),
    # Correlated 0.85 in a box: the probed covariance plan takes its full
    # option.
    "bounded_correlated": lambda: (
        np.random.default_rng(8).multivariate_normal(
            [10.0, -5.0], [[4.0, 3.4], [3.4, 4.0]], size=2000
        ),
        None,
        None,
    ),
    # Three columns in a box, independent or two of them correlated 0.85:
    # under pure epsilon the covariance's energy probe (d >= 3) takes the
    # per-coordinate option on the first and the full one on the second.
    "bounded_3d": lambda: (
        np.random.default_rng(10).normal(size=(2000, 3)) * np.array([2.0, 1.0, 0.5])
        + np.array([10.0, -5.0, 0.0]),
        None,
        None,
    ),
    "bounded_3d_correlated": lambda: (
        np.random.default_rng(9).multivariate_normal(
            [10.0, -5.0, 0.0],
            [[4.0, 3.4, 0.0], [3.4, 4.0, 0.0], [0.0, 0.0, 1.0]],
            size=2000,
        ),
        None,
        None,
    ),
    # Few rows: the Gaussian in a box takes its moments plan (the joint
    # release of means and centred squares at weight 3/2).
    "bounded_few": lambda: (_gauss(n=100, d=2) + np.array([10.0, -5.0]), None, None),
}


class _NearIdentity(BaseEstimator):
    """A covariance-like statistic close enough across groups for the PSD test.

    Sample covariances pass the populous PSD test only from about a million
    rows; this statistic depends on each group's rows but varies by about 1 %.
    """

    def fit(self, X, y=None):
        d = X.shape[1]
        shift = 0.01 * np.tanh(X.mean(axis=0))
        self.covariance_ = np.eye(d) + np.diag(shift) + 0.005 * shift.sum()
        return self


# -- the battery --------------------------------------------------------------
# name: (factory(**privacy) -> estimator, data key, forms, input kinds)
ALL_FORMS = ("zcdp", "pure", "approx")
APPROX = ("approx",)
POPULOUS = ("approx4",)
NUMPY = ("numpy",)
LARGE = ("numpy", "memmap", "dask")


def _cov(method):
    return lambda **p: PrivateCovariance(
        method=method, data_norm=6.0, random_state=0, **p
    )


ESTIMATORS = {
    **{
        f"PrivateCovariance-{m}": (_cov(m), "gauss", ALL_FORMS, LARGE)
        for m in ("auto", "gauss", "separate", "eigen", "coinpress")
    },
    "TailSensitiveCovariance": (
        lambda **p: TailSensitiveCovariance(data_norm=60.0, random_state=0, **p),
        "gauss",
        ALL_FORMS,
        LARGE,
    ),
    "PrivateEllipticEnvelope": (
        lambda **p: PrivateEllipticEnvelope(data_norm=6.0, random_state=0, **p),
        "gauss",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateGaussianEstimator": (
        lambda **p: PrivateGaussianEstimator(random_state=0, **p),
        "gauss_far",
        ALL_FORMS,
        LARGE,
    ),
    "PrivateGaussianEstimator-hints": (
        lambda **p: PrivateGaussianEstimator(
            mean_bound=60.0, cov_bounds=(0.5, 5.0), random_state=0, **p
        ),
        "gauss_far",
        ALL_FORMS,
        LARGE,
    ),
    # At n = 2000 the subsample center runs under zCDP and under approx4; pure
    # and approx need more rows for its searches and take the range step (the
    # fallback, recorded too).
    "PrivateGaussianEstimator-subsample": (
        lambda **p: PrivateGaussianEstimator(
            initial_center="subsample", random_state=0, **p
        ),
        "gauss_far",
        (*ALL_FORMS, "approx4"),
        NUMPY,
    ),
    "PrivateGaussianEstimator-public": (
        lambda **p: PrivateGaussianEstimator(random_state=0, **p),
        "gauss_public",
        ALL_FORMS,
        NUMPY,
    ),
    **{
        f"PrivateMean-{m}": (
            lambda m=m, **p: PrivateMean(method=m, random_state=0, **p),
            "gauss_far",
            APPROX if m == "tukey" else ALL_FORMS,
            LARGE,
        )
        for m in ("auto", "coinpress", "plan", "tukey")
    },
    "PrivateMean-hints": (
        lambda **p: PrivateMean(
            mean_bound=60.0, cov_bounds=(0.5, 5.0), random_state=0, **p
        ),
        "gauss_far",
        ALL_FORMS,
        LARGE,
    ),
    "PrivateMean-covariance": (
        lambda **p: PrivateMean(
            covariance=np.diag([1.0, 2.0, 3.0]), random_state=0, **p
        ),
        "gauss_far",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateMean-private-box": (
        lambda **p: PrivateMean(random_state=0, **p),
        "gauss",
        ("zcdp_small",),
        NUMPY,
    ),
    "PrivateGaussianEstimator-private-box": (
        lambda **p: PrivateGaussianEstimator(random_state=0, **p),
        "gauss",
        ("zcdp_small",),
        NUMPY,
    ),
    "PrivateMean-public": (
        lambda **p: PrivateMean(random_state=0, **p),
        "gauss_public",
        ALL_FORMS,
        NUMPY,
    ),
    "PublicPrivateGMM-auto": (
        lambda **p: PublicPrivateGMM(n_components=3, random_state=0, **p),
        "mixture_public",
        ALL_FORMS,
        NUMPY,
    ),
    "PublicPrivateGMM-projected": (
        lambda **p: PublicPrivateGMM(
            n_components=3, regime="projected", random_state=0, **p
        ),
        "mixture_public",
        ALL_FORMS,
        NUMPY,
    ),
    "SubsampleAggregate-linear": (
        lambda **p: SubsampleAggregate(
            LinearRegression(),
            statistic=("coef_", "intercept_"),
            random_state=0,
            **p,
        ),
        "regression",
        ALL_FORMS,
        NUMPY,
    ),
    "SubsampleAggregate-populous": (
        lambda **p: SubsampleAggregate(
            LinearRegression(),
            aggregator="populous",
            radius=2.0,
            random_state=0,
            **p,
        ),
        "regression_large",
        POPULOUS,
        NUMPY,
    ),
    "SubsampleAggregate-psd": (
        lambda **p: SubsampleAggregate(
            _NearIdentity(),
            statistic="covariance_",
            aggregator="populous",
            space="psd",
            radius=0.1,
            random_state=0,
            **p,
        ),
        "gauss_large",
        POPULOUS,
        NUMPY,
    ),
    "PrivateProductDistribution": (
        lambda **p: PrivateProductDistribution(random_state=0, **p),
        "binary",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateLinearDiscriminantAnalysis": (
        lambda **p: PrivateLinearDiscriminantAnalysis(
            classes=[0, 1], data_norm=5.0, random_state=0, **p
        ),
        "classes",
        ALL_FORMS,
        LARGE,
    ),
    "PrivateLinearDiscriminantAnalysis-fixed": (
        lambda **p: PrivateLinearDiscriminantAnalysis(
            classes=[0, 1],
            data_norm=5.0,
            location=[0.0, 0.0],
            clipping="fixed",
            shrinkage=None,
            random_state=0,
            **p,
        ),
        "classes",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateQuadraticDiscriminantAnalysis": (
        lambda **p: PrivateQuadraticDiscriminantAnalysis(
            classes=[0, 1], data_norm=10.0, random_state=0, **p
        ),
        "classes",
        ALL_FORMS,
        LARGE,
    ),
    **{
        f"PrivatePCA-{m}": (
            lambda m=m, **p: PrivatePCA(
                n_components=2, data_norm=8.0, method=m, random_state=0, **p
            ),
            "gauss",
            ALL_FORMS,
            NUMPY,
        )
        for m in ("auto", "tail", "gauss", "separate", "eigen")
    },
    **{
        f"PrivateWhitener-{m}": (
            lambda m=m, **p: PrivateWhitener(
                data_norm=8.0, method=m, random_state=0, **p
            ),
            "gauss",
            ALL_FORMS,
            NUMPY,
        )
        for m in ("auto", "tail", "gauss", "separate", "eigen")
    },
    "PrivatePCA-box-diagonal": (
        lambda **p: PrivatePCA(
            2,
            bounds=([0.0, -10.0], [20.0, 0.0]),
            method="diagonal",
            random_state=0,
            **p,
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateStandardScaler": (
        lambda **p: PrivateStandardScaler(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, **p
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateGaussianEstimator-bounds": (
        lambda **p: PrivateGaussianEstimator(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, on_useless="warn", **p
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateMean-bounds": (
        lambda **p: PrivateMean(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, on_useless="warn", **p
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    # With a box under zCDP the public choice is the full release and the
    # probe then chooses (the probed plan); under pure epsilon the public
    # choice stands.
    "PrivateCovariance-bounds": (
        lambda **p: PrivateCovariance(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, on_useless="warn", **p
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateCovariance-bounds-correlated": (
        lambda **p: PrivateCovariance(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, on_useless="warn", **p
        ),
        "bounded_correlated",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateCovariance-bounds-3d": (
        lambda **p: PrivateCovariance(
            bounds=([0.0, -10.0, -5.0], [20.0, 0.0, 5.0]),
            random_state=0,
            on_useless="warn",
            **p,
        ),
        "bounded_3d",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivateCovariance-bounds-3d-correlated": (
        lambda **p: PrivateCovariance(
            bounds=([0.0, -10.0, -5.0], [20.0, 0.0, 5.0]),
            random_state=0,
            on_useless="warn",
            **p,
        ),
        "bounded_3d_correlated",
        ALL_FORMS,
        NUMPY,
    ),
    # The box routes through the pairs' reader (boxed a group at a time) and
    # the discriminant analyses' chunked radius counts.
    "TailSensitiveCovariance-bounds": (
        lambda **p: TailSensitiveCovariance(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, **p
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    "PrivatePCA-box-tail": (
        lambda **p: PrivatePCA(
            2, bounds=([0.0, -10.0], [20.0, 0.0]), method="tail", random_state=0, **p
        ),
        "bounded",
        ALL_FORMS,
        NUMPY,
    ),
    **{
        f"{cls.__name__}-bounds": (
            lambda cls=cls, **p: cls(
                classes=[0, 1], bounds=([-8.0, -8.0], [8.0, 8.0]), random_state=0, **p
            ),
            "classes",
            ALL_FORMS,
            NUMPY,
        )
        for cls in (
            PrivateLinearDiscriminantAnalysis,
            PrivateQuadraticDiscriminantAnalysis,
        )
    },
    "PrivateGaussianEstimator-bounds-moments": (
        lambda **p: PrivateGaussianEstimator(
            bounds=([0.0, -10.0], [20.0, 0.0]), random_state=0, on_useless="warn", **p
        ),
        "bounded_few",
        ALL_FORMS,
        NUMPY,
    ),
}

# A fresh budget is given to the numpy fit under every privacy form of these.
WITH_BUDGET = {
    "PrivateCovariance-auto",
    "PrivateGaussianEstimator",
    "PrivateMean-auto",
    "PrivateMean-tukey",
    "PublicPrivateGMM-auto",
    "SubsampleAggregate-linear",
    "SubsampleAggregate-populous",
    "PrivateProductDistribution",
    "PrivateLinearDiscriminantAnalysis",
    "PrivateQuadraticDiscriminantAnalysis",
    "PrivatePCA-auto",
    "PrivateWhitener-auto",
    "PrivateStandardScaler",
}


def _cases():
    cases = {}
    for name, (_, _, forms, kinds) in ESTIMATORS.items():
        for form in forms:
            for kind in kinds:
                cases[f"{name}-{form}-{kind}"] = (name, form, kind, False)
            if name in WITH_BUDGET:
                cases[f"{name}-{form}-numpy-budget"] = (name, form, "numpy", True)
    return cases


CASES = _cases()


# -- fitting ------------------------------------------------------------------
def _as_kind(X, kind, tmp_path, label):
    if X is None or kind == "numpy":
        return X
    if kind == "memmap":
        path = tmp_path / f"{label}.npy"
        np.save(path, X)
        return np.load(path, mmap_mode="r")
    # A few chunks of rows, so the sums are formed chunk by chunk.
    return da.from_array(X, chunks=(-(-X.shape[0] // 3), *X.shape[1:]))


def fit_case(case_id, tmp_path):
    """Fit one case from scratch: fresh data, estimator and budget."""
    name, form, kind, with_budget = CASES[case_id]
    factory, data, _, _ = ESTIMATORS[name]
    X, y, X_public = DATA[data]()
    own, total = FORMS[form]
    budget = PrivacyBudget(**total) if with_budget else None
    est = factory(**own, budget=budget)
    # Small fixed data: some cases are predicted no better than their baseline
    # and would refuse by default; the battery records their releases anyway.
    est.set_params(on_useless="warn")
    kwargs = {} if X_public is None else {"X_public": X_public}
    if y is not None:
        kwargs["y"] = _as_kind(y, kind, tmp_path, "y")
    with dask.config.set(scheduler="synchronous"):
        est.fit(_as_kind(X, kind, tmp_path, "X"), **kwargs)
    return est


# -- what is recorded ---------------------------------------------------------
def _encode(value):
    """A JSON form of a simple value; floats as float.hex (bit for bit)."""
    if isinstance(value, (bool, np.bool_)):
        return ["bool", bool(value)]
    if isinstance(value, (int, np.integer)):
        return ["int", int(value)]
    if isinstance(value, (float, np.floating)):
        return ["float", float(value).hex()]
    if isinstance(value, str):
        return ["str", value]
    if value is None:
        return ["none"]
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufUO":
            return None
        flat = value.ravel().tolist()
        if value.dtype.kind == "f":
            return ["array", value.dtype.str, list(value.shape), _hexes(flat)]
        if value.dtype.kind in "biu":
            return ["array", value.dtype.str, list(value.shape), flat]
        items = [_encode(v) for v in flat]
        if any(item is None for item in items):
            return None
        return ["array", value.dtype.str, list(value.shape), items]
    if isinstance(value, (list, tuple)):
        items = [_encode(v) for v in value]
        if any(item is None for item in items):
            return None
        return [type(value).__name__, items]
    if isinstance(value, BaseEstimator):
        return ["estimator", type(value).__name__, _fitted(value)]
    return None


def _hexes(floats):
    return [float(v).hex() for v in floats]


def _fitted(est):
    out = {}
    for key, value in sorted(vars(est).items()):
        if not key.endswith("_") or key.startswith("_"):
            continue
        if key == "privacy_spent_":
            out[key] = ["repr", repr(value)]
            continue
        encoded = _encode(value)
        if encoded is not None:
            out[key] = encoded
    return out


def _versions(case_id):
    versions = {
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }
    if CASES[case_id][2] == "dask":
        versions["dask"] = dask.__version__
    versions["blas"] = _blas()
    return versions


@functools.cache
def _blas():
    """The BLAS libraries loaded and the kernels they run (module docstring)."""
    from threadpoolctl import threadpool_info

    return sorted(
        f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    )


def _close_hex(a, b, scale=0.0):
    x, y = float.fromhex(a), float.fromhex(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y or abs(x - y) <= RTOL_OTHER_VERSIONS * max(abs(y), scale)


def _array_scale(values):
    """The largest finite magnitude of an encoded float array (0 if none)."""
    finite = [abs(v) for v in map(float.fromhex, values) if math.isfinite(v)]
    return max(finite, default=0.0)


def _close(a, b):
    """Tolerant comparison of two encoded values (other library versions)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if not (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)):
        return a == b
    if a and a[0] == b[0] == "float":
        return _close_hex(a[1], b[1])
    if a and a[0] == b[0] == "array" and a[1:3] == b[1:3] and a[1][1] == "f":
        scale = _array_scale(b[3])
        return all(_close_hex(u, v, scale) for u, v in zip(a[3], b[3], strict=True))
    return all(_close(u, v) for u, v in zip(a, b, strict=True))


def _differences(got, want, exact):
    same = (lambda a, b: a == b) if exact else _close
    keys = sorted(set(got) | set(want))
    return [
        k for k in keys if k not in got or k not in want or not same(got[k], want[k])
    ]


# -- the test -----------------------------------------------------------------
@pytest.fixture(scope="module")
def recorder():
    """Collects the releases when recording; writes the record at the end."""
    fresh = {}
    yield fresh
    if not RECORDING or not fresh:
        return
    old = json.loads(RECORD.read_text()) if RECORD.exists() else {"cases": {}}
    cases = {k: v for k, v in old["cases"].items() if k in CASES}
    cases.update(fresh)
    RECORD.write_text(_dumps(cases))


def _dumps(cases):
    """The record as JSON, one fitted attribute a line (readable diffs)."""
    lines = [
        "{",
        ' "about": "Releases of tests/test_release_battery.py; see its docstring.",',
        f' "dpgauss": {json.dumps(dpgauss.__version__)},',
        ' "cases": {',
    ]
    for i, key in enumerate(sorted(cases)):
        lines.append(f"  {json.dumps(key)}: {{")
        lines.append(f'   "versions": {json.dumps(cases[key]["versions"])},')
        lines.append('   "fitted": {')
        fitted = list(cases[key]["fitted"].items())
        for j, (name, value) in enumerate(fitted):
            comma = "," if j < len(fitted) - 1 else ""
            lines.append(f"    {json.dumps(name)}: {json.dumps(value)}{comma}")
        lines.append("   }")
        lines.append("  }," if i < len(cases) - 1 else "  }")
    lines += [" }", "}", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text())["cases"] if RECORD.exists() else {}


@pytest.mark.parametrize("case_id", list(CASES))
def test_release_is_unchanged(case_id, tmp_path, record, recorder):
    got = _fitted(fit_case(case_id, tmp_path))
    if RECORDING:
        recorder[case_id] = {"versions": _versions(case_id), "fitted": got}
        return
    if case_id not in record:
        pytest.fail(
            f"{case_id} is not in {RECORD.name}. Record it with "
            "DPGAUSS_RECORD_BATTERY=1 pytest tests/test_release_battery.py "
            f"-k '{case_id}' and commit the record with the case."
        )
    want = record[case_id]
    # Other numpy/scipy/scikit-learn (or dask) wheels may bring another LAPACK
    # or BLAS, which can move the last bits of an eigendecomposition: then a
    # relative 1e-9, far below any change a refactor could make by mistake.
    exact = want["versions"] == _versions(case_id)
    bad = _differences(got, want["fitted"], exact)
    how = "bit for bit" if exact else f"to rtol={RTOL_OTHER_VERSIONS}"
    assert not bad, f"{case_id}: {bad} differ from the record ({how})"


# -- every draw planned, every planned release with its factory ---------------
# The same fits, watched: each call that draws noise (a mechanism's randomise,
# select, first_above, release or run) must come from an object the fit's plan
# calibrated (``ReleasePlan.calibrate``; a composite's inner mechanisms count
# as its own), and every release of every plan the fit calibrates from must
# carry its factory. A draw from a mechanism built on the side, outside the
# plan, would be charged to nothing the pre-spend check saw. The watch
# (fixtures ``watched``, ``unplanned_draws``) is in tests/conftest.py.


def test_the_watch_sees_every_kind_of_draw(drawing_classes):
    # The watch patches each drawing class of the package; a class that draws
    # under another method name would escape it, so the names are listed here
    # and a new mechanism class must draw through one of them.
    names = {f"{c.__name__}.{m}" for c, m in drawing_classes}
    assert {"GaussianMechanism.randomise", "LaplaceMechanism.randomise"} <= names
    assert "AboveThreshold.first_above" in names


@pytest.mark.parametrize("case_id", list(CASES))
def test_every_draw_is_planned(case_id, tmp_path, watched, unplanned_draws):
    fit_case(case_id, tmp_path)
    assert watched["drawn"], f"{case_id}: no draw was seen"
    unplanned = unplanned_draws(watched)
    assert not unplanned, f"{case_id}: draws outside the plan: {unplanned}"


def test_a_draw_outside_the_plan_is_seen(watched, unplanned_draws):
    # The watch fails a fit that draws from a mechanism built on the side.
    from dpgauss.mechanisms import GaussianMechanism

    class OnTheSide(PrivateCovariance):
        def _fit_releases(self, data, plan, rng):
            fitted = super()._fit_releases(data, plan, rng)
            GaussianMechanism(sensitivity=1.0, rho=1.0).randomise(0.0, rng)
            return fitted

    X = np.random.default_rng(0).normal(size=(100, 2))
    OnTheSide(rho=1.0, data_norm=3.0, random_state=0).fit(X)
    assert unplanned_draws(watched) == ["GaussianMechanism.randomise"]


#: The estimators whose plans still carry releases without a factory (their
#: pre-spend check is written by hand); the test below fails for them.
_WITHOUT_FACTORIES = ()


@pytest.mark.parametrize(
    "case_id",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="hand check"))
        if c.startswith(_WITHOUT_FACTORIES)
        else c
        for c in CASES
    ],
)
def test_every_planned_release_has_its_factory(case_id, tmp_path, watched):
    fit_case(case_id, tmp_path)
    missing = sorted(
        {r.name for plan in watched["plans"] for r in plan.releases() if r.make is None}
    )
    assert not missing, f"{case_id}: planned without a factory: {missing}"
