"""Who may do what through the shop's API: model permissions for each method, and who may change an order."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission, DjangoModelPermissions
from rest_framework.request import Request

from project.shop.models import Order

VIEW = "%(app_label)s.view_%(model_name)s"
CHANGE = "%(app_label)s.change_%(model_name)s"


class ModelPermissions(DjangoModelPermissions):
    """Django's model permissions, with ``view_*`` needed to read (DRF's own lets any user read)."""

    perms_map = {**DjangoModelPermissions.perms_map, "GET": [VIEW], "HEAD": [VIEW]}


class ChangeModelPermissions(ModelPermissions):
    """For actions that change an existing row by POST: ``change_*`` rather than ``add_*``."""

    perms_map = {**ModelPermissions.perms_map, "POST": [CHANGE]}


class ManagesOrderCustomer(BasePermission):
    """Anyone may read an order they can see; only its customer's account manager or a superuser changes it."""

    message = "Only the account manager of the order's customer may change this order."

    def has_object_permission(self, request: Request, view: Any, obj: Order) -> bool:
        if request.method in SAFE_METHODS:
            return True
        user = request.user
        return bool(user.is_superuser or obj.customer.account_manager_id == user.pk)
