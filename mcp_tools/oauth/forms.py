"""The choice of which tools an application may use: on the consent page and on the connected-apps page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _
from oauth2_provider.forms import AllowForm

from mcp_tools.oauth.models import Consent
from mcp_tools.tools.entries import Entry

#: The consent page's form element: the choice's inputs live in another part of the page and join it by id.
CONSENT_FORM_ID = "authorizationForm"
CHOOSE_ONE = _("Choose at least one tool, or deny the application.")


def is_read_only(entry: Entry) -> bool:
    return entry.spec.annotations.get("readOnlyHint") is True


class ReachForm(forms.Form):
    """All my tools, the read-only ones, or those I tick: among the tools the user may use now."""

    # Not required: a page whose template leaves the choice out (a site's own, from before it existed)
    # grants what it always did, all the user's tools.
    reach = forms.ChoiceField(
        label=_("Which tools may it use?"),
        choices=Consent.Reach.choices,
        initial=Consent.Reach.ALL,
        required=False,
        widget=forms.RadioSelect,
    )
    tools = forms.TypedMultipleChoiceField(
        label=_("Tools"), coerce=int, required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, user_tools: Sequence[Entry] = (), form_id: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user_tools = tuple(user_tools)
        tools = self.fields["tools"]
        assert isinstance(tools, forms.TypedMultipleChoiceField)
        tools.choices = [(entry.id, entry.name) for entry in self.user_tools]
        if form_id:
            for name in ("reach", "tools"):
                self.fields[name].widget.attrs["form"] = form_id

    @property
    def read_only_tools(self) -> tuple[Entry, ...]:
        return tuple(entry for entry in self.user_tools if is_read_only(entry))

    @property
    def rows(self) -> list[tuple[Entry, bool]]:
        """Each of the user's tools, and whether its box is ticked (as submitted, or as chosen before)."""
        ticked = {str(value) for value in (self["tools"].value() or ())}
        return [(entry, str(entry.id) in ticked) for entry in self.user_tools]

    def choosing(self) -> bool:
        """Whether this submission records a choice (the consent page's Deny records none)."""
        return True

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        cleaned["reach"] = cleaned.get("reach") or Consent.Reach.ALL
        nothing_ticked = "tools" not in self.errors and not cleaned.get("tools")
        if self.choosing() and cleaned["reach"] == Consent.Reach.CHOSEN and nothing_ticked:
            self.add_error("tools", CHOOSE_ONE)
        return cleaned

    @classmethod
    def initial_from(cls, consent: Consent | None) -> dict[str, Any]:
        """The form's starting point: the user's previous choice for this application, else all their tools."""
        if consent is None:
            return {"reach": Consent.Reach.ALL, "tools": []}
        return {"reach": consent.reach, "tools": [tool.pk for tool in consent.tools.all()]}


class ConsentForm(ReachForm, AllowForm):
    """The consent page's form: the authorization request's hidden fields, Allow or Deny, and the choice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, form_id=CONSENT_FORM_ID, **kwargs)

    def choosing(self) -> bool:
        return bool(self.cleaned_data.get("allow"))
