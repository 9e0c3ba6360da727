"""PublicPrivateGMM's public-only answer: the mixture fitted on the public rows
alone, returned instead of a private fit predicted to lose to it.

It reads the public rows and public parameters only, so it is free: a fit
that returns it spends nothing. The decision to return it is taken before the
spend from public values (the component predictions of
:func:`~dpgauss.mixture._public.useless_component`).
"""

import warnings

from dpgauss.accounting._composition import compose
from dpgauss.exceptions import UtilityWarning
from dpgauss.mixture._public import _mixture_attributes, _separation, public_mixture

__all__ = ["PublicOnly", "public_only_fit"]


class PublicOnly(Exception):
    """Raised before the spend by a fit whose private refinement is predicted
    to lose to the public rows' own mixture, with ``fallback="public"``: the
    fit returns that mixture instead and spends nothing."""

    def __init__(self, message, public, k, n_features, names):
        super().__init__(message)
        self.public = public
        self.k = k
        self.n_features = n_features
        self.names = names


def public_only_fit(estimator, signal):
    """The fitted attributes of ``estimator`` (a PublicPrivateGMM) when it
    returns the public rows' own mixture: free, it reads the public rows and
    public parameters only; ``privacy_spent_`` is zero in the fit's currency.
    Warns first, saying why (the pre-spend prediction in ``signal``)."""
    warnings.warn(
        f"{signal} Returning that public-only mixture instead; nothing was "
        "spent (fallback='refuse' raises instead).",
        UtilityWarning,
        stacklevel=3,
    )
    weights, means, covariances = public_mixture(
        signal.public, signal.k, estimator._seed()
    )
    fitted = _mixture_attributes(weights, means, covariances)
    fitted.update(
        n_components_=signal.k,
        regime_="public_only",
        components_=[],
        refine_steps_=0,
        separation_=_separation(means, covariances),
        n_features_in_=signal.n_features,
        privacy_spent_=compose(estimator._privacy_total(), []),
    )
    if signal.names is not None:
        fitted["feature_names_in_"] = signal.names
    return fitted
