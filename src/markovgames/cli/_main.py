"""The ``markovgames`` command: a thin layer over the library.

User errors (a bad game file, an unknown algorithm, an impossible value, an unwritable output
directory, an input too large for memory) print one line ``markovgames: error: ...`` on stderr
and exit with code 2, without a traceback unless ``--debug`` is given. Anything else is a bug:
one line says so and names the file its traceback was written to, and the exit code is 70
(``EX_SOFTWARE``). Ctrl-C exits with 130 and SIGTERM with 143 (``128 +`` the signal), after the
same clean-up.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from pathlib import Path
from typing import NoReturn

from .._text import abbreviate_digits, printable
from ._errors import command_line_message
from ._signals import Terminated, restore, terminate_as_interrupt

__all__ = ["main", "console_main", "build_parser"]

EXIT_USAGE = 2
#: A bug (an error that is not the input's fault): sysexits.h's EX_SOFTWARE.
EXIT_INTERNAL = 70


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (argparse itself also exits with 2).

    A misspelt option (``--algoritm``, ``-t``) or another tool's name for one (``--learning-rate``)
    is named first, with the option it most likely means, rather than reported as the required
    option it was meant to be; so is an invalid choice (a command, ``--dtype``).
    """

    def parse_known_args(self, args=None, namespace=None):
        # Remembered for error(): argparse checks required options before it reports unknown ones.
        self._arguments = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):  # noqa: D401 - argparse API
        if message.startswith("the following arguments are required"):
            unknown = unrecognized_options(self, getattr(self, "_arguments", []))
            if unknown:
                message = unrecognized_message(self, unknown)
        self.exit(EXIT_USAGE, f"markovgames: error: {printable(abbreviate_digits(message))} (see '{self.prog} --help')\n")

    def _check_value(self, action, value):
        # argparse's own message lists the choices; this one also names the likeliest
        # (``invalid choice: 'rnu' (did you mean 'run'?) (choose from ...)``).
        if action.choices is not None and value not in action.choices:
            from .._suggest import did_you_mean

            names = [str(c) for c in action.choices]
            hint = did_you_mean(str(value), names)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {', '.join(map(repr, names))})")


_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+(e[-+]?\d+)?$", re.IGNORECASE)


def unrecognized_options(parser: argparse.ArgumentParser, arguments: list[str]) -> list[str]:
    """The options in ``arguments`` that ``parser`` does not know (negative numbers and values are not options)."""
    known = parser._option_string_actions
    long_options = [o for o in known if o.startswith("--")]
    out = []
    for token in arguments:
        if token == "--":
            break
        if not token.startswith("-") or token == "-" or _NUMBER.match(token):
            continue
        name = token.split("=", 1)[0]
        if name in known:
            continue
        if name.startswith("--") and parser.allow_abbrev and sum(o.startswith(name) for o in long_options) == 1:
            continue  # an abbreviation argparse accepts
        if not name.startswith("--") and name[:2] in known:
            continue  # a short option with its value attached (-T10)
        out.append(name)
    return out


