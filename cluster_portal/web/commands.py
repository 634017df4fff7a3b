"""One route and one OpenAPI operation per command of a command view.

A view such as ``PlanCommandView`` serves ``POST …/<id>/<command>/`` for several commands. Behind
one ``<command>`` route every command shared one operation id, so a generated client had one
method for all of them. ``command_routes`` gives each command its own route (same URL, same route
name, so ``reverse(name, kwargs={"pk": …, keyword: …})`` still works) and its own operation,
``<operation_prefix>_<command>``, while the view keeps receiving the command as a URL keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.urls import URLPattern, re_path
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView


def command_view(
    view: type[APIView],
    *,
    command: str,
    operation_prefix: str,
    schema: dict[str, Any],
) -> Callable[..., Any]:
    """``view`` for one command, documented as its own operation.

    ``schema`` holds the ``extend_schema`` arguments besides the operation id (request,
    responses, description). The subclass only re-declares ``post`` so the schema generator
    sees the per-command annotation; the behaviour is the base view's.
    """

    def post(self, request, *args, **kwargs):
        return view.post(self, request, *args, **kwargs)

    operation_id = f"{operation_prefix}_{command.replace('-', '_')}"
    post = extend_schema(operation_id=operation_id, **schema)(post)
    name = view.__name__.removesuffix("View") + command.title().replace("-", "") + "View"
    attrs = {"__doc__": view.__doc__, "__module__": view.__module__, "__qualname__": name}
    return type(name, (view,), {**attrs, "post": post}).as_view()


def command_routes(
    *,
    prefix: str,
    view: type[APIView],
    commands: Iterable[str],
    keyword: str,
    operation_prefix: str,
    route_name: str,
    schema: Callable[[str], dict[str, Any]],
) -> list[URLPattern]:
    """``re_path`` routes ``^<prefix>/(?P<pk>\\d+)/<command>/$``, one per command.

    ``schema(command)`` gives that command's ``extend_schema`` arguments; the route passes
    ``{keyword: command}`` to the view, as the single ``<command>`` route did.
    """
    return [
        re_path(
            rf"^{prefix}/(?P<pk>\d+)/{command}/$",
            command_view(
                view,
                command=command,
                operation_prefix=operation_prefix,
                schema=schema(command),
            ),
            {keyword: command},
            name=route_name,
        )
        for command in commands
    ]
