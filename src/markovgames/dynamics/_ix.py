r"""Implicit exploration (IX) of the utility estimates on bandit feedback (docs/vlearning.md).

A visit of ``(h, s)`` where a player played ``a`` estimates the loss of every own action ``b`` by
:math:`\hat\ell(b) = \ell\,1\{b = a\}/(\theta(b) + \gamma)` (EXP3-IX; Neu, "Explore no more:
improved high-probability regret bounds for non-stochastic bandits", NeurIPS 2015): `IX_SCHEDULES`
are the schedules of :math:`\gamma` a composition can run with, `parse_ix` reads ``ix=``, and
`bandit_estimate_moments` gives the estimate's mean and variance. `BANDIT_RATES` are the
schedules of a composition's learning rate on bandit feedback, `parse_bandit_rate` reads
``bandit_rate=``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "IX_SCHEDULES",
    "DEFAULT_IX",
    "parse_ix",
    "BANDIT_RATES",
    "DEFAULT_BANDIT_RATE",
    "parse_bandit_rate",
    "bandit_estimate_moments",
]

#: A composition's implicit exploration on bandit feedback (docs/vlearning.md), ``ix=``: the
#: schedule's name and the exponent ``p`` of ``gamma_c = gamma_1 c^(-p)``, ``c`` the rounds that
#: visited the (step, state) so far, this one included. ``"decaying"`` (the default) is EXP3-IX's
#: ``gamma_t = eta_t / 2`` with rates decreasing like ``1/sqrt(t)`` (Neu, "Explore no more",
#: NeurIPS 2015, Theorem 1's anytime setting): ``gamma_c = (eta H / 2) / sqrt(c)``, whose bias
#: vanishes; a number ``ix=G`` is the constant ``gamma_c = G`` (``ix=0``: unbiased estimates).
IX_SCHEDULES: dict[str, float] = {"constant": 0.0, "decaying": 0.5}
#: The default ``ix``: the decaying schedule.
DEFAULT_IX = "decaying"


#: A composition's learning rate on bandit feedback (docs/vlearning.md), ``bandit_rate=``, at a
#: state's ``c``-th visiting round of ``M`` episodes: ``"decaying"`` (the default),
#: ``eta_c = min(eta, M / sqrt(c))``, the constant ``eta`` until ``c = (M / eta)^2``, then EXP3's
#: anytime ``1/sqrt(c)`` decay (Neu 2015; Lattimore and Szepesvari, *Bandit Algorithms*, 2020,
#: ch. 11); ``"constant"``, ``eta_c = eta``. The scale ``M / sqrt(c)`` is a measured choice, not a
#: theorem's: a round's utilities are means over its ``M`` episodes, and with it the gap keeps
#: falling on ``bandit:1`` and ``bandit:16`` alike (docs/gallery.md). The recursion: the ``c``-th
#: round plays ``softmax(eta_c (rho_c G_{c-1} + m_c))`` and observes ``G_c = rho_c G_{c-1} + u_c``
#: (the learner protocol, ``rho_c = (c-1)/(k+c-1)`` for a smooth update of order ``k``, 1 for the
#: stage update), so an earlier estimate ``u_j`` weighs ``eta_c w_j / w_c`` in the logits and the
#: step on the sum of equal estimates is ``eta_c / (k+1)`` (``eta_c`` on a stage's sum): it falls
#: like ``eta_c`` under either update (docs/vlearning.md, "The learning rate's schedule").
BANDIT_RATES = ("decaying", "constant")
#: The default ``bandit_rate``.
DEFAULT_BANDIT_RATE = "decaying"


def parse_bandit_rate(value) -> str:
    """A composition's ``bandit_rate=``: ``None`` (the default, `DEFAULT_BANDIT_RATE`) or a name of `BANDIT_RATES`."""
    if value is None:
        return DEFAULT_BANDIT_RATE
    if not isinstance(value, str) or value not in BANDIT_RATES:
        raise ValueError(f"bandit_rate must be one of {', '.join(map(repr, BANDIT_RATES))}, got {value!r}")
    return value


def parse_ix(value, eta: float, horizon: int) -> tuple[float, str]:
    """A composition's ``ix=`` as ``(gamma_1, schedule)``: ``None`` or ``"decaying"``, the default
    ``((eta H / 2), "decaying")``; a number ``G >= 0``, ``(G, "constant")`` (`IX_SCHEDULES`)."""
    if value is None or (isinstance(value, str) and value == DEFAULT_IX):
        return eta * horizon / 2.0, DEFAULT_IX
    bad = isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value))
    if bad or float(value) < 0:
        raise ValueError(f"ix must be {DEFAULT_IX!r} or a finite number >= 0, got {value!r}")
    return float(value), "constant"


def bandit_estimate_moments(targets, others, strategy, horizon: int, gamma: float = 0.0, visits: int = 1):
    r"""Mean and variance of the bandit utility estimate at one state (docs/vlearning.md).

    ``targets[b, k]``: the target ``y = r_i + V_{h+1,i}(s')`` in expectation over ``s'`` when the
    player plays ``b`` and the others' joint action is ``k`` (flattened), ``others[k]`` its
    probability, ``strategy[b]`` the player's. One visit's estimate is
    :math:`\hat u(b) = H(1 - 1\{a = b\}\,\ell/(\theta(b) + \gamma))`, :math:`\ell = (H - y)/H`, so

    .. math:: E[\hat u(b)] = H\Big(1 - \frac{\theta(b) E[\ell \mid b]}{\theta(b) + \gamma}\Big), \qquad
              \mathrm{Var}[\hat u(b)] = \frac{H^2}{(\theta(b)+\gamma)^2}\big(\theta(b) E[\ell^2 \mid b] - \theta(b)^2 E[\ell \mid b]^2\big),

    the variance divided by ``visits`` for the mean of that many visits. With ``gamma = 0`` the
    mean is :math:`E[y \mid b] = [\tilde Q_i \pi_{-i}](s, b)`: unbiased. ``E[\ell^2 | b]`` here
    takes ``y`` as given per ``(b, k)`` (deterministic next-state values), as on a one-step game.
    """
    y = np.asarray(targets, dtype=np.float64)
    q = np.asarray(others, dtype=np.float64)
    theta = np.asarray(strategy, dtype=np.float64)
    H = float(horizon)
    loss = (H - y) / H
    m1 = loss @ q
    m2 = (loss**2) @ q
    scale = theta + float(gamma)
    mean = H * (1.0 - theta * m1 / scale)
    variance = H**2 * (theta * m2 - theta**2 * m1**2) / scale**2 / int(visits)
    return mean, variance
