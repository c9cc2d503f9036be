"""How `mnemoproxy serve` writes its log: readable lines (`log_format = "text"`) or JSON
lines (`"json"`), one object per record, for log collectors that parse rather than grep.

Every record goes through the root logger's one handler, uvicorn's included: uvicorn is
started without a logging config of its own, so its records propagate here instead of
leaving through its own handlers in its own format.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

from mnemoproxy.config.urls import hide_credentials

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class TextFormatter(logging.Formatter):
    """TEXT_FORMAT, with the credentials of any URL in a line hidden (config/urls.py): an
    exception's text or a setting's value may quote one."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        return hide_credentials(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, message, and
    exc_info (the formatted traceback) when an exception was logged; URLs' credentials
    hidden as in the text format."""

    def format(self, record: logging.LogRecord) -> str:
        return hide_credentials(self._entry(record))

    def _entry(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        # One line per record, whatever the message holds; non-ASCII kept readable.
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """The process's logging: `level` (debug ... error) and `log_format` (text, json)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    # httpx logs every request at INFO: a measurable cost per relayed request.
    logging.getLogger("httpx").setLevel(logging.WARNING)
