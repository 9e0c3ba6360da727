"""The test tooling of dpgauss and of estimators built on it.

:mod:`dpgauss.testing.estimator_checks` holds the differential-privacy checks
every private estimator must pass (budget charged exactly its plan, independent
noise, reproducibility, no spend on bad parameters), :mod:`dpgauss.testing.audit`
the statistical privacy audit (a Clopper-Pearson lower bound on epsilon),
:mod:`dpgauss.testing.discovery` the discovery of the public estimators, and
``dpgauss.testing._test_common`` the instances the common tests fit.

It sits above every other layer: it is the only low-level code that imports
:mod:`dpgauss.base` and every estimator family, so nothing in the library may
import it.
"""
