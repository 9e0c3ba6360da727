"""The direct group fits of SubsampleAggregate: candidates computed without
calling the wrapped estimator's ``fit``, for estimators whose fit is a few
lines of arithmetic (:func:`direct_fit`), a block of groups at a time
(:func:`direct_candidates`).

**Privacy.** The choice of path reads only the public estimator, statistic
and the inputs' types; each candidate is computed from its own group's rows
(stacked operations act on each group's matrix separately), and a failure
fails that group alone. The candidates equal the estimators' own fits bit for
bit on the library's tests, so the release is the same as the generic path's
(:func:`~dpgauss.ensemble._group_fits.group_candidates`).
"""

import warnings

import numpy as np
import sklearn
from scipy import linalg
from scipy.linalg import get_lapack_funcs
from scipy.sparse import issparse
from sklearn.covariance import EmpiricalCovariance
from sklearn.linear_model import LinearRegression
from sklearn.utils.fixes import parse_version

__all__ = ["DIRECT_BLOCK_ROWS", "direct_candidates", "direct_fit", "take_rows"]

#: Rows a block of the direct path holds at once (memory bounded whatever n).
DIRECT_BLOCK_ROWS = 1 << 16
#: LinearRegression passes ``tol`` to ``lstsq`` as ``cond`` on dense rows from
#: scikit-learn 1.9 (1.6 has no ``tol``; 1.7-1.8 use ``max(X.shape) eps``):
#: the least-squares path computes what fit does only there.
DENSE_TOL_IS_COND = parse_version(sklearn.__version__).release[:2] >= (1, 9)


