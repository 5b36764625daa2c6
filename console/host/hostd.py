"""plateau-hostd: one long-lived command helper per SSH connection, run ON THE HOST.

Why it exists: sshd runs every exec request through the user's login shell, which reads its rc
files first (`conda init`, `pyenv init`, nvm...: 0.1 to 1 s of CPU on a real GPU host). A console
polling 64 hosts every few seconds paid that on every poll. This helper is started once per
connection, through the same bootstrap as any command (console/host/scripts.py), and then runs
every command and stream the console asks for with `subprocess` (argv lists, no shell), so the
rc files run once per connection.

Protocol: newline-delimited JSON on stdin/stdout; bytes travel as base64.
  console -> host  {"op": "run", "id": N, "argv": [...], "stdin": B64 or null, "py": BOOL}
                   {"op": "stream", "id": N, "argv": [...]}
                   {"op": "ack", "id": N, "n": BYTES}  (stream bytes consumed: flow control)
                   {"op": "kill", "id": N}       (end that command's process group)
                   {"op": "install", "id": N, "dir": D, "path": P, "sha256": H, "data": B64}
                                                 (scripts.INSTALL_PROGRAM, without 5 processes)
  host -> console  {"hello": 1, "home": "...", "pid": P}
                   {"id": N, "exit": S, "out": B64, "err": B64}   (a run ended)
                   {"id": N, "data": B64}                         (a stream's stdout chunk)
                   {"id": N, "exit": S}                           (a stream ended)
A run with "py" (argv is `PYTHON PROGRAM ARGS...`, PYTHON the interpreter running this helper
and PROGRAM one of the console's installed host programs) runs the program in a fork of this
helper instead of a new interpreter: a status poll's host script costs a fork (~3 ms of CPU,
the standard-library modules it imports loaded once here), not an interpreter start (~30 ms,
dozens of them a second at 64 hosts). Streams (the GPU agent, the log
follower) are long-lived and always exec'd, so that the host's `ps` shows them as themselves.
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

import ast
import base64
import hashlib
import importlib
import importlib.util
import io
import json
import os
import selectors
import signal
import subprocess
import sys
import sysconfig
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Any, Union

CHUNK = 65536
WINDOW = 512 * 1024  # stream bytes sent and not yet acknowledged, at most (+ one CHUNK)
KILL_AFTER_S = 2.0

_out = sys.stdout.buffer
_out_lock = threading.Lock()
_children: dict[int, Child] = {}
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
    register(request["id"], child)
    return child


def register(request_id: int, child: Child) -> None:
    with _children_lock:
        _children[request_id] = child


def forget(request_id: int) -> None:
    with _children_lock:
        _children.pop(request_id, None)
        _credits.pop(request_id, None)


# -- host programs in a fork of this helper ------------------------------------------------


class Forked:
    """A host program running in a fork of this helper: the part of Popen the rest uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:
                    return self.returncode  # wait() has it
                if pid:
                    self.returncode = exit_code(status)
            return self.returncode

    def wait(self) -> int:
        # Blocking without the lock, so that a kill (which polls first) is never held up by it.
        if self.returncode is None:
            try:
                _pid, status = os.waitpid(self.pid, 0)
                code = exit_code(status)
            except ChildProcessError:
                code = 255  # reaped by a poll, which set returncode under the lock first
            with self._lock:
                if self.returncode is None:
                    self.returncode = code
        return self.returncode


Child = Union["subprocess.Popen[bytes]", Forked]


