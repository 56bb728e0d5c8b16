"""The secret-name rule shared by model-query fields and the audit trail."""

from __future__ import annotations

import pytest

from mcp_tools.access.sensitive import is_secret_name, is_secret_path, name_parts

SECRETS = [
    "password",
    "access_token",
    "password_hash",
    "client_secret",
    "apiKey",
    "API_KEY",
    "api-key",
    "ApiKey",
    "refresh_token",
    "private_key",
    "privateKey",
    "hashed_password",
    "pass_word",
    "salt",
    "otp_code",
    "OTPCode",
    "credentials",
    "sort_key",
    "digest",
    "signing.key",
    "Authorization-Token",
]
PLAIN = [
    "name",
    "email",
    "total",
    "status",
    "sku",
    "price",
    "customer",
    "account_manager",
    "keyboard",
    "turkey",
    "hashtag",
]


@pytest.mark.parametrize("name", SECRETS)
def test_secret_looking_names_are_secret_in_any_case_or_separator(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN)
def test_business_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_names_split_at_separators_and_camel_case() -> None:
    assert name_parts("clientSecret_v2") == ("client", "secret", "v2")
    assert name_parts("HTTPHeader-value") == ("http", "header", "value")


def test_extra_names_match_their_parts_side_by_side() -> None:
    assert is_secret_name("customer_ssn", ["ssn"])
    assert is_secret_name("billingTaxId", ["tax_id"])
    assert not is_secret_name("tax_and_id", ["tax_id"])
    assert not is_secret_name("lessness", ["ssn"])


def test_a_path_is_secret_when_any_segment_is() -> None:
    assert is_secret_path("customer__api_key")
    assert is_secret_path("owner__password__isnull")
    assert not is_secret_path("customer__account_manager__username")
