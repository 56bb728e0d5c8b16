"""Admin for the site's access tokens: issued with a lifetime (TOKEN_LIFETIME_DAYS unless the admin chooses
another, a date, or never), the secret shown once with its expiry, and never again."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from mcp_tools.models import AccessToken, Lifetime
from mcp_tools.models.tokens import default_lifetime_days, expiry_after

DEFAULT, ON_DATE, NEVER = "default", "date", "never"


class AccessTokenForm(forms.ModelForm):
    """The change form: the expiry is a date, or blank for a token that never expires."""

    class Meta:
        model = AccessToken
        fields = ("user", "name", "expires_at", "rate_limit")
        help_texts = {"expires_at": _("Blank: the token never expires.")}


class AccessTokenAddForm(forms.ModelForm):
    """The add form: when the token expires is chosen, the default lifetime first; "never" only if chosen."""

    expiry = forms.ChoiceField(label=_("Expires"), widget=forms.RadioSelect, required=False)

    class Meta:
        model = AccessToken
        fields = ("user", "name", "expires_at", "rate_limit")
        labels = {"expires_at": _("expiry date")}
        help_texts = {"expires_at": _("Used when the token expires on a date.")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        days = default_lifetime_days()
        choices: list[tuple[str, Any]] = [(ON_DATE, _("On the date below")), (NEVER, _("Never"))]
        if days is not None:
            after = ngettext("After %(days)d day (the default)", "After %(days)d days (the default)", days)
            choices.insert(0, (DEFAULT, after % {"days": days}))
        field = self.fields["expiry"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices
        field.initial = DEFAULT if days is not None else NEVER

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        when = data.get("expires_at")
        # A form posted without the choice (a script) means its date if it gives one, else the default.
        choice = data.get("expiry") or (ON_DATE if when else self.fields["expiry"].initial)
        if choice == ON_DATE:
            if when is None:
                self.add_error("expires_at", _("Give the date the token expires on, or choose another expiry."))
            elif when <= timezone.now():
                self.add_error("expires_at", _("The date has passed: a token issued now must expire later."))
        else:
            data["expires_at"] = expiry_after(None if choice == NEVER else Lifetime.DEFAULT)
        return data


@admin.register(AccessToken)
class AccessTokenAdmin(admin.ModelAdmin):
    form = AccessTokenForm
    add_form = AccessTokenAddForm
    list_display = ("hint", "user", "name", "rate_limit", "created_at", "expires", "last_used_at")
    list_filter = ("created_at", "expires_at")
    search_fields = ("name", "user__username", "hint")
    readonly_fields = ("hint", "created_at", "last_used_at")
    autocomplete_fields = ("user",)
    date_hierarchy = "created_at"

    def get_form(
        self, request: HttpRequest, obj: AccessToken | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: AccessToken | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("user", "name", "expiry", "expires_at", "rate_limit")
        return ("user", "name", "hint", "expires_at", "rate_limit", "created_at", "last_used_at")

    def get_readonly_fields(self, request: HttpRequest, obj: AccessToken | None = None) -> list[str]:
        readonly = list(self.readonly_fields)
        return [*readonly, "user"] if obj is not None else readonly

    @admin.display(description=_("expires"), ordering="expires_at")
    def expires(self, token: AccessToken) -> Any:
        return token.expires_at or _("never")

    def save_model(self, request: HttpRequest, obj: AccessToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        raw = obj.new_secret()
        super().save_model(request, obj, form, change)
        self.message_user(
            request,
            format_html("Copy this token now; it will not be shown again: <code>{}</code> {}", raw, expiry_note(obj)),
            messages.WARNING,
        )


def expiry_note(token: AccessToken) -> str:
    """When ``token`` expires, said beside its secret."""
    if token.expires_at is None:
        return str(_("It never expires."))
    when = date_format(timezone.localtime(token.expires_at), "DATETIME_FORMAT")
    return str(_("It expires on %(when)s.") % {"when": when})
