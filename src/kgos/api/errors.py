"""One JSON shape for every error the API answers with (``models.ErrorBody``):

    {"detail": "what was wrong and what to do", "error": "NodeNotFound", ...}

plus ``suggestions`` (close node ids), ``candidates`` (ids an ambiguous name matches), ``record``
(the offending record of an import) or ``errors`` (each invalid field of a 422) where they apply.

- ``KGOSError`` -> its ``.status`` (400 bad argument, 404 unknown KG / node, 409 conflict or read-only...).
- Request validation -> 422; ``detail`` names the field(s), ``errors`` lists them (no input echoed back).
- Starlette's HTTP errors (unknown route 404, wrong method 405, unparsable body 400) -> the same shape.
- Anything else is a bug: logged with its traceback, answered with a 500 that carries no traceback.
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Send

from ..errors import KGOSError
from .models import ErrorBody

log = logging.getLogger("kgos.api")

_ERRORS = {400: "Bad request (or a Host this server does not answer to)", 401: "Missing or invalid bearer token",
           403: "Cross-site request refused: a foreign Origin, or a non-JSON POST without the X-KGOS-Client header",
           404: "Unknown KG, node or route",
           409: "Conflict: exists already, ambiguous name or read-only KG", 413: "Request body too large",
           422: "Invalid request: the fields named in detail/errors"}
RESPONSES: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody, "description": text}
                                              for code, text in _ERRORS.items()}
"""The error responses every route documents (FastAPI's own 422 schema is replaced by ours)."""


def error_body(status: int, detail: str, error: str, **extra: Any) -> JSONResponse:
    """A JSON error response; ``extra`` fields that are None are left out."""
    body = {"detail": detail, "error": error, **{k: v for k, v in extra.items() if v is not None}}
    return JSONResponse(body, status_code=status)


async def send_error(send: Send, status: int, detail: str, error: str,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send a complete JSON error response in the API's error shape from ASGI middleware."""
    body = json.dumps({"detail": detail, "error": error}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.title().replace(" ", "").replace("-", "")
    except ValueError:
        return "HTTPError"


async def kgos_error(request: Request, exc: Exception) -> JSONResponse:
    """A library error: its status and message, with suggestions / candidates / record if it has them."""
    assert isinstance(exc, KGOSError)
    response = error_body(getattr(exc, "status", 400), str(exc), type(exc).__name__,
                          suggestions=getattr(exc, "suggestions", None), candidates=getattr(exc, "candidates", None),
                          record=getattr(exc, "record", None))
    retry = getattr(exc, "retry_after", None)  # 503s of a busy or unreachable database
    if retry is not None:
        response.headers["Retry-After"] = str(retry)
    return response


def _loc(loc: Any) -> list[str | int]:
    return [part if isinstance(part, int) else str(part) for part in loc]


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each invalid field, e.g. ``body.k: Input should be greater than or equal to 1``."""
    assert isinstance(exc, RequestValidationError)
    errors = [{"loc": _loc(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
              for e in exc.errors()]
    detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
    if len(errors) > 5:
        detail += f"; and {len(errors) - 5} more"
    return error_body(422, detail or "invalid request", "ValidationError", errors=errors)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's errors (no such route, method not allowed...) in the same shape, headers kept."""
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route {request.method} {request.url.path}; see /docs for the API"
    if exc.status_code == 405 and detail == "Method Not Allowed":
        detail = f"{request.method} is not allowed on {request.url.path}; see /docs for the methods it takes"
    response = error_body(exc.status_code, detail, _phrase(exc.status_code))
    response.headers.update(exc.headers or {})
    return response


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug: logged with the traceback, answered without one."""
    if isinstance(exc, ResponseValidationError):
        log.error("response of %s %s does not match its model: %s", request.method, request.url.path, exc.errors())
    log.exception("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    return error_body(500, "internal error: the server hit a bug; the log has the details", "InternalError")


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.add_exception_handler(KGOSError, kgos_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)
