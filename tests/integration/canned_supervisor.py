#!/usr/bin/env python3
"""A stand-in for the supervisor's HTTP server in the operator page's browser
tests (operator_page_canned_test.cc): it answers GET and HEAD with what a
manifest names and 404 otherwise, so the page can be shown a job of 1,024
ranks, hostile names or a supervisor without GET /dumps, none of which a
2-core machine can run for real.

usage: canned_supervisor.py MANIFEST READY_FD

MANIFEST is JSON: {"/path": {"status": 200, "type": "application/json",
"file": "/abs/file", "fail_after": N}}, the path percent-decoded as the page's
requests arrive; with "fail_after" the path answers 503 after N answers (a
supervisor that stopped answering). The server listens on a free port of
127.0.0.1 and writes it, one line, to READY_FD.
"""
import http.server
import json
import os
import sys
import urllib.parse


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        manifest = json.load(f)
    served = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, with_body):
            path = urllib.parse.unquote(self.path.split("?", 1)[0])
            entry = manifest.get(path)
            served[path] = served.get(path, 0) + 1
            if entry is None:
                status, ctype, body = 404, "text/plain", b"not found: " + path.encode() + b"\n"
            elif "fail_after" in entry and served[path] > entry["fail_after"]:
                status, ctype, body = 503, "text/plain", b"stopped answering\n"
            else:
                status, ctype = entry.get("status", 200), entry["type"]
                with open(entry["file"], "rb") as f:
                    body = f.read()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def do_GET(self):
            self.answer(True)

        def do_HEAD(self):
            self.answer(False)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    os.write(int(sys.argv[2]), ("%d\n" % server.server_address[1]).encode())
    server.serve_forever()


if __name__ == "__main__":
    main()
