#!/usr/bin/env python3
"""A model endpoint that thinks: an OpenAI-compatible server (POST /v1/chat/completions) that answers
every request after a delay with the same reply, as a real endpoint answers parallel requests.

Replay files answer at once and in order, which hides stalls that only show when replies arrive
late and out of order (four identical replies arriving newest first once left a search
waiting for ever). Runs with the standard library alone, so it works on the GPU machines too.

    scripts/slow-openai-server.py --reply REPLY.md [--delay 10] [--jitter 2] [--port 0] [--port-file F]
    scripts/slow-openai-server.py --reply REPLY.md --latency 20s..90s

--latency takes what `--model replay:FILE?latency=...` takes (40s, 1.5m, 20s..90s) and sets --delay
and --jitter from it (a range: the delay is its start, the jitter its width).

--reply holds the assistant's message (text with a ```cuda block). Each request waits --delay
seconds plus a uniform draw of up to --jitter (seeded by the request's number, so two runs agree),
so parallel requests finish in a different order than they came. The port (0: any free one) is
printed on stdout and written to --port-file. Stop it with SIGTERM.
"""
import argparse
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reply", required=True, help="file with the assistant message to send")
    parser.add_argument("--delay", type=float, default=10.0, help="seconds before each answer")
    parser.add_argument("--jitter", type=float, default=2.0, help="up to this many seconds more, per request")
    parser.add_argument("--latency", help="40s, 1.5m or 20s..90s (as replay's ?latency=); overrides --delay/--jitter")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the port here once listening")
    args = parser.parse_args()
    if args.latency:
        def seconds(text):
            unit = 60.0 if text.endswith("m") else 1.0
            value = float(text[:-1] if text[-1:] in "sm" else text)
            if not (0 <= value * unit <= 3600):
                parser.error(f"--latency {args.latency}: each end from 0 to 3600 s")
            return value * unit
        try:
            low, _, high = args.latency.partition("..")
            args.delay = seconds(low)
            args.jitter = (seconds(high) if high else args.delay) - args.delay
        except ValueError:
            parser.error(f"--latency {args.latency}: expected 40s, 1.5m or 20s..90s")
        if args.jitter < 0:
            parser.error(f"--latency {args.latency}: the range ends below its start")
    reply = open(args.reply, encoding="utf-8").read()
    counter = {"n": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # one line per answered request, on stderr
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                counter["n"] += 1
                number = counter["n"]
            wait = args.delay + random.Random(number).uniform(0, args.jitter)
            began = time.time()
            time.sleep(wait)
            answer = {
                "id": f"slow-{number}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "slow"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 400, "total_tokens": 1400},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            print(f"slow-openai-server: request {number} answered after {time.time() - began:.1f} s",
                  file=sys.stderr, flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]
    print(port, flush=True)
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(f"{port}\n")
    server.serve_forever()


if __name__ == "__main__":
    main()
