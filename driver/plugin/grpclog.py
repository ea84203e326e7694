"""One line, not a traceback, when a caller sends a message that does not decode.

Why: grpc answers such a call with INTERNAL and logs "Exception deserializing request!" with the
full traceback of the protobuf decoder. The message is the caller's mistake (or an attack), not a
fault of the plugin, so the log gets one warning naming the error; the process keeps serving.
"""

from __future__ import annotations

import logging

_GRPC_LOGGER = "grpc._common"


class _UndecodableRequest(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Exception deserializing") and record.exc_info:
            exc = record.exc_info[1]
            record.msg = "rejected a request that does not decode: %s: %s"
            record.args = (type(exc).__name__, str(exc)[:200])
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


def quiet_undecodable_requests() -> None:
    """Install the filter once (idempotent)."""
    logger = logging.getLogger(_GRPC_LOGGER)
    if not any(isinstance(f, _UndecodableRequest) for f in logger.filters):
        logger.addFilter(_UndecodableRequest())
