"""The HTML pages the server answers besides the JSON API and the studio at ``/`` (``studio.py``):
``/docs``, Swagger UI over ``/openapi.json``. Their scripts and
styles are files of this package under ``/static`` (Swagger UI vendored with its version in the
file names, ``static/swagger-ui/README.md``), so the docs work offline.

No page has an inline script or loads anything from another origin, so each carries a
Content-Security-Policy that allows only this server's own scripts: an injected ``<script>``
would not run. Styles may be inline (Swagger UI sets some), which runs no code. URLs in the pages
are relative, so they also work behind a proxy that serves the API under a path prefix.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                           "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                           "form-action 'self'; frame-ancestors 'none'")
PAGE_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-cache"}


@cache
def page_text(name: str) -> str:
    """A page of ``static/``, read once."""
    return (STATIC / name).read_text(encoding="utf-8")


def page(name: str) -> HTMLResponse:
    """``static/<name>`` as an HTML response with the pages' security headers."""
    return HTMLResponse(page_text(name), headers=PAGE_HEADERS)


async def docs_page(request: Request) -> HTMLResponse:
    return page("docs.html")


def install(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/static/...`` (GET and HEAD; none of them in the OpenAPI document)."""
    app.router.add_route("/docs", docs_page, methods=["GET"], include_in_schema=False)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
