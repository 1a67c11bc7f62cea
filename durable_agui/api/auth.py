"""Who is calling: none (local development), static API keys, or bearer JWTs.

A thread belongs to the principal that created it; every route for a thread answers 404 to
anyone else, exactly as for a thread that does not exist (nothing leaks its existence).
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Annotated, Any

import jwt
from fastapi import Depends, HTTPException, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from durable_agui.api.context import request_context
from durable_agui.api.errors import api_error, error_response
from durable_agui.core.contract import ANONYMOUS, ErrorType
from durable_agui.core.settings import Settings

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
HMAC_ALGORITHMS = {"HS256", "HS384", "HS512"}
NOT_LOOPBACK = "only loopback host names are served without authentication"
"""The error for a ``Host`` name that is not loopback, without authentication."""
NOT_LOCAL_PAGE = "without authentication, only pages served from this machine may send requests"
"""The error for a change sent by a page that is not this machine's, without authentication."""


def unauthorized(message: str) -> HTTPException:
    return api_error(401, ErrorType.UNAUTHORIZED, message, headers={"WWW-Authenticate": "Bearer"})


def jwt_algorithms(settings: Settings) -> list[str]:
    """The JWT algorithms the configured key can verify: HMAC ones for a shared secret,
    the others for a PEM public key or a JWKS, so that a token can never choose a key type
    the key is not (RFC 8725 section 3.1)."""
    asymmetric = bool(settings.jwt_jwks_url) or (settings.jwt_key or "").lstrip().startswith(
        "-----BEGIN"
    )
    return [a for a in settings.jwt_algorithms if (a in HMAC_ALGORITHMS) != asymmetric]


def check_auth_settings(settings: Settings) -> None:
    """Refuse to serve without authentication anywhere but on loopback.

    Raises:
        RuntimeError: ``auth="none"`` with a non-loopback ``api_host``; ``api_key`` without
            keys, or with a key of the reserved principal ``anonymous``; ``jwt`` without a
            key or a JWKS URL, or with no algorithm for its key.
    """
    if settings.auth == "none" and settings.api_host not in LOOPBACK_HOSTS:
        raise RuntimeError(
            f"DURABLE_AGUI_AUTH=none serves anyone who can reach {settings.api_host}; "
            "bind to 127.0.0.1, or set DURABLE_AGUI_AUTH=api_key or jwt"
        )
    if settings.auth == "api_key":
        _check_api_keys(settings)
    if settings.auth == "jwt":
        _check_jwt(settings)


def _check_api_keys(settings: Settings) -> None:
    if not settings.api_keys:
        raise RuntimeError("DURABLE_AGUI_AUTH=api_key needs DURABLE_AGUI_API_KEYS")
    if ANONYMOUS in settings.api_keys.values():
        raise RuntimeError(
            f"DURABLE_AGUI_API_KEYS names the principal {ANONYMOUS!r}, which is reserved for "
            "DURABLE_AGUI_AUTH=none (its threads have the plain thread ids): choose another"
        )


def _check_jwt(settings: Settings) -> None:
    if not (settings.jwt_key or settings.jwt_jwks_url):
        raise RuntimeError("DURABLE_AGUI_AUTH=jwt needs DURABLE_AGUI_JWT_KEY or _JWT_JWKS_URL")
    if not jwt_algorithms(settings):
        raise RuntimeError(
            f"DURABLE_AGUI_JWT_ALGORITHMS={settings.jwt_algorithms} has no algorithm for the "
            "configured key (HS* for a shared secret; RS*, ES*, PS* for a PEM key or a JWKS)"
        )


@lru_cache(maxsize=8)
def _jwks_client(url: str) -> jwt.PyJWKClient:
    return jwt.PyJWKClient(url, cache_keys=True, lifespan=300)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token:
        return token.strip()
    return request.headers.get("x-api-key")


async def _verify_jwt(token: str, settings: Settings) -> dict[str, Any]:
    key: Any = settings.jwt_key
    if settings.jwt_jwks_url:
        signing_key = await asyncio.to_thread(
            _jwks_client(settings.jwt_jwks_url).get_signing_key_from_jwt, token
        )
        key = signing_key.key
    claims: dict[str, Any] = jwt.decode(
        token,
        key,
        algorithms=jwt_algorithms(settings),
        audience=settings.jwt_audience,
        issuer=settings.jwt_issuer,
        options={"require": ["sub", "exp"]},
    )
    return claims


