r"""Markov correlated policies: a joint-action distribution per step and state.

A Markov correlated policy draws, at step ``h`` in state ``s``, a fresh joint action
:math:`a \sim \sigma_h(\cdot \mid s)` and recommends :math:`a_i` to player ``i``. Unlike the
index-chain policies of Algorithms 3 and 4, no hidden randomness persists across steps. The exact
LP solver (backward induction over stage-game CE/CCE) returns such a policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._files import header_warnings_refused, open_regular
from .._npz import ArchiveError, NpzArchive

__all__ = ["MarkovCorrelatedPolicy", "DISTRIBUTION_TOLERANCE"]

#: Each ``joint[h, s]`` must sum to 1 within this absolute tolerance (and be >= -tolerance).
DISTRIBUTION_TOLERANCE = 1e-8


@dataclass(frozen=True, eq=False)
class MarkovCorrelatedPolicy:
    """A correlated Markov policy ``joint[h, s, a_0, ..., a_{N-1}]``, shape ``(H, S, A_0, ..., A_{N-1})``.

    Entries within ``DISTRIBUTION_TOLERANCE`` below 0 (LP solver round-off) are set to 0 and each
    distribution renormalised; anything further off is an error.
    """

    joint: np.ndarray
    num_players: int

    def __post_init__(self) -> None:
        j = np.array(self.joint, dtype=np.float64, copy=True)
        n = int(self.num_players)
        if n < 1 or j.ndim != 2 + n:
            raise ValueError(f"joint: expected shape (H, S, A_0, ..., A_{n - 1}) with {2 + n} axes, got {j.shape}")
        if not np.all(np.isfinite(j)):
            raise ValueError("joint: contains non-finite entries")
        if np.any(j < -DISTRIBUTION_TOLERANCE):
            idx = tuple(int(k) for k in np.argwhere(j < -DISTRIBUTION_TOLERANCE)[0])
            raise ValueError(f"joint{list(idx)} = {float(j[idx])!r} is negative")
        sums = j.reshape(j.shape[0], j.shape[1], -1).sum(axis=-1)
        bad = np.abs(sums - 1.0) > DISTRIBUTION_TOLERANCE
        if bad.any():
            h, s = (int(k) for k in np.argwhere(bad)[0])
            raise ValueError(f"joint[{h}][{s}] sums to {float(sums[h, s])!r}, not 1")
        j = np.clip(j, 0.0, None)
        j /= j.reshape(j.shape[0], j.shape[1], -1).sum(axis=-1).reshape(j.shape[:2] + (1,) * n)
        j.setflags(write=False)
        object.__setattr__(self, "joint", j)
        object.__setattr__(self, "num_players", n)

    @property
    def horizon(self) -> int:
        return int(self.joint.shape[0])

    @property
    def num_states(self) -> int:
        return int(self.joint.shape[1])

    @property
    def num_actions(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self.joint.shape[2:])

    def save(self, path) -> None:
        """Write an ``.npz`` file (no pickle)."""
        np.savez_compressed(path, joint=self.joint, num_players=np.asarray(self.num_players))

    @classmethod
    def load(cls, path) -> MarkovCorrelatedPolicy:
        """Read a file written by `save`; its sizes are checked before its arrays are read
        (``markovgames._npz``): a damaged or forged file is an ArchiveError (a ValueError) naming it."""
        try:
            with open_regular(path) as fh, header_warnings_refused(), NpzArchive(fh) as data:
                num_players = int(data.scalar("num_players", "iu"))
                shape, _, dtype = data.header("joint")
                if dtype.kind != "f" or len(shape) != 2 + num_players:
                    raise ArchiveError(
                        f"joint: expected a float array (H, S, A_0, ..., A_(N-1)) with N = {num_players}, "
                        f"got dtype {dtype} with shape {shape}"
                    )
                joint = data.read("joint")
        except ArchiveError as err:
            raise ArchiveError(f"{path}: {err}") from None
        return cls(joint, num_players)
