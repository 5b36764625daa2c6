"""plateau-hostd: one long-lived command helper per SSH connection, run ON THE HOST.

Why it exists: sshd runs every exec request through the user's login shell, which reads its rc
files first (`conda init`, `pyenv init`, nvm...: 0.1 to 1 s of CPU on a real GPU host). A console
polling 64 hosts every few seconds paid that on every poll. This helper is started once per
connection, through the same bootstrap as any command (console/host/scripts.py), and then runs
every command and stream the console asks for with `subprocess` (argv lists, no shell), so the
rc files run once per connection.

Protocol: newline-delimited JSON on stdin/stdout; bytes travel as base64.
  console -> host  {"op": "run", "id": N, "argv": [...], "stdin": B64 or null}
                   {"op": "stream", "id": N, "argv": [...]}
                   {"op": "ack", "id": N, "n": BYTES}  (stream bytes consumed: flow control)
                   {"op": "kill", "id": N}       (end that command's process group)
  host -> console  {"hello": 1, "home": "...", "pid": P}
                   {"id": N, "exit": S, "out": B64, "err": B64}   (a run ended)
                   {"id": N, "data": B64}                         (a stream's stdout chunk)
                   {"id": N, "exit": S}                           (a stream ended)
Every command runs in its own session (process group); EOF on stdin (the console closed the
channel or the connection dropped) ends every group still running, as the exec path's watchdog
did. A stream has at most WINDOW unacknowledged chunks in flight, so a consumer that stops
reading stops the command at its pipe (no line lost, memory bounded) without holding up the
other commands on this channel. Credit is counted in bytes and returned in batches: every message
on the channel is a syscall on both ends, and an ack per chunk once cost as much as the data.

Shipped as text and run by `python3 -c LOADER` (console/host/hostd_client.py), so it must stay
plain Python 3.8 with the standard library only.
"""
# ruff: noqa: UP031, SIM105
from __future__ import annotations  # annotations stay text: Python 3.8 runs this

import base64
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

CHUNK = 65536
WINDOW = 512 * 1024  # stream bytes sent and not yet acknowledged, at most (+ one CHUNK)
KILL_AFTER_S = 2.0

_out = sys.stdout.buffer
_out_lock = threading.Lock()
_children: dict[int, subprocess.Popen[bytes]] = {}
_credits: dict[int, Credit] = {}  # streams only
_children_lock = threading.Lock()


class Credit:
    """Bytes a stream may still send before the console acknowledges what it consumed."""

    def __init__(self) -> None:
        self.available = WINDOW
        self.ended = False
        self.changed = threading.Condition()

    def take(self, count: int) -> None:
        with self.changed:
            self.available -= count

    def wait(self) -> None:
        with self.changed:
            while self.available <= 0 and not self.ended:
                self.changed.wait()

    def give(self, count: int) -> None:
        with self.changed:
            self.available += count
            self.changed.notify()

    def end(self) -> None:
        with self.changed:
            self.ended = True
            self.changed.notify()


def send(message: dict[str, Any]) -> None:
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
    with _out_lock:
        try:
            _out.write(data)
            _out.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the console is gone; the stdin EOF ends everything


def b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


def shell_status(code: int) -> int:
    """The status as a shell reports it: 128 + N for a child killed by signal N."""
    return 128 - code if code < 0 else code


def exec_failure(argv: list[str], exc: OSError) -> tuple[int, bytes]:
    """What `exec` in sh says and exits with when the program cannot run (127/126)."""
    status = 127 if isinstance(exc, FileNotFoundError) else 126
    text = "plateau-hostd: %s: %s\n" % (argv[0] if argv else "", exc.strerror or exc)
    return status, text.encode("utf-8", "replace")


def start(request: dict[str, Any], **pipes: Any) -> subprocess.Popen[bytes]:
    argv = [str(arg) for arg in request["argv"]]
    child = subprocess.Popen(argv, start_new_session=True, close_fds=True, **pipes)
    with _children_lock:
        _children[request["id"]] = child
    return child


def forget(request_id: int) -> None:
    with _children_lock:
        _children.pop(request_id, None)
        _credits.pop(request_id, None)


def run(request: dict[str, Any]) -> None:
    request_id = request["id"]
    data = request.get("stdin")
    stdin = base64.b64decode(data) if data is not None else None
    try:
        child = start(request, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        status, text = exec_failure(request["argv"], exc)
        send({"id": request_id, "exit": status, "out": "", "err": b64(text)})
        return
    try:
        out, err = child.communicate(stdin)
    finally:
        forget(request_id)
    send({"id": request_id, "exit": shell_status(child.returncode), "out": b64(out),
          "err": b64(err)})


def stream(request: dict[str, Any]) -> None:
    request_id = request["id"]
    credit = Credit()
    with _children_lock:
        _credits[request_id] = credit
    try:
        child = start(request, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL)
    except OSError as exc:
        forget(request_id)
        send({"id": request_id, "exit": exec_failure(request["argv"], exc)[0]})
        return
    pipe = child.stdout
    assert pipe is not None
    fd = pipe.fileno()
    try:
        while True:
            credit.wait()
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            credit.take(len(chunk))
            send({"id": request_id, "data": b64(chunk)})
        status = shell_status(child.wait())
    finally:
        pipe.close()
        forget(request_id)
    send({"id": request_id, "exit": status})


def signal_group(child: subprocess.Popen[bytes], number: int) -> None:
    if child.poll() is not None:
        return  # reaped: its group id may belong to someone else by now
    try:
        os.killpg(child.pid, number)
    except OSError:
        pass


def end_group(child: subprocess.Popen[bytes]) -> None:
    """TERM the command's group, KILL it KILL_AFTER_S later (what the exec watchdog did)."""
    signal_group(child, signal.SIGTERM)
    timer = threading.Timer(KILL_AFTER_S, signal_group, (child, signal.SIGKILL))
    timer.daemon = True
    timer.start()


def kill(request: dict[str, Any]) -> None:
    with _children_lock:
        child = _children.get(request["id"])
        credit = _credits.get(request["id"])
    if child is not None:
        end_group(child)
    if credit is not None:  # let the reader drain the pipe to its EOF
        credit.end()


def ack(request: dict[str, Any]) -> None:
    with _children_lock:
        credit = _credits.get(request["id"])
    if credit is not None:
        credit.give(int(request.get("n", 0)))


def spawn(function: Callable[[dict[str, Any]], None], request: dict[str, Any]) -> None:
    thread = threading.Thread(target=function, args=(request,))
    thread.daemon = True
    thread.start()


HANDLERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "run": lambda r: spawn(run, r), "stream": lambda r: spawn(stream, r), "kill": kill, "ack": ack,
}


def end_all() -> None:
    with _children_lock:
        children = list(_children.values())
    for child in children:
        signal_group(child, signal.SIGTERM)
    if children:
        threading.Event().wait(KILL_AFTER_S)
        for child in children:
            signal_group(child, signal.SIGKILL)


def serve(requests: Iterable[bytes]) -> None:
    send({"hello": 1, "home": os.path.expanduser("~"), "pid": os.getpid(), "window": WINDOW})
    for line in requests:
        try:
            request = json.loads(line)
            handler = HANDLERS[request["op"]]
        except (ValueError, KeyError, TypeError):
            continue  # never from our console; ignoring it keeps the others' commands going
        handler(request)
    end_all()


if __name__ == "__main__":
    serve(sys.stdin.buffer)
    os._exit(0)  # daemon threads still blocked on pipes must not hold the exit
