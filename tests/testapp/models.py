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


class Licence(models.Model):
    """A licence whose primary key is its secret key, so a relation to it carries the secret."""

    key = models.CharField(max_length=64, primary_key=True)
    name = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.name


class Integration(models.Model):
    """An account's link to another service: one plain field among secrets named every way sites name them."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="integrations")
    name = models.CharField(max_length=100)
    access_token = models.CharField(max_length=64, blank=True)
    password_hash = models.CharField(max_length=128, blank=True)
    client_secret = models.CharField(max_length=64, blank=True)
    apiKey = models.CharField(max_length=64, blank=True)  # camelCase on purpose: some sites name fields so
    refresh_token = models.CharField(max_length=64, blank=True)
    private_key = models.TextField(blank=True)
    fingerprint = models.CharField(max_length=64, blank=True, db_column="secret_hash")
    licence = models.ForeignKey(Licence, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering: ClassVar = ["pk"]

    def __str__(self) -> str:
        return self.name


class ApiToken(models.Model):
    """A model whose name says it stores credentials: excluded however its fields are named."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="tokens")
    label = models.CharField(max_length=100)

    def __str__(self) -> str:
        return self.label


class Category(models.Model):
    """A category of notes, ordered by default by a secret: following that order would leak it."""

    name = models.CharField(max_length=100)
    code_hash = models.CharField(max_length=64)

    class Meta:
        ordering: ClassVar = ["code_hash"]

    def __str__(self) -> str:
        return self.name


class ItemNote(models.Model):
    """A note on an item, deleted with it."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="item_notes")
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes")
    text = models.CharField(max_length=200)

    class Meta:
        ordering: ClassVar = ["pk"]

    def __str__(self) -> str:
        return self.text


class Invoice(models.Model):
    """An invoice that protects its account (PROTECT) and restricts the deletion of its item (RESTRICT)."""

    number = models.CharField(max_length=20)
    account = models.ForeignKey(Account, null=True, blank=True, on_delete=models.PROTECT, related_name="invoices")
    item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.RESTRICT, related_name="invoices")

    def __str__(self) -> str:
        return self.number
