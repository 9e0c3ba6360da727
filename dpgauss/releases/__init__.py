"""The private release layer: the statistic-level releases several families share.

Private, with no stability promise: names here may change in any release. One
module per algorithm, its privacy proof in its docstring: :mod:`._covariance`
(the DLY covariance methods GaussCov and SeparateCov as plan entries and
releases, their noise variances and predicted errors, the auto choice),
:mod:`._center` (the clipped mean, the center, the trace, the released spectrum
behind them and its floors), :mod:`._spectrum` (the fit hooks of the estimators
built on a released spectrum: PCA and whitening), :mod:`._emcov` (EMCov and its
Bingham sampler), :mod:`._adaptive_plan` and :mod:`._adaptive` (the
tail-sensitive covariance, DLY Algorithm 3: its plan with the factories, and
its releases), :mod:`._radius` (the private radius scan over a grid),
:mod:`._threshold_search` (the clipping-threshold search), :mod:`._pairs`
(pair differences, which need no center), :mod:`._denoise` (spectral
denoising, post-processing), :mod:`._coinpress` (the CoinPress covariance steps
and frames), :mod:`._coinpress_mean` (the CoinPress mean steps and the frame
learned from pairs of rows), :mod:`._range` (the coarse range, the norm bound
and the means of public rows), :mod:`._hints` (the public hints and public rows
of the unbounded estimators and the coarse-range releases they replace) and
:mod:`._groups` (counts, sums and second moments of clipped rows in groups,
labelled or weighted, for a changed row that may change its group),
:mod:`._classes` (the classes of the discriminant analyses: their labels,
adaptive clipping ball and post-processing) and
:mod:`._winsorized` (the winsorized aggregate of group statistics). The rule
that keeps the layer below the estimators: a module here imports only
:mod:`dpgauss.mechanisms`, :mod:`dpgauss.accounting`, :mod:`dpgauss.utils`,
:mod:`dpgauss.exceptions` and other modules of this layer, never
:mod:`dpgauss.base`, an estimator family or :mod:`dpgauss.model_selection`.
"""
