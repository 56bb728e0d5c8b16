"""Host models that the model-query tests expose: accounts owned by users, and their items."""

from __future__ import annotations

import secrets
import uuid
from typing import ClassVar

from django.conf import settings
from django.db import models


def new_api_key() -> str:
    return f"SECRET-KEY-{secrets.token_hex(8)}"


class Account(models.Model):
    """A customer account in a tenant, looked after by one user; ``api_key`` is a secret field."""

    name = models.CharField("account name", max_length=100, help_text="What the customer calls itself.")
    tenant = models.CharField(max_length=50)
    api_key = models.CharField(max_length=64, default=new_api_key)
    manager = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="testapp_accounts")

    class Meta:
        ordering: ClassVar = ["pk"]

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    """One item of an account, with a field of every kind the engine serializes."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        RETIRED = "retired", "Retired"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="items")
    name = models.CharField(max_length=100, help_text="Shown on invoices.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    price = models.DecimalField(max_digits=10, decimal_places=2)
    quantity = models.IntegerField(default=0)
    created_at = models.DateTimeField()
    released_on = models.DateField(null=True, blank=True)
    ref = models.UUIDField("reference", unique=True, default=uuid.uuid4)
    active = models.BooleanField(default=True)
    # Nullable on purpose: the engine must serialize and filter a text column holding NULL.
    notes = models.TextField(null=True, blank=True)  # noqa: DJ001
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering: ClassVar = ["pk"]

    def __str__(self) -> str:
        return self.name
