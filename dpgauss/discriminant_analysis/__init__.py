"""Private discriminant analysis: Gaussian classifiers with private class statistics.

:class:`PrivateLinearDiscriminantAnalysis` (one pooled covariance) and
:class:`PrivateQuadraticDiscriminantAnalysis` (one per class), the private
counterparts of scikit-learn's; the classes are a public parameter.
"""

from dpgauss.discriminant_analysis._lda import PrivateLinearDiscriminantAnalysis
from dpgauss.discriminant_analysis._qda import PrivateQuadraticDiscriminantAnalysis

__all__ = ["PrivateLinearDiscriminantAnalysis", "PrivateQuadraticDiscriminantAnalysis"]
