"""A stand-in `sglang serve` for hosts where the project's Python is out of reach (another
user's login): stdlib only, the real flag names Plateau relies on, SGLang's `--config FILE.yaml`
merge (srt/server_args.py:683-689), the API-key middleware (probes open), SGLang's habit of
dumping its args with the API key into the log (`server_args=ServerArgs(..., api_key='...')`),
/ready and /health, and the ready line.
"""

import argparse
import http.server
import json
import sys


def merged(argv: list[str]) -> list[str]:
    if "--config" not in argv:
        return argv
    i = argv.index("--config")
    extra: list[str] = []
    with open(argv[i + 1]) as f:
        for line in f:
            key, sep, raw = line.partition(":")
            if sep:
                extra += ["--" + key.strip(), str(json.loads(raw.strip()))]
    return extra + argv[:i] + argv[i + 2:]


def main() -> None:
    parser = argparse.ArgumentParser(prog="sglang serve")
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--api-key")
    parser.add_argument("--config")
    args = parser.parse_args(merged(sys.argv[1:]))
    print(f"server_args=ServerArgs(model_path={args.model_path!r}, api_key={args.api_key!r})",
          flush=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            # SGLang's API-key middleware: probes open, everything else needs the bearer key.
            open_path = self.path.startswith(("/health", "/ready", "/metrics"))
            given = self.headers.get("Authorization", "")
            ok = open_path or not args.api_key or given == f"Bearer {args.api_key}"
            body = b"{}" if ok else b'{"error": "Unauthorized"}'
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    server = http.server.HTTPServer((args.host, args.port), Handler)
    print("The server is fired up and ready to roll!", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
