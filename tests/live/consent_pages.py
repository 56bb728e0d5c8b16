"""A person's steps through the OAuth pages in a real browser: signing in, and answering the consent page.

Buttons and fields are found by role and accessible name, as a person finds them, so that a restyled page
(or a new block on it) keeps the steps working.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

CONSENT_HEADING = re.compile(r"^Connect .+ to your account\?$")


def sign_in(page: Page, username: str, password: str) -> None:
    """Fill in and send the sign-in page the browser is on; wait for the page it leads to."""
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


def consent_page_for(page: Page, username: str) -> None:
    """The browser shows the consent page to ``username``."""
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name=CONSENT_HEADING)).to_be_visible()
    expect(page.get_by_text("Signed in as")).to_have_text(re.compile(rf"Signed in as {re.escape(username)}\."))


def answer(page: Page, button: str) -> None:
    """Press Allow or Deny on the consent page."""
    page.get_by_role("button", name=button, exact=True).click()
