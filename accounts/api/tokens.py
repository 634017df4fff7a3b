"""Integration-token management over the API: list, create, show, rotate, revoke.

Who may manage tokens (decided here):

* only a **signed-in user** (browser session). A token can never list, mint, rotate or revoke
  tokens, whatever its scopes: a leaked credential must not be able to mint itself successors;
* **operators** (``monitoring.operate_cluster``) manage every token. They create an
  operator-level token (no tenant, acts on every tenant) by leaving ``tenant`` empty, or bind
  it to a tenant by naming its slug;
* **customers** manage their own tenant's tokens only. The tenant is always theirs: a payload
  naming any other tenant is refused with 400 (naming their own is accepted), and another
  tenant's token (or an operator-level one) answers 404;
* approvers (and anyone else) get 403: they approve gates, they do not hand out credentials.

Nobody grants more than they hold: a token's scopes must be scopes the requesting user has as
a session user (``principal_has_scope``), so customers issue ``read`` tokens, operators
``read`` and ``ingest``; ``approve`` tokens come from a superuser (acting for themselves) or
the ``create_integration_token --owner USER`` command (acting for that approver).

The plaintext secret appears exactly once, in the answer that issued it (create or rotate).
Rotation revokes the token and issues a replacement (a new id) with the same name, tenant,
scopes and owner (an expiring token keeps its lifetime, counted from now); the old secret stops
working at once. A token may carry an expiry (``expires_at``); past it, it answers 401.

A token acts for a person, its **owner** (whoever created it). Rotating or revoking is
limited further than seeing (:func:`token_manage_refusal`): the caller must hold **every**
scope of the token (nobody obtains a secret for a scope they lack), and a token owned by
someone else may be revoked only by staff and rotated by nobody but its owner — a rotated
secret would otherwise let one person act as another. Ownerless tokens (exporters issued by
the command) are rotated by whoever manages them and holds their scopes.
"""

from __future__ import annotations

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Q
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.authentication import IntegrationPrincipal
from accounts.api.permissions import principal_has_scope
from accounts.models import IntegrationToken, Tenant
from accounts.models.tokens import TOKEN_SCOPES, validate_scopes
from accounts.selectors.people import person_shown
from accounts.services.tokens import token_create, token_revoke, token_rotate


def manages_all_tokens(user) -> bool:
    return bool(user.is_superuser or user.has_perm("monitoring.operate_cluster"))


def may_manage_tokens(user) -> bool:
    """Session users only: operators (every token) and customers (their tenant's)."""
    if isinstance(user, IntegrationPrincipal) or not getattr(user, "is_authenticated", False):
        return False
    return manages_all_tokens(user) or bool(getattr(user, "is_customer", False))


def tokens_visible_to(user):
    """The tokens ``user`` may see and act on; another tenant's are simply absent (→ 404)."""
    tokens = IntegrationToken.objects.select_related("tenant", "created_by")
    if not may_manage_tokens(user):
        return tokens.none()
    if manages_all_tokens(user):
        return tokens
    return tokens.filter(tenant_id=user.tenant_id)


def token_manage_refusal(user, token: IntegrationToken, *, rotating: bool) -> str | None:
    """Why ``user`` may not rotate (or revoke) ``token``, or ``None`` when they may."""
    lacking = [scope for scope in token.scopes if not principal_has_scope(user, scope)]
    if lacking:
        return _("You do not hold every scope of this token (%(scopes)s).") % {
            "scopes": ", ".join(lacking)
        }
    if token.owner_id is None or token.owner_id == user.pk:
        return None
    if rotating:
        return _(
            "Only the person a token acts for may rotate it; revoke it and let them create "
            "a new one."
        )
    if not manages_all_tokens(user):
        return _("Only the token's owner or staff may revoke it.")
    return None


