"""A remote agent's client with URL-mode elicitation: the official Python SDK.

Usage: python mcp_url_client.py <mcp-url> [legacy|current]

Connects to the web console's MCP endpoint as a client far from the console
(it declares elicitation, form and URL modes), selects d2 and asks to
disable it. When the server sends the console's approval page it prints
`APPROVAL_URL <url>` (as a client shows its person the link) and accepts,
then waits for the call. At the end it prints `RESULT <json>`,
`COMPLETED <n>` (notifications/elicitation/complete received) and
`FORM <n>` (form elicitations it was asked, which must be none).
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp_support import payload, say
from mcp import Client

URL = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "legacy"






async def main():
    completed = []
    forms = []

    async def elicited(context, params):
        mode = getattr(params, "mode", "form")
        if mode == "url":
            say(f"APPROVAL_URL {params.url}")
            say(f"MESSAGE {params.message}")
            return types.ElicitResult(action="accept")
        forms.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def message(item):
        root = getattr(item, "root", item)
        if isinstance(root, types.ElicitCompleteNotification):
            completed.append(root.params.elicitation_id)

    client_mode = "legacy" if MODE == "legacy" else "auto"
    async with Client(URL, mode=client_mode, elicitation_callback=elicited, message_handler=message) as client:
        say(f"PROTOCOL {client.protocol_version}")
        result = await client.call_tool("view_devices__table__selectRows", {"ids": ["d2"]})
        say(f"SELECTED {json.dumps(payload(result))}")
        result = await client.call_tool("domain_devices__disable", {})
        if isinstance(payload(result), dict) and payload(result).get("retry") == "after-refresh":
            await client.list_tools()
            result = await client.call_tool("domain_devices__disable", {})
        say(f"RESULT {json.dumps(payload(result))}")
        # The completion may trail the result by a moment.
        for _ in range(20):
            if completed or MODE != "legacy":
                break
            await asyncio.sleep(0.05)
        say(f"COMPLETED {len(completed)}")
        say(f"FORM {len(forms)}")


asyncio.run(main())
