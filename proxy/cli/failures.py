"""What a command says when it cannot do its work: one line on standard error, saying what
to do about it, and a non-zero exit; never a traceback. A reader that stops early (`| head`)
ends the output quietly."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

import httpx

from mnemoproxy.errors import MnemoError, SettingError

INTERRUPTED = 130  # as a shell reports a command stopped by Ctrl-C


class CommandError(Exception):
    """A command's failure in its user's words; `status` is the exit code."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def reported(run: Callable[[], int]) -> int:
    """Run a command; its failures become a message on standard error and an exit code."""
    try:
        status = run()
        sys.stdout.flush()  # a reader gone before the last bytes: caught here too
        return status
    except BrokenPipeError:
        # Nobody reads the output any more: point it at /dev/null, or the interpreter's own
        # flush at exit fails again and says so.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        _say("interrupted")
        return INTERRUPTED
    except CommandError as exc:
        _say(exc.message)
        return exc.status
    except SettingError as exc:
        _say(exc.message)
        return 2
    except MnemoError as exc:
        _say(exc.message)
        return 1
    except httpx.HTTPError as exc:
        _say(f"the request failed ({type(exc).__name__}: {exc})")
        return 1
    except OSError as exc:
        _say(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
        return 1
    except Exception as exc:  # a bug: said in one line, not as a traceback
        _say(f"unexpected error ({type(exc).__name__}: {exc}); please report it")
        return 1


def _say(message: str) -> None:
    with contextlib.suppress(OSError):  # standard error is gone too: nothing left to tell
        print(f"mnemoproxy: {message}", file=sys.stderr, flush=True)