class TokenRevoked(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = gettext_lazy("This token is revoked; create a new one instead.")


class CanManageTokens(BasePermission):
    message = gettext_lazy("Only operators and customers signed in to the portal manage tokens.")

    def has_permission(self, request: Request, view) -> bool:
        if isinstance(request.user, IntegrationPrincipal):
            raise PermissionDenied(
                _("Integration tokens cannot manage tokens; sign in to the portal instead.")
            )
        return may_manage_tokens(request.user)


class TokenSerializer(serializers.ModelSerializer):
    """A token as the API shows it: never its hash, and its secret only once (``token``)."""

    # A slug, resolved in validate(): an unknown slug and another tenant's slug get the same
    # answer from a customer, so the API does not tell customers which tenants exist.
    tenant = serializers.CharField(
        source="tenant.slug",
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text=gettext_lazy(
            "Tenant slug. Operators: empty for an operator-level token. Customers: always "
            "their own tenant."
        ),
    )
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=TOKEN_SCOPES),
        allow_empty=False,
        help_text=gettext_lazy("Any of ingest, read, approve."),
    )
    created_by = serializers.SerializerMethodField(
        help_text=gettext_lazy(
            "Who issued it: a username for staff; customers see staff by role (operator…)."
        )
    )
    is_active = serializers.BooleanField(
        read_only=True, help_text=gettext_lazy("Neither revoked nor expired.")
    )
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text=gettext_lazy(
            "Optional end of life (ISO 8601, in the future); past it the token answers 401."
        ),
    )

    class Meta:
        model = IntegrationToken
        fields = [
            "id",
            "name",
            "tenant",
            "scopes",
            "prefix",
            "is_active",
            "created_by",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]

    def get_created_by(self, token: IntegrationToken) -> str | None:
        if token.created_by_id is None:
            return None
        return person_shown(self.context["request"].user, token.created_by)

    def validate_scopes(self, value: list[str]) -> list[str]:
        value = sorted(set(value))
        try:
            validate_scopes(value)  # the model's own rule
        except Exception as exc:  # Django's ValidationError → DRF's, same messages
            raise serializers.ValidationError(getattr(exc, "messages", [str(exc)])) from exc
        user = self.context["request"].user
        refused = [scope for scope in value if not principal_has_scope(user, scope)]
        if refused:
            raise serializers.ValidationError(
                _("You cannot grant a scope you do not hold: %(scopes)s.")
                % {"scopes": ", ".join(refused)}
            )
        return value

    def validate(self, attrs: dict) -> dict:
        user = self.context["request"].user
        given = "tenant" in attrs
        slug = (attrs.pop("tenant", None) or {}).get("slug") or None
        if manages_all_tokens(user):
            tenant = None
            if slug is not None:
                tenant = Tenant.objects.filter(slug=slug).first()
                if tenant is None:
                    raise serializers.ValidationError(
                        {"tenant": [_("Unknown tenant '%(slug)s'.") % {"slug": slug}]}
                    )
            attrs["tenant"] = tenant
            return attrs
        # A customer's token always belongs to the customer's tenant; naming another one (or
        # none, an operator-level token) is an error, never honoured and never silently dropped.
        if given and slug != user.tenant.slug:
            raise serializers.ValidationError(
                {"tenant": [_("You can only create tokens for your own tenant.")]}
            )
        attrs["tenant"] = user.tenant
        return attrs

    def create(self, validated_data: dict) -> IntegrationToken:
        try:
            issued = token_create(
                name=validated_data["name"],
                scopes=validated_data["scopes"],
                tenant=validated_data.get("tenant"),
                created_by=self.context["request"].user,
                expires_at=validated_data.get("expires_at"),
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        self.plaintext = issued.plaintext
        return issued.token


class IssuedTokenSerializer(TokenSerializer):
    """What create and rotate answer: the token plus its secret, shown this once."""

    token = serializers.CharField(
        read_only=True, help_text=gettext_lazy("The secret. It is never shown again.")
    )
    replaces = serializers.IntegerField(
        read_only=True, required=False, help_text=gettext_lazy("rotate: the revoked token's id")
    )

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token", "replaces"]


class TokenFilter(django_filters.FilterSet):
    active = django_filters.BooleanFilter(
        method="filter_active",
        label=gettext_lazy("true: only tokens that still work; false: revoked or expired ones"),
    )
    tenant = django_filters.CharFilter(field_name="tenant__slug", label=gettext_lazy("tenant slug"))

    class Meta:
        model = IntegrationToken
        fields = ["active", "tenant"]

    def filter_active(self, queryset, name: str, value: bool | None):
        if value is None:
            return queryset
        working = Q(revoked_at__isnull=True) & (
            Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
        )
        return queryset.filter(working) if value else queryset.exclude(working)


class _TokenViewMixin:
    permission_classes = [CanManageTokens]
    serializer_class = TokenSerializer
    # No scope check (tokens are refused outright); for throttling, token management counts
    # against the small ``approve`` budget rather than sharing the generous ``read`` one.
    throttle_scope = "approve"

    def get_queryset(self):
        return tokens_visible_to(self.request.user)


@extend_schema_view(post=extend_schema(responses={201: IssuedTokenSerializer}))
class TokenListView(_TokenViewMixin, generics.ListCreateAPIView):
    """``GET``: the tokens you may manage (``?active=true|false``, ``?tenant=slug``).
    ``POST {"name", "scopes"[, "tenant"]}``: issue one; the answer carries ``token``, the
    secret, which is never shown again."""

    filterset_class = TokenFilter

    def create(self, request: Request, *args, **kwargs) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        serializer.save()
        body = {**serializer.data, "token": serializer.plaintext}
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(_TokenViewMixin, generics.RetrieveAPIView):
    """``GET``: one token (never its secret)."""


class TokenRotateView(_TokenViewMixin, APIView):
    """``POST``: revoke the token and issue a replacement with the same name, tenant and
    scopes; the answer (201) carries the new ``token`` and ``replaces`` (the old id)."""

    @extend_schema(
        operation_id="tokens_rotate", request=None, responses={201: IssuedTokenSerializer}
    )
    def post(self, request: Request, pk: int) -> Response:
        with transaction.atomic():
            token = get_object_or_404(self.get_queryset().select_for_update(of=("self",)), pk=pk)
            refusal = token_manage_refusal(request.user, token, rotating=True)
            if refusal:
                raise PermissionDenied(refusal)
            if token.revoked_at is not None:
                raise TokenRevoked()
            issued = token_rotate(token=token, created_by=request.user)
        body = {
            **TokenSerializer(issued.token, context={"request": request}).data,
            "token": issued.plaintext,
            "replaces": token.pk,
        }
        return Response(body, status=status.HTTP_201_CREATED)


class TokenRevokeView(_TokenViewMixin, APIView):
    """``POST``: revoke the token at once; revoking a revoked token changes nothing."""

    @extend_schema(operation_id="tokens_revoke", request=None, responses={200: TokenSerializer})
    def post(self, request: Request, pk: int) -> Response:
        with transaction.atomic():
            token = get_object_or_404(self.get_queryset().select_for_update(of=("self",)), pk=pk)
            refusal = token_manage_refusal(request.user, token, rotating=False)
            if refusal:
                raise PermissionDenied(refusal)
            token_revoke(token=token, actor=request.user)
        return Response(TokenSerializer(token, context={"request": request}).data)
