"""The HTML pages: ``/docs`` works offline (Swagger UI from the package, same-origin URLs only, no
inline script, a Content-Security-Policy that holds), and ``/`` links to it."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from api_helpers import BASE_URL, client

from kgos.api.pages import STATIC

CONTENT_TYPES = {".js": "javascript", ".css": "text/css", ".json": "application/json", "": "text/html"}


class Refs(HTMLParser):
    """Every URL a page loads or links to, and the text of scripts written inline."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []
        self.inline_scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.urls += [(tag, value) for name, value in attrs if name in ("src", "href") and value]
        self._in_script = tag == "script"
        if tag == "script" and not dict(attrs).get("src"):
            self.inline_scripts.append("")
        if any(name.startswith("on") for name, _ in attrs):
            self.inline_scripts.append(f"{tag} event handler")

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline_scripts.append(data)

    def handle_endtag(self, tag):
        self._in_script = False


def refs(html: str) -> Refs:
    parser = Refs()
    parser.feed(html)
    return parser


@pytest.fixture
def c(tmp_path):
    return client(tmp_path)


def csp(response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {part.split()[0]: part.strip() for part in policy.split(";") if part.strip()}


def test_docs_page_loads_only_same_origin_assets(c):
    page = c.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    found = refs(page.text)
    assert found.inline_scripts == []
    loaded = [urljoin(f"{BASE_URL}/docs", url) for tag, url in found.urls if not url.startswith("data:")]
    scripts = [url for url in loaded if url.endswith(".js")]
    assert len(scripts) == 2 and any("swagger-ui-bundle-5.35.0.js" in u for u in scripts)
    assert any(url.endswith("swagger-ui-5.35.0.css") for url in loaded)
    for url in loaded:
        assert url.startswith(f"{BASE_URL}/"), url  # no CDN
        asset = c.get(url)
        assert asset.status_code == 200, url
        assert CONTENT_TYPES[url[url.rfind("."):]] in asset.headers["content-type"], url
    assert "http" not in page.text.replace("http-equiv", "")


def test_docs_init_script_loads_the_openapi_document(c):
    init = c.get("/static/docs.js").text
    assert 'url: "openapi.json"' in init and "validatorUrl: null" in init  # no call to the online validator
    spec = c.get(urljoin(f"{BASE_URL}/docs", "openapi.json"))
    assert spec.status_code == 200 and spec.json()["info"]["title"] == "KG-OS"


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_pages_carry_a_strict_script_policy(c, path):
    response = c.get(path)
    policy = csp(response)
    assert policy["script-src"] == "script-src 'self'"  # no 'unsafe-inline', no 'unsafe-eval', no CDN
    assert policy["default-src"] == "default-src 'none'" and "'self'" in policy["connect-src"]
    assert policy["frame-ancestors"] == "frame-ancestors 'none'"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert c.head(path).status_code == 200


def test_start_page_links_to_the_docs(c):
    page = c.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    found = refs(page.text)
    assert found.inline_scripts == []
    links = {urlsplit(urljoin(f"{BASE_URL}/", url)).path for tag, url in found.urls if tag == "a"}
    assert "/docs" in links
    for path in links | {urlsplit(urljoin(f"{BASE_URL}/", url)).path for tag, url in found.urls if tag == "link"
                         and not url.startswith("data:")}:
        assert c.get(path).status_code == 200, path


def test_vendored_assets_ship_with_their_licence():
    folder = STATIC / "swagger-ui"
    names = {p.name for p in folder.iterdir()}
    assert {"LICENSE", "NOTICE", "swagger-ui-bundle-5.35.0.js", "swagger-ui-5.35.0.css",
            "swagger-ui-bundle-5.35.0.js.LICENSE.txt"} <= names
    assert "Apache License" in (folder / "LICENSE").read_text()


def test_pages_stay_out_of_the_openapi_document(c):
    paths = c.get("/openapi.json").json()["paths"]
    assert not {"/", "/docs"} & set(paths) and not any(p.startswith("/static") for p in paths)


def test_static_files_do_not_leave_their_folder(c):
    for path in ("/static/../pages.py", "/static/%2e%2e/pages.py", "/static/..%2fpages.py"):
        r = c.get(path)
        assert r.status_code == 404 and "STATIC" not in r.text
