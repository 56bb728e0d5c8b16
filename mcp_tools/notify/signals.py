"""Model signals that announce changes to tools and to who may use them; receivers are thin and delegate."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from mcp_tools.access.authentication import forget_tokens
from mcp_tools.models import (
    AccessToken,
    GroupGrant,
    ModelQuery,
    RateLimitOverride,
    SearchSource,
    Tool,
    UserGrant,
)
from mcp_tools.notify import counters as polling
from mcp_tools.notify.events import schedule_access_changed, schedule_token_changed, schedule_tools_changed

User = get_user_model()
MEMBERSHIP_ACTIONS = frozenset({"post_add", "post_remove", "post_clear"})


@receiver(post_save, sender=Tool, dispatch_uid="mcp_tools.tool_saved")
@receiver(post_delete, sender=Tool, dispatch_uid="mcp_tools.tool_deleted")
@receiver(post_save, sender=UserGrant, dispatch_uid="mcp_tools.user_grant_saved")
@receiver(post_delete, sender=UserGrant, dispatch_uid="mcp_tools.user_grant_deleted")
@receiver(post_save, sender=GroupGrant, dispatch_uid="mcp_tools.group_grant_saved")
@receiver(post_delete, sender=GroupGrant, dispatch_uid="mcp_tools.group_grant_deleted")
@receiver(post_delete, sender=ModelQuery, dispatch_uid="mcp_tools.query_deleted")
@receiver(post_save, sender=SearchSource, dispatch_uid="mcp_tools.source_saved")
@receiver(post_delete, sender=SearchSource, dispatch_uid="mcp_tools.source_deleted")
@receiver(post_save, sender=RateLimitOverride, dispatch_uid="mcp_tools.rate_override_saved")
@receiver(post_delete, sender=RateLimitOverride, dispatch_uid="mcp_tools.rate_override_deleted")
def tool_changed(sender: type[Any], using: str, **kwargs: Any) -> None:
    polling.bump(polling.TOOLS, using)
    schedule_tools_changed(using)


def access_changed(users: Any, using: str) -> None:
    forget_tokens()
    polling.bump(polling.ACCESS, using)
    schedule_access_changed(users, using)


@receiver(post_save, sender=AccessToken, dispatch_uid="mcp_tools.token_saved")
@receiver(post_delete, sender=AccessToken, dispatch_uid="mcp_tools.token_deleted")
def token_changed(instance: Any, using: str, created: bool = False, **kwargs: Any) -> None:
    # New requests stop at once here; every process re-checks its sessions opened with the token, at once
    # through the group or within the freshness bound through the counter, and ends them if it no longer
    # works (revoked, expired, or moved to another user).
    forget_tokens()
    if created:
        return  # a new token has no sessions yet
    polling.bump(polling.TOKENS, using)
    schedule_token_changed(instance.pk, using)


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="mcp_tools.membership_changed")
@receiver(m2m_changed, sender=User.user_permissions.through, dispatch_uid="mcp_tools.user_permissions_changed")
def user_relation_changed(
    instance: Any, action: str, reverse: bool, pk_set: set[Any] | None, using: str, **kwargs: Any
) -> None:
    if action not in MEMBERSHIP_ACTIONS:
        return
    # From the user's side the user changed; from the group's or permission's side, the users in pk_set.
    access_changed([instance.pk] if not reverse else pk_set, using)


@receiver(m2m_changed, sender=Group.permissions.through, dispatch_uid="mcp_tools.group_permissions_changed")
def group_permissions_changed(
    instance: Any, action: str, reverse: bool, pk_set: set[Any] | None, using: str, **kwargs: Any
) -> None:
    if action not in MEMBERSHIP_ACTIONS:
        return
    groups = [instance.pk] if not reverse else list(pk_set or ())
    if reverse and pk_set is None:
        access_changed(None, using)
        return
    members = User._default_manager.db_manager(using).filter(groups__in=groups).values_list("pk", flat=True)
    access_changed(list(members), using)


@receiver(post_save, sender=User, dispatch_uid="mcp_tools.user_saved")
def user_saved(instance: Any, using: str, update_fields: Any = None, created: bool = False, **kwargs: Any) -> None:
    # Logins only touch last_login; new users have no sessions yet.
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    access_changed([instance.pk], using)


@receiver(post_delete, sender=User, dispatch_uid="mcp_tools.user_deleted")
def user_deleted(instance: Any, using: str, **kwargs: Any) -> None:
    # Deleting a user removes their memberships without m2m_changed; their open sessions must lose access.
    access_changed([instance.pk], using)


@receiver(post_delete, sender=Group, dispatch_uid="mcp_tools.group_deleted")
def group_deleted(using: str, **kwargs: Any) -> None:
    access_changed(None, using)
