"""Correlated policies: the paper's index-chain output policies and Markov correlated policies."""

from ._index_chain import IndexChainPolicy
from ..dynamics import IndexKernel
from ._markov import DISTRIBUTION_TOLERANCE, MarkovCorrelatedPolicy
from ._play import PolicyPlayer

__all__ = ["IndexChainPolicy", "IndexKernel", "MarkovCorrelatedPolicy", "PolicyPlayer", "DISTRIBUTION_TOLERANCE"]
