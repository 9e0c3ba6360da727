"""dpgauss: differentially private Gaussian, covariance, mixture and
product-distribution estimators.

Estimators follow scikit-learn's API; every fit charges its privacy cost to an
optional shared :class:`PrivacyBudget` before it reads the data.
"""

from dpgauss._version import __version__
from dpgauss.accounting import PrivacyBudget
from dpgauss.covariance import (
    PrivateCovariance,
    PrivateEllipticEnvelope,
    TailSensitiveCovariance,
)
from dpgauss.decomposition import PrivatePCA
from dpgauss.discriminant_analysis import (
    PrivateLinearDiscriminantAnalysis,
    PrivateQuadraticDiscriminantAnalysis,
)
from dpgauss.ensemble import SubsampleAggregate
from dpgauss.gaussian import PrivateGaussianEstimator
from dpgauss.linear_model import PrivateLinearRegression
from dpgauss.mean import PrivateMean
from dpgauss.mixture import PublicPrivateGMM
from dpgauss.preprocessing import (
    PrivateBounds,
    PrivateStandardScaler,
    PrivateWhitener,
)
from dpgauss.product import PrivateProductDistribution

__all__ = [
    "PrivacyBudget",
    "PrivateBounds",
    "PrivateCovariance",
    "PrivateEllipticEnvelope",
    "PrivateGaussianEstimator",
    "PrivateLinearDiscriminantAnalysis",
    "PrivateLinearRegression",
    "PrivateMean",
    "PrivatePCA",
    "PrivateProductDistribution",
    "PrivateQuadraticDiscriminantAnalysis",
    "PrivateStandardScaler",
    "PrivateWhitener",
    "PublicPrivateGMM",
    "SubsampleAggregate",
    "TailSensitiveCovariance",
    "__version__",
]
