"""The admin of OAuth clients and their tokens, which django-oauth-toolkit registers with these classes.

``provider_settings()`` names them (``APPLICATION_ADMIN_CLASS``, ``ACCESS_TOKEN_ADMIN_CLASS``, ...). Token
values and authorization codes are never listed, shown, searched or editable, not even in part. The classes
import nothing from ``oauth2_provider.admin``, which imports them while it loads.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from oauth2_provider.forms import ApplicationForm
from oauth2_provider.models import revoke_access_token

from mcp_tools.oauth import authorizations, registrations
from mcp_tools.oauth.models import Consent


def _user_search() -> tuple[str, ...]:
    return (f"user__{get_user_model().USERNAME_FIELD}",)


class StaleFilter(admin.SimpleListFilter):
    title = _("use")
    parameter_name = "stale"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        days = registrations.retention_days()
        return [("yes", _("Stale: self-registered, unused, older than %(days)d days") % {"days": days})]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(pk__in=registrations.stale().values("pk"))
        return queryset


class ApplicationAdmin(admin.ModelAdmin):
    """Every client with how it registered, who owns it, its live tokens and when it last got one."""

    form = ApplicationForm
    list_display = ("__str__", "client_id", "registration_source", "user", "live_tokens", "last_token", "created")
    list_filter = ("registration_source", StaleFilter, "client_type")
    search_fields = ("name", "client_id", *_user_search())
    raw_id_fields = ("user",)
    radio_fields = {"client_type": admin.HORIZONTAL, "authorization_grant_type": admin.VERTICAL}
    # How a client registered decides which code paths may change it (RFC 7592 management, CIMD refresh).
    readonly_fields = ("registration_source", "cimd_expires_at")
    actions = ("revoke_tokens", "delete_stale")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        held = authorizations.held_access_tokens().filter(application=OuterRef("pk")).order_by()
        live = held.filter(expires__gt=timezone.now()).values("application").annotate(n=Count("pk")).values("n")
        return (
            super()
            .get_queryset(request)
            .select_related("user")
            .annotate(
                live_token_count=Coalesce(Subquery(live), 0),
                last_token_at=Subquery(held.order_by("-created").values("created")[:1]),
            )
        )

    @admin.display(description=_("live access tokens"), ordering="live_token_count")
    def live_tokens(self, application: Any) -> int:
        return int(application.live_token_count)

    @admin.display(description=_("last token issued"), ordering="last_token_at")
    def last_token(self, application: Any) -> Any:
        # The toolkit does not record a token's use; a client at work refreshes its short-lived token.
        return application.last_token_at

    @admin.action(description=_("Revoke every token and grant of the selected applications"))
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        ended = sum(authorizations.revoke(application) for application in queryset)
        self.message_user(request, ngettext("Revoked %d access token.", "Revoked %d access tokens.", ended) % ended)

    @admin.action(description=_("Delete the selected applications that are stale"))
    def delete_stale(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        chosen = queryset.count()
        deleted = len(registrations.delete_stale(queryset))
        message = ngettext("Deleted %d stale application", "Deleted %d stale applications", deleted) % deleted
        kept = chosen - deleted
        if kept:
            message += "; " + ngettext("%d is in use or not stale.", "%d are in use or not stale.", kept) % kept
        self.message_user(request, message)


class CredentialAdmin(admin.ModelAdmin):
    """Credentials the OAuth flows issue: never added here, their secret columns never shown."""

    secret_fields: tuple[str, ...] = ("token", "token_checksum")
    list_select_related = ("application", "user")
    list_filter = ("application__registration_source",)
    search_fields = ("application__client_id", "application__name", *_user_search())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return (*(super().get_exclude(request, obj) or ()), *self.secret_fields)


class RevocableAdmin(CredentialAdmin):
    """Tokens are revoked, never deleted here: revoking keeps an access token and its refresh token together."""

    actions = ("revoke_tokens",)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def revoke(self, credential: Any) -> None:
        raise NotImplementedError

    @admin.action(description=_("Revoke the selected tokens with their access or refresh tokens"))
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        revoked = 0
        for credential in queryset:
            self.revoke(credential)
            revoked += 1
        self.message_user(request, ngettext("Revoked %d token.", "Revoked %d tokens.", revoked) % revoked)


class AccessTokenAdmin(RevocableAdmin):
    list_display = ("__str__", "user", "application", "scope", "expires", "created")
    raw_id_fields = ("user", "source_refresh_token", "application")

    def revoke(self, credential: Any) -> None:
        # Deleting an access token alone would leave its refresh token able to mint another.
        revoke_access_token(credential)


class RefreshTokenAdmin(RevocableAdmin):
    list_display = ("__str__", "user", "application", "revoked", "created")
    raw_id_fields = ("user", "access_token", "application")

    def revoke(self, credential: Any) -> None:
        # Marked revoked and kept: that is what detects the replay of a rotated refresh token.
        credential.revoke()


class GrantAdmin(CredentialAdmin):
    secret_fields = ("code", "code_challenge")
    list_display = ("__str__", "user", "application", "expires", "created")
    raw_id_fields = ("user", "application")


@admin.register(Consent)
class ConsentAdmin(admin.ModelAdmin):
    """What each user let each application use: shown to admins, changed only by the user who chose it.

    An admin who wants an application to reach less revokes it; choosing for a user would act in their name.
    """

    list_display = ("user", "application", "reach", "chosen_tools", "updated_at")
    list_filter = ("reach",)
    list_select_related = ("user", "application")
    search_fields = ("application__name", "application__client_id", *_user_search())

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).prefetch_related("tools")

    @admin.display(description=_("chosen tools"))
    def chosen_tools(self, consent: Consent) -> str:
        if consent.reach != Consent.Reach.CHOSEN:
            return "-"
        return ", ".join(sorted(tool.name for tool in consent.tools.all())) or str(_("none"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting a consent would widen the application to all its user's tools.
        return False
