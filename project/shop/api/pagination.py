"""The page styles of the shop's API, one per viewset: page numbers, a cursor, and limit and offset."""

from __future__ import annotations

from rest_framework.pagination import CursorPagination, LimitOffsetPagination, PageNumberPagination


class CustomerPagination(PageNumberPagination):
    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100


class OrderPagination(CursorPagination):
    page_size = 20
    ordering = "-created_at"


class ProductPagination(LimitOffsetPagination):
    default_limit = 20
    max_limit = 100
