"""Access control: API keys and JWTs (JWKS), and threads that belong to their creator."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from durable_agui.cli.devserver import free_port
from tests.stack import BIN, DevStack
from tests.support import CONFIRM_BOOKING, parse_sse, run_input, text_of, waiting_call_ids

KEYS = {"key-alice": "alice", "key-bob": "bob"}


@pytest.fixture(scope="module")
def key_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("auth-keys")
    env = {"DURABLE_AGUI_AUTH": "api_key", "DURABLE_AGUI_API_KEYS": json.dumps(KEYS)}
    stack = DevStack(folder / "data", folder / "dev.log", env=env)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def as_user(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


async def test_threads_belong_to_their_creator(key_stack: DevStack) -> None:
    body = run_input(
        "owned",
        "r1",
        [{"id": "u1", "role": "user", "content": 'call confirm_booking {"f":1}'}],
        [CONFIRM_BOOKING],
    )
    async with httpx.AsyncClient(base_url=key_stack.url, timeout=60) as http:
        assert (await http.post("/agents/demo", json=body)).status_code == 401
        assert (
            await http.post("/agents/demo", json=body, headers=as_user("wrong"))
        ).status_code == 401
        created = await http.post("/agents/demo", json=body, headers=as_user("key-alice"))
        events = parse_sse(created.text)
        (wire_id,) = waiting_call_ids(events)
        alice, bob = as_user("key-alice"), as_user("key-bob")
        assert (await http.get("/threads/owned", headers=alice)).status_code == 200
        answer = {"results": [{"toolCallId": wire_id, "content": "yes"}]}
        for method, path, payload in [
            ("GET", "/threads/owned", None),
            ("GET", "/threads/owned/messages", None),
            ("GET", "/threads/owned/runs/r1/events", None),
            ("POST", "/threads/owned/tool-results", answer),
            ("POST", "/threads/owned/cancel", None),
        ]:
            response = await http.request(method, path, json=payload, headers=bob)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json() == (
                await http.request(
                    method, path.replace("owned", "nosuch"), json=payload, headers=bob
                )
            ).json() | {"detail": {"type": "ThreadNotFound", "message": "no thread 'owned'"}}
        # Each principal has thread ids of its own: Bob's run under Alice's id is his own
        # thread, exactly as under an id nobody uses, and Alice's thread is untouched.
        for thread in ("owned", "free-for-bob"):
            bob_run = run_input(
                thread, "r2", [{"id": "u9", "role": "user", "content": "mine now"}], []
            )
            mine = await http.post("/agents/demo", json=bob_run, headers=bob)
            assert mine.status_code == 200 and text_of(parse_sse(mine.text)) == "echo: mine now"
        bob_view = (await http.get("/threads/owned", headers=bob)).json()
        assert bob_view["status"] == "idle" and bob_view["pendingToolCalls"] == []
        view = (await http.get("/threads/owned", headers=alice)).json()
        assert view["status"] == "awaiting_tool_results"
        assert [c["answered"] for c in view["pendingToolCalls"]] == [False]
        assert (
            await http.post("/threads/owned/tool-results", json=answer, headers=alice)
        ).status_code == 200


class _Jwks(BaseHTTPRequestHandler):
    document: bytes = b"{}"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(self.document)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def jwt_stack(
    tmp_path_factory: pytest.TempPathFactory, signing_key: rsa.RSAPrivateKey
) -> Iterator[DevStack]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing_key.public_key()))
    _Jwks.document = json.dumps(
        {"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}
    ).encode()
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Jwks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    folder: Path = tmp_path_factory.mktemp("auth-jwt")
    env = {
        "DURABLE_AGUI_AUTH": "jwt",
        "DURABLE_AGUI_JWT_JWKS_URL": f"http://127.0.0.1:{server.server_port}/jwks.json",
        "DURABLE_AGUI_JWT_AUDIENCE": "durable-agui",
    }
    stack = DevStack(folder / "data", folder / "dev.log", env=env)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()
        server.shutdown()


def token(key: rsa.RSAPrivateKey, sub: str, **claims: Any) -> str:
    payload = {"sub": sub, "aud": "durable-agui", "exp": int(time.time()) + 300, **claims}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": "k1"})


async def test_jwts_verified_against_a_jwks(
    jwt_stack: DevStack, signing_key: rsa.RSAPrivateKey
) -> None:
    body = run_input("jwt-thread", "r1", [{"id": "u1", "role": "user", "content": "hi"}], [])
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    async with httpx.AsyncClient(base_url=jwt_stack.url, timeout=60) as http:
        for bad in (
            token(signing_key, "carol", exp=int(time.time()) - 10),  # expired
            token(signing_key, "carol", aud="someone-else"),
            token(other_key, "carol"),  # not signed by the JWKS key
        ):
            response = await http.post("/agents/demo", json=body, headers=as_user(bad))
            assert response.status_code == 401, bad
        carol, dave = as_user(token(signing_key, "carol")), as_user(token(signing_key, "dave"))
        created = await http.post("/agents/demo", json=body, headers=carol)
        assert created.status_code == 200 and text_of(parse_sse(created.text)) == "echo: hi"
        assert (await http.get("/threads/jwt-thread", headers=carol)).status_code == 200
        assert (await http.get("/threads/jwt-thread", headers=dave)).status_code == 404


def test_no_auth_refuses_to_listen_beyond_loopback() -> None:
    done = subprocess.run(
        [str(BIN / "durable-agui"), "api", "--host", "0.0.0.0", "--port", str(free_port())],
        env={
            "PATH": "/usr/bin:/bin",
            "DURABLE_AGUI_AUTH": "none",
            "DURABLE_AGUI_TEMPORAL_ADDRESS": "127.0.0.1:1",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "bind to 127.0.0.1" in done.stderr


@pytest.fixture(scope="module")
def hs_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    folder = tmp_path_factory.mktemp("auth-hs")
    env = {"DURABLE_AGUI_AUTH": "jwt", "DURABLE_AGUI_JWT_KEY": HS_SECRET}
    stack = DevStack(folder / "data", folder / "dev.log", env=env)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


HS_SECRET = "a-shared-secret-of-at-least-32-bytes!!"


def forged(header: dict[str, Any], payload: dict[str, Any]) -> str:
    """A token with any header at all, signed with nothing valid."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(payload)}.{base64.urlsafe_b64encode(b'sig').decode()}"


