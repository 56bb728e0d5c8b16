"""A REST API over the test app's accounts and items, which API-action tools run as HTTP clients would."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django_filters import rest_framework as filters
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter, SearchFilter
from rest_framework.pagination import CursorPagination, LimitOffsetPagination, PageNumberPagination
from rest_framework.permissions import SAFE_METHODS, BasePermission, DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import DefaultRouter
from rest_framework.throttling import UserRateThrottle

from tests.testapp.models import Account, Item

LOCKED = "locked"


def visible_accounts(user: Any) -> QuerySet[Account]:
    if user.is_superuser:
        return Account.objects.all()
    return Account.objects.filter(manager=user)


class AccountSerializer(serializers.ModelSerializer):
    class Meta:
        model = Account
        fields = ("id", "name", "tenant")


class ItemSerializer(serializers.ModelSerializer):
    account = serializers.PrimaryKeyRelatedField(queryset=Account.objects.all())
    secret_note = serializers.CharField(write_only=True, required=False, allow_blank=True)

    class Meta:
        model = Item
        fields = ("id", "account", "name", "status", "price", "quantity", "notes", "created_at", "ref", "secret_note")
        read_only_fields = ("id", "created_at", "ref")
        extra_kwargs = {"quantity": {"min_value": 0}}

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        request = self.context.get("request")
        if request is not None and getattr(request, "user", None) is not None:
            fields["account"].queryset = visible_accounts(request.user)
        return fields

    def validate_name(self, value: str) -> str:
        if value.strip().lower() == "forbidden":
            raise serializers.ValidationError("This name is reserved.")
        return value

    def create(self, validated: dict[str, Any]) -> Item:
        validated.pop("secret_note", None)
        return Item.objects.create(created_at=timezone.now(), **validated)

    def update(self, instance: Item, validated: dict[str, Any]) -> Item:
        validated.pop("secret_note", None)
        return super().update(instance, validated)


class RenameSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)


class ItemFilter(filters.FilterSet):
    price_min = filters.NumberFilter(field_name="price", lookup_expr="gte")
    price_max = filters.NumberFilter(field_name="price", lookup_expr="lte")
    status__in = filters.BaseInFilter(field_name="status", lookup_expr="in")

    class Meta:
        model = Item
        fields = ("status",)


class ItemPages(PageNumberPagination):
    page_size = 5
    page_size_query_param = "page_size"
    max_page_size = 20


class NotLocked(BasePermission):
    """Writes to items of a locked tenant are refused, though the items exist and can be read."""

    def has_object_permission(self, request: Request, view: Any, obj: Item) -> bool:
        return request.method in SAFE_METHODS or obj.account.tenant != LOCKED


class ItemViewSet(viewsets.ModelViewSet):
    """The items of the accounts you manage."""

    serializer_class = ItemSerializer
    queryset = Item.objects.all()
    permission_classes = [IsAuthenticated, DjangoModelPermissions, NotLocked]
    filter_backends = [filters.DjangoFilterBackend, SearchFilter, OrderingFilter]
    filterset_class = ItemFilter
    search_fields = ["name"]
    ordering_fields = ["name", "price"]
    ordering = ["pk"]
    pagination_class = ItemPages

    def get_queryset(self) -> QuerySet[Item]:
        return Item.objects.filter(account__in=visible_accounts(self.request.user)).select_related("account")

    @action(detail=True, methods=["post"], serializer_class=RenameSerializer)
    def rename(self, request: Request, pk: str | None = None) -> Response:
        """Give an item a new name."""
        item = self.get_object()
        serializer = RenameSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item.name = serializer.validated_data["name"]
        item.save(update_fields=["name"])
        return Response(ItemSerializer(item, context=self.get_serializer_context()).data)


class AccountViewSet(viewsets.ReadOnlyModelViewSet):
    """The accounts you manage."""

    serializer_class = AccountSerializer
    queryset = Account.objects.all()
    permission_classes = [IsAuthenticated]
    pagination_class = LimitOffsetPagination

    def get_queryset(self) -> QuerySet[Account]:
        return visible_accounts(self.request.user).order_by("pk")


class ItemCursorPages(CursorPagination):
    page_size = 4
    ordering = "-created_at"


class ItemFeedViewSet(viewsets.ReadOnlyModelViewSet):
    """The items of your accounts, newest first, each found by its reference."""

    serializer_class = ItemSerializer
    lookup_field = "ref"
    queryset = Item.objects.all()
    permission_classes = [IsAuthenticated]
    pagination_class = ItemCursorPages

    def get_queryset(self) -> QuerySet[Item]:
        return Item.objects.filter(account__in=visible_accounts(self.request.user))


class PingThrottle(UserRateThrottle):
    """Two pings a minute per user, its rate set here so that the site's settings need none."""

    scope = "caller_ping"
    rate = "2/min"


class CallerViewSet(viewsets.ViewSet):
    """What the API knows of its caller."""

    permission_classes = [IsAuthenticated]

    @action(detail=False, methods=["get"])
    def whoami(self, request: Request) -> Response:
        """The user and the credential the request was authenticated as."""
        auth = request.auth
        return Response(
            {
                "user": request.user.username,
                "auth": None if auth is None else type(auth).__name__,
                "auth_pk": getattr(auth, "pk", None),
            }
        )

    @action(detail=False, methods=["get"], throttle_classes=[PingThrottle])
    def ping(self, request: Request) -> Response:
        """Answer, twice a minute at most."""
        return Response({"pong": request.user.username})


router = DefaultRouter()
router.register("items", ItemViewSet, basename="item")
router.register("accounts", AccountViewSet, basename="account")
router.register("feed", ItemFeedViewSet, basename="feed")
router.register("caller", CallerViewSet, basename="caller")
