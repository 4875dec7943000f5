"""Reading input files safely: regular files only, and never more bytes than a stated bound.

Every file markovgames reads (game files, sweep configurations, the files of run and sweep
directories) is opened through `open_regular`: a FIFO would block the open or the read
forever, a character device such as ``/dev/zero`` never ends, and a directory is not data, so
anything but a regular file is refused before a byte is read. The check is made on the opened
descriptor (``fstat``), not on the path, so the file cannot be swapped between check and read.
`read_bounded` then reads at most a stated number of bytes, and `read_json` parses such bytes as
JSON with a bound on the nesting depth (`MAX_JSON_DEPTH`): a value nested thousands deep would
otherwise overflow the parser's recursion, or parse and then overflow the first code that walks
it (a comparison, a copy, a second ``json.dumps``) far from the file that held it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for annotations: reading a file needs no NumPy until it is a .npy
    import numpy as np

import contextlib
import errno
import io
import json
import os
import re
import stat
import struct
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, cast

from ._errors import MarkovGamesError
from ._text import long_integer_in

__all__ = [
    "read_hashed",
    "NotRegularFileError",
    "open_regular",
    "read_bounded",
    "read_limited",
    "file_sha256",
    "FileTooLargeError",
    "read_npy_header",
    "read_into",
    "read_npy",
    "header_warnings_refused",
    "encloses_working_directory",
    "JsonFileError",
    "MAX_JSON_DEPTH",
    "json_depth",
    "parse_json",
    "read_json",
]

#: The longest ``.npy`` header accepted (numpy's own default limit for a safe load).
MAX_NPY_HEADER = 10_000


class NotRegularFileError(MarkovGamesError, OSError):
    """A path names something other than a regular file (a FIFO, a device, a directory, a socket)."""


class FileTooLargeError(MarkovGamesError, OSError):
    """A file holds more bytes than the reader allows."""


class JsonFileError(MarkovGamesError, ValueError):
    """A JSON file cannot be read or parsed; the message names the file and says why."""


#: The deepest nesting of arrays and objects accepted in any JSON file markovgames reads. The
#: files it writes nest a few levels (a game file's arrays one level per player, at most 29
#: players); anything near Python's recursion limit is not one of them.
MAX_JSON_DEPTH = 64


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a character device"``, ... for an ``st_mode`` that is not a regular file's."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


_kind = file_kind


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for reading in binary mode if it is a regular file (a symbolic link to one is fine).

    ``O_NONBLOCK`` makes the open of a FIFO return at once (instead of waiting for a writer),
    so that it can be refused.

    Raises
    ------
    NotRegularFileError
        ``path`` is a FIFO, a device, a directory or a socket (``strerror`` says which).
    OSError
        The file cannot be opened (``strerror`` and ``filename`` set).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, f"not a regular file ({_kind(mode)})", str(path))
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    # Outside the clean-up above: once the file object owns the descriptor, closing it here too (on
    # an interruption that arrives inside fdopen) would close whatever file reuses its number next.
    return os.fdopen(fd, "rb")


def read_bounded(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, refusing one of more than ``max_bytes`` bytes.

    Stops one byte past the bound (`read_limited`), whatever the file's stated size.

    Raises
    ------
    FileTooLargeError
        The file has more than ``max_bytes`` bytes (``strerror`` states the limit).
    NotRegularFileError, OSError
        As `open_regular`.
    """
    with open_regular(path) as fh:
        data = read_limited(fh, max_bytes)
    if len(data) > max_bytes:
        raise FileTooLargeError(errno.EFBIG, f"more than the limit of {max_bytes} bytes", str(Path(path)))
    return data


def file_sha256(path: str | os.PathLike[str], fh: BinaryIO | None = None) -> str:
    """The SHA-256 of a regular file's bytes (of the open ``fh``, from its start, if given)."""
    import hashlib

    digest = hashlib.sha256()
    with open_regular(path) if fh is None else contextlib.nullcontext(fh) as f:
        f.seek(0)
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_hashed(fh: BinaryIO, max_bytes: int) -> tuple[bytes, str]:
    """The bytes of the open file ``fh`` from its start (at most ``max_bytes + 1``, as
    `read_limited`) and their SHA-256: one read, so that what a caller checks against a recorded
    digest is exactly what it then parses (a file changed in between cannot slip through, as it
    could between a hash of the open file and a second read of it)."""
    import hashlib

    fh.seek(0)
    data = read_limited(fh, max_bytes)
    return data, hashlib.sha256(data).hexdigest()