async def test_every_bad_token_is_a_401_with_an_hmac_key(hs_stack: DevStack) -> None:
    """A header naming another key type (ES256, RS256 against an HS secret) made PyJWT's
    key loader raise ValueError: a 500 with a traceback, unauthenticated."""
    body = run_input("hs-thread", "r1", [{"id": "u1", "role": "user", "content": "hi"}], [])
    claims = {"sub": "eve", "exp": int(time.time()) + 300}
    ec_key = ec.generate_private_key(ec.SECP256R1())
    bad_tokens = [
        forged({"alg": "ES256", "typ": "JWT"}, claims),
        forged({"alg": "RS256", "typ": "JWT"}, claims),
        forged({"alg": "none", "typ": "JWT"}, claims),
        forged({"alg": "HS256", "typ": "JWT"}, claims),
        jwt.encode(claims, ec_key, algorithm="ES256"),
        jwt.encode(claims, "another-secret-of-at-least-32-bytes!!", algorithm="HS256"),
        "not.a.token",
        "x" * 5000,
    ]
    async with httpx.AsyncClient(base_url=hs_stack.url, timeout=60) as http:
        for bad in bad_tokens:
            response = await http.post("/agents/demo", json=body, headers=as_user(bad))
            assert response.status_code == 401, (bad[:40], response.text)
            assert response.json()["detail"]["type"] == "Unauthorized"
            assert "Traceback" not in response.text
        good = jwt.encode(claims, HS_SECRET, algorithm="HS256")
        created = await http.post("/agents/demo", json=body, headers=as_user(good))
        assert created.status_code == 200 and text_of(parse_sse(created.text)) == "echo: hi"
