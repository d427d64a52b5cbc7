#!/usr/bin/env python3
"""A scripted MCP server over stdio that misbehaves as its arguments say (oxpi-mcp's tests).

Usage: fake_server.py [--handshake ok|silent|garbage|once:<marker file>]
                      [--tools normal|silent|deep-answer|deep-schema|bad-names]
                      [--stderr-flood <bytes>] [--stderr-bad-byte]

--handshake silent     never answers `initialize`
--handshake garbage    answers `initialize` with a line that is not JSON
--handshake once:F     answers normally if the file F does not exist (and creates it), else
                       never answers (a server that fails after a restart)
--tools silent        never answers `tools/list`
--tools deep-answer    answers `tools/list` with one JSON document 100,000 levels deep
--tools deep-schema    lists `shallow` and `deep` (a schema 50 objects deep)
--tools bad-names      lists `good` and tools whose names no model API accepts
--stderr-flood N       writes N bytes without a newline to stderr before anything else
--stderr-bad-byte      writes a byte that is not UTF-8 to stderr first; `noisy` then writes
                       1 MiB to stderr on every call

Tools of `--tools normal`: echo {text}, crash (exits), big {bytes} (one text of that size),
noisy (see above), deaf (never answers, and stops reading stdin for ever).
"""

import json
import os
import sys

args = sys.argv[1:]


def option(name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


handshake = option("--handshake", "ok")
tools_mode = option("--tools", "normal")
out = sys.stdout.buffer
err = sys.stderr.buffer

if "--stderr-flood" in args:
    chunk = b"e" * (1 << 20)
    left = int(option("--stderr-flood"))
    while left > 0:
        err.write(chunk[: min(left, len(chunk))])
        left -= len(chunk)
    err.flush()
if "--stderr-bad-byte" in args:
    err.write(b"bad byte: \xff\n")
    err.flush()

if handshake.startswith("once:"):
    marker = handshake[len("once:"):]
    if os.path.exists(marker):
        handshake = "silent"
    else:
        open(marker, "w").close()
        handshake = "ok"


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def schema(properties=None):
    return {"type": "object", "properties": properties or {}}


def tool(name, properties=None):
    return {"name": name, "description": name, "inputSchema": schema(properties)}


def tool_list():
    if tools_mode == "deep-schema":
        deep = {"type": "string"}
        for _ in range(50):
            deep = {"type": "object", "properties": {"a": deep}}
        return [tool("shallow"), {"name": "deep", "description": "deep", "inputSchema": deep}]
    if tools_mode == "bad-names":
        return [tool(name) for name in ["good", "bad name!", "x" * 300, "", "a/b"]]
    return [
        tool("echo", {"text": {"type": "string"}}),
        tool("crash"),
        tool("big", {"bytes": {"type": "integer"}}),
        tool("noisy"),
        tool("deaf"),
    ]


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


for line in sys.stdin.buffer:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    ident = message.get("id")
    if method == "initialize":
        if handshake == "silent":
            continue
        if handshake == "garbage":
            out.write(b"Hello! This is not JSON.\n")
            out.flush()
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"},
        }})
    elif method == "tools/list":
        if tools_mode == "silent":
            continue
        if tools_mode == "deep-answer":
            depth = 100_000
            nested = "[" * depth + "]" * depth
            out.write(('{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}\n'
                       % (json.dumps(ident), nested)).encode())
            out.flush()
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tool_list()}})
    elif method == "tools/call":
        name = message["params"]["name"]
        arguments = message["params"].get("arguments") or {}
        if name == "crash":
            os._exit(3)
        if name == "deaf":
            import time
            while True:
                time.sleep(3600)
        if name == "echo":
            result = text_result(arguments.get("text", ""))
        elif name == "big":
            result = text_result("y" * int(arguments["bytes"]))
        elif name == "noisy":
            err.write(b"n" * (1 << 20) + b"\n")
            err.flush()
            result = text_result("noisy done")
        else:
            result = {"content": [], "isError": True}
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
