"""The catalogue by paper: for every built-in algorithm, the papers that define or analyse it.

One frozen table (`PAPERS`, `RESULTS`) that ``markovgames algorithms show NAME`` and
``docs/papers.md`` read (a test keeps the page equal to `catalogue_markdown`). Each `Result` is one
paper's statement about the algorithms it applies to: the setting, the output its theorem is about
(`OUTPUTS`: the correlated output policy, the weighted average of the iterates, the last iterate, or
the regret of the played sequence), its learning-rate condition and its rate, where in the paper
it is, whether the theorem's statement was read in the paper's own text (``verified``) and what
was read (``read``: the version and sections, or that only an abstract or another paper's
restatement could be read); a condition that could not be read is written as not verified rather
than guessed.

``--eta theory`` takes the paper whose learning rate it uses: ``theory:NAME`` (`THEORY_RATES`;
``theory`` alone is `DEFAULT_THEORY`), and every run records which (``eta_theory``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Paper",
    "Result",
    "PAPERS",
    "RESULTS",
    "OUTPUTS",
    "ALIASES",
    "AVERAGING_WORDS",
    "VLEARNING_NAMES",
    "THEORY_RATES",
    "DEFAULT_THEORY",
    "parse_theory",
    "results_for",
    "describe_algorithm",
    "catalogue_markdown",
]

#: What a theorem is about.
OUTPUTS = ("correlated output policy", "weighted average", "last iterate", "regret")


@dataclass(frozen=True)
class Paper:
    """A paper of the catalogue: ``key`` is its name in ``--eta theory:KEY`` and in the tables."""

    key: str
    authors: str
    year: int
    title: str
    venue: str
    arxiv: str | None = None

    @property
    def short(self) -> str:
        """``A year``, ``A and B year`` or ``A et al. year``."""
        names = self.authors.replace(" and ", ", ").split(", ")
        return f"{' and '.join(names) if len(names) <= 2 else names[0] + ' et al.'} {self.year}"


@dataclass(frozen=True)
class Result:
    """One paper's statement about the algorithms it applies to.

    ``applies``: the algorithms by name (``LEARNER+UPDATE``, a V-learning name, or ``LEARNER+*``
    for a learner's normal-form result, which holds for every composition on a one-state,
    one-step game); ``role``: ``defines``, ``analyses``, ``learner`` (a normal-form result about
    the learner) or ``related`` (a neighbouring setting, not this algorithm).

    ``verified`` is true only where the theorem's statement itself (setting, output, learning-rate
    condition and rate) was read in the paper's own text; ``read`` says what was read, in which
    version and section, and what could not be read (an abstract, or another paper's restatement,
    does not verify a statement).
    """

    paper: str
    applies: tuple[str, ...]
    role: str
    setting: str
    output: str
    learning_rate: str
    rate: str
    where: str
    verified: bool
    read: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {self.output!r}")
        if self.role not in ("defines", "analyses", "learner", "related"):
            raise ValueError(f"unknown role {self.role!r}")
        if not isinstance(self.verified, bool):
            raise ValueError(f"verified must be True or False, got {self.verified!r}")


_PAPER_LIST = (
    Paper(
        "mao2024",
        "Mao, Qiu, Wang, Franke, Kalbarczyk and Başar",
        2024,
        "Õ(T^-1) Convergence to (Coarse) Correlated Equilibria in Full-Information General-Sum Markov Games",
        "L4DC 2024",
        "2403.07890",
    ),
    Paper(
        "zhang2022",
        "Zhang, Liu, Wang, Xiong, Li and Bai",
        2022,
        "Policy Optimization for Markov Games: Unified Framework and Faster Convergence",
        "NeurIPS 2022",
        "2206.02640",
    ),
    Paper(
        "yang-ma2023",
        "Yang and Ma",
        2023,
        "O(T^-1) Convergence of Optimistic-Follow-the-Regularized-Leader in Two-Player Zero-Sum Markov Games",
        "ICLR 2023",
        "2209.12430",
    ),
    Paper(
        "cai-luo-wei-zheng2024",
        "Cai, Luo, Wei and Zheng",
        2024,
        "Near-Optimal Policy Optimization for Correlated Equilibrium in General-Sum Markov Games",
        "AISTATS 2024",
        "2401.15240",
    ),
    Paper(
        "syrgkanis2015",
        "Syrgkanis, Agarwal, Luo and Schapire",
        2015,
        "Fast Convergence of Regularized Learning in Games",
        "NeurIPS 2015",
        "1507.00407",
    ),
    Paper(
        "daskalakis2021",
        "Daskalakis, Fishelson and Golowich",
        2021,
        "Near-Optimal No-Regret Learning in General Games",
        "NeurIPS 2021",
        "2108.06924",
    ),
    Paper(
        "farina2021",
        "Farina, Kroer and Sandholm",
        2021,
        "Faster Game Solving via Predictive Blackwell Approachability: Connecting Regret Matching and Mirror Descent",
        "AAAI 2021",
        "2007.14358",
    ),
    Paper(
        "farina2023",
        "Farina, Grand-Clément, Kroer, Lee and Luo",
        2023,
        "Regret Matching+: (In)Stability and Fast Convergence in Games",
        "NeurIPS 2023",
        "2305.14709",
    ),
    Paper(
        "cai2025",
        "Cai, Farina, Grand-Clément, Kroer, Lee, Luo and Zheng",
        2025,
        "Last-Iterate Convergence Properties of Regret-Matching Algorithms in Games",
        "ICLR 2025",
        "2311.00676",
    ),
    Paper(
        "wei2021",
        "Wei, Lee, Zhang and Luo",
        2021,
        "Last-iterate Convergence of Decentralized Optimistic Gradient Descent/Ascent in Infinite-horizon Competitive Markov Games",
        "COLT 2021",
        "2102.04540",
    ),
    Paper(
        "cen-wei-chi2021",
        "Cen, Wei and Chi",
        2021,
        "Fast Policy Extragradient Methods for Competitive Games with Entropy Regularization",
        "NeurIPS 2021; JMLR 2024",
        "2105.15186",
    ),
    Paper(
        "anagnostides2022",
        "Anagnostides, Daskalakis, Farina, Fishelson, Golowich and Sandholm",
        2022,
        "Near-Optimal No-Regret Learning for Correlated Equilibria in Multi-Player General-Sum Games",
        "STOC 2022",
        "2111.06008",
    ),
    Paper(
        "anagnostides2022b",
        "Anagnostides, Farina, Kroer, Lee, Luo and Sandholm",
        2022,
        "Uncoupled Learning Dynamics with O(log T) Swap Regret in Multiplayer Games",
        "NeurIPS 2022",
        "2204.11417",
    ),
    Paper(
        "jin2021",
        "Jin, Liu, Wang and Yu",
        2021,
        "V-Learning: A Simple, Efficient, Decentralized Algorithm for Multiagent RL",
        "arXiv 2021; Mathematics of Operations Research 2024",
        "2110.14555",
    ),
    Paper(
        "song-mei-bai2021",
        "Song, Mei and Bai",
        2021,
        "When Can We Learn General-Sum Markov Games with a Large Number of Players Sample-Efficiently?",
        "ICLR 2022",
        "2110.04184",
    ),
    Paper(
        "mao-yang-zhang-basar2022",
        "Mao, Yang, Zhang and Başar",
        2022,
        "On Improving Model-Free Algorithms for Decentralized Multi-Agent Reinforcement Learning",
        "ICML 2022",
        "2110.05707",
    ),
    Paper(
        "mao-basar2022",
        "Mao and Başar",
        2022,
        "Provably Efficient Reinforcement Learning in Decentralized General-Sum Markov Games",
        "Dynamic Games and Applications 2023 (online 2022)",
        "2110.05682",
    ),
)
#: The papers by key.
PAPERS: dict[str, Paper] = {p.key: p for p in _PAPER_LIST}

_FULL = "full information (every player's exact utilities)"
# Mao et al. 2024, as read: the setting of its Section 2.
_MAO_SETTING = (
    "finite-horizon (episodic) N-player general-sum Markov games: H steps, rewards r_{h,i} in [0, 1] and transitions "
    "P_h per step, a fixed initial state s_1; full information (each player can query [Q_{h,i} pi_{h,-i}](s, a_i) for "
    "each of its actions)"
)
_MAO_SOURCE = "the paper's arXiv LaTeX source (2403.07890, the version with the post-submission note on its page 3)"
# The paper numbers its algorithms in the order 1 (BM-OFTRL), 2 (its output policy), 3 (stage-based
# OFTRL), 4 (its output policy, in the appendix); markovgames' other pages call them 1, 3, 2, 4.
_NUMBERING = (
    "The paper numbers its algorithms 1 (BM-OFTRL), 2 (its output policy), 3 (stage-based OFTRL) and 4 (its output "
    "policy, in the appendix); markovgames' other pages and messages call the CE output policy 'Algorithm 3' and the "
    "stage-based dynamics 'Algorithm 2'."
)
_ABSTRACT_ONLY = "only the abstract could be read"


def _mao_on(other: str) -> str:
    """What Mao et al. 2024 (read in full) say of Zhang et al. 2022 and of Yang and Ma 2023 (``other``: the one not
    described)."""
    return (
        f"Mao et al. 2024 (read in full) cite it with {other} for Õ(T^-1) convergence of OFTRL with smooth value updates "
        "to a Nash equilibrium in two-player zero-sum full-information Markov games, whose outputs 'do not require such "
        "a shared randomness and generally output Markov policies'"
    )


#: The statements, each about the algorithms it names.
RESULTS: tuple[Result, ...] = (
    Result(
        "mao2024",
        ("bm-logbarrier+smooth",),
        "defines",
        _MAO_SETTING,
        "correlated output policy",
        "eta = 1/(256 N H sqrt(H A_max)) (Theorem 1; the per-state swap-regret lemma of its proof needs eta <= this value)",
        "CE-Gap(pi_bar) <= 6144 N H^(7/2) A_max^(5/2) log T / T for the output policy pi_bar (Theorem 1)",
        "Section 3: Algorithm 1 (BM-OFTRL with the log barrier, smooth value update alpha_t = (H+1)/(H+t)), its output "
        "policy pi_bar = pi_bar_1^T (the paper's Algorithm 2), Theorem 1",
        True,
        f"read in {_MAO_SOURCE}: Sections 2 and 3 and the appendix with the proof of Theorem 1",
        _NUMBERING,
    ),
    Result(
        "mao2024",
        ("hedge+stage",),
        "defines",
        _MAO_SETTING,
        "correlated output policy",
        "eta_tau = Theta(1/(N log^4 L_tau)) in each stage tau (Theorem 2; the constant is not given: markovgames sets "
        "it to 1 and uses max(1, ln L_tau)); the policy update is argmax_x <x, eta_tau ell^t / H> - R(x), R the negative "
        "entropy",
        "CCE-Gap(pi_bar) = O(N H^3 log A_max log^5 T / T) for the output policy pi_bar (Theorem 2)",
        "Section 4: Algorithm 3 (stage-based OFTRL; stages L_1 = H, L_(tau+1) = floor((1 + 1/H) L_tau)), its output policy "
        "(the appendix's Algorithm 4, from a t drawn uniformly in [T]), Theorem 2",
        True,
        f"read in {_MAO_SOURCE}: Section 4 and the appendix with the proof of Theorem 2, which rests on Theorem 3.1 of "
        "Daskalakis et al. 2021 (restated there as a lemma)",
        _NUMBERING,
    ),
    Result(
        "mao2024",
        ("hedge+smooth",),
        "defines",
        _MAO_SETTING,
        "correlated output policy",
        "none analysed; the simulations use eta = 0.2 for all three algorithms (appendix, simulation details); "
        "markovgames' theory rate uses Theorem 1's (a choice)",
        "none proved ('We did not prove the convergence of such an algorithm'); CCE-Gap x T levels off in the paper's "
        "simulation, and its conclusion leaves Õ(T^-1) for it open",
        "Section 5 ('Smooth OFTRL CCE': OFTRL 'with incremental value updates similar to that of Algorithm 1 for "
        "learning CCE'), the conclusion, the appendix's simulation details",
        True,
        f"read in {_MAO_SOURCE}: Section 5, the conclusion and the appendix; its regulariser and output policy are not "
        "specified (markovgames' choices: docs/explanation.md)",
    ),
    Result(
        "zhang2022",
        ("hedge+smooth",),
        "analyses",
        f"two-player zero-sum Markov games, {_FULL}; finite horizon (the abstract's numerical example is 'a simple "
        "game with H=2 layers'); also multi-player general-sum games, for a CCE",
        "weighted average",
        "not verified",
        "Õ(T^-5/6)-approximate Nash equilibrium in T iterations for OFTRL with smooth value updates, for the "
        "'state-wise average policy' (averaged with 'weights determined by the speed of the value updates'); Õ(T^-1) "
        "for 'a similar algorithm with slightly modified value update rule' (not in markovgames); Õ(T^-3/4) to a CCE in "
        "multi-player general-sum games",
        "abstract (arXiv 2206.02640; NeurIPS 2022)",
        False,
        f"{_ABSTRACT_ONLY} (arXiv and NeurIPS versions); {_mao_on('Yang and Ma')}, and for Õ(T^-3/4) to a CCE in general-sum "
        "games with a correlated output policy, as theirs. Not read: the theorems, the learning-rate condition, whether "
        "the OFTRL regulariser is the negative entropy (hedge), that the average's weights are the value update's "
        "alpha_T^t",
    ),
    Result(
        "yang-ma2023",
        ("hedge+smooth",),
        "analyses",
        f"two-player zero-sum Markov games, {_FULL}; finite horizon as far as could be read (Mao et al. 2024 use its "
        "Lemmas 4 and 6 on the weights alpha_t^j of the step size alpha_t = (H+1)/(H+t) of an H-step horizon, e.g. "
        "sum_j alpha_t^j / j <= (1 + 1/H)/t); its own setting section could not be read",
        "weighted average",
        "not verified",
        "O(T^-1)-approximate Nash equilibrium in T iterations for OFTRL with smooth value updates (no log factor in the "
        "abstract), improving Zhang et al.'s Õ(T^-5/6)",
        "abstract (arXiv 2209.12430; ICLR 2023)",
        False,
        f"{_ABSTRACT_ONLY}, with the first paragraphs of the introduction (arXiv 2209.12430 and the ICLR 2023 text); "
        f"{_mao_on('Zhang et al.')}. Not read: the setting section, the algorithm, the learning-rate condition, the output's "
        "weights (a state-wise average of the iterates, as Mao et al.'s remark and Zhang et al.'s framework indicate), "
        "the constants",
    ),
    Result(
        "cai-luo-wei-zheng2024",
        ("bm-logbarrier+smooth",),
        "analyses",
        "multi-player general-sum Markov games; full information as far as could be read (Mao et al. 2024 call it "
        "'the same problem' as their Theorem 1's)",
        "correlated output policy",
        "not verified",
        "Õ(T^-1) to a correlated equilibrium, with smooth value updates and OFTRL with the log-barrier regulariser "
        "(abstract); per Mao et al. 2024, one log T factor more than their Theorem 1",
        "abstract (arXiv 2401.15240 v2; AISTATS 2024)",
        False,
        f"{_ABSTRACT_ONLY}; Mao et al. 2024's post-submission note (read): its algorithm performs V-value updates, "
        "shown equivalent to Q-value updates. Not read: the theorem, the learning rate, the output policy, whether its "
        "swap-regret learner is the Blum–Mansour reduction",
    ),
    Result(
        "syrgkanis2015",
        ("hedge+*",),
        "learner",
        "N-player normal-form games (a one-state, one-step Markov game; hedge+smooth-uniform there is optimistic Hedge: "
        "OFTRL with the negative entropy and the last utility as prediction)",
        "regret",
        "not verified in the paper; a third-party transcription of its statements (the formalpedia repository on "
        "GitHub, citing arXiv 1507.00407v5, p. 5) gives Corollary 8: eta = 1/(2(N-1)) for every player, the sum of "
        "regrets at most N R / eta; Corollary 12: eta = (N-1)^(-1/2) T^(-1/4), each player's regret at most "
        "(R + 4) sqrt(N-1) T^(1/4), R the range of the regulariser",
        "individual regret O(T^(1/4)), average O(T^-3/4); the sum of utilities converges to an approximate optimum at "
        "O(T^-1) (abstract)",
        "abstract (arXiv 1507.00407 v5; NeurIPS 2015)",
        False,
        f"{_ABSTRACT_ONLY} (the NeurIPS text and arXiv v5); the corollaries' learning rates were read only in the "
        "transcription named above, so markovgames implements none of them",
    ),
    Result(
        "daskalakis2021",
        ("hedge+*",),
        "learner",
        "N-player general-sum normal-form games, every player running optimistic Hedge",
        "regret",
        "not read in the paper; Mao et al. 2024 (read) restate its Theorem 3.1: OFTRL with the negative entropy and "
        "eta = Theta(1/(N log^4 T)) (the constant is not given)",
        "each player's regret poly(log T), Õ(T^-1) to a CCE (abstract); as Mao et al. restate Theorem 3.1, "
        "Reg_i^T <= C N log A_i log^4 T for a constant C > 1",
        "abstract (arXiv 2108.06924; NeurIPS 2021); Theorem 3.1 as restated by Mao et al. 2024 (a lemma of their appendix)",
        False,
        f"{_ABSTRACT_ONLY}; the statement was read as Mao et al. 2024 restate it, which their Theorem 2 (hedge+stage) "
        "uses per stage",
    ),
    Result(
        "anagnostides2022",
        ("bm-hedge+*",),
        "learner",
        "N-player general-sum normal-form games",
        "regret",
        "not verified",
        "O(polylog T) swap regret for the Blum–Mansour algorithm, extending Daskalakis et al.'s result for optimistic "
        "multiplicative weights (OMWU); Õ(T^-1) to a correlated equilibrium (abstract)",
        "abstract (arXiv 2111.06008; STOC 2022)",
        False,
        f"{_ABSTRACT_ONLY}. Not read: the theorem, its learning rate, that the Blum–Mansour result is for optimistic "
        "Hedge base learners (the abstract's context)",
    ),
    Result(
        "anagnostides2022b",
        ("bm-logbarrier+*",),
        "learner",
        "N-player general-sum normal-form games",
        "regret",
        "a time-invariant learning rate (abstract); its value was not read in the paper: Mao et al. 2024 (read) extend "
        "its Theorem 4.3, for BM-OFTRL with the log barrier, to time-varying rates eta_t <= 1/(128 sqrt(A))",
        "O(log T) swap regret for every player when all follow its dynamics (optimistic learning with self-concordant "
        "barriers), O(sqrt(T)) against an adversary; Õ(T^-1) to a correlated equilibrium (abstract)",
        "abstract (NeurIPS 2022; arXiv 2204.11417); Theorem 4.3 as Mao et al. 2024 extend it",
        False,
        f"{_ABSTRACT_ONLY}; Mao et al. 2024 (read) choose the log barrier because it satisfies this paper's "
        "self-concordance condition",
    ),
    Result(
        "farina2021",
        ("rm-plus+*", "bm-rm-plus+*"),
        "learner",
        "Blackwell approachability for repeated games with vector-valued payoffs; experiments on 18 two-player zero-sum "
        "extensive-form games",
        "regret",
        "none (regret matching+ and its predictive variant have no learning rate)",
        "no convergence rate in the abstract: predictive RM+ with counterfactual regret minimisation converges faster "
        "than CFR+, DCFR and LCFR in its experiments (all but two poker games)",
        "abstract (arXiv 2007.14358 v2; AAAI 2021)",
        False,
        f"{_ABSTRACT_ONLY}; it defines predictive RM+ (rm-plus with optimism), not the Blum–Mansour reduction over it",
    ),
    Result(
        "farina2023",
        ("sprm-plus+*",),
        "learner",
        "normal-form games",
        "regret",
        "not verified",
        "O(T^(1/4)) individual regret and O(1) social regret via RM+ with predictions, with its two fixes (restarting; "
        "chopping off the positive orthant, the smooth variant) (abstract): average individual regret O(T^-3/4), so "
        "O(T^-3/4) to a CCE",
        "abstract (arXiv 2305.14709; NeurIPS 2023)",
        False,
        f"{_ABSTRACT_ONLY}",
    ),
    Result(
        "cai2025",
        ("exrm-plus+*", "sprm-plus+*"),
        "learner",
        "two-player zero-sum normal-form (matrix) games",
        "last iterate",
        "not verified",
        "asymptotic last-iterate convergence (without a rate) and O(1/sqrt(t)) best-iterate convergence of extragradient "
        "RM+ and smooth predictive RM+; linear last-iterate convergence with restarting (markovgames does not restart) "
        "(abstract)",
        "abstract (arXiv 2311.00676 v2; ICLR 2025)",
        False,
        f"{_ABSTRACT_ONLY}",
    ),
    Result(
        "wei2021",
        ("ogda+smooth", "ogda+smooth-uniform", "ogda+smooth-linear", "ogda+stage"),
        "related",
        "infinite-horizon discounted two-player zero-sum Markov games: optimistic gradient descent ascent at each state "
        "with a critic that slowly learns each state's value; decentralized (no need to see the opponent's actions)",
        "last iterate",
        "not verified",
        "a finite-time last-iterate convergence guarantee to the set of Nash equilibria under self-play (the rate was not read)",
        "abstract (arXiv 2102.04540; COLT 2021)",
        False,
        f"{_ABSTRACT_ONLY}",
        "Not the finite-horizon compositions of ogda: another setting and another value update.",
    ),
    Result(
        "wei2021",
        ("ogda+discounted-smooth",),
        "related",
        "infinite-horizon discounted two-player zero-sum Markov games: optimistic gradient descent ascent at each state "
        "with a critic that slowly learns each state's value; decentralized (no need to see the opponent's actions)",
        "last iterate",
        "not verified",
        "a finite-time last-iterate convergence guarantee to the set of Nash equilibria under self-play (the rate was not read)",
        "abstract (arXiv 2102.04540; COLT 2021); the first author's public code (GitHub bahh723/competitive-markov-game, "
        "Agent.py)",
        False,
        f"{_ABSTRACT_ONLY}; the public code was read: per state a critic V <- V + alpha_t (<x^t, Q^t> - V) with Q^t = r + "
        "gamma P V from the critic before its update, V = 0 at the start, alpha_t = (H+1)/(H+t) with H = 1/(1-gamma) (the "
        "critic of discounted-smooth), and optimistic projected gradient steps on Q^t. Not read: the paper's statement of "
        "its critic, step sizes and learning rate, the theorem and its rate",
        "The discounted paper nearest to ogda+discounted-smooth: its setting and, in its code, its critic; whether "
        "markovgames' ogda learner takes the paper's policy steps was not checked, so nothing it proves is claimed here.",
    ),
    Result(
        "cen-wei-chi2021",
        ("extragradient+discounted-smooth",),
        "related",
        "two-player zero-sum matrix games with entropy regularisation, extended to entropy-regularised zero-sum Markov "
        "games; decentralized multiplicative updates, each player using its own payoff",
        "last iterate",
        "not verified",
        "linear convergence to the quantal response equilibrium (the entropy-regularised game's), and an approximate "
        "Nash equilibrium of the unregularised matrix game at a sublinear rate (abstract)",
        "abstract (arXiv 2105.15186; NeurIPS 2021; JMLR 2024)",
        False,
        f"{_ABSTRACT_ONLY}",
        "Another algorithm: policy extragradient on the entropy-regularised game (markovgames' extragradient has no "
        "entropy term, and discounted-smooth is not its value update); a discounted paper with extragradient steps.",
    ),
    *[
        Result(
            paper,
            ("hedge+discounted-smooth",),
            "related",
            "finite-horizon games (see hedge+smooth): discounted-smooth is markovgames' discounted analogue of the smooth "
            "value update analysed there (alpha_t = (k+1)/(k+t) with the effective horizon k = 1/(1-gamma) for H; the "
            "critic and the state-wise weighted average alike)",
            "weighted average",
            "not verified",
            "none known for discounted games: the paper's rate (see hedge+smooth) is stated for finite horizons",
            "abstract (see hedge+smooth)",
            False,
            f"{_ABSTRACT_ONLY}; no discounted statement of the smooth value update could be read in it",
            "Not a discounted paper: its results are not claimed for this composition.",
        )
        for paper in ("zhang2022", "yang-ma2023")
    ],
    Result(
        "jin2021",
        ("cce-v",),
        "defines",
        "episodic Markov games: multi-player general-sum for CCE and CE, two-player zero-sum for Nash equilibria; fully "
        "decentralized, every agent running V-learning with an adversarial bandit subroutine",
        "correlated output policy",
        "the adversarial bandit's rates (docs/vlearning.md)",
        "a number of samples that scales with max_i A_i rather than with the joint action space prod_i A_i (abstract; "
        "the exponents were not read)",
        "abstract (arXiv 2110.14555; Mathematics of Operations Research 2024)",
        False,
        f"{_ABSTRACT_ONLY}; the algorithm as docs/vlearning.md states it (Algorithms 1, 3)",
    ),
    Result(
        "song-mei-bai2021",
        ("cce-v", "ce-v"),
        "defines",
        "m-player general-sum Markov games with H steps, S states and A_i actions per player, learned from episodes "
        "(an adversarial bandit subroutine for each)",
        "correlated output policy",
        "the adversarial bandit's rates (docs/vlearning.md)",
        "Õ(H^5 S max_i A_i / eps^2) episodes for an eps-CCE; Õ(H^6 S max_i A_i^2 / eps^2) for an eps-CE (abstract)",
        "abstract (arXiv 2110.04184 v2; ICLR 2022)",
        False,
        f"{_ABSTRACT_ONLY}",
    ),
    Result(
        "mao-yang-zhang-basar2022",
        ("stage-v",),
        "defines",
        "general-sum Markov games, decentralized (each agent its own information): stage-based V-learning for CCE and CE",
        "correlated output policy",
        "the bandit's rates (docs/vlearning.md)",
        "not read (the abstract states no rate)",
        "abstract (arXiv 2110.05707; ICML 2022)",
        False,
        f"{_ABSTRACT_ONLY}: 'stage-based V-learning algorithms' that 'circumvent a rather complicated no-weighted-regret "
        "bandit subroutine'; the stage-based form as docs/vlearning.md states it was not checked against this paper",
    ),
    Result(
        "mao-basar2022",
        ("cce-v", "stage-v"),
        "related",
        "episodic general-sum Markov games, decentralized (each agent its own information): every agent runs optimistic "
        "V-learning with a stabilized online mirror descent subroutine (not the stage-based update)",
        "correlated output policy",
        "not verified (a dynamic learning rate, per the abstract)",
        "Õ(H^6 S A / eps^2) episodes for an eps-CCE, A the largest action set (abstract)",
        "abstract (arXiv 2110.05682; Dynamic Games and Applications)",
        False,
        f"{_ABSTRACT_ONLY}; the venue from citing bibliographies",
    ),
)

#: The paper's algorithm names, aliases of compositions (`markovgames.dynamics.ALGORITHMS`; a test
#: checks that the two agree).
ALIASES = {"smooth_ce": "bm-logbarrier+smooth", "stage_cce": "hedge+stage", "smooth_cce": "hedge+smooth"}
#: V-learning's names (`markovgames.dynamics.VLEARNING_ALGORITHMS`).
VLEARNING_NAMES = ("cce-v", "ce-v", "stage-v")

#: The papers whose learning rate ``--eta theory:KEY`` uses, with what it is per value update. A
#: paper is here only where its theorem's learning rate was read in its own text (`Result.verified`).
THEORY_RATES: dict[str, str] = {
    "mao2024": "Mao et al. 2024: Theorem 1's 1/(256 N H sqrt(H A_max)) for the smooth updates (proved for "
    "bm-logbarrier+smooth, whose update is the smooth one with alpha_t = (H+1)/(H+t); used as a choice for every other "
    "learner and for smooth-uniform and smooth-linear), Theorem 2's Theta(1/(N log^4 L_tau)) per stage for the "
    "stage-based one, as 1/(N max(1, ln L_tau)^4) (proved for hedge+stage up to the constant, which the theorem does "
    "not give)",
}
#: The weighted average of the iterates each value update carries (``run --weighted-average``;
#: `markovgames._schedules.average_weights`), in words.
AVERAGING_WORDS = {
    "smooth": "paper weights alpha_T^t = alpha_t prod_{j>t} (1 - alpha_j), alpha_t = (H+1)/(H+t) (the weights of Mao "
    "et al. 2024's output policy; the state-wise average policy of Zhang et al. 2022, whose abstract says only "
    "'weights determined by the speed of the value updates')",
    "smooth-uniform": "uniform weights 1/T",
    "smooth-linear": "linear weights 2t/(T(T+1))",
    "stage": "the mean of the last complete stage (1/L_tau on it; stage 1's iterations so far before it ends)",
    "discounted-smooth": "weights alpha_T^t = alpha_t prod_{j>t} (1 - alpha_j), alpha_t = (k+1)/(k+t) with k = 1/(1-gamma) "
    "(its own value estimate's weights; the discounted analogue of the smooth update's)",
    "discounted-smooth-uniform": "uniform weights 1/T",
    "discounted-smooth-linear": "linear weights 2t/(T(T+1))",
}
#: What ``--eta theory`` alone means.
DEFAULT_THEORY = "mao2024"


def parse_theory(eta) -> str | None:
    """The paper key of a theory learning rate (``"theory"``: `DEFAULT_THEORY`, ``"theory:KEY"``:
    ``KEY``), ``None`` for any other rate; a ``ValueError`` names an unknown or unimplemented paper."""
    if not isinstance(eta, str) or not (eta == "theory" or eta.startswith("theory:")):
        return None
    key = DEFAULT_THEORY if eta == "theory" else eta[len("theory:") :]
    if key in THEORY_RATES:
        return key
    known = ", ".join(f"theory:{k}" for k in THEORY_RATES)
    if key in PAPERS:
        raise ValueError(
            f"learning rate {eta!r}: markovgames implements no learning rate of {PAPERS[key].short} (its condition is "
            f"not verified in the catalogue); the rates it implements: {known} (see 'markovgames algorithms show NAME')"
        )
    raise ValueError(
        f"learning rate {eta!r}: unknown paper {key!r}; the rates markovgames implements: {known} "
        "(see 'markovgames algorithms show NAME')"
    )


def _matches(pattern: str, name: str) -> bool:
    if pattern.endswith("+*"):
        return name.split("+", 1)[0] == pattern[:-2]
    return pattern == name


def results_for(name: str) -> list[Result]:
    """The catalogue's statements about the built-in algorithm ``name`` (a composition, an alias or a
    V-learning name), those about the whole algorithm first."""
    name = ALIASES.get(name, name)
    found = [r for r in RESULTS if any(_matches(p, name) for p in r.applies)]
    order = {"defines": 0, "analyses": 1, "related": 2, "learner": 3}
    return sorted(found, key=lambda r: order[r.role])


def _verified_words(r: Result) -> str:
    return ("yes: " if r.verified else "no: ") + r.read


def _result_lines(r: Result, indent: str) -> list[str]:
    paper = PAPERS[r.paper]
    head = f"{paper.authors} ({paper.venue}){'' if paper.arxiv is None else f', arXiv {paper.arxiv}'} [{r.role}]"
    rows = [
        ("setting", r.setting),
        ("output", r.output),
        ("learning rate", r.learning_rate),
        ("rate", r.rate),
        ("where", r.where),
        ("verified", _verified_words(r)),
    ] + ([("note", r.note)] if r.note else [])
    return [f"{indent}{head}"] + [f"{indent}  {k:<14}{v}" for k, v in rows]


def describe_algorithm(name: str, learner_line: str = "", update_line: str = "", theory_line: str = "") -> str:
    """The text of ``markovgames algorithms show NAME``: what it is made of (the lines the caller
    gives from the registries) and the catalogue's papers about it."""
    composition = ALIASES.get(name, name)
    title = name if composition == name else f"{name} (= {composition})"
    aliases = [a for a, c in ALIASES.items() if c == name]
    if aliases:
        title += f" (alias: {', '.join(aliases)})"
    out = [title]
    out += [line for line in (learner_line, update_line, theory_line) if line]
    found = results_for(name)
    whole = [r for r in found if r.role in ("defines", "analyses")]
    out += ["", "Papers:"]
    for r in found:
        out += _result_lines(r, "  ")
    if not whole:
        out.append(
            "  No paper in the catalogue defines or analyses this composition as a whole: its learner's and its value "
            "update's papers are cited above, and what they prove does not carry over to the composition."
        )
    return "\n".join(out)