def exit_code(status: int) -> int:
    """waitpid's status as Popen.returncode has it (-N: killed by signal N)."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


_compiled: dict[str, tuple[tuple[int, int, int], Any]] = {}


def compiled(path: str) -> Any:
    """PROGRAM's code, compiled once per helper while the file is unchanged (our programs are
    content-addressed, so a path's content only changes by a replace): compiling the lifecycle
    script cost more than forking to run it. None when it does not compile (the child then
    compiles it and says why, as python3 would)."""
    try:
        info = os.stat(path)
        key = (info.st_ino, info.st_size, info.st_mtime_ns)
        known = _compiled.get(path)
        if known is not None and known[0] == key:
            return known[1]
        with open(path, "rb") as source:
            text = source.read()
        code = compile(text, path, "exec")
    except (OSError, SyntaxError, ValueError):
        return None
    _compiled[path] = (key, code)
    preimport(text)
    return code


def preimport(source: bytes) -> None:
    """Import here, once, the standard-library modules PROGRAM imports at its top level, so
    each fork finds them loaded: importing `socket` and the rest in every child was most of its
    cost (a status poll's script: 8.6 -> 3.3 ms of CPU, tests/bench/bench_hostd_fork.py). Only
    the standard library's own modules: a program's third-party imports (pynvml) stay the
    child's business."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in tree.body:
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                 and not node.level else [])
        for name in names:
            if name.partition(".")[0] in sys.modules or not from_stdlib(name):
                continue
            try:
                importlib.import_module(name)
            except Exception:  # the child imports it again and reports it as python3 would
                pass


def from_stdlib(name: str) -> bool:
    """NAME's top-level package is built in or lives in this interpreter's stdlib directory
    (not site-packages)."""
    try:
        spec = importlib.util.find_spec(name.partition(".")[0])
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.origin in ("built-in", "frozen"):
        return True
    stdlib = sysconfig.get_paths()["stdlib"]
    origin = os.path.realpath(spec.origin or "")
    return (origin.startswith(os.path.realpath(stdlib) + os.sep)
            and "site-packages" not in origin and "dist-packages" not in origin)


def fork_program(argv: list[str], stdin: int, stdout: int, stderr: int) -> int:
    """Fork; the child runs PROGRAM (argv[1]) with argv[2:] as `python3 PROGRAM ARGS` would,
    in its own session, on the given descriptors."""
    code = compiled(argv[1])
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        os.setsid()
        for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
            os.dup2(fd, target)
        close_inherited()
        status = run_program(argv[1], argv[2:], code)
    finally:
        os._exit(status)


