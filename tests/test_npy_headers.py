"""Damaged ``.npy`` headers that make NumPy warn while parsing them are refused, silently.

NumPy parses a header with ``ast.literal_eval``, which warns about an invalid escape sequence
(a flipped byte can make one). Every reader of the project refuses such a file with its own
error and lets no warning through: the header parser of run directories and game files, the
trajectory check of a resumed run, ``certify``, the saved run state and saved policies.
"""

from __future__ import annotations

import io
import warnings
import zipfile

import numpy as np
import pytest

from markovgames.dynamics._trajectory import FileTrajectory, TrajectoryFileError

#: A header that parses only with a warning from NumPy (an invalid escape sequence), then is
#: refused for its extra key.
WARNING_HEADER = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'n\\s': 0, }"


def _npy_bytes(header: str) -> bytes:
    """A .npy file (format 1.0) whose header dictionary is the literal text ``header``."""
    text = header.encode("latin1")
    text += b" " * (-(10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + b"\0" * 16


@pytest.mark.parametrize("reader", ["verify", "certify"])
def test_a_header_that_makes_numpy_warn_is_refused_without_a_warning(tmp_path, reader):
    """numpy parses a .npy header with ast.literal_eval, which warns about an invalid escape
    sequence (a flipped byte can make one): the readers refuse such a file, and print nothing."""
    from markovgames._files import read_npy_header

    path = tmp_path / "policy_0.npy"
    path.write_bytes(_npy_bytes(WARNING_HEADER))
    # numpy itself warns on this header (the case is real), then refuses its extra key.
    with open(path, "rb") as fh, pytest.warns((SyntaxWarning, DeprecationWarning)), pytest.raises(ValueError):
        np.lib.format.read_magic(fh)
        np.lib.format.read_array_header_1_0(fh)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with open(path, "rb") as fh, pytest.raises(ValueError, match="the header does not parse"):
            read_npy_header(fh)
        if reader == "verify":
            with pytest.raises(TrajectoryFileError, match="not a readable .npy file"):
                FileTrajectory(tmp_path, [(2,)], np.float64, False, records=[])
        else:
            from markovgames.cli import main

            (tmp_path / "policy_1.npy").write_bytes(path.read_bytes())
            args = ["certify", str(tmp_path), "--game", "paper", "--value-update", "smooth", "--out", str(tmp_path / "o")]
            assert main(args) == 2
    assert [str(w.message) for w in caught] == []


def _npz_with_a_bad_member(path, good: dict, bad_name: str) -> None:
    """An .npz archive of the arrays ``good`` and a member ``bad_name`` whose header warns."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in good.items():
            member = io.BytesIO()
            np.save(member, array)
            archive.writestr(f"{name}.npy", member.getvalue())
        archive.writestr(f"{bad_name}.npy", _npy_bytes(WARNING_HEADER))


def test_saved_policies_and_run_states_with_such_a_member_are_refused_without_a_warning(tmp_path):
    from markovgames.dynamics._checkpoint import RunStateError, StateFile
    from markovgames.policies import IndexChainPolicy, MarkovCorrelatedPolicy

    policy = tmp_path / "policy.npz"
    _npz_with_a_bad_member(policy, {"num_players": np.asarray(2)}, "joint")
    chain = tmp_path / "chain.npz"
    _npz_with_a_bad_member(chain, {"kind": np.asarray("smooth"), "num_players": np.asarray(1)}, "policy_0")
    state = tmp_path / "state.npz"
    _npz_with_a_bad_member(state, {}, "meta")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError):
            MarkovCorrelatedPolicy.load(policy)
        with pytest.raises(ValueError):
            IndexChainPolicy.load(chain)
        with pytest.raises(RunStateError, match="not a readable run state"):
            StateFile(state, "fingerprint", 1).load((np.zeros(2),), lambda d: None, lambda d: None, lambda d: None, np.float64)
    assert [str(w.message) for w in caught] == []
