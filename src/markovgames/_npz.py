"""Reading ``.npz`` archives with every size checked before it is paid for.

``np.load`` trusts an archive: it inflates a member as far as its ``.npy`` header says, so an
18 MB file whose header declares a 4 GiB array costs 4 GiB (and the time to inflate it) before
any check of the array can run. `NpzArchive` reads what is cheap first and refuses before the
expensive part:

1. the zip directory (the archive's end): every member must be a ``.npy`` array, stored or
   deflated, lie within the file, and declare an uncompressed size that its compressed size can
   hold: deflate expands by at most `MAX_DEFLATE_RATIO`, and a stored member by nothing;
2. a member's ``.npy`` header (`markovgames._files.read_npy_header`, bounded), which the caller
   checks against what the file must hold (the run's shapes, the game's declared sizes);
3. the data (`read`): the header's shape and dtype must account for exactly the member's
   declared size, and the array is allocated only then and read with a check that it is all
   there. An array larger than this machine's memory is refused naming the member and its size,
   and an allocation that fails (a memory limit) says the same, not just "out of memory".

The errors are `ArchiveError` (a ``MarkovGamesError`` and ``ValueError``) with a message that
names the member but not the file: each reader adds the file (and its own error type).
"""

from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy as np

from ._errors import MarkovGamesError
from ._files import read_into, read_npy_header
from ._resources import format_bytes, physical_memory

__all__ = ["ArchiveError", "NpzArchive", "MAX_DEFLATE_RATIO", "MAX_ARCHIVE_MEMBERS"]

#: The largest factor by which deflate can expand data (zlib's "technical details": 1032:1).
#: A deflated member that declares more than this many times its compressed size is impossible
#: (a damaged or forged directory entry), so it is refused without inflating a byte.
MAX_DEFLATE_RATIO = 1032
#: The most members an archive may list (the files markovgames reads hold a few dozen at most);
#: each one's directory entry is parsed before anything else.
MAX_ARCHIVE_MEMBERS = 10_000
#: Bytes a zip member's local header takes beyond its name and extra field (the minimum).
_LOCAL_HEADER = 30
#: Read a member's data in pieces of this size: zipfile copies each piece once more, and 1 MiB
#: pieces keep a 300 MiB game as fast to load as ``np.load`` makes it (16 MiB pieces took 30% longer).
_PIECE = 1 << 20


class ArchiveError(MarkovGamesError, ValueError):
    """An ``.npz`` archive, or one of its members, is not one a reader can use (one line; the
    readers of particular files add the file's name, or re-raise their own error with it)."""


def _error(err: BaseException) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