def direct_candidates(direct, X, y, order, k, s):
    """The candidates of ``direct`` (:func:`direct_fit`), in group order.

    The groups' rows are gathered a block of groups at a time (at most
    :data:`DIRECT_BLOCK_ROWS` rows, the permutation's order) as an array of
    shape (groups, s, d); ``direct`` computes each group's candidate from its
    own matrix of the stack. A block whose computation raises (never for
    finite rows) is redone group by group, each on its own, so one group's
    rows can only fail that group's candidate.
    """
    step = max(1, DIRECT_BLOCK_ROWS // max(s, 1))
    for start in range(0, k, step):
        stop = min(k, start + step)
        idx = order[start * s : stop * s]
        rows = np.asarray(X[idx]).reshape(stop - start, s, -1)
        target = None if y is None else np.asarray(take_rows(y, idx))
        target = None if target is None else target.reshape(stop - start, s)
        block = direct(rows, target)
        if block is None:
            for g in range(stop - start):
                one = direct(
                    rows[g : g + 1], None if target is None else target[g : g + 1]
                )
                yield None if one is None else one[0]
            continue
        yield from block


def direct_fit(estimator, names, X, y, classes):
    """A vectorised group fit without scikit-learn's per-call overhead, or None.

    For two wrapped estimators (exactly those classes), on dense float64 rows
    and a statistic naming only the attributes below, the function ``(rows,
    targets) -> candidates`` that takes a stack of groups (shape ``(b, s,
    d)``; targets ``(b, s)``) and computes for each what its ``fit``
    computes, in the same order, from that group's matrix alone:

    * ``LinearRegression`` (``positive=False``, a 1-D numeric target;
      ``coef_``, ``intercept_``; scikit-learn 1.9 or later, where fit passes
      ``tol`` to ``lstsq`` as ``cond``), group by group: the column means ``x_m``
      and ``y_m`` (with ``fit_intercept``), the least-squares coefficients of
      the centred rows by ``scipy.linalg.lstsq(cond=tol)``'s LAPACK call
      (:class:`_Gelsd`) and ``intercept =
      y_m - x_m coef``; a group whose solve raises is a failed candidate;
    * ``EmpiricalCovariance`` (``location_``, ``covariance_``), for the stack
      at once: the means along each group's rows (zeros with
      ``assume_centered``) and ``C^T C / s`` of the centred rows
      (``np.matmul`` on the stack, times ``1 / s`` as ``np.cov`` does).

    Candidates equal the estimators' own fits bit for bit on the library's
    tests (random groups, rank-deficient ones included). A fit's validation
    and ``clone`` cost 10-100 times the arithmetic on groups of 25 rows (n =
    1e5, d = 5, 4,000 groups: LinearRegression 2.0 s, 160 times one fit on
    all rows; EmpiricalCovariance's location 1.3 s, 130 times).

    Privacy: the choice reads only the public estimator, statistic and the
    inputs' types; each candidate is computed from its own group's matrix
    (the stacked operations act on each matrix separately), and a failure
    fails that group alone (:func:`_direct_candidates`).
    """
    if (
        classes is not None
        or names is None
        or type(X) not in (np.ndarray, np.memmap)
        or X.dtype != np.float64
    ):
        return None
    params = estimator.get_params()
    if type(estimator) is EmpiricalCovariance:
        if not set(names) <= {"location_", "covariance_"}:
            return None
        return _stacked(_moments(bool(params["assume_centered"])), names)
    if type(estimator) is not LinearRegression:
        return None
    if (
        not DENSE_TOL_IS_COND
        or "tol" not in params
        or params["positive"]
        or not set(names) <= {"coef_", "intercept_"}
        or not isinstance(y, np.ndarray)
        or y.ndim != 1
        or y.dtype.kind not in "biuf"
    ):
        return None
    return _least_squares(bool(params["fit_intercept"]), params["tol"], names)


def _least_squares(intercept, cond, names):
    """LinearRegression's fit on each group of a stack: the stack's column
    means and centred rows at once (the same operations as the group's own
    ``np.average`` and subtraction, bit for bit: a mean along the rows of a
    stack adds each group's rows in the same order), then each group's
    least-squares solve (:class:`_Gelsd`); a group whose solve raises or
    fails is a failed candidate."""
    solve = _Gelsd(cond)

    def candidates(rows, targets):
        out = []
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            targets = np.asarray(targets, dtype=np.float64)
            if intercept:
                x_m, y_m = rows.mean(axis=1), targets.mean(axis=1)
                rows = rows - x_m[:, None, :]
                targets = targets - y_m[:, None]
            for g in range(rows.shape[0]):
                try:
                    coef = solve(rows[g], targets[g])
                    b = y_m[g] - x_m[g] @ coef if intercept else 0.0
                    parts = {"coef_": coef, "intercept_": np.float64(b)}
                    out.append(_flatten(parts, names, 1)[0])
                except Exception:
                    out.append(None)
        return out

    return candidates


class _Gelsd:
    """``scipy.linalg.lstsq(a, b, cond=cond, check_finite=False)[0]`` on a
    group (more rows than columns): the same LAPACK call, ``gelsd``, with the
    same workspace sizes (``gelsd_lwork``'s, as integers), found once per
    shape rather than at every call, and none of the wrapper's checks (about
    35 of the 55 microseconds a group of 25 x 5 rows took). Other shapes go
    to ``lstsq`` itself."""

    def __init__(self, cond):
        self.cond = np.finfo(np.float64).eps if cond is None else cond
        self.funcs, self.sizes = None, {}

    def __call__(self, a, b):
        m, n = a.shape
        if m <= n:
            return linalg.lstsq(a, b, cond=self.cond, check_finite=False)[0]
        if self.funcs is None:
            self.funcs = get_lapack_funcs(("gelsd", "gelsd_lwork"), (a, b))
        gelsd, gelsd_lwork = self.funcs
        if (m, n) not in self.sizes:
            work, iwork, info = gelsd_lwork(m, n, 1, self.cond)
            if info != 0:
                raise ValueError(f"gelsd_lwork failed (info {info}).")
            self.sizes[m, n] = (int(work.real), int(iwork))
        lwork, iwork = self.sizes[m, n]
        x, _, _, info = gelsd(a, b, lwork, iwork, self.cond, False, False)
        if info != 0:
            raise np.linalg.LinAlgError("gelsd did not converge.")
        return x[:n]


def _moments(centred):
    def fit(G, _):
        b, s, d = G.shape
        if centred:
            location, C = np.zeros((b, d)), G
            second = np.matmul(G.transpose(0, 2, 1), G) / s
        else:
            location = G.mean(axis=1)
            C = G - location[:, None, :]
            second = np.matmul(C.transpose(0, 2, 1), C) * np.true_divide(1, s)
        return {"location_": location, "covariance_": second}

    return fit


def _flatten(parts, names, b):
    return np.concatenate([np.reshape(parts[n], (b, -1)) for n in names], axis=1)


def _stacked(fit, names):
    """Candidates of a stack at once; None when the computation raises."""

    def candidates(rows, targets):
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _flatten(fit(rows, targets), names, rows.shape[0])
        except Exception:
            return None

    return candidates


def take_rows(y, idx):
    """The rows ``idx`` of a target (a pandas object, a sparse matrix or an
    array-like)."""
    if hasattr(y, "iloc"):
        return y.iloc[idx]
    if issparse(y):  # np.asarray of a sparse matrix is a 0-d object array
        return y[idx]
    return np.asarray(y)[idx]
