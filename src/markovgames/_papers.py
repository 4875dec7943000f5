"""The catalogue by paper: for every built-in algorithm, the papers that define or analyse it.

One frozen table (`PAPERS`, `RESULTS`) that ``markovgames algorithms show NAME`` and
``docs/papers.md`` read (a test keeps the page equal to `catalogue_markdown`). Each `Result` is one
paper's statement about the algorithms it applies to: the setting, the output its theorem is about
(`OUTPUTS`: the correlated output policy, the weighted average of the iterates, the last iterate, or
the regret of the played sequence), its learning-rate condition and its rate, where in the paper
it is, and what of it was checked against the paper's own text (``verified``): a statement read
only in an abstract says so, and a condition that could not be read is written as not verified
rather than guessed.

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
    """

    paper: str
    applies: tuple[str, ...]
    role: str
    setting: str
    output: str
    learning_rate: str
    rate: str
    where: str
    verified: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {self.output!r}")
        if self.role not in ("defines", "analyses", "learner", "related"):
            raise ValueError(f"unknown role {self.role!r}")


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
        "arXiv 2024",
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
        "mao-basar2022",
        "Mao and Başar",
        2022,
        "Provably Efficient Reinforcement Learning in Decentralized General-Sum Markov Games",
        "the year as this project has cited it; the venue was not verified",
    ),
)
#: The papers by key.
PAPERS: dict[str, Paper] = {p.key: p for p in _PAPER_LIST}

_FULL = "full information (every player's exact utilities)"
_ABSTRACT = "setting, output and rate from the abstract; "
_NO_RATE_READ = "the learning-rate condition was not verified (not readable in the sources at hand)"