def unrecognized_message(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """``unrecognized arguments: --learning-rate (did you mean --eta?)``, by meaning, then by
    spelling (`markovgames._suggest`); a name that resembles none of the command's options is
    followed by the list of them. A sweep's options also suggest its configuration's keys
    (``--set etas=VALUE``), which the parser names as ``config_keys``."""
    from .._suggest import suggestion

    options = option_names(parser)
    keys = getattr(parser, "config_keys", ())
    parts, unmatched = [], False
    for name in unknown:
        # By meaning among the options, then the keys; by spelling after both.
        close, key = None, None
        for spelling in (False, True):
            close = suggestion(name, options, spelling=spelling)
            key = None if close else suggestion(name, keys, spelling=spelling)
            if close or key:
                break
        close = f"--set {key}=VALUE" if key else close
        unmatched = unmatched or close is None
        parts.append(f"{name} (did you mean {close}?)" if close else name)
    message = f"unrecognized arguments: {' '.join(parts)}"
    if unmatched:
        message += f"; the options of '{parser.prog}': {', '.join(options)}" if options else f"; '{parser.prog}' has no options"
    return message


def option_names(parser: argparse.ArgumentParser) -> list[str]:
    """A command's options, one name each (the long one), in the order of its ``--help``, without ``--help``."""
    names = []
    for action in parser._actions:
        strings = action.option_strings
        if strings and not isinstance(action, argparse._HelpAction):
            names.append(next((s for s in strings if s.startswith("--")), strings[0]))
    return names


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The ``markovgames`` parser. Given the command line ``argv``, only the parser of the command
    it names is built (its module imported); every other command is there by name and its line of
    ``--help`` (`._commands`), so that ``--help`` and ``--version`` import none of them. Without
    ``argv``, every command's parser is built."""
    import importlib

    from ._commands import COMMANDS, HELP

    parser = _Parser(
        prog="markovgames",
        description="No-regret learning dynamics and (coarse) correlated equilibria in Markov games.",
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks for errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    # Top-level options take no value: the first other word is the command.
    named = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (module, function) in COMMANDS.items():
        if named is None or name == named:
            getattr(importlib.import_module(f".{module}", __package__), function)(sub)
        else:
            sub.add_parser(name, help=HELP[name])
    return parser


class _Version(argparse.Action):
    """``--version``: the version is looked up only when it is asked for (argparse's own action
    takes the text when the parser is built)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from .._version import installed_version

        sys.stdout.write(f"markovgames {installed_version()}\n")
        parser.exit()


def _user_error_types() -> tuple[type[BaseException], ...]:
    from .._errors import MarkovGamesError

    # ValueError covers the library's own argument checks (T < 1, eta <= 0, unknown algorithm, ...).
    return (MarkovGamesError, ValueError, OSError)


def _enable_compilation_cache() -> None:
    """Keep compiled loops on disk so that a second identical command does not compile again.

    The directory is ``$MARKOVGAMES_CACHE_DIR`` or ``$XDG_CACHE_HOME/markovgames/jax`` (default
    ``~/.cache/markovgames/jax``); ``MARKOVGAMES_CACHE_DIR=off`` disables it. This sets JAX's
    global configuration, which is ours to set in the command-line process (the library never does):
    through the environment, which JAX reads when it is imported (here, only by the commands that
    compute, and in a sweep's worker processes too), or directly where JAX is loaded already.
    """
    setting = os.environ.get("MARKOVGAMES_CACHE_DIR")
    if setting is not None and setting.lower() in ("", "off", "0", "none"):
        return
    base = Path(setting) if setting else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "markovgames" / "jax"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable cache only costs compile time
    # Our loops compile in about a second; JAX's default threshold (1 s) would skip most of them.
    settings = {"jax_compilation_cache_dir": str(base), "jax_persistent_cache_min_compile_time_secs": 0.2}
    if "jax" in sys.modules:  # main() called in a process that has loaded JAX
        import jax

        for key, value in settings.items():
            jax.config.update(key, value)
    else:
        for key, value in settings.items():
            os.environ.setdefault(key.upper(), str(value))


def console_main() -> NoReturn:
    """The ``markovgames`` console script and ``python -m markovgames``: `main`, then exit.

    After Ctrl-C or SIGTERM (exit 130 or 143, the clean-up done) the process ends at once, without
    the interpreter's finalisation: a compiled chunk may still be running on XLA's threads, and
    tearing down the interpreter under it crashed the process (a segmentation fault instead of
    the exit code) when the signal came during the first compilation of a command.
    """
    # SIGTERM is answered from here on, before the command's own handlers are installed (while
    # its arguments are parsed): killed by the default action, the process would end silently.
    previous = None
    try:
        previous = terminate_as_interrupt()
        if hasattr(signal, "pthread_sigmask"):  # a signal held by ``python -m markovgames`` arrives now
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        code = main()
    except KeyboardInterrupt as err:
        # A signal before the command's handlers were installed (while Python imports the
        # command's modules): the same one line and exit status as after them, no traceback.
        terminated = isinstance(err, Terminated)
        print(f"markovgames: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        code = 128 + signal.SIGTERM if terminated else 130
    finally:
        restore(previous)
    if code in (130, 128 + signal.SIGTERM):
        _release_process_resources()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _release_process_resources() -> None:
    """Unlink the named semaphores of a worker pool, as the interpreter's exit would have.

    Skipping finalisation also skips multiprocessing's exit hook, and its resource tracker (a
    separate process) would then print a warning about leaked semaphores after our last line.
    Only the finalisers are run (priority >= 0: semaphores, queues), not the hook's joining of
    worker processes, which were already stopped.
    """
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util._run_finalizers(0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``markovgames`` console script; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse reports these from the top-level parser; point to the subcommand's own --help.
        command = _command_parser(parser, argv)
        options = unrecognized_options(command, unknown)
        command.error(unrecognized_message(command, options) if options else f"unrecognized arguments: {' '.join(unknown)}")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    _enable_compilation_cache()
    # Text that UTF-8 cannot encode (a game name with a lone surrogate, which JSON allows; a path
    # given in bytes that are not UTF-8) is printed escaped, as on stderr, rather than failing
    # after the work is done.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")
    previous = terminate_as_interrupt()
    try:
        code = int(handler(args) or 0)
        sys.stdout.flush()  # here, so that a closed pipe is caught below rather than at exit
        return code
    except KeyboardInterrupt as err:
        # A handler's note says what was kept, e.g. how to resume a run that saved its state.
        notes = "".join(f"; {printable(note)}" for note in getattr(err, "__notes__", ()))
        if isinstance(err, Terminated):
            print(f"markovgames: terminated{notes}", file=sys.stderr)
            return 128 + signal.SIGTERM
        print(f"markovgames: interrupted{notes}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``markovgames ... | head``): stop quietly, as a Unix tool does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except _user_error_types() as err:
        if args.debug:
            raise
        for line in _error_lines(err, argv):
            print(f"markovgames: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:
        if args.debug:
            raise
        # Sizes are checked before anything large is allocated; what is left is an input just
        # within the limits on a machine with less free memory than it needs.
        print(
            "markovgames: error: out of memory: the input needs more memory than is free on this machine; "
            "use smaller sizes (or free memory)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except Exception as err:
        if args.debug:
            raise
        where = _write_traceback(err, argv)
        print(
            f"markovgames: internal error (a bug, not a problem with the input): {type(err).__name__}: "
            f"{printable(str(err).strip().splitlines()[0]) if str(err).strip() else ''}; "
            + (f"the traceback is in {where}; " if where else "")
            + "please report it (rerun with --debug to see the traceback here)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    finally:
        restore(previous)


def _error_lines(err: BaseException, argv: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The lines of a user error: one, or one per problem where an input has several (a sweep
    configuration with two bad entries: `MarkovGamesError.problems`), each a line of its own."""
    problems = getattr(err, "problems", ())
    if len(problems) < 2:
        return [_one_line(err, argv)]
    return [printable(command_line_message(err, problem)) for problem in problems]


def _one_line(err: BaseException, argv: list[str] | tuple[str, ...] = ()) -> str:
    """The message of a user error as one printable line (without ``markovgames: error:``).

    markovgames's own messages are one line by construction, except for what they quote: a path
    or a name with a newline or a terminal escape in it. They are shown whole, with every such
    character escaped (`markovgames._text.printable`), so that a newline in a path neither cuts
    the message nor starts a line that looks like another one. So is any message when an
    argument of the command holds a line break (the message may quote it). Otherwise a message
    from elsewhere (a ``ValueError`` of a library we call) keeps its first line, escaped too.
    """
    from .._errors import MarkovGamesError

    text = str(err).strip()
    if not text:
        message = type(err).__name__
    elif isinstance(err, (MarkovGamesError, OSError)) or any(("\n" in a or "\r" in a) for a in argv):
        message = text
    else:
        message = text.splitlines()[0]
    if isinstance(err, OSError) and err.strerror:  # "path: No space left on device", not "[Errno 28] ..."
        message = f"{err.filename}: {err.strerror}" if err.filename else err.strerror
    for note in getattr(err, "__notes__", ()):  # what a handler adds, e.g. that a state is kept
        if "JAX_TRACEBACK_FILTERING" in note:  # JAX's own, on an error raised in code it traced
            continue
        message = f"{message}; {note}"
    return printable(abbreviate_digits(command_line_message(err, message)))


def _write_traceback(err: BaseException, argv: list[str]) -> str | None:
    """Write the traceback of a bug, with the command and the versions, to a new file in the
    system's temporary directory; return its path (``None`` if it cannot be written)."""
    import platform
    import tempfile
    import traceback

    from .._version import installed_version

    try:
        fd, path = tempfile.mkstemp(prefix="markovgames-error-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(f"markovgames {installed_version()}, Python {platform.python_version()}, {platform.platform()}\n")
            fh.write(f"command: markovgames {' '.join(argv)}\n\n")
            fh.write("".join(traceback.format_exception(err)))
        return path
    except OSError:
        return None


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command that ``argv`` names: ``markovgames games show`` for
    ``["games", "show", ...]``, the top-level parser when no command is named."""
    current = parser
    for token in argv:
        sub = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or token not in sub.choices:
            if token.startswith("-") or sub is None:
                continue
            break
        current = sub.choices[token]
    return current