def catalogue_markdown(compositions: list[tuple[str, str, str]]) -> str:
    """``docs/papers.md``: the papers, then for every algorithm (``compositions``: ``(name, learner
    citation, value update citation)`` of every built-in composition, alias and V-learning name)
    its papers' statements."""
    lines = [
        "# The algorithms and their papers",
        "",
        "Generated from the catalogue in `markovgames._papers` (`markovgames algorithms show NAME` prints "
        "the same for one algorithm); `tests/test_papers.py` keeps this page equal to it.",
        "",
        "Each statement gives the setting of the paper's theorem, the output it is about (the **correlated output "
        "policy**, the **weighted average** of the iterates, the **last iterate**, or the **regret** of the played "
        "sequence), its learning-rate condition and its rate, where it is, and what was read. **Verified: yes** only "
        "where the theorem's statement itself was read in the paper's own text (the version and sections are named); "
        "otherwise **no**, with what could be read (an abstract, or another paper's restatement, which is cited as "
        "such). A condition that could not be read is written as not verified, never guessed.",
        "",
        "`--eta theory` takes the paper whose learning rate it uses: `--eta theory:NAME`, with `theory` alone "
        f"meaning `theory:{DEFAULT_THEORY}`; every run records which (`eta_theory` in `metrics.json` and in a "
        "sweep's results). The rates markovgames implements:",
        "",
        *[f"- `theory:{k}`: {v}." for k, v in THEORY_RATES.items()],
        "",
        "## Papers",
        "",
        "| key | authors | title | venue |",
        "|---|---|---|---|",
        *[
            f"| `{p.key}` | {p.authors} | {p.title} | {p.venue}{'' if p.arxiv is None else f', arXiv {p.arxiv}'} |"
            for p in _PAPER_LIST
        ],
        "",
        "## Algorithms",
        "",
    ]
    for name, learner, update in compositions:
        composition = ALIASES.get(name, name)
        title = f"### `{name}`" + ("" if composition == name else f" (= `{composition}`)")
        lines += [title, ""]
        if learner or update:
            lines += [f"Learner: {learner}. Value update: {update}.", ""]
        found = results_for(name)
        for r in found:
            paper = PAPERS[r.paper]
            lines.append(
                f"- **{paper.short}** ({r.role}; {r.where}): {r.setting}. Output: {r.output}. Learning rate: "
                f"{r.learning_rate}. Rate: {r.rate}. Verified: {_verified_words(r)}." + (f" {r.note}" if r.note else "")
            )
        if not any(r.role in ("defines", "analyses") for r in found):
            lines.append("- No paper in the catalogue defines or analyses this composition as a whole.")
        lines.append("")
    return "\n".join(lines)
