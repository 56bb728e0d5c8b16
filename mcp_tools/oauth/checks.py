"""System checks for a site serving MCP over OAuth: mcp_tools.E010, E011 and W008-W010."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core import checks

from mcp_tools.conf import mcp_settings
from mcp_tools.oauth import issuers


@checks.register(checks.Tags.compatibility)
def check_toolkit_installed(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if apps.is_installed("oauth2_provider"):
        return []
    return [
        checks.Error(
            "mcp_tools.oauth is installed without oauth2_provider: OAuth tokens cannot be issued or read.",
            hint="Add 'oauth2_provider' to INSTALLED_APPS (pip install django-mcp-tools[oauth]).",
            id="mcp_tools.E010",
        )
    ]


@checks.register(checks.Tags.security)
def check_pkce(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from oauth2_provider.settings import oauth2_settings

    found: list[checks.CheckMessage] = []
    if not oauth2_settings.PKCE_REQUIRED:
        found.append(
            checks.Warning(
                "OAUTH2_PROVIDER['PKCE_REQUIRED'] is off: MCP clients must use PKCE, and a code without it can be "
                "stolen and redeemed.",
                hint="Remove the setting or set it to True.",
                id="mcp_tools.W008",
            )
        )
    if not oauth2_settings.COMPLIANT_BCP_RFC9700_PKCE_METHOD:
        found.append(
            checks.Warning(
                "The PKCE method 'plain' is accepted: the MCP authorization spec requires S256.",
                hint="Set OAUTH2_PROVIDER['COMPLIANT_BCP_RFC9700_PKCE_METHOD'] = True.",
                id="mcp_tools.W009",
            )
        )
    return found


@checks.register(checks.Tags.security, deploy=True)
def check_resource_url(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if mcp_settings.RESOURCE_URL:
        return []
    return [
        checks.Warning(
            "MCP_TOOLS['RESOURCE_URL'] is not set: the resource OAuth tokens must name is read from each "
            "request's Host and scheme, which a proxy may change.",
            hint="Set it to the public URL of the MCP endpoint, e.g. 'https://example.com/mcp'.",
            id="mcp_tools.W010",
        )
    ]


@checks.register(checks.Tags.security)
def check_jwt_issuers(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Each trusted issuer of JWT access tokens is fully described; an entry with a problem trusts nothing."""
    entries = getattr(mcp_settings, issuers.SETTING)
    name = f"MCP_TOOLS[{issuers.SETTING!r}]"
    if not isinstance(entries, list):
        hint = "List one dict per issuer, or leave it []."
        return [checks.Error(f"{name} must be a list.", hint=hint, id="mcp_tools.E011")]
    found: list[checks.CheckMessage] = []
    seen: set[Any] = set()
    for index, entry in enumerate(entries):
        for problem, hint in issuers.problems(entry):
            found.append(checks.Error(f"{name}[{index}]: {problem}", hint=hint, id="mcp_tools.E011"))
        issuer = entry.get("ISSUER") if isinstance(entry, dict) else None
        if isinstance(issuer, str) and issuer in seen:
            found.append(
                checks.Error(
                    f"{name}[{index}]: the issuer {issuer!r} is listed twice.",
                    hint="Keep one entry per issuer.",
                    id="mcp_tools.E011",
                )
            )
        seen.add(issuer)
    return found
