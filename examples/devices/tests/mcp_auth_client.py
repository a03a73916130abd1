"""Drives the devices example's authenticated MCP endpoint with the official
Python MCP SDK (`Authorization: Bearer ...` over streamable HTTP, both
protocol generations) and its HTTP library for what a client library would
never send.

Usage: python mcp_auth_client.py <path-to-devices-binary>

1. Static tokens (`--auth tokens FILE`): an admin and a viewer token on one
   server at once see different tools (the viewer never sees
   domain_devices__disable); the admin's disable still runs only once the
   person approved (a token is no approval); no token, an unknown one and one without the
   `mcp` scope get 401/403 with the RFC 9728 / RFC 6750 challenge; a
   session id replayed with another token is refused; the protected
   resource metadata is served and correct.
2. JWTs (`--auth jwt ISSUER KEY.pem`, RS256): admin and viewer tokens see
   different tools; expired, wrong-audience, wrong-signature and tampered
   tokens get 401 with the challenge; a token without the scope gets 403.
Prints a transcript; exits non-zero on the first failed expectation.
"""

import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

import httpx2
import jwt
import mcp.types as types
from mcp_support import payload, say
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BINARY = sys.argv[1]
ISSUER = "https://auth.devices.test"
DISABLE = "domain_devices__disable"
SELECT = "view_devices__table__selectRows"
MODES = ["legacy", "auto"]


class Failed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failed(message)




class Server:
    """A fresh devices process serving authenticated MCP over HTTP."""

    def __init__(self, *auth):
        self.auth = list(auth)

    def __enter__(self):
        self.process = subprocess.Popen(
            [BINARY, "--mcp", "http", "127.0.0.1:0", "--elicitation", "--auth", *self.auth],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.process.kill()
            raise Failed(f"unexpected first line {line!r}: {self.process.stderr.read()}")
        self.url = line.removeprefix("listening on ")
        self.base = self.url.removesuffix("/mcp")
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=10)


def client(url, token, mode, **options):
    headers = {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode, **options)


async def the_person_still_approves(server, admin):
    """A token is no approval: the admin's disable waits for the person
    (elicitation, as configured), and runs only once they approved."""
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with client(server.url, admin, "legacy", elicitation_callback=approve) as as_admin:
        await as_admin.call_tool(SELECT, {"ids": ["d2"]})
        result = await as_admin.call_tool(DISABLE, {"reason": "cleanup"})
        expect(len(asked) == 1, "the person was asked once")
        expect(not result.is_error and result.structured_content == {"disabled": 1}, f"disabled once approved: {result}")
    say("  [tokens] the admin's disable ran only after the person approved (elicitation)")


def names(listing):
    return [tool.name for tool in listing.tools]


async def admin_and_viewer(server, admin, viewer, label):
    """One server, two identities at once, both protocol generations."""
    for mode in MODES:
        async with client(server.url, admin, mode) as as_admin, client(server.url, viewer, mode) as as_viewer:
            result = await as_admin.call_tool(SELECT, {"ids": ["d2"]})
            expect(not result.is_error, "the admin selects a row")
            admin_tools = names(await as_admin.list_tools())
            viewer_tools = names(await as_viewer.list_tools())
            say(f"  [{label}/{mode}, protocol {as_admin.protocol_version}] admin sees disable={DISABLE in admin_tools}, "
                f"viewer sees disable={DISABLE in viewer_tools} ({len(viewer_tools)} tools)")
            expect(DISABLE in admin_tools, f"the admin sees {DISABLE}")
            expect(DISABLE not in viewer_tools, f"the viewer never sees {DISABLE}")
            expect(SELECT in viewer_tools, "the viewer sees the table")


def post(server, token, body, extra=None, version="2025-11-25"):
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": version,
    }
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    return httpx2.post(server.url, headers=headers, content=json.dumps(body), timeout=10)


INITIALIZE = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def modern_list():
    return {
        "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        }},
    }


def expect_challenge(response, metadata, presented, what):
    expect(response.status_code == 401, f"{what}: 401, got {response.status_code} {response.text}")
    challenge = response.headers.get("www-authenticate", "")
    expect(challenge.startswith("Bearer "), f"{what}: a Bearer challenge, got {challenge!r}")
    expect(f'resource_metadata="{metadata}"' in challenge, f"{what}: names the metadata, got {challenge!r}")
    expect(('error="invalid_token"' in challenge) == presented, f"{what}: invalid_token iff presented, got {challenge!r}")
    expect("devices" not in response.text, f"{what}: the body says nothing of tools")


def expect_insufficient(response, metadata, what):
    expect(response.status_code == 403, f"{what}: 403, got {response.status_code} {response.text}")
    challenge = response.headers.get("www-authenticate", "")
    expect('error="insufficient_scope"' in challenge and 'scope="mcp"' in challenge, f"{what}: {challenge!r}")
    expect(f'resource_metadata="{metadata}"' in challenge, f"{what}: names the metadata, got {challenge!r}")


