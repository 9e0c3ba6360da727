"""The release plan: one per fit, fixed before any data are read.

A fit first lists its releases with their costs (a :class:`ReleasePlan`). The
ledger is written from the plan (:meth:`ReleasePlan.charges`), the fit's
``privacy_spent_`` is the plan's composition, and every mechanism is calibrated
from the plan by name (:meth:`ReleasePlan.calibrate`): nothing splits a cost a
second time. When the fit ends, :meth:`ReleasePlan.finish` checks that every
planned release was calibrated with exactly its planned cost and drew its noise
exactly once, so a ledger that disagrees with the noise is a test failure, not a
silent privacy bug.

A release whose mechanism is chosen privately during the fit (GaussCov or
SeparateCov, chosen from a private trace) is a :class:`Choice`: every option
lists its own releases, the ledger records the option that costs the most (it
must cost at least as much as every other option in every currency), and the fit
later calls :meth:`ReleasePlan.choose`. Costs may be zCDP, pure or approximate
(``ApproxDP``), so steps such as a Tukey-depth mean or subsample-and-aggregate fit
in the same plan.
"""

from dataclasses import dataclass, field

from dpgauss.accounting._composition import Tally, compose

__all__ = ["Choice", "PlanError", "Release", "ReleasePlan", "dominates", "known"]


class PlanError(RuntimeError):
    """A fit used its release plan wrongly (a bug in dpgauss, never the data's fault).

    Raised when a release is calibrated twice or with another cost, a planned
    release is never drawn, or a release draws noise more than once.
    """


def known(value, name):
    """``value``, which a release's factory needs to build its mechanism.

    A plan priced without a fit's values (:meth:`planned_costs`) may carry
    factories that need them; building one then is a bug, refused here.

    Raises
    ------
    PlanError
        When ``value`` is None.
    """
    if value is None:
        raise PlanError(
            f"the plan was priced without {name}: pass it to build the release."
        )
    return value


@dataclass(frozen=True)
class Release:
    """One planned release.

    Parameters
    ----------
    name : str
        The release's name, unique in its plan (``"mean"``, ``"trace"``, ...).
    cost : ZCDP, PureDP or ApproxDP
        What it costs.
    kind : str
        The mechanism family, for the ledger (``"gaussian"``, ``"laplace"``,
        ``"above_threshold"``, ...).
    make : callable, default=None
        The factory of the release's mechanism: ``make(cost, **case)`` returns
        the calibrated mechanism. Called with no ``case`` it builds the
        mechanism at the release's worst public case (the largest noise the
        fit could need); the fit may pass values it released earlier (a
        private radius, say) to build the one it uses. The same factory serves
        the check before the spend (:func:`dpgauss.mechanisms._checks.check_plan`),
        the predicted error and the release itself.
    size : int, default=1
        Entries released together (the matrix dimension for a symmetric
        release), for the exact sampler's calibration.
    cases : tuple of dict, default=({},)
        Every public case the check before the spend builds the mechanism at,
        as keyword arguments of ``make`` (more than one when the fit may use
        several public calibrations, such as the radii of a search).
    bounded : bool, default=True
        Whether the noise scale must also be at most
        :data:`~dpgauss.mechanisms._checks.MAX_NOISE_SCALE` (releases that are
        squared or decomposed afterwards).

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.accounting._plan import Release
    >>> Release("mean", ZCDP(0.1), "gaussian").label
    'gaussian:mean'
    """

    name: str
    cost: object
    kind: str
    make: object = field(default=None, compare=False, repr=False)
    size: int = field(default=1, compare=False)
    cases: tuple = field(default=({},), compare=False, repr=False)
    bounded: bool = field(default=True, compare=False, repr=False)

    def build(self, **case):
        """The release's mechanism, from its factory, at ``case`` (default: the
        worst public case).

        Returns
        -------
        object
            ``make(cost, **case)``.
        """
        if self.make is None:
            raise PlanError(f"the release {self.name!r} was planned without a factory.")
        return self.make(self.cost, **case)

    @property
    def label(self):
        """The ledger's mechanism label, ``"kind:name"``."""
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class Choice:
    """A release whose mechanism is chosen privately during the fit.

    Parameters
    ----------
    name : str
        The choice's name (for the ledger).
    options : dict of str to tuple of Release
        Each option's releases.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.accounting._plan import Choice, Release
    >>> choice = Choice("covariance", {
    ...     "gauss": (Release("second_moment", ZCDP(0.5), "gaussian"),),
    ...     "separate": (Release("eigenvalues", ZCDP(0.25), "gaussian"),
    ...                  Release("eigenvectors", ZCDP(0.25), "gaussian")),
    ... })
    >>> [r.cost for r in choice.charged]
    [ZCDP(rho=0.5)]
    """

    name: str
    options: dict

    @property
    def charged(self):
        """The releases recorded in the ledger: the option that dominates.

        Composition (:func:`~dpgauss.accounting._composition.compose_parts`) reads
        only additive components of a list of costs (zCDP rho, pure epsilon, pure
        epsilon^2/2, approximate epsilon and delta) and which kinds occur, and it
        is non-decreasing in each. An option at least as large as every other in
        every component and kind therefore costs at least as much as any of them,
        composed with any other costs, in every currency: charging it covers
        whichever option the fit takes. Dominance is exact (no tolerance: a
        tolerance let an option 1 ulp cheaper be charged). If no option
        dominates, the plan is refused (split the choice so that one does).
        """
        options = list(self.options.values())
        tallies = [Tally.of([r.cost for r in rel]) for rel in options]
        for candidate, tally in zip(options, tallies, strict=True):
            if all(tally.covers(other) for other in tallies):
                return candidate
        raise PlanError(
            f"no option of {self.name!r} costs at least as much as every other in "
            "every currency; split the choice differently."
        )


