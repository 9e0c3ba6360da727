"""Every estimator that takes Dask input gives numpy's release bit for bit on
numpy, memory-mapped (file-backed and copy-on-write) and Dask input, under any
chunking (dpgauss.utils._canonical); a ``dask.distributed`` cluster in
``test_cluster.py``.

Bit for bit is checked twice: every fitted attribute, and every value handed
to a noise mechanism with the mechanism's calibration (a lattice release can
hide a changed sum behind the same lattice point; the value before the noise
cannot).
"""

import hashlib
import inspect
import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import LinearRegression

import dpgauss.mechanisms._additive as additive
import dpgauss.mechanisms._linf as linf
import dpgauss.mechanisms._symmetric as symmetric
import dpgauss.utils._sums as sums
from dpgauss import (
    PrivateBounds,
    PrivateCovariance,
    PrivateEllipticEnvelope,
    PrivateGaussianEstimator,
    PrivateLinearDiscriminantAnalysis,
    PrivateLinearRegression,
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
dask = pytest.importorskip("dask")

CHUNK = 64  # CHUNK_ROWS in these tests: n = 1000 rows are 16 canonical chunks
N = 1000


def _gauss(d, far=0.0, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    C = Q @ np.diag(np.geomspace(1.0, 3.0, d)) @ Q.T
    return rng.multivariate_normal(np.full(d, far / math.sqrt(d)), C, size=N)


X = _gauss(3)
FAR = _gauss(3, far=50.0)
BOXED = _gauss(2) + np.array([10.0, -5.0])
BOX = ([0.0, -10.0], [20.0, 0.0])
LABELS = np.repeat([0, 1], N // 2)
P = {"rho": 0.5, "random_state": 0}

# name: (estimator factory, rows, fit keywords, marks)
CASES = {
    "PrivateCovariance-auto": (lambda: PrivateCovariance(data_norm=6.0, **P), X),
    "PrivateCovariance-separate": (
        lambda: PrivateCovariance(method="separate", data_norm=6.0, **P),
        X,
    ),
    "PrivateCovariance-eigen": (
        lambda: PrivateCovariance(method="eigen", data_norm=6.0, **P),
        X,
    ),
    "PrivateCovariance-coinpress": (
        lambda: PrivateCovariance(method="coinpress", data_norm=6.0, **P),
        X,
    ),
    "PrivateCovariance-pure": (
        lambda: PrivateCovariance(data_norm=6.0, epsilon=1.0, random_state=0),
        X,
    ),
    "PrivateCovariance-bounds": (
        lambda: PrivateCovariance(bounds=BOX, on_useless="warn", **P),
        BOXED,
    ),
    "TailSensitiveCovariance": (
        lambda: TailSensitiveCovariance(data_norm=60.0, **P),
        X,
    ),
    "TailSensitiveCovariance-bounds": (
        lambda: TailSensitiveCovariance(bounds=BOX, on_useless="warn", **P),
        BOXED,
    ),
    "PrivateEllipticEnvelope": (
        lambda: PrivateEllipticEnvelope(data_norm=6.0, **P),
        X,
    ),
    "PrivateGaussianEstimator": (
        lambda: PrivateGaussianEstimator(on_useless="warn", **P),
        FAR,
    ),
    "PrivateGaussianEstimator-hints": (
        lambda: PrivateGaussianEstimator(
            mean_bound=60.0, cov_bounds=(0.5, 5.0), on_useless="warn", **P
        ),
        FAR,
    ),
    "PrivateGaussianEstimator-bounds": (
        lambda: PrivateGaussianEstimator(bounds=BOX, on_useless="warn", **P),
        BOXED,
    ),
    "PrivateGaussianEstimator-subsample": (
        lambda: PrivateGaussianEstimator(
            initial_center="subsample", on_useless="warn", **P
        ),
        FAR,
    ),
    "PrivateMean-auto": (lambda: PrivateMean(on_useless="warn", **P), FAR),
    "PrivateMean-coinpress": (
        lambda: PrivateMean(method="coinpress", on_useless="warn", **P),
        FAR,
    ),
    "PrivateMean-plan": (
        lambda: PrivateMean(method="plan", on_useless="warn", **P),
        FAR,
    ),
    "PrivateMean-tukey": (
        lambda: PrivateMean(
            method="tukey", epsilon=1.0, delta=1e-6, random_state=0, on_useless="warn"
        ),
        FAR,
    ),
    "PrivateMean-bounds": (
        lambda: PrivateMean(bounds=BOX, on_useless="warn", **P),
        BOXED,
    ),
    "PrivateMean-hints": (
        lambda: PrivateMean(
            mean_bound=60.0, cov_bounds=(0.5, 5.0), on_useless="warn", **P
        ),
        FAR,
    ),
    "PrivateLinearDiscriminantAnalysis": (
        lambda: PrivateLinearDiscriminantAnalysis(classes=[0, 1], data_norm=5.0, **P),
        X,
        {"y": LABELS},
    ),
    "PrivateQuadraticDiscriminantAnalysis": (
        lambda: PrivateQuadraticDiscriminantAnalysis(
            classes=[0, 1], data_norm=10.0, **P
        ),
        X,
        {"y": LABELS},
    ),
    **{
        f"PrivatePCA-{m}": (
            lambda m=m: PrivatePCA(n_components=2, data_norm=8.0, method=m, **P),
            X,
        )
        for m in ("auto", "tail", "gauss")
    },
    "PrivatePCA-box": (
        lambda: PrivatePCA(2, bounds=BOX, method="diagonal", **P),
        BOXED,
    ),
    "PrivateWhitener": (lambda: PrivateWhitener(data_norm=8.0, **P), X),
    "PrivateStandardScaler": (
        lambda: PrivateStandardScaler(bounds=BOX, **P),
        BOXED,
    ),
    "PrivateBounds": (lambda: PrivateBounds(**P), BOXED),
    "PrivateProductDistribution": (
        lambda: PrivateProductDistribution(**P),
        X > 0.5,
    ),
    "SubsampleAggregate": (
        lambda: SubsampleAggregate(
            LinearRegression(),
            statistic=("coef_", "intercept_"),
            rho=4.0,
            random_state=0,
        ),
        X[:, :2],
        {"y": X[:, 2]},
    ),
    "PrivateLinearRegression": (
        lambda: PrivateLinearRegression(
            bounds=(-5.0, 5.0), target_bounds=(-5.0, 5.0), on_useless="warn", **P
        ),
        X[:, :2],
        {"y": X[:, 2] + X[:, 0]},
    ),
    "PrivateLinearRegression-pure": (
        lambda: PrivateLinearRegression(
            bounds=(-5.0, 5.0),
            target_bounds=(-5.0, 5.0),
            epsilon=2.0,
            random_state=0,
            on_useless="warn",
        ),
        X[:, :2],
        {"y": X[:, 2] + X[:, 0]},
    ),
    "PublicPrivateGMM": (
        lambda: PublicPrivateGMM(n_components=2, **P),
        X,
        {"X_public": _gauss(3, seed=5)[:60]},
    ),
}


# -- what is compared -------------------------------------------------------------
def _digest(value):
    h = hashlib.sha256()

    def walk(x):
        if isinstance(x, np.ndarray):
            h.update(repr((x.dtype.str, x.shape)).encode())
            h.update(np.ascontiguousarray(x).tobytes())
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, BaseEstimator):  # a fitted part (a mixture's)
            h.update(repr(_fitted(x)).encode())
        elif isinstance(x, (bool, int, float, np.number)):
            h.update(repr(x).encode())
        else:  # a lazy array would be a changed computation: never equal
            h.update(repr(type(x)).encode() + repr(id(x)).encode())

    walk(value)
    return h.hexdigest()


@pytest.fixture
def noise_inputs(monkeypatch):
    """Record every value a noise mechanism receives, with its calibration."""
    seen = []
    for module in (additive, linf, symmetric):
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and cls.__module__ == module.__name__):
                continue
            for name in ("randomise", "randomise_lattice", "randomise_blocks"):
                if name not in vars(cls):
                    continue

                original = vars(cls)[name]

                def spy(self, value, *args, _orig=original, **kwargs):
                    numbers = {
                        k: v
                        for k, v in vars(self).items()
                        if isinstance(v, (int, float))
                    }
                    seen.append(_digest([value, *sorted(numbers.items())]))
                    return _orig(self, value, *args, **kwargs)

                monkeypatch.setattr(cls, name, spy)
    return seen


def _fitted(est):
    out = {}
    for key, value in sorted(vars(est).items()):
        if key.endswith("_") and not key.startswith("_"):
            if isinstance(value, BaseEstimator):
                out[key] = _fitted(value)
            elif key == "privacy_spent_":
                out[key] = repr(value)
            elif isinstance(value, (np.ndarray, list, tuple, int, float, str)):
                out[key] = _digest(value) if not isinstance(value, str) else value
    return out


def _engines(A, tmp_path):
    path = tmp_path / "rows.npy"
    np.save(path, A)
    yield "memmap", np.load(path, mmap_mode="r")
    yield "copy-on-write", np.load(path, mmap_mode="c")
    for rows in (100, 3 * CHUNK, 333, N, (1, CHUNK - 1, 2 * CHUNK + 5, 803)):
        yield f"dask {rows}", da.from_array(A, chunks=(rows, -1))
    yield "dask 250x2", da.from_array(A, chunks=(250, 2))


def fit_record(make, A, kwargs, seen):
    """The fitted attributes' and the noise inputs' digests of one fit."""
    seen.clear()
    with warnings.catch_warnings():
        # Small fits warn (predicted useless, few rows): the same warnings on
        # every engine, not what is compared here.
        warnings.simplefilter("ignore")
        est = make().fit(A, **kwargs)
    return _fitted(est), list(seen)


def _params():
    for name, (make, A, *rest) in CASES.items():
        kwargs = rest[0] if rest else {}
        marks = rest[1:] if len(rest) > 1 else ()
        yield pytest.param(make, A, kwargs, id=name, marks=marks)


@pytest.mark.parametrize(("make", "A", "kwargs"), list(_params()))
def test_every_engine_gives_numpy_s_release(
    make, A, kwargs, tmp_path, monkeypatch, noise_inputs
):
    monkeypatch.setattr(sums, "CHUNK_ROWS", CHUNK)
    seen = noise_inputs
    expected = fit_record(make, A, kwargs, seen)
    assert expected[0]
    for engine, rows in _engines(A, tmp_path):
        with dask.config.set(scheduler="threads"):
            got = fit_record(make, rows, kwargs, seen)
        assert got[0] == expected[0], engine
        assert got[1] == expected[1], engine
