#!/usr/bin/env python3
"""A minimal MCP server on stdio (newline-delimited JSON-RPC 2.0) for the real-host suite: it
offers one tool, `lookup_note`, so a host that started it lists the tool under the server's
namespace (`mcp__<server>__lookup_note`). It reads nothing but stdin and writes nothing but
stdout; it never touches the network."""

import json
import sys

TOOL = {
    "name": "lookup_note",
    "description": "Looks up a project note by its title.",
    "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}},
                    "required": ["title"]},
}


def reply(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification (notifications/initialized, ...)
        if method == "initialize":
            version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
            reply(request_id, {"protocolVersion": version,
                               "capabilities": {"tools": {"listChanged": False}},
                               "serverInfo": {"name": "e2e-notes", "version": "1.0.0"}})
        elif method == "tools/list":
            reply(request_id, {"tools": [TOOL]})
        elif method == "tools/call":
            reply(request_id, {"content": [{"type": "text", "text": "no such note"}]})
        elif method in ("ping", "resources/list", "prompts/list"):
            reply(request_id, {} if method == "ping" else
                  {"resources": []} if method == "resources/list" else {"prompts": []})
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                         "error": {"code": -32601, "message": "not found"}})
                             + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