def close_inherited() -> None:
    """The helper's other descriptors (pipes of other commands) must not outlive it here:
    a copy of another command's stdin would keep that command from ever seeing EOF."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass


def run_program(path: str, args: list[str], code: Any) -> int:
    encoding = getattr(sys.__stdout__, "encoding", None) or "utf-8"
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(path)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                 encoding=encoding)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                  encoding=encoding)
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                  encoding=encoding, errors="backslashreplace",
                                  line_buffering=True)
    try:
        if code is None:
            with open(path, "rb") as source:
                code = compile(source.read(), path, "exec")
        exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
        status = 0
    except SystemExit as exc:
        status = system_exit_status(exc.code)
    except BaseException:
        kind, error, frames = sys.exc_info()  # the traceback starts in the program, as python3's
        traceback.print_exception(kind, error, frames.tb_next if frames else None)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return status


def system_exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def exchange(stdin: int | None, stdout: int, stderr: int, data: bytes) -> tuple[bytes, bytes]:
    """Write DATA to the child's stdin and read its stdout and stderr to their ends, as
    Popen.communicate does."""
    out: dict[int, list[bytes]] = {stdout: [], stderr: []}
    with selectors.DefaultSelector() as selector:
        for fd in out:
            selector.register(fd, selectors.EVENT_READ)
        if stdin is not None:
            if data:
                os.set_blocking(stdin, False)
                selector.register(stdin, selectors.EVENT_WRITE)
            else:
                os.close(stdin)
        view = memoryview(data)
        while selector.get_map():
            for key, _mask in selector.select():
                fd = int(key.fd)
                if fd == stdin:
                    try:
                        view = view[os.write(fd, view[:CHUNK]):]
                    except BrokenPipeError:
                        view = view[len(view):]
                    if not view:
                        selector.unregister(fd)
                        os.close(fd)
                    continue
                chunk = os.read(fd, CHUNK)
                if chunk:
                    out[fd].append(chunk)
                else:
                    selector.unregister(fd)
    for fd in out:
        os.close(fd)
    return b"".join(out[stdout]), b"".join(out[stderr])


def run_forked(request: dict[str, Any], stdin_data: bytes | None) -> tuple[Forked, bytes, bytes]:
    in_r, in_w = os.pipe() if stdin_data is not None else (os.open(os.devnull, os.O_RDONLY), -1)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child = Forked(fork_program(request["argv"], in_r, out_w, err_w))
    register(request["id"], child)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    out, err = exchange(in_w if in_w >= 0 else None, out_r, err_r, stdin_data or b"")
    child.wait()
    return child, out, err


# -- requests -------------------------------------------------------------------------------


def run(request: dict[str, Any]) -> None:
    request_id = request["id"]
    data = request.get("stdin")
    stdin = base64.b64decode(data) if data is not None else None
    child: Child
    try:
        if request.get("py"):
            child, out, err = run_forked(request, stdin)
        else:
            popen = start(request, stdin=subprocess.PIPE if stdin is not None
                          else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = popen.communicate(stdin)
            child = popen
    except OSError as exc:
        status, text = exec_failure(request["argv"], exc)
        send({"id": request_id, "exit": status, "out": "", "err": b64(text)})
        return
    finally:
        forget(request_id)
    send({"id": request_id, "exit": shell_status(child.returncode or 0), "out": b64(out),
          "err": b64(err)})


def stream(request: dict[str, Any]) -> None:
    request_id = request["id"]
    credit = Credit()
    with _children_lock:
        _credits[request_id] = credit
    try:
        child = start(request, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL)
        assert child.stdout is not None
        fd = os.dup(child.stdout.fileno())
        child.stdout.close()
    except OSError as exc:
        forget(request_id)
        send({"id": request_id, "exit": exec_failure(request["argv"], exc)[0]})
        return
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
        os.close(fd)
        forget(request_id)
    send({"id": request_id, "exit": status})


def signal_group(child: Child, number: int) -> None:
    if child.poll() is not None:
        return  # reaped: its group id may belong to someone else by now
    try:
        os.killpg(child.pid, number)
    except OSError:
        pass


def end_group(child: Child) -> None:
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


def install(request: dict[str, Any]) -> None:
    """What scripts.INSTALL_PROGRAM does, in-process: the directory (and any parent made)
    0700 and ours (chmod fails otherwise), the file 0600, written to a temporary name, checked
    against the hash, then renamed; "ok" when a verified copy is already there."""
    request_id = request["id"]
    try:
        said = install_file(request["dir"], request["path"], request["sha256"],
                            base64.b64decode(request["data"]))
    except OSError as exc:
        text = "plateau-hostd: install %s: %s\n" % (request.get("path"), exc)
        send({"id": request_id, "exit": 1, "out": "", "err": b64(text.encode("utf-8", "replace"))})
        return
    send({"id": request_id, "exit": 0, "out": b64(said.encode()), "err": ""})


def install_file(directory: str, path: str, digest: str, data: bytes) -> str:
    make_private_dirs(directory)
    os.chmod(directory, 0o700)
    try:
        with open(path, "rb") as existing:
            if hashlib.sha256(existing.read()).hexdigest() == digest:
                return "ok\n"
    except OSError:
        pass
    temporary = "%s.plateau-tmp.%d.%d" % (path, os.getpid(), threading.get_ident())
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        with open(temporary, "rb") as written:
            if hashlib.sha256(written.read()).hexdigest() != digest:
                raise OSError("the copy written does not match sha256 %s" % digest)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return "installed\n"


def make_private_dirs(directory: str) -> None:
    """mkdir -p under umask 077: every directory made is 0700 (os.makedirs gives the parents
    the process umask's mode, and umask is process-wide: not to be changed under threads)."""
    missing = []
    head = directory
    while head and not os.path.isdir(head):
        missing.append(head)
        head = os.path.dirname(head)
    for name in reversed(missing):
        try:
            os.mkdir(name, 0o700)
        except FileExistsError:
            pass


HANDLERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "run": lambda r: spawn(run, r), "stream": lambda r: spawn(stream, r), "kill": kill, "ack": ack,
    "install": lambda r: spawn(install, r),
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