class NpzArchive:
    """The ``.npz`` archive in the open regular file ``fh``, its zip directory checked.

    Parameters
    ----------
    fh : binary file
        Open, seekable; it stays open (the caller closes it).
    stored_only : bool
        Refuse compressed members: for the files markovgames writes with ``np.savez`` (a run's
        curve and saved state), whose data then takes no more bytes than the file has.

    Attributes
    ----------
    keys : tuple of str
        The members' names without ``.npy``, in the archive's order.

    Raises
    ------
    ArchiveError
        Not a zip archive, a member that is not a ``.npy`` array, listed twice, of another
        compression method, beyond the end of the file, or declaring more bytes than its
        compressed size can hold.
    """

    def __init__(self, fh: BinaryIO, *, stored_only: bool = False) -> None:
        size = _size_of(fh)
        try:
            self._zip = zipfile.ZipFile(fh)
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError) as err:
            # ValueError includes a member name that is not valid UTF-8 (UnicodeDecodeError).
            raise ArchiveError(f"not a valid .npz (zip) archive ({_error(err)})") from None
        if len(infos) > MAX_ARCHIVE_MEMBERS:
            raise ArchiveError(f"{len(infos)} archive members, more than the {MAX_ARCHIVE_MEMBERS} an .npz file may have")
        self._infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename
            if not name.endswith(".npy"):
                raise ArchiveError(f"unexpected archive member {name[:100]!r} (not a .npy array)")
            key = name[: -len(".npy")]
            if key in self._infos:
                raise ArchiveError(f"archive member {name[:100]!r} is listed twice")
            _check_entry(info, size, stored_only)
            self._infos[key] = info
        self.keys = tuple(self._infos)
        self._headers: dict[str, tuple[tuple[int, ...], bool, np.dtype]] = {}
        self._starts: dict[str, int] = {}  # where each member's data starts, after its header

    def __contains__(self, key: str) -> bool:
        return key in self._infos

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def header(self, key: str) -> tuple[tuple[int, ...], bool, np.dtype]:
        """``(shape, fortran_order, dtype)`` of member ``key``, reading its header only (the caller
        checks them; `read` checks that they account for the member's declared size)."""
        if key not in self._headers:
            info = self._info(key)
            try:
                with self._zip.open(info) as member:
                    shape, fortran, dtype = read_npy_header(member)
                    start = member.tell()
            except ArchiveError:
                raise
            except (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile, RuntimeError, NotImplementedError) as err:
                raise ArchiveError(f"{key}: not a valid .npy array ({_error(err)})") from None
            self._headers[key] = (shape, fortran, dtype)
            self._starts[key] = start
        return self._headers[key]

    def __getitem__(self, key: str) -> np.ndarray:
        return self.read(key)

    def scalar(self, key: str, kinds: str, max_itemsize: int = 4096) -> Any:
        """Member ``key`` as a 0-d array's value, of a dtype kind in ``kinds`` (``"iu"``: an integer,
        ``"U"``: text) and at most ``max_itemsize`` bytes, checked on its header first."""
        shape, _, dtype = self.header(key)
        if shape != () or dtype.kind not in kinds or dtype.itemsize > max_itemsize:
            raise ArchiveError(f"{key}: expected a 0-d array of kind {kinds!r}, got dtype {dtype} with shape {shape}")
        return self.read(key)[()]

    def read(self, key: str) -> np.ndarray:
        """Member ``key`` as a new array, its data read only after its header is checked.

        The caller checks the header's shape and dtype first (`header`) where the file must hold
        particular ones; here they must account for exactly the member's declared size, hold no
        Python objects (an archive is never unpickled), and fit in this machine's memory, all
        before the array is allocated.
        """
        shape, fortran, dtype = self.header(key)
        if dtype.hasobject:
            raise ArchiveError(f"{key}: object arrays are not allowed (dtype {dtype}; an archive is never unpickled)")
        nbytes = math.prod(shape) * dtype.itemsize
        declared = self._infos[key].file_size - self._starts[key]
        if nbytes != declared:
            raise ArchiveError(
                f"{key}: its header declares {dtype} {shape} ({nbytes} bytes of data), but the archive lists "
                f"{declared} bytes for it (damaged)"
            )
        memory = physical_memory()
        if memory is not None and nbytes > memory:
            raise ArchiveError(
                f"{key}: its header declares {dtype} {shape}, {format_bytes(nbytes)}, more than this machine's "
                f"{format_bytes(memory)} of memory"
            )
        try:
            array = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        except MemoryError:
            raise ArchiveError(
                f"{key}: its {dtype} {shape} array takes {format_bytes(nbytes)}, more memory than is available"
            ) from None
        try:
            with self._zip.open(self._info(key)) as member:
                read_npy_header(member)
                done = read_into(member, array, _PIECE)
                if done < nbytes:
                    raise ArchiveError(f"{key}: holds {done} bytes of data, not the {nbytes} its header declares")
                # Reading to the member's end makes zipfile compare its CRC-32 with the directory's.
                if member.read(1):
                    raise ArchiveError(f"{key}: holds more data than its header declares")
        except ArchiveError:
            raise
        except (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile, RuntimeError, NotImplementedError) as err:
            raise ArchiveError(f"{key}: cannot read its data ({_error(err)})") from None
        return array

    def _info(self, key: str) -> zipfile.ZipInfo:
        try:
            return self._infos[key]
        except KeyError:
            raise ArchiveError(f"no array {key!r} in the archive") from None


def _check_entry(info: zipfile.ZipInfo, size: int, stored_only: bool) -> None:
    """Refuse a directory entry that cannot describe a member of a file of ``size`` bytes."""
    name = info.filename[:100]
    if info.flag_bits & 0x1:
        raise ArchiveError(f"{name}: an encrypted archive member")
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != info.file_size:
            raise ArchiveError(
                f"{name}: a stored (uncompressed) member of {info.compress_size} bytes that declares {info.file_size} (damaged)"
            )
    elif info.compress_type == zipfile.ZIP_DEFLATED and not stored_only:
        if info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 64:
            raise ArchiveError(
                f"{name}: declares {info.file_size} bytes uncompressed from {info.compress_size} compressed, more than "
                f"deflate can expand ({MAX_DEFLATE_RATIO}:1): a damaged or forged archive"
            )
    elif stored_only:
        raise ArchiveError(f"{name}: a compressed member; this file is written uncompressed (np.savez)")
    else:
        raise ArchiveError(f"{name}: compression method {info.compress_type} (an .npz member is stored or deflated)")
    if info.header_offset + _LOCAL_HEADER + len(info.filename) + info.compress_size > size:
        raise ArchiveError(f"{name}: extends beyond the end of the file ({size} bytes): truncated or damaged")


def _size_of(fh: BinaryIO) -> int:
    """The size of the open file ``fh``, or of an in-memory one (the bytes a caller has checked)."""
    try:
        return os.fstat(fh.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        here = fh.tell()
        end = fh.seek(0, io.SEEK_END)
        fh.seek(here)
        return end
