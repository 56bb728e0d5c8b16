"""The Django admin of a live server (or of a site in process), driven over HTTP the way a browser submits its
forms."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from types import TracebackType
from typing import Any

import httpx

TIMEOUT = 10
SKIPPED_INPUTS = frozenset({"submit", "button", "image", "reset", "file"})


def browser_newlines(value: str) -> str:
    # Browsers submit every line break in a form entry as CRLF.
    return re.sub(r"\r\n|\r|\n", "\r\n", value)


class FormFields(HTMLParser):
    """The entries a browser would submit for the form with a given id (without its buttons)."""

    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fields: dict[str, list[str]] = {}
        self.textarea: str | None = None
        self.text: list[str] = []
        self.select: str | None = None
        self.options: list[str] = []
        self.selected = False
        self.multiple = False

    def add(self, name: str, value: str) -> None:
        self.fields.setdefault(name, []).append(value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        if tag == "form":
            self.inside = attributes.get("id") == self.form_id
        if not self.inside:
            return
        name = attributes.get("name") if "disabled" not in attributes else None
        if tag == "input" and name:
            self.handle_input(name, attributes)
        elif tag == "textarea" and name:
            self.textarea, self.text = name, []
        elif tag == "select" and name:
            self.select, self.options, self.selected = name, [], False
            self.multiple = "multiple" in attributes
        elif tag == "option" and self.select:
            self.options.append(attributes.get("value", ""))
            if "selected" in attributes:
                self.add(self.select, attributes.get("value", ""))
                self.selected = True

    def handle_input(self, name: str, attributes: dict[str, str]) -> None:
        kind = attributes.get("type", "text").lower()
        if kind in SKIPPED_INPUTS:
            return
        if kind in ("checkbox", "radio"):
            if "checked" in attributes:
                self.add(name, attributes.get("value") or "on")
            return
        self.add(name, attributes.get("value", ""))

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            self.text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "textarea" and self.textarea is not None:
            # A browser drops the newline that directly follows <textarea>.
            value = "".join(self.text).removeprefix("\n")
            self.add(self.textarea, browser_newlines(value))
            self.textarea = None
        elif tag == "select" and self.select is not None:
            # A single-choice list submits its first option when none is selected; a multiple one, nothing.
            if not self.selected and self.options and not self.multiple:
                self.add(self.select, self.options[0])
            self.select = None


def form_fields(html: str, form_id: str) -> dict[str, list[str]]:
    parser = FormFields(form_id)
    parser.feed(html)
    parser.close()
    return parser.fields


def form_errors(html: str) -> list[str]:
    lists = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', html, re.S)
    notes = re.findall(r'<p class="errornote">(.*?)</p>', html, re.S)
    return [re.sub(r"<[^>]+>", " ", item).strip() for item in notes + lists]


class AdminClient:
    """Logs in and submits admin forms with the session and CSRF cookies a browser would keep."""

    def __init__(self, base_url: str, transport: httpx.AsyncBaseTransport | None = None) -> None:
        # A transport of its own reaches a site in process (``httpx.ASGITransport``) rather than over the network.
        self.http = httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT, transport=transport)

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.http.aclose()

    async def get(self, path: str) -> httpx.Response:
        response = await self.http.get(path)
        assert response.status_code == 200, (path, response.status_code, response.text[:500])
        return response

    async def post(self, path: str, data: dict[str, Any]) -> httpx.Response:
        data = {"csrfmiddlewaretoken": self.http.cookies["csrftoken"], **data}
        return await self.http.post(path, data=data)

    async def login(self, username: str, password: str) -> None:
        await self.get("/admin/login/")
        response = await self.post("/admin/login/", {"username": username, "password": password, "next": "/admin/"})
        assert (response.status_code, response.headers.get("location")) == (302, "/admin/"), form_errors(response.text)

    async def change(self, model: str, pk: int, **changes: str) -> None:
        """Open ``/admin/<app>/<model>/<pk>/change/``, change some fields, save; asserts success."""
        path = f"/admin/{model}/{pk}/change/"
        page = await self.get(path)
        fields = form_fields(page.text, form_id=f"{model.rpartition('/')[2]}_form")
        assert set(changes) <= set(fields), (sorted(changes), sorted(fields))
        fields.update({name: [browser_newlines(value)] for name, value in changes.items()})
        response = await self.post(path, {**fields, "_save": "Save"})
        assert response.status_code == 302, form_errors(response.text)

    async def action(self, model: str, action: str, pks: list[int]) -> None:
        """Run a changelist action on the given rows; asserts success."""
        path = f"/admin/{model}/"
        data = {"action": action, "index": "0", "_selected_action": [str(pk) for pk in pks]}
        response = await self.post(path, data)
        assert (response.status_code, response.headers.get("location")) == (302, path), form_errors(response.text)
