from django.urls import path

from accounts.api import tokens, views

urlpatterns = [
    path("me/", views.MeView.as_view(), name="me"),
    path("tokens/", tokens.TokenListView.as_view(), name="tokens"),
    path("tokens/<int:pk>/", tokens.TokenDetailView.as_view(), name="token"),
    path("tokens/<int:pk>/rotate/", tokens.TokenRotateView.as_view(), name="token-rotate"),
    path("tokens/<int:pk>/revoke/", tokens.TokenRevokeView.as_view(), name="token-revoke"),
]