#: The statements, each about the algorithms it names.
RESULTS: tuple[Result, ...] = (
    Result(
        "mao2024",
        ("bm-logbarrier+smooth",),
        "defines",
        f"finite-horizon N-player general-sum Markov games, {_FULL}",
        "correlated output policy",
        "eta = 1/(256 N H sqrt(H A_max)) (Theorem 1, as markovgames implements it since its first release)",
        "Õ(T^-1) gap of the correlated equilibrium (CE) of the output policy (Algorithm 3)",
        "Algorithms 1 and 3, Theorem 1",
        "rate and setting from the abstract; the learning rate is the one markovgames has implemented and tested since "
        "its first release (not re-read for this catalogue)",
    ),
    Result(
        "mao2024",
        ("hedge+stage",),
        "defines",
        f"finite-horizon N-player general-sum Markov games, {_FULL}",
        "correlated output policy",
        "eta_tau = Theta(1 / (N (ln L_tau)^4)) per stage tau (Theorem 2; markovgames sets the constant to 1 and uses "
        "max(1, ln L_tau))",
        "Õ(T^-1) gap of the coarse correlated equilibrium (CCE) of the output policy (Algorithm 4)",
        "Algorithms 2 and 4, Theorem 2",
        "rate and setting from the abstract; the learning rate as markovgames implements it since its first release",
    ),
    Result(
        "mao2024",
        ("hedge+smooth",),
        "defines",
        f"finite-horizon N-player general-sum Markov games, {_FULL}",
        "correlated output policy",
        "none stated ('Smooth OFTRL CCE' is simulated, not analysed); markovgames' theory rate uses Theorem 1's (a choice)",
        "none proved; simulated at O(1/T)",
        "Section 5 (simulations)",
        "as recorded in docs/explanation.md (the paper simulates it without specifying it)",
    ),
    Result(
        "zhang2022",
        ("hedge+smooth",),
        "analyses",
        f"two-player zero-sum finite-horizon Markov games (H steps), {_FULL}",
        "weighted average",
        "not verified",
        "Õ(T^-5/6) Nash gap of the state-wise average policy with the value update's weights alpha_T^t (and "
        "Õ(T^-1) with a modified value update, which markovgames does not implement)",
        "abstract",
        _ABSTRACT + _NO_RATE_READ + "; whether its OFTRL regulariser is the negative entropy (hedge) was not verified",
        "Also: Õ(T^-3/4) to a CCE in multi-player general-sum games (its output policy for that result: not verified).",
    ),
    Result(
        "yang-ma2023",
        ("hedge+smooth",),
        "analyses",
        f"two-player zero-sum Markov games, {_FULL} (built on Zhang et al.'s finite-horizon framework)",
        "weighted average",
        "not verified",
        "O(T^-1) Nash gap (the paper's statement is for the state-wise weighted average with alpha_T^t; markovgames "
        "evaluates it as weighted_average)",
        "abstract",
        _ABSTRACT + _NO_RATE_READ + "; the output notion (the weighted average) could not be read beyond the abstract",
    ),
    Result(
        "cai-luo-wei-zheng2024",
        ("bm-logbarrier+smooth",),
        "analyses",
        f"N-player general-sum Markov games, {_FULL}",
        "correlated output policy",
        "not verified",
        "Õ(T^-1) to a correlated equilibrium, from smooth value updates and log-barrier OFTRL",
        "abstract",
        _ABSTRACT + _NO_RATE_READ + "; whether its learner is the Blum–Mansour reduction over log-barrier OFTRL, and "
        "its output notion, were not verified",
    ),
    Result(
        "syrgkanis2015",
        ("hedge+*",),
        "learner",
        "N-player normal-form games (a one-state, one-step Markov game; hedge+smooth-uniform there is optimistic Hedge)",
        "regret",
        "not verified (the RVU property needs a small enough constant rate)",
        "individual average regret O(T^-3/4); the sum of utilities within O(T^-1) of the optimum",
        "abstract",
        _ABSTRACT + _NO_RATE_READ,
    ),
    Result(
        "anagnostides2022",
        ("bm-hedge+*",),
        "learner",
        "N-player general-sum normal-form games",
        "regret",
        "not verified",
        "O(polylog T) swap regret of the Blum–Mansour reduction over optimistic Hedge: Õ(T^-1) to a correlated equilibrium",
        "abstract",
        _ABSTRACT + _NO_RATE_READ,
    ),
    Result(
        "anagnostides2022b",
        ("bm-logbarrier+*",),
        "learner",
        "N-player general-sum normal-form games",
        "regret",
        "a time-invariant learning rate (its value: not verified)",
        "O(log T) swap regret with optimistic learning over self-concordant barriers (the log barrier): Õ(T^-1) to a CE",
        "abstract",
        _ABSTRACT + _NO_RATE_READ,
    ),
    Result(
        "farina2021",
        ("rm-plus+*", "bm-rm-plus+*"),
        "learner",
        "two-player zero-sum normal-form and extensive-form games",
        "regret",
        "none (regret matching+ has no learning rate)",
        "no fast rate stated: predictive RM+ is shown faster than CFR+, DCFR and LCFR in experiments",
        "abstract",
        "from the abstract",
    ),
    Result(
        "farina2023",
        ("sprm-plus+*",),
        "learner",
        "N-player normal-form games",
        "regret",
        "not verified",
        "O(T^1/4) individual regret and O(1) social regret (average regret O(T^-3/4), O(T^-1) to a CCE)",
        "abstract",
        _ABSTRACT + _NO_RATE_READ,
    ),
    Result(
        "cai2025",
        ("exrm-plus+*", "sprm-plus+*"),
        "learner",
        "two-player zero-sum normal-form games",
        "last iterate",
        "not verified",
        "asymptotic last-iterate convergence (no rate), O(1/sqrt(t)) best-iterate; linear with restarts (markovgames "
        "does not restart)",
        "abstract",
        _ABSTRACT + _NO_RATE_READ,
    ),
    Result(
        "wei2021",
        ("ogda+*",),
        "related",
        "discounted (infinite-horizon) two-player zero-sum Markov games, OGDA at every state with a slowly learning critic",
        "last iterate",
        "not verified",
        "finite-time last-iterate convergence to the Nash equilibria (the exponent: not verified)",
        "abstract",
        _ABSTRACT + _NO_RATE_READ,
        "Not the finite-horizon compositions of ogda: another setting and another value update (the discounted engine "
        "is where it belongs).",
    ),
    Result(
        "jin2021",
        ("cce-v",),
        "defines",
        "episodic general-sum Markov games, bandit feedback (each player its own rewards and the states)",
        "correlated output policy",
        "the adversarial bandit's rates (docs/vlearning.md)",
        "a number of episodes polynomial in H, S and max_i A_i (not in the joint action space) for a CCE (CE and NE "
        "for the variants; the exponents: not verified)",
        "abstract",
        "from the abstract; the algorithm as docs/vlearning.md states it (Algorithms 1, 3)",
    ),
    Result(
        "song-mei-bai2021",
        ("cce-v", "ce-v"),
        "defines",
        "episodic m-player general-sum Markov games (H steps, S states), bandit feedback",
        "correlated output policy",
        "the adversarial bandit's rates (docs/vlearning.md)",
        "Õ(H^5 S max_i A_i / eps^2) episodes for an eps-CCE; Õ(H^6 S max_i A_i^2 / eps^2) for an eps-CE",
        "abstract",
        "from the abstract",
    ),
    Result(
        "mao-basar2022",
        ("stage-v",),
        "defines",
        "episodic general-sum Markov games, decentralised (each player its own rewards and the states)",
        "correlated output policy",
        "the bandit's rates (docs/vlearning.md)",
        "Õ(H^6 S A / eps^2) episodes for an eps-CCE (A the largest action set)",
        "abstract",
        "from the abstract of its arXiv version; the stage-based form as docs/vlearning.md states it",
    ),
)

