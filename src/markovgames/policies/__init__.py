"""Correlated policies: the paper's index-chain output policies, their index kernels, V-learning's output policy, and Markov correlated policies.

NumPy only: this package (and [`markovgames.evaluation`][markovgames.evaluation] and [`markovgames.solvers`][markovgames.solvers] above it)
imports without JAX.
"""

from ._index_chain import IndexChainPolicy
from ._index_kernel import KERNEL_KINDS, IndexKernel, TrajectorySuffix, trajectory_suffix
from ._markov import DISTRIBUTION_TOLERANCE, MarkovCorrelatedPolicy
from ._play import PolicyPlayer
from ._visit_chain import VISIT_KERNEL_KINDS, VisitChainPolicy, VisitKernel

__all__ = [
    "IndexChainPolicy",
    "IndexKernel",
    "KERNEL_KINDS",
    "TrajectorySuffix",
    "trajectory_suffix",
    "MarkovCorrelatedPolicy",
    "PolicyPlayer",
    "VisitChainPolicy",
    "VisitKernel",
    "VISIT_KERNEL_KINDS",
    "DISTRIBUTION_TOLERANCE",
]