def dominates(costs, others):
    """Whether ``costs`` are at least ``others`` in every component (exactly).

    Composed with anything, such costs cost at least as much as ``others`` in
    every currency (see :attr:`Choice.charged`).

    Parameters
    ----------
    costs, others : sequence of ZCDP, PureDP or ApproxDP
        Two lists of costs.

    Returns
    -------
    bool
        True when no component of ``others`` exceeds that of ``costs``.

    Examples
    --------
    >>> from dpgauss.accounting import PureDP
    >>> from dpgauss.accounting._plan import dominates
    >>> dominates([PureDP(0.5), PureDP(0.5)], [PureDP(0.7)])
    True
    """
    return Tally.of(costs).covers(Tally.of(others))


class ReleasePlan:
    """The releases of one fit, their costs and the record of their use.

    Parameters
    ----------
    total : ZCDP, PureDP or ApproxDP
        What the fit may spend; the plan's charges must compose to at most this.
    entries : sequence of Release or Choice
        The releases, in the order the fit makes them.

    Attributes
    ----------
    total : ZCDP, PureDP or ApproxDP
        The fit's total.
    entries : tuple of Release or Choice
        The planned releases.

    Examples
    --------
    >>> from dpgauss.accounting import ZCDP
    >>> from dpgauss.accounting._plan import Release, ReleasePlan
    >>> from dpgauss.mechanisms import GaussianMechanism
    >>> def gaussian(cost, sensitivity=1.0):
    ...     return GaussianMechanism(sensitivity=sensitivity, rho=cost.rho)
    >>> plan = ReleasePlan(ZCDP(1.0), [
    ...     Release("mean", ZCDP(0.1), "gaussian", gaussian),
    ...     Release("second_moment", ZCDP(0.9), "gaussian", gaussian),
    ... ])
    >>> plan.charges()
    [(ZCDP(rho=0.1), 'gaussian:mean'), (ZCDP(rho=0.9), 'gaussian:second_moment')]
    >>> mech = plan.calibrate("mean", sensitivity=0.5)
    >>> mech.cost
    ZCDP(rho=0.1)
    """

    def __init__(self, total, entries):
        self.total = total
        self.entries = tuple(entries)
        names = [e.name for e in self.entries]
        for entry in self.entries:
            if isinstance(entry, Choice):
                names += [r.name for rel in entry.options.values() for r in rel]
        if len(set(names)) != len(names):
            raise PlanError(f"release names must be unique, got {names!r}.")
        self._releases = {}
        for entry in self.entries:
            group = entry.options.values() if isinstance(entry, Choice) else [[entry]]
            for rel in group:
                self._releases.update({r.name: r for r in rel})
        self._chosen = {}
        self._mechanisms = {}
        if self.entries and not _fits(total, self.costs()):
            raise PlanError(
                f"the plan's releases compose to {compose(total, self.costs())}, more "
                f"than the fit's total {total}."
            )

    # -- what is charged ------------------------------------------------------------
    def charges(self):
        """The ledger entries: (cost, label) pairs, in order.

        Returns
        -------
        list of (cost, str)
            One entry per release (for a choice, per release of its most expensive
            option, labelled ``"choice:<choice name>/<release name>"``).
        """
        out = []
        for entry in self.entries:
            if isinstance(entry, Choice):
                out += [
                    (r.cost, f"choice:{entry.name}/{r.name}") for r in entry.charged
                ]
            else:
                out.append((entry.cost, entry.label))
        return out

    def costs(self):
        """The charged costs, in order.

        Returns
        -------
        list of ZCDP, PureDP or ApproxDP
            The costs of :meth:`charges`.
        """
        return [cost for cost, _ in self.charges()]

    def spent(self):
        """The composed cost of the plan, in the currency of ``total``.

        Returns
        -------
        ZCDP, PureDP or ApproxDP
            What the fit reports as ``privacy_spent_``.
        """
        return compose(self.total, self.costs())

    def releases(self):
        """Every release the fit may make (all options of every choice).

        Returns
        -------
        list of Release
            In plan order.
        """
        return list(self._releases.values())

    def cost(self, name):
        """The planned cost of release ``name`` (without using it).

        Parameters
        ----------
        name : str
            A release's name.

        Returns
        -------
        ZCDP, PureDP or ApproxDP
            Its cost (also for an option of a choice not yet made).
        """
        release = self._releases.get(name)
        if release is None:
            raise PlanError(f"no release named {name!r} in this plan.")
        return release.cost

    # -- using the plan during the fit ------------------------------------------------
    def choose(self, name, option):
        """Record which option of choice ``name`` the fit takes.

        Parameters
        ----------
        name : str
            The choice.
        option : str
            One of its options.
        """
        entry = next((e for e in self.entries if e.name == name), None)
        if not isinstance(entry, Choice) or option not in entry.options:
            raise PlanError(f"{name!r} has no option {option!r}.")
        if name in self._chosen:
            raise PlanError(f"the choice {name!r} was made twice.")
        self._chosen[name] = option

    def calibrate(self, name, **case):
        """Build the mechanism of release ``name`` with the release's own factory.

        The same factory built it at the release's public cases before the
        spend (:func:`~dpgauss.mechanisms._checks.check_plan`), so the fit
        draws only from a mechanism of the kind that check saw.

        Parameters
        ----------
        name : str
            The release.
        **case
            Keyword arguments for the factory (values released earlier in the
            fit, or public ones the fit knows, such as its chunk count).

        Returns
        -------
        object
            The mechanism, whose ``cost`` is the planned cost.
        """
        release = self._release(name)
        if name in self._mechanisms:
            raise PlanError(f"the release {name!r} was calibrated twice.")
        mechanism = release.build(**case)
        if mechanism.cost != release.cost:
            raise PlanError(
                f"the release {name!r} is planned at {release.cost} but its mechanism "
                f"costs {mechanism.cost}."
            )
        self._mechanisms[name] = mechanism
        return mechanism

    def finish(self):
        """Check that every release the fit made drew its noise exactly once.

        Raises
        ------
        PlanError
            If a planned release (of a chosen option) was never calibrated, or a
            mechanism drew a number of times other than one.
        """
        for name in self._used_names():
            mechanism = self._mechanisms.get(name)
            if mechanism is None:
                raise PlanError(f"the planned release {name!r} was never made.")
            draws = getattr(mechanism, "draws", None)
            if draws is None:
                raise PlanError(f"the mechanism of {name!r} does not count its draws.")
            if draws != 1:
                raise PlanError(f"the release {name!r} drew noise {draws} times.")

    def _used_names(self):
        for entry in self.entries:
            if isinstance(entry, Choice):
                if entry.name not in self._chosen:
                    raise PlanError(f"the choice {entry.name!r} was never made.")
                yield from (r.name for r in entry.options[self._chosen[entry.name]])
            else:
                yield entry.name

    def _release(self, name):
        release = self._releases.get(name)
        if release is None:
            raise PlanError(f"no release named {name!r} in this plan.")
        for entry in self.entries:
            if isinstance(entry, Choice) and any(
                r.name == name for rel in entry.options.values() for r in rel
            ):
                chosen = self._chosen.get(entry.name)
                if chosen is None or all(r.name != name for r in entry.options[chosen]):
                    raise PlanError(
                        f"{name!r} belongs to an option of {entry.name!r} that was "
                        "not chosen."
                    )
        return release

    def __repr__(self):
        body = ", ".join(label for _, label in self.charges())
        return f"ReleasePlan(total {self.total}: {body})"


def _fits(total, costs):
    from dpgauss.accounting._composition import within
    from dpgauss.exceptions import PrivacyAccountingError

    try:
        return within(total, costs)
    except PrivacyAccountingError:
        return False