#: The paper's algorithm names, aliases of compositions (`markovgames.dynamics.ALGORITHMS`; a test
#: checks that the two agree).
ALIASES = {"smooth_ce": "bm-logbarrier+smooth", "stage_cce": "hedge+stage", "smooth_cce": "hedge+smooth"}
#: V-learning's names (`markovgames.dynamics.VLEARNING_ALGORITHMS`).
VLEARNING_NAMES = ("cce-v", "ce-v", "stage-v")

#: The papers whose learning rate ``--eta theory:KEY`` uses, with what it is per value update.
THEORY_RATES: dict[str, str] = {
    "mao2024": "Mao et al. 2024: Theorem 1's 1/(256 N H sqrt(H A_max)) for the smooth updates (proved for "
    "bm-logbarrier+smooth, used for every learner), Theorem 2's 1/(N max(1, ln L_tau)^4) per stage for the "
    "stage-based one (proved for hedge+stage)",
}
#: The weighted average of the iterates each value update carries (``run --weighted-average``;
#: `markovgames._schedules.average_weights`), in words.
AVERAGING_WORDS = {
    "smooth": "paper weights alpha_T^t = alpha_t prod_{j>t} (1 - alpha_j), alpha_t = (H+1)/(H+t) (the average "
    "of Zhang et al. 2022 and Yang and Ma 2023)",
    "smooth-uniform": "uniform weights 1/T",
    "smooth-linear": "linear weights 2t/(T(T+1))",
    "stage": "the mean of the last complete stage (1/L_tau on it; stage 1's iterations so far before it ends)",
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


def _result_lines(r: Result, indent: str) -> list[str]:
    paper = PAPERS[r.paper]
    head = f"{paper.authors} ({paper.venue}){'' if paper.arxiv is None else f', arXiv {paper.arxiv}'} [{r.role}]"
    rows = [
        ("setting", r.setting),
        ("output", r.output),
        ("learning rate", r.learning_rate),
        ("rate", r.rate),
        ("where", r.where),
        ("verified", r.verified),
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
        "sequence), its learning-rate condition and its rate, where it is, and what of it was checked against the "
        "paper's own text. A condition that could not be read is written as not verified, never guessed.",
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
                f"{r.learning_rate}. Rate: {r.rate}. Verified: {r.verified}." + (f" {r.note}" if r.note else "")
            )
        if not any(r.role in ("defines", "analyses") for r in found):
            lines.append("- No paper in the catalogue defines or analyses this composition as a whole.")
        lines.append("")
    return "\n".join(lines)