async def current_principal(request: Request) -> str:
    """The caller's principal: the API key's name, or the JWT's ``sub``; 401 otherwise."""
    settings = request_context(request).settings
    if settings.auth == "none":
        return ANONYMOUS
    token = _bearer(request)
    if token is None:
        raise unauthorized("send Authorization: Bearer <token>")
    if settings.auth == "api_key":
        principal = settings.api_keys.get(token)
        if principal is None or principal == ANONYMOUS:
            raise unauthorized("unknown API key")
        return principal
    try:
        claims = await _verify_jwt(token, settings)
    except jwt.PyJWKClientConnectionError as err:
        raise api_error(
            503, ErrorType.JWKS_UNAVAILABLE, "the signing keys cannot be fetched"
        ) from err
    except (jwt.PyJWTError, jwt.PyJWKClientError) as err:
        raise unauthorized(f"invalid token: {err}") from err
    except (ValueError, TypeError, KeyError) as err:
        # PyJWT's key loaders raise these for a token whose header names another key type.
        raise unauthorized("invalid token") from err
    request.state.jwt_claims = claims  # for the claims an approval policy compares
    if str(claims["sub"]) == ANONYMOUS:
        # Reserved for DURABLE_AGUI_AUTH=none, whose threads have the plain thread ids: it
        # would share every principal's id space.
        raise unauthorized(f"the subject {ANONYMOUS!r} is reserved")
    return str(claims["sub"])


PrincipalDep = Annotated[str, Depends(current_principal)]


async def codec_operator(request: Request) -> str:
    """The caller of ``/codec``, who must be an operator: it decrypts any thread's payloads.

    With authentication off (loopback only) everyone local is; otherwise only principals in
    ``DURABLE_AGUI_CODEC_PRINCIPALS`` (401 without credentials, 403 for anyone else).
    """
    principal = await current_principal(request)
    settings = request_context(request).settings
    if settings.auth != "none" and principal not in settings.codec_principals:
        raise api_error(
            403,
            ErrorType.FORBIDDEN,
            "the codec decrypts every thread's payloads: only the principals "
            "in DURABLE_AGUI_CODEC_PRINCIPALS may use it",
        )
    return principal


CodecOperatorDep = Annotated[str, Depends(codec_operator)]


def loopback_host_only(request: Request) -> None:
    """``LoopbackHostOnly`` as a router dependency, for ``create_router`` in an app of your
    own (whose middleware is yours): the same refusals, raised as the API's errors."""
    refusal = _not_local(request.scope)
    if refusal is not None:
        raise api_error(*refusal)


class LoopbackHostOnly:
    """ASGI middleware for unauthenticated mode, where anything that reaches the port may
    act on every thread; only the local machine may:

    - 400 ``InvalidHost`` unless the ``Host`` name is loopback (``127.0.0.1``, ``localhost``,
      ``[::1]``, any port, any letter case), so a web page that rebinds its own DNS name to
      127.0.0.1 cannot drive a local stack from the browser;
    - 403 ``CrossOrigin`` for a request that changes something (not ``GET``, ``HEAD`` or
      ``OPTIONS``) sent by a page whose ``Origin`` is not loopback (``null`` included): a
      site the user visits cannot cancel or run threads through the user's browser, even
      with the bodiless "simple" requests that skip CORS preflight.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = _not_local(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await error_response(api_error(*refusal))(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _not_local(scope: Scope) -> tuple[int, ErrorType, str] | None:
    """``(status, type, message)`` when the HTTP request in ``scope`` is not the local
    machine's (see ``LoopbackHostOnly``), else ``None``."""
    if _host_name(_header(scope, b"host")) not in LOOPBACK_HOSTS:
        return 400, ErrorType.INVALID_HOST, NOT_LOOPBACK
    origin = _header(scope, b"origin")
    if (
        scope["method"] not in _SAFE_METHODS
        and origin is not None
        and _host_name(origin.partition("://")[2] or "null") not in LOOPBACK_HOSTS
    ):
        return 403, ErrorType.CROSS_ORIGIN, NOT_LOCAL_PAGE
    return None


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), or ``None``."""
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _host_name(host: str | None) -> str:
    """The host name of a ``Host`` value (``name[:port]``, ``[v6][:port]``), lower case."""
    host = (host or "").lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host
