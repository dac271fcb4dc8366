"""KG-OS Studio: the web interface at ``/``, plain ES modules and CSS from ``studio_static/``
(no build step; Cytoscape.js and Chart.js vendored as single files with their licences).

The page is one HTML file; every view reads the JSON API of this same server (``fetch`` with a
bearer token when the server asks for one), so the studio holds no logic the API lacks. It has no
inline script and carries the pages' Content-Security-Policy (``pages.PAGE_HEADERS``: scripts only
from this origin), and its scripts build the DOM with ``textContent``: a node named
``<img src=x onerror=...>`` is shown as text.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles

from .pages import PAGE_HEADERS

STUDIO = Path(__file__).parent / "studio_static"


class StudioFiles(StaticFiles):
    """The studio's files with the pages' security headers (and no stale modules after an upgrade)."""

    async def get_response(self, path: str, scope: dict) -> Response:  # type: ignore[override]
        response = await super().get_response(path, scope)
        response.headers.update(PAGE_HEADERS)
        return response


async def studio_page(request: Request) -> HTMLResponse:
    return HTMLResponse((STUDIO / "index.html").read_text(encoding="utf-8"), headers=PAGE_HEADERS)


def install(app: FastAPI) -> None:
    """Serve the studio at ``/`` and its files under ``/studio/`` (neither in the OpenAPI document)."""
    app.router.add_route("/", studio_page, methods=["GET"], include_in_schema=False)
    app.mount("/studio", StudioFiles(directory=STUDIO), name="studio")
