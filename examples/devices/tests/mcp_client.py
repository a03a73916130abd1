"""Drives the devices example with the official Python MCP SDK.

Usage: python mcp_client.py <path-to-devices-binary> [stdio|http] [legacy|current]

Runs two clients against a fresh server each time:
  1. two-phase (no elicitation support): list tools, filters, selection,
     list_changed when domain_devices__disable appears, CONFIRMATION_REQUIRED,
     malformed arguments, navigation away and a stale call;
  2. elicitation: the disable completes after the human approves;
  3. (current mode) a change made right after each listen acknowledgment,
     many times in a row, is notified every time.
Prints a transcript; exits non-zero on the first failed expectation.
"""

import asyncio
import json
import subprocess
import sys
import time

import mcp.types as types
from mcp_support import payload, say
from mcp import Client, StdioServerParameters

BINARY = sys.argv[1]
TRANSPORTS = [sys.argv[2]] if len(sys.argv) > 2 else ["stdio", "http"]
MODES = [sys.argv[3]] if len(sys.argv) > 3 else ["legacy", "current"]


class Failed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failed(message)






class Server:
    """A fresh devices process, reached over stdio or HTTP."""

    def __init__(self, transport):
        self.transport = transport
        self.process = None
        self.url = None

    def __enter__(self):
        if self.transport == "http":
            self.process = subprocess.Popen(
                [BINARY, "--mcp", "http", "127.0.0.1:0", "--elicitation"],
                stdout=subprocess.PIPE,
                text=True,
            )
            line = self.process.stdout.readline().strip()
            expect(line.startswith("listening on "), f"unexpected first line {line!r}")
            self.url = line.removeprefix("listening on ")
        return self

    def target(self):
        if self.transport == "http":
            return self.url
        return StdioServerParameters(command=BINARY, args=["--mcp", "stdio"])

    def __exit__(self, *exc):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


class Changes:
    """list_changed notifications, from either delivery path."""

    def __init__(self):
        self.event = asyncio.Event()
        self.count = 0
        self.at = None

    def hit(self):
        self.count += 1
        self.at = time.monotonic()
        self.event.set()

    async def handler(self, message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root if hasattr(message, "root") else message, types.ToolListChangedNotification
        ):
            self.hit()
        elif isinstance(message, types.ToolListChangedNotification):
            self.hit()

    async def wait(self, since, what):
        try:
            await asyncio.wait_for(self.event.wait(), timeout=10)
        except asyncio.TimeoutError:
            raise Failed(f"no tools/list_changed after {what}")
        self.event.clear()
        return (self.at - since) * 1000


async def follow(client, changes, mode):
    """On 2026-07-28, list_changed arrives on a subscriptions/listen stream."""
    if mode != "current":
        return None
    ready = asyncio.Event()

    async def run():
        async with client.listen(tools_list_changed=True) as subscription:
            ready.set()
            async for _event in subscription:
                changes.hit()

    task = asyncio.create_task(run())
    await asyncio.wait_for(ready.wait(), timeout=10)
    return task


def names(listing):
    return [tool.name for tool in listing.tools]


async def two_phase(transport, mode):
    changes = Changes()
    with Server(transport) as server:
        client_mode = "legacy" if mode == "legacy" else "auto"
        async with Client(server.target(), mode=client_mode, message_handler=changes.handler) as client:
            say(f"[{transport}/{mode}] connected, protocol {client.protocol_version}")
            listener = await follow(client, changes, mode)
            tools = names(await client.list_tools())
            say(f"  tools/list: {len(tools)} tools")
            expect("view_devices__table__selectRows" in tools, "selectRows is listed")
            expect("domain_devices__disable" not in tools, "disable is not listed before a selection")
            for tool in (await client.list_tools()).tools:
                if tool.name == "view_devices__table__readState":
                    expect(tool.annotations.read_only_hint is True, "observations are read-only")

            result = await client.call_tool("view_devices__filters__set", {"status": "offline", "city": "Milan"})
            say(f"  view_devices__filters__set -> {json.dumps(payload(result))}")
            expect(not result.is_error, "filters.set succeeds")
            result = await client.call_tool("view_devices__table__readState", {})
            rows = payload(result)["visibleRows"]
            ids = [row["id"] for row in rows]
            say(f"  view_devices__table__readState -> visible {ids}")
            expect(ids == ["d2", "d3", "d4"], f"the offline devices in Milan, got {ids}")

            changes.event.clear()
            started = time.monotonic()
            result = await client.call_tool("view_devices__table__selectRows", {"ids": ids})
            expect(not result.is_error, "selectRows succeeds")
            latency = await changes.wait(started, "the selection")
            tools = names(await client.list_tools())
            say(f"  selected; tools/list_changed after {latency:.1f} ms; now listed: domain_devices__disable={'domain_devices__disable' in tools}")
            expect("domain_devices__disable" in tools, "disable appears after the selection")
            disable = next(t for t in (await client.list_tools()).tools if t.name == "domain_devices__disable")
            expect(disable.annotations.destructive_hint is True, "disable is annotated destructive")
            expect("deviceIds" not in disable.input_schema.get("properties", {}), "deviceIds is bound, not agent-facing")

            result = await client.call_tool("domain_devices__disable", {})
            error = payload(result)
            say(f"  domain_devices__disable {{}} -> isError={result.is_error} {error['code']} retry={error['retry']} confirmationId={error['details']['confirmationId']}")
            expect(result.is_error and error["code"] == "CONFIRMATION_REQUIRED", "two-phase confirmation")
            expect(error["retry"] == "with-confirmation", "retry hint with-confirmation")

            result = await client.call_tool("view_devices__table__selectRows", {"ids": "d2", "mode": "sideways"})
            error = payload(result)
            paths = [issue["path"] for issue in error["details"]["issues"]]
            say(f"  malformed selectRows -> {error['code']} issues at {paths}")
            expect(result.is_error and error["code"] == "INVALID_INPUT", "malformed arguments are INVALID_INPUT")
            expect("/ids" in paths and "/mode" in paths, f"issues name their paths, got {paths}")

            changes.event.clear()
            started = time.monotonic()
            result = await client.call_tool("view_app__navigation__goTo", {"route": "/settings"})
            expect(not result.is_error, "navigation succeeds")
            latency = await changes.wait(started, "the navigation")
            tools = names(await client.list_tools())
            say(f"  navigated to /settings; tools/list_changed after {latency:.1f} ms; tools now {tools}")
            expect(not any(name.startswith("view_devices") for name in tools), "the devices tools are gone")
            result = await client.call_tool("view_devices__table__selectRows", {"ids": ["d2"]})
            error = payload(result)
            say(f"  stale view_devices__table__selectRows -> {error['code']}")
            expect(result.is_error and error["code"] in ("COMPONENT_UNMOUNTED", "CAPABILITY_NOT_FOUND"), "a stale call fails precisely")

            try:
                await client.call_tool("no_such_tool", {})
                raise Failed("an unknown tool must be a protocol error")
            except Failed:
                raise
            except Exception as protocol_error:
                say(f"  no_such_tool -> protocol error: {str(protocol_error)[:60]}")
            if listener is not None:
                listener.cancel()


