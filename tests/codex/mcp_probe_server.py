"""A stdio MCP server for tests/mcp.rs (written for the test; MCP's
newline-delimited JSON-RPC, protocol 2025-06-18): one tool, `probe`, that
tries to read a file and reach a host its seal denies, and says what
happened. Every message it receives, and every probe, is appended to
$PROBE_LOG, in a write root of the server's own seal."""
import json
import os
import socket
import sys

LOG = os.environ.get("PROBE_LOG")
TARGET = os.environ.get("PROBE_FILE", "/nonexistent")
HOST = os.environ.get("PROBE_HOST", "127.0.0.1")
PORT = int(os.environ.get("PROBE_PORT", "9"))


def log(entry):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")


def probe():
    out = {"uid": os.getuid()}
    try:
        with open(TARGET) as f:
            out["read"] = "read: " + f.read(64)
    except OSError as e:
        out["read"] = "refused: " + type(e).__name__
    try:
        socket.create_connection((HOST, PORT), timeout=3).close()
        out["connect"] = "connected"
    except OSError as e:
        out["connect"] = "refused: " + type(e).__name__
    log({"probe": out})
    return out


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    log({"method": msg.get("method")})
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue  # a notification
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        reply(msg_id, {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "probe", "version": "1.0.0"},
        })
    elif method == "tools/list":
        reply(msg_id, {"tools": [{
            "name": "probe",
            "description": "Try to read a file and reach a host; say what happened.",
            "inputSchema": {"type": "object", "properties": {}},
        }]})
    elif method == "tools/call":
        result = probe()
        reply(msg_id, {"content": [{"type": "text", "text": json.dumps(result)}], "isError": False})
    else:
        reply(msg_id, {})
