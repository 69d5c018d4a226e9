"""Loopback mocks of the two model APIs the real hosts call, recording every request body.

OpenAI Responses API (Codex, wire_api = "responses"): POST .../responses, answered as an SSE
stream. Anthropic Messages API (Claude Code): POST /v1/messages[?beta=true], streamed when the
request asks for it, else one JSON message. Every other request is answered 404 and recorded.

Each answer is the next scripted turn of that API, else the default text. A turn is
{"text": "..."} or {"tool": {"name": ..., "input": {...}}} (Anthropic tool_use; for the Responses
API a function_call whose arguments are the input object).
"""

import http.server
import itertools
import json
import threading

DEFAULT_TEXT = "Done."


class MockModels:
    """Both mocks on one loopback port; serve() runs the server on a daemon thread."""

    def __init__(self, host="127.0.0.1", port=0):
        self.requests = []  # {"path", "body"} in arrival order
        self.turns = {"openai": [], "anthropic": []}
        # Called with (api, body) for each conversation request before it is answered; a turn it
        # returns is the answer (else the next scripted turn). It may take its time.
        self.on_request = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        mock = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _body(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return {"unparsed": raw.decode("utf-8", "replace")}

            def do_GET(self):
                mock._record(self.path, None)
                self._send(404, "application/json", b'{"error":"not mocked"}')

            def do_HEAD(self):
                self.do_GET()

            def do_POST(self):
                body = self._body()
                mock._record(self.path, body)
                path = self.path.split("?", 1)[0]
                if path.endswith("/responses"):
                    turn = mock._hooked("openai", body) or mock._next_turn("openai")
                    self._send_sse(mock._openai_events(turn))
                elif path.endswith("/v1/messages"):
                    turn = None
                    if _is_main_request(body):
                        turn = mock._hooked("anthropic", body) or mock._next_turn("anthropic")
                    if isinstance(body, dict) and body.get("stream"):
                        self._send_sse(mock._anthropic_events(turn, body), named=True)
                    else:
                        message = mock._anthropic_message(turn, body)
                        self._send(200, "application/json", json.dumps(message).encode())
                else:
                    self._send(404, "application/json", b'{"error":"not mocked"}')

            def _send(self, code, kind, data):
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_sse(self, events, named=False):
                chunks = []
                for event in events:
                    line = ""
                    if named:
                        line += "event: " + event["type"] + "\n"
                    line += "data: " + json.dumps(event) + "\n\n"
                    chunks.append(line)
                data = "".join(chunks).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    def serve(self):
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        return thread

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def script(self, api, turns):
        with self._lock:
            self.turns[api].extend(turns)

    def _record(self, path, body):
        with self._lock:
            self.requests.append({"path": path, "body": body})

    def _hooked(self, api, body):
        return self.on_request(api, body) if self.on_request else None

    def _next_turn(self, api):
        with self._lock:
            return self.turns[api].pop(0) if self.turns[api] else {"text": DEFAULT_TEXT}

    def _id(self, prefix):
        return "%s_%06d" % (prefix, next(self._ids))

    # --- OpenAI Responses API ---
    def _openai_events(self, turn):
        response_id = self._id("resp")
        item_id = self._id("msg")
        events = [{"type": "response.created", "response": {"id": response_id}}]
        if "tool" in turn:
            call = {
                "type": "function_call",
                "id": self._id("fc"),
                "call_id": self._id("call"),
                "name": turn["tool"]["name"],
                "arguments": json.dumps(turn["tool"]["input"]),
            }
            events.append({"type": "response.output_item.done", "output_index": 0, "item": call})
        else:
            text = turn["text"]
            message = {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
            events.append({"type": "response.output_item.added", "output_index": 0,
                           "item": dict(message, content=[], status="in_progress")})
            events.append({"type": "response.output_text.delta", "item_id": item_id,
                           "output_index": 0, "content_index": 0, "delta": text})
            events.append({"type": "response.output_item.done", "output_index": 0,
                           "item": message})
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        events.append({"type": "response.completed",
                       "response": {"id": response_id, "usage": usage}})
        return events

    # --- Anthropic Messages API ---
    def _anthropic_content(self, turn):
        if turn is None:
            return [{"type": "text", "text": DEFAULT_TEXT}], "end_turn"
        if "tool" in turn:
            return [{"type": "tool_use", "id": self._id("toolu"), "name": turn["tool"]["name"],
                     "input": turn["tool"]["input"]}], "tool_use"
        return [{"type": "text", "text": turn["text"]}], "end_turn"

    def _anthropic_message(self, turn, body):
        content, stop = self._anthropic_content(turn)
        model = body.get("model", "claude-mock") if isinstance(body, dict) else "claude-mock"
        return {"id": self._id("msg"), "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5}}

    def _anthropic_events(self, turn, body):
        message = self._anthropic_message(turn, body)
        content = message["content"]
        start = dict(message, content=[], stop_reason=None)
        events = [{"type": "message_start", "message": start}]
        for index, block in enumerate(content):
            if block["type"] == "text":
                events.append({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}})
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                events.append({"type": "content_block_start", "index": index,
                               "content_block": dict(block, input={})})
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta",
                                         "partial_json": json.dumps(block["input"])}})
            events.append({"type": "content_block_stop", "index": index})
        events.append({"type": "message_delta",
                       "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                       "usage": {"output_tokens": 5}})
        events.append({"type": "message_stop"})
        return events


def _is_main_request(body):
    """A request of the conversation itself (it offers tools), not a side call such as a title."""
    return isinstance(body, dict) and bool(body.get("tools"))