async def elicitation(transport, mode):
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    with Server(transport) as server:
        client_mode = "legacy" if mode == "legacy" else "auto"
        async with Client(server.target(), mode=client_mode, elicitation_callback=approve) as client:
            await client.call_tool("view_devices__filters__set", {"status": "offline", "city": "Milan"})
            await client.call_tool("view_devices__table__selectRows", {"ids": ["d2", "d3", "d4"]})
            result = await client.call_tool("domain_devices__disable", {"reason": "cleanup"})
            say(f"  [{transport}/{mode}, elicitation] the human was asked: {asked[0].splitlines()[-1] if asked else '(nothing)'}")
            say(f"  domain_devices__disable -> isError={result.is_error} {json.dumps(payload(result))}")
            expect(len(asked) == 1, "the human was asked once")
            expect('"deviceIds":["d2","d3","d4"]' in asked[0], "the question shows the exact bound input")
            expect(not result.is_error and payload(result) == {"disabled": 3}, "the disable completed in the same call")
            result = await client.call_tool("view_devices__table__readState", {})
            left = [row["id"] for row in payload(result)["visibleRows"] if row["id"] in ("d2", "d3", "d4")]
            expect(left == [] and payload(result)["selectedIds"] == [], "the disabled devices left the offline view and the selection")
            await client.call_tool("view_devices__filters__set", {"status": "all"})
            result = await client.call_tool("view_devices__table__readState", {})
            statuses = [row["status"] for row in payload(result)["visibleRows"] if row["id"] in ("d2", "d3", "d4")]
            say(f"  view_devices__table__readState (every status) -> d2, d3, d4 {statuses}")
            expect(statuses == ["disabled"] * 3, "the devices are disabled")


async def denial(transport, mode):
    async def deny(context, params):
        return types.ElicitResult(action="decline")

    with Server(transport) as server:
        client_mode = "legacy" if mode == "legacy" else "auto"
        async with Client(server.target(), mode=client_mode, elicitation_callback=deny) as client:
            await client.call_tool("view_devices__table__selectRows", {"ids": ["d2"]})
            result = await client.call_tool("domain_devices__disable", {})
            error = payload(result)
            say(f"  [{transport}/{mode}, declined] domain_devices__disable -> {error['code']} reason={error['details']['reason']} retry={error['retry']}")
            expect(result.is_error and error["details"]["reason"] == "denied" and error["retry"] == "no", "a denial is final")


async def listen_then_act(transport, mode, rounds=25):
    """Subscribe, then change the tools at once (the drawer opens or closes):
    the change must be notified on that subscription, every round."""
    if mode != "current":
        return
    with Server(transport) as server:
        async with Client(server.target(), mode="auto") as client:
            started = time.monotonic()
            for round_ in range(rounds):
                # Entering waits for the server's acknowledgment.
                async with client.listen(tools_list_changed=True) as subscription:
                    if round_ % 2 == 0:
                        result = await client.call_tool("view_devices__drawer__open", {"deviceId": "d1"})
                    else:
                        result = await client.call_tool("view_devices__drawer__close", {})
                    expect(not result.is_error, f"round {round_}: the drawer call succeeds")
                    try:
                        await asyncio.wait_for(subscription.__anext__(), timeout=5)
                    except asyncio.TimeoutError:
                        raise Failed(f"round {round_}: no tools/list_changed for a change right after the listen acknowledgment")
            elapsed = (time.monotonic() - started) * 1000
            say(f"  [{transport}/{mode}, listen then act] {rounds} rounds, each notified ({elapsed:.0f} ms)")


async def main():
    for transport in TRANSPORTS:
        for mode in MODES:
            await two_phase(transport, mode)
            await elicitation(transport, mode)
            await denial(transport, mode)
            await listen_then_act(transport, mode)
    say("all MCP client checks passed")


try:
    asyncio.run(main())
except Failed as failure:
    print(f"FAILED: {failure}", flush=True)
    sys.exit(1)
