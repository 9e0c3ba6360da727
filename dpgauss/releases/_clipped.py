"""Rows clipped away: the warning of a release whose rows sit at its radius.

Not an estimator module. An estimator bounded by a user's ``data_norm`` clips
every row to the ball of that radius; rows in other units than it assumes
(raw breast cancer with the radius the guide gives for standardised rows)
are all pulled to the sphere, and the release describes the sphere, not the
data: ``PrivateCovariance``, ``TailSensitiveCovariance``,
``PrivateEllipticEnvelope`` and ``PrivatePCA`` answered at 0.9997 of the
zero matrix's error without a word. Their release shows it: the second
moment's trace of rows clipped at radius B is at most ``B^2``, and near it
only when most rows are at the sphere. With ``E[B^2 - ||x||^2] <= (1 -
CLIPPED_TRACE) B^2``, Markov's inequality puts at least 75% of the rows at
``||x||^2 >= 0.8 B^2`` (``||x|| >= 0.89 B``).

Post-processing: the trace is read from the released spectrum (its noise
allowed for, two sds of the released diagonal's sum), the radius is public.
"""

import math
import warnings

from dpgauss.exceptions import UtilityWarning
from dpgauss.utils._leak import caller_stacklevel

__all__ = ["CLIPPED_TRACE", "warn_clipped_away"]

#: A released trace (less two noise sds) at least this share of the clipping
#: radius squared is reported (module docstring).
CLIPPED_TRACE = 0.95


def warn_clipped_away(owner, trace, noise_sd, d, radius):
    """Warn when the released trace shows most rows at the clipping radius.

    Parameters
    ----------
    owner : str
        The estimator's name.
    trace : float
        The released second moment's trace (the sum of the released
        spectrum's eigenvalues), in the rows' units.
    noise_sd : float
        The sd of one noise entry of that release (public): the trace's is
        ``sqrt(d)`` times it.
    d : int
        The number of features.
    radius : float
        The public clipping radius (``data_norm``).

    Returns
    -------
    bool
        Whether it warned.

    Examples
    --------
    >>> import warnings
    >>> from dpgauss.releases._clipped import warn_clipped_away
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_clipped_away("PrivatePCA", 99.0, 0.1, 4, 10.0)
    True
    >>> "at least 75% of the rows" in str(caught[0].message)
    True
    """
    allowance = 2.0 * math.sqrt(d) * noise_sd
    share = (trace - allowance) / (radius * radius)
    if not share >= CLIPPED_TRACE:
        return False
    warnings.warn(
        f"{owner}: the released second moment's trace is {share:.0%} of "
        f"data_norm^2 = {radius:.3g}^2 beyond its noise: at least 75% of the rows "
        "lie at 0.89 data_norm or beyond, probably clipped to it, so the release "
        "describes the clipping sphere more than the rows. Check data_norm "
        "against the rows' units: standardise them first (PrivateStandardScaler) "
        "or give bounds=(lower, upper) per feature.",
        UtilityWarning,
        stacklevel=caller_stacklevel(),
    )
    return True