def refusals(server, metadata, bad, unscoped, label):
    """Every bad credential, on both generations' first request."""
    for what, token in [("no token", None)] + bad:
        for generation, body, version in [("handshake", INITIALIZE, "2025-11-25"), ("sessionless", modern_list(), "2026-07-28")]:
            expect_challenge(post(server, token, body, version=version), metadata, token is not None, f"{label} {what} ({generation})")
    say(f"  [{label}] 401 with the challenge for: no token, {', '.join(what for what, _ in bad)}")
    for generation, body, version in [("handshake", INITIALIZE, "2025-11-25"), ("sessionless", modern_list(), "2026-07-28")]:
        expect_insufficient(post(server, unscoped, body, version=version), metadata, f"{label} without the scope ({generation})")
    say(f"  [{label}] 403 insufficient_scope for a token without `mcp`")


def replay(server, admin, viewer, label):
    opened = post(server, admin, INITIALIZE)
    expect(opened.status_code == 200, f"initialize: {opened.status_code} {opened.text}")
    session = opened.headers["mcp-session-id"]
    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    stolen = post(server, viewer, listed, {"mcp-session-id": session})
    expect(stolen.status_code == 404, f"a session replayed with another token is refused, got {stolen.status_code}")
    anonymous = post(server, None, listed, {"mcp-session-id": session})
    expect(anonymous.status_code == 401, f"a session replayed without a token is 401, got {anonymous.status_code}")
    say(f"  [{label}] the admin's session id with the viewer's token -> {stolen.status_code}, without a token -> {anonymous.status_code}")


def metadata_document(server, resource):
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]:
        response = httpx2.get(server.base + path, timeout=10)
        expect(response.status_code == 200, f"{path}: {response.status_code}")
        document = response.json()
        expect(document["resource"] == resource, f"{path}: resource {document['resource']!r}")
        expect(document["scopes_supported"] == ["mcp", "devices:read", "devices:write"], f"{path}: {document}")
        expect(document["bearer_methods_supported"] == ["header"], f"{path}: {document}")
        expect(document["authorization_servers"] == [ISSUER], f"{path}: {document}")
    say(f"  metadata served at both well-known paths: {json.dumps(document)}")


def metadata_url(server):
    return server.base + "/.well-known/oauth-protected-resource/mcp"


async def static_tokens(directory):
    tokens = os.path.join(directory, "tokens.json")
    admin, viewer, unscoped = "t-admin-5f0c2a", "t-viewer-91be77", "t-reader-0aa1"
    with open(tokens, "w") as out:
        json.dump({"tokens": [
            {"token": admin, "subject": "admin", "scopes": ["mcp", "devices:read", "devices:write"]},
            {"token": viewer, "subject": "viewer", "scopes": ["mcp", "devices:read"]},
            {"token": unscoped, "subject": "reader", "scopes": ["devices:read"]},
        ]}, out)
    say("[static tokens]")
    with Server("tokens", tokens, "--authorization-server", ISSUER) as server:
        await admin_and_viewer(server, admin, viewer, "tokens")
        await the_person_still_approves(server, admin)
        refusals(server, metadata_url(server), [("an unknown token", "t-guess")], unscoped, "tokens")
        replay(server, admin, viewer, "tokens")
        metadata_document(server, server.url)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


async def jwts(directory):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = os.path.join(directory, "issuer.pem")
    with open(public, "wb") as out:
        out.write(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    say("[JWT, RS256]")
    with Server("jwt", ISSUER, public, "--authorization-server", ISSUER) as server:
        now = int(time.time())

        def token(sub, scope, aud=server.url, exp=now + 600, signer=key):
            claims = {"iss": ISSUER, "sub": sub, "aud": aud, "scope": scope, "iat": now, "exp": exp}
            return jwt.encode(claims, signer, algorithm="RS256")

        admin = token("ada", "mcp devices:read devices:write")
        viewer = token("vic", "mcp devices:read")
        await admin_and_viewer(server, admin, viewer, "jwt")
        header, _, signature = admin.split(".")
        forged = b64(json.dumps({"iss": ISSUER, "sub": "vic", "aud": server.url, "scope": "mcp devices:read devices:write",
                                 "iat": now, "exp": now + 600}).encode())
        bad = [
            ("an expired token", token("ada", "mcp", exp=now - 600)),
            ("a wrong-audience token", token("ada", "mcp", aud="https://elsewhere.test/mcp")),
            ("a wrong-signature token", token("ada", "mcp", signer=other)),
            ("a tampered token", f"{header}.{forged}.{signature}"),
        ]
        refusals(server, metadata_url(server), bad, token("ada", "devices:read"), "jwt")
        replay(server, admin, viewer, "jwt")


async def main():
    with tempfile.TemporaryDirectory() as directory:
        await static_tokens(directory)
        await jwts(directory)
    say("all authenticated MCP client checks passed")


try:
    asyncio.run(main())
except Failed as failure:
    print(f"FAILED: {failure}", flush=True)
    sys.exit(1)