def read_limited(fh: BinaryIO, max_bytes: int) -> bytes:
    """At most ``max_bytes + 1`` bytes of the open file ``fh`` (one more than the bound tells a
    longer file), in chunks: ``read(n)`` would preallocate ``n`` bytes even for a small file."""
    chunks: list[bytes] = []
    total = 0
    while total <= max_bytes:
        chunk = fh.read(min(1 << 20, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_into(fh, array: np.ndarray, piece: int = 16 << 20) -> int:
    """Fill the contiguous ``array`` with the bytes at ``fh``'s position, ``piece`` bytes at a time;
    returns how many arrived (fewer than ``array.nbytes``: the file or member ended early).

    A read, not a memory map: a mapped file that shrinks underneath kills the process (SIGBUS),
    where a read that comes up short is an error its caller can name.
    """
    import numpy as np

    view = array.reshape(-1, order="A").view(np.uint8).data
    reader = cast(io.BufferedIOBase, fh)  # a file, or a zip member: both fill a buffer in place
    done = 0
    while done < len(view):
        got = reader.readinto(view[done : done + piece])
        if not got:
            break
        done += got
    return done


def read_npy(path: str | os.PathLike[str], accept: Callable[[tuple[int, ...], np.dtype], None] | None = None) -> np.ndarray:
    """The ``.npy`` array in the regular file ``path``, read into memory with every size checked.

    The header first (`read_npy_header`), which ``accept(shape, dtype)`` may refuse (by raising)
    before anything else is read; the file must hold exactly the bytes it declares, an
    array of objects is refused (never unpickled), the array must fit in this machine's memory,
    and the data is read, not memory-mapped (`read_into`), so that a file truncated while it is
    read is an error rather than a SIGBUS.

    Raises
    ------
    ValueError
        A damaged header, a size that disagrees with it, too large for the memory (one line, no path).
    OSError
        As `open_regular`.
    """
    import math

    import numpy as np

    from ._resources import format_bytes, physical_memory

    with open_regular(path) as fh:
        shape, fortran, dtype = read_npy_header(fh)
        if dtype.hasobject:
            raise ValueError(f"object arrays are not allowed (dtype {dtype}; a .npy file is never unpickled)")
        if accept is not None:
            accept(shape, dtype)
        offset, size = fh.tell(), os.fstat(fh.fileno()).st_size
        nbytes = math.prod(shape) * dtype.itemsize
        if size != offset + nbytes:
            state = "truncated" if size < offset + nbytes else "trailing data"
            raise ValueError(f"the file has {size} bytes, not the {offset + nbytes} its header declares ({state})")
        memory = physical_memory()
        if memory is not None and nbytes > memory:
            raise ValueError(
                f"its {dtype} {shape} array takes {format_bytes(nbytes)}, more than this machine's {format_bytes(memory)} of memory"
            )
        try:
            array = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        except MemoryError:
            raise ValueError(f"its {dtype} {shape} array takes {format_bytes(nbytes)}, more memory than is available") from None
        done = read_into(fh, array)
        if done < nbytes:
            raise ValueError(
                f"ends after {offset + done} bytes, not the {offset + nbytes} its header declares (truncated while it was read)"
            )
    return array


def read_npy_header(fh) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` array at ``fh``'s position, reading no data.

    The header's length is checked before the header is read (numpy would read, and allocate,
    as many bytes as a damaged length field says, up to 4 GiB); the header is then parsed by
    numpy from those bytes alone (a warning while parsing is a refusal too). ``fh`` is left at the
    start of the array data.

    Raises
    ------
    ValueError
        Not a ``.npy`` array of format 1.0 or 2.0, or a header that does not parse (one line).
    """
    import numpy as np

    start = fh.read(8)
    if len(start) < 8 or start[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy array (no NUMPY magic string)")
    version = (start[6], start[7])
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    size_format = "<H" if version == (1, 0) else "<I"
    raw = fh.read(struct.calcsize(size_format))
    if len(raw) != struct.calcsize(size_format):
        raise ValueError("the header ends early")
    length = struct.unpack(size_format, raw)[0]
    if length > MAX_NPY_HEADER:
        raise ValueError(f"a header of {length} bytes, more than the {MAX_NPY_HEADER} a .npy header may have")
    header = fh.read(length)
    if len(header) != length:
        raise ValueError("the header ends early")
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        # numpy parses the header with ast.literal_eval, which warns about what a damaged header
        # may hold (an invalid escape sequence): such a header is refused, not warned about.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            shape, fortran, dtype = read(io.BytesIO(raw + header))
    except Exception as err:  # ValueError, SyntaxError, tokenize.TokenError, a warning: a damaged header
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"the header does not parse ({detail[:200]})") from None
    return tuple(int(d) for d in shape), bool(fortran), np.dtype(dtype)


@contextlib.contextmanager
def header_warnings_refused():
    """Within: a ``.npy`` header (also an ``.npz`` member's, read by ``np.load``) that makes numpy
    warn while parsing it is refused as numpy refuses a header that does not parse (ValueError).

    numpy parses headers with ``ast.literal_eval``, which warns about an invalid escape sequence
    (``SyntaxWarning``, before Python 3.12 ``DeprecationWarning``); as errors, these make the
    parse fail, and numpy reports that as a ValueError, which the readers already refuse.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=SyntaxWarning)
        warnings.filterwarnings("error", category=DeprecationWarning)
        yield


def encloses_working_directory(path) -> bool:
    """Whether ``path`` is the working directory or one that contains it (a run must not replace it)."""
    here, path = Path.cwd().resolve(), Path(path).resolve()
    return path == here or path in here.parents


def read_json(path: str | os.PathLike[str], max_bytes: int, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value of the regular file ``path`` (UTF-8, at most ``max_bytes`` bytes), nested at
    most ``max_depth`` levels deep.

    Raises
    ------
    JsonFileError
        ``path: cannot read: ...`` (not a regular file, too large, an OS error) or
        ``path: unreadable: ...`` (not UTF-8, not JSON, nested too deep), in one line.
    """
    try:
        data = read_bounded(path, max_bytes)
    except OSError as err:
        raise JsonFileError(f"{path}: cannot read: {err.strerror or err}") from None
    return parse_json(data, str(path), max_depth=max_depth)


def parse_json(data: bytes | str, where: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``data`` parsed as JSON, refusing (`JsonFileError`, naming ``where``) text that is not UTF-8
    or not JSON, and a value nested more than ``max_depth`` levels deep.

    The depth is checked before parsing, on the text (`json_depth`), so that neither the parser
    nor any later reader of the value recurses without bound.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as err:
        raise JsonFileError(f"{where}: unreadable: not UTF-8 text (invalid byte at offset {err.start})") from None
    depth = json_depth(text, max_depth)
    if depth > max_depth:
        raise JsonFileError(f"{where}: unreadable: JSON nested too deep (more than {max_depth} levels)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise JsonFileError(f"{where}: unreadable: {err}") from None
    except RecursionError:  # unreachable below the depth bound; kept so that no parse can escape
        raise JsonFileError(f"{where}: unreadable: JSON nested too deep to parse") from None
    except ValueError as err:  # an integer of thousands of digits
        raise JsonFileError(f"{where}: unreadable: {long_integer_in(text) or str(err).splitlines()[0]}") from None


#: A JSON string (escapes included), or a run of characters that are neither quotes nor brackets.
_NOT_BRACKETS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[^"\[\]{}]+')
#: An innermost pair of brackets.
_INNERMOST = re.compile(r"\[\]|\{\}")


def json_depth(text: str, stop: int) -> int:
    """The deepest nesting of brackets in the JSON ``text`` outside its strings, counted up to
    ``stop + 1``; a text whose brackets do not pair up is left for the parser to refuse.

    The brackets are kept (strings and everything else dropped, in one pass of the regular
    expression engine), then the innermost pairs are removed level by level: each pass is one
    scan in C, and a file of ``d`` levels takes ``d`` of them, so a large file of shallow
    arrays costs about one parse.
    """
    brackets = _NOT_BRACKETS.sub("", text)
    depth = 0
    while brackets and depth <= stop:
        fewer = _INNERMOST.sub("", brackets)
        if len(fewer) == len(brackets):
            break  # unbalanced, or a stray quote: not JSON, which the parser says
        brackets, depth = fewer, depth + 1
    return depth
