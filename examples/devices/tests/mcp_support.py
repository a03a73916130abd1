"""What the Python MCP client scripts share: a transcript line, and a tool
result's JSON."""

import json


def say(line):
    print(line, flush=True)


def payload(result):
    """The tool result's JSON: structured content, else the text block."""
    if result.structured_content is not None:
        return result.structured_content
    for block in result.content:
        if getattr(block, "type", None) == "text":
            try:
                return json.loads(block.text)
            except ValueError:
                return block.text
    return None
