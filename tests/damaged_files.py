"""Damaged and forged files for the tests of bounded reads: compression bombs built cheaply,
zip archives written field by field, and commands run under a memory limit.

A deflate bomb of ``n`` bytes of zeros is made without compressing ``n`` bytes: a block that a
fresh compressor made of 1 MiB of zeros, ended with a full flush (so that it refers to nothing
before it), is repeated, and a final empty block closes the stream. A 4 GiB member costs about
4 MB and no time.
"""

from __future__ import annotations

import contextlib
import os
import resource
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np

#: The memory limit (address space) of the commands that meet a bomb: enough for Python, NumPy
#: and JAX to start, far less than any bomb of these tests would take.
MEMORY_LIMIT = 3 << 30

_PIECE = 1 << 20


def npy_header(shape: tuple[int, ...], descr: str = "<f8", fortran: bool = False) -> bytes:
    """The bytes of a ``.npy`` (version 1.0) header declaring ``shape`` and ``descr``, no data."""
    header = {"descr": descr, "fortran_order": fortran, "shape": shape}
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


def deflate_bomb(prefix: bytes, zeros: int) -> bytes:
    """A raw deflate stream that inflates to ``prefix`` followed by ``zeros`` zero bytes
    (``zeros`` a multiple of 1 MiB), built in a few milliseconds."""
    if zeros % _PIECE:
        raise ValueError("zeros must be a multiple of 1 MiB")
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH)
    piece = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = piece.compress(bytes(_PIECE)) + piece.flush(zlib.Z_FULL_FLUSH)
    return start + block * (zeros // _PIECE) + b"\x03\x00"  # a final, empty, fixed-Huffman block


def zip_archive(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip archive of ``(name, payload, method, declared uncompressed size, crc32)`` members,
    written as given: the declared sizes and checksums need not match the payload."""
    body, directory = b"", b""
    for name, payload, method, size, crc in members:
        encoded = name.encode()
        local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(payload), size, len(encoded), 0)
        central = struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            20,
            20,
            0,
            method,
            0,
            0x21,
            crc,
            len(payload),
            size,
            len(encoded),
            0,
            0,
            0,
            0,
            0,
            len(body),
        )
        directory += central + encoded
        body += local + encoded + payload
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), len(body), 0)
    return body + directory + end


def stored_member(name: str, array: np.ndarray) -> tuple[str, bytes, int, int, int]:
    """``array`` as an honest stored member, as ``np.savez`` writes one."""
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    data = buffer.getvalue()
    return (name, data, 0, len(data), zlib.crc32(data))


def bomb_member(name: str, shape: tuple[int, ...], descr: str = "<f8") -> tuple[str, bytes, int, int, int]:
    """A deflated member whose header declares ``shape`` and whose data inflates to all of it
    (zeros), consistent in every field but its checksum (computing that would inflate it)."""
    header = npy_header(shape, descr)
    nbytes = int(np.prod(shape)) * np.dtype(descr).itemsize
    payload = deflate_bomb(header, nbytes)
    return (name, payload, 8, len(header) + nbytes, 0)


def _environment() -> dict[str, str]:
    """The environment of a child command: this one's, with the markovgames that the tests import
    first on the path (the child runs in another directory, where a relative path means nothing)."""
    import markovgames

    source = str(Path(markovgames.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [env.get("PYTHONPATH")])])
    return env


#: Sets the address-space limit in the child itself, then runs what it was given: a bootstrap
#: rather than ``preexec_fn``, which would run Python code between fork and exec in this
#: multithreaded (JAX) process (Python warns that it may deadlock).
_BOOTSTRAP = (
    "import resource, runpy, sys\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "if sys.argv[2] == '-c':\n"
    "    code = sys.argv[3]\n"
    "    sys.argv = ['-c']\n"
    "    exec(compile(code, '<string>', 'exec'), {'__name__': '__main__'})\n"
    "else:\n"
    "    sys.argv = ['markovgames', *sys.argv[3:]]\n"
    "    runpy.run_module('markovgames', run_name='__main__', alter_sys=True)\n"
)


def run_limited(argv: list[str], cwd: Path, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``python -m markovgames ARGV`` in ``cwd`` under `MEMORY_LIMIT` (so that a bomb that gets
    through fails instead of taking the machine's memory), with a timeout."""
    return subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, str(MEMORY_LIMIT), "-m", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=timeout,
    )


def run_python_limited(code: str, cwd: Path, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``python -c CODE`` in ``cwd`` under `MEMORY_LIMIT`, with a timeout."""
    return subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, str(MEMORY_LIMIT), "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=timeout,
    )


@contextlib.contextmanager
def address_space_limit(extra: int = 2 << 30):
    """Within: this process may map at most ``extra`` more bytes than it has mapped now (Linux).

    For property tests run in the test process: an allocation that a bomb would make beyond
    ``extra`` fails with MemoryError instead of taking the machine's memory.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            mapped = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + extra if hard == resource.RLIM_INFINITY else min(hard, mapped + extra)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
