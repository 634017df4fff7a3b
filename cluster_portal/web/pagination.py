"""The one pagination style of the API: ``?page=N&page_size=M`` with count/next/previous."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class PortalPagination(PageNumberPagination):
    """Page-number pagination; clients may ask for up to 1,000 rows a page."""

    page_size_query_param = "page_size"
    max_page_size = 1000
