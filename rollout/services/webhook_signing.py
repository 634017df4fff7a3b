"""How the portal signs what it sends (notifications, deploy-tool calls) and checks callbacks.

Every outgoing request carries two header sets over the same body and timestamp:

- **Standard Webhooks** (https://www.standardwebhooks.com/), signed and verified with the
  reference library ``standardwebhooks``: ``webhook-id`` (stable across retries of one
  delivery, so receivers deduplicate on it), ``webhook-timestamp`` (unix seconds) and
  ``webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``;
- the portal's own, **deprecated** (a later release drops them): ``X-Portal-Timestamp`` and
  ``X-Portal-Signature: sha256=<hex HMAC-SHA256 of "{timestamp}.{body}">``.

The key: a secret written ``whsec_<base64>`` is used as Standard Webhooks defines it (the
base64-decoded bytes); any other secret is used as its UTF-8 bytes. The deprecated
``X-Portal-Signature`` is keyed by the whole secret string's UTF-8 bytes, as it always was, so
receivers that verify it today keep working whatever the secret looks like.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from datetime import UTC, datetime

from standardwebhooks import Webhook, WebhookVerificationError

SECRET_PREFIX = "whsec_"


class WebhookSecretInvalid(ValueError):
    """A ``whsec_`` secret whose rest is not base64 of at least one byte."""


def webhook_signature(*, secret: str, timestamp: str, body: bytes) -> str:
    """The deprecated ``X-Portal-Signature`` value (kept for one release beside the standard
    headers): ``sha256=`` and the hex HMAC-SHA256 of ``<timestamp>.<body>``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def webhook_secret_problem(secret: str) -> str | None:
    """Why ``secret`` cannot sign the Standard Webhooks way, or ``None`` if it can.

    Only a ``whsec_`` secret can be wrong: its rest must be base64 (padding optional, as the
    spec's secrets often drop it) of at least one byte. Any other secret is its UTF-8 bytes.
    """
    if not secret.startswith(SECRET_PREFIX):
        return None
    encoded = secret[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        return "a whsec_ secret must be followed by base64 of the key (e.g. 32 random bytes)"
    return None


def standard_webhook(secret: str) -> Webhook:
    """The library's signer/verifier for ``secret`` (see the module docstring for the key);
    raises :class:`WebhookSecretInvalid` for a ``whsec_`` secret that is not base64."""
    problem = webhook_secret_problem(secret)
    if problem:
        raise WebhookSecretInvalid(problem)
    if secret.startswith(SECRET_PREFIX):
        return Webhook(secret)  # the library strips the prefix and base64-decodes the key
    return Webhook(secret.encode())


def signature_headers(
    *, secret: str, msg_id: str, body: bytes, now: float | None = None
) -> dict[str, str]:
    """Both header sets for one request (see the module docstring), at one timestamp.

    ``msg_id`` must be the same for every retry of one delivery. ``body`` is the exact bytes
    sent (the portal's JSON is ASCII). Raises :class:`WebhookSecretInvalid`.
    """
    signer = standard_webhook(secret)
    stamp = int(time.time() if now is None else now)
    timestamp = str(stamp)
    standard = signer.sign(
        msg_id=msg_id, timestamp=datetime.fromtimestamp(stamp, tz=UTC), data=body.decode()
    )
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": standard,
        "X-Portal-Timestamp": timestamp,
        "X-Portal-Signature": webhook_signature(secret=secret, timestamp=timestamp, body=body),
    }


def has_standard_signature(headers) -> bool:
    """Whether a request is signed the Standard Webhooks way (it carries ``webhook-signature``);
    ``headers`` is any case-insensitive mapping (Django's ``request.headers``) or a dict."""
    return any(str(name).lower() == "webhook-signature" for name in headers.keys())


def standard_verify(*, secret: str, body: bytes, headers) -> None:
    """Verify a Standard-Webhooks-signed request with the library (signature, and a timestamp
    within its 5-minute tolerance); raises :class:`WebhookVerificationError` naming what is
    wrong, :class:`WebhookSecretInvalid` for an unusable secret."""
    verifier = standard_webhook(secret)
    try:
        verifier.verify(body, dict(headers.items()), json_parse=False)
    except WebhookVerificationError:
        raise
    except ValueError:
        # A signature without "v1,…", bad base64 or a body that is not UTF-8: the library
        # raises plain ValueErrors for those.
        raise WebhookVerificationError("malformed webhook-signature or body") from None
