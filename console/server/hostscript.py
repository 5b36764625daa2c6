"""Small stdlib-only Python programs the lifecycle runs on the host as `python3 PATH CMD ARGS`
(PATH: the transport's content-addressed, hash-verified copy in `<run_dir>/bin`).

The program text is a constant; every variable part travels as an argv item (carried as data
by the transport) or on stdin, so nothing a profile contains is ever parsed as shell or Python.
Each prints one JSON object.
"""

from __future__ import annotations

import json
from typing import Any

from console.errors import PlateauError
from console.host.transport import LineStream, Transport
from console.text import sanitize

HOST_SCRIPT = r'''
import errno, json, os, socket, stat, sys, time

class Refused(Exception):
    pass

def foreign_links(path, uid):
    # A symbolic link on the way to the run dir that another user owns can be pointed
    # elsewhere by that user at any time (and is followed wherever fs.protected_symlinks is
    # 0): refused, whatever it points at now. Root's and our own links are followed, and
    # so are the links met while resolving theirs (each checked the same way).
    parts, done, links = path.strip("/").split("/"), "/", 0
    while parts:
        part = parts.pop(0)
        if part in (".", ".."):
            done = done if part == "." else os.path.dirname(done)
            continue
        prefix = os.path.join(done, part)
        try:
            st = os.lstat(prefix)
        except OSError:
            return  # not there yet: makedirs makes it, inside what was checked
        if not stat.S_ISLNK(st.st_mode):
            done = prefix
            continue
        links += 1
        if st.st_uid not in (0, uid):
            raise Refused("run_dir %s passes through %s, a symbolic link uid %d owns: that "
                          "user could point it elsewhere; use a path without it"
                          % (path, prefix, st.st_uid))
        if links > 40:
            raise Refused("run_dir %s: too many symbolic links on the way" % path)
        target = os.readlink(prefix)
        if target.startswith("/"):
            done = "/"
        parts = [p for p in target.split("/") if p] + parts

def own_dir(path):
    # The run dir holds the lease, the launch record (which names the process group a stop
    # signals) and key files: it must be a real directory of ours that no other user can
    # write, inside parents no other user can rename it out of (a sticky /tmp is fine),
    # reached through no other user's symbolic link.
    uid = os.getuid()
    foreign_links(path, uid)
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused("run_dir %s is not a directory (a symbolic link?)" % path)
    if st.st_uid != uid:
        raise Refused("run_dir %s belongs to uid %d, not to this user (uid %d)"
                      % (path, st.st_uid, uid))
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    for way in (path, os.path.realpath(path)):  # as written, and the directories it reaches
        safe_parents(path, way, uid)
    return path

def safe_parents(path, way, uid):
    parent = os.path.dirname(way)
    while True:
        pst = os.stat(parent)
        foreign = pst.st_uid not in (0, uid)
        shared = pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX
        if foreign or shared:
            raise Refused("run_dir %s is inside %s, which %s: another user could replace it"
                          % (path, parent, "uid %d owns" % pst.st_uid if foreign
                             else "others may write (and it is not sticky)"))
        if parent == os.path.dirname(parent):
            return
        parent = os.path.dirname(parent)

def group_members(pgid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        # fields: state ppid pgrp ...; zombies are already dead for our purposes
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(name))
    return out

def alive(pid):
    if pid <= 0:
        return False
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            state = f.read().decode("utf-8", "replace").rsplit(")", 1)[-1].split()[0]
        return state != "Z"
    except OSError:
        pass
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True

def port_free(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    # Like the server: SO_REUSEADDR, so TIME_WAIT leftovers do not count as "in use".
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()

def listen_inodes(port):
    # inode -> uid of each socket listening on `port` (any address, IPv4 or IPv6)
    inodes = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, state, uid, inode = parts[1], parts[3], parts[7], parts[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes[inode] = int(uid)
        except (OSError, IndexError, ValueError):
            pass
    return inodes

def user_name(uid):
    import pwd
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OSError):
        return ""

def hidden_listeners(port, found):
    # Sockets listening on `port` whose process this account cannot see (another user's:
    # /proc/PID/fd is theirs): what /proc/net/tcp tells, the owner's uid and name.
    seen = set(i for p in found for i in p.get("inodes", ()))
    owners = sorted(set(uid for inode, uid in listen_inodes(port).items() if inode not in seen))
    return [{"uid": uid, "user": user_name(uid)} for uid in owners]

def proc_info(pid):
    info = {"pid": pid}
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            info["argv"] = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        info["pgid"] = os.getpgid(pid)
        with open("/proc/%d/stat" % pid, "rb") as f:
            fields = f.read().decode().rsplit(")", 1)[-1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        info["started_at"] = time.time() - uptime + int(fields[19]) / ticks
        info["uid"] = os.stat("/proc/%d" % pid).st_uid
        info["start_ticks"] = int(fields[19])
    except (OSError, IndexError, ValueError):
        pass
    for fd in ("1", "2"):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            if target.startswith("/") and not target.startswith("/dev/"):
                info["log_path"] = target
                break
        except OSError:
            pass
    return info

def listeners(port):
    inodes = listen_inodes(port)
    found = []
    if not inodes:
        return found
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fds = os.listdir("/proc/%s/fd" % name)
        except OSError:
            continue
        held = []
        for fd in fds:
            try:
                target = os.readlink("/proc/%s/fd/%s" % (name, fd))
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                held.append(target[8:-1])
        if held:
            info = proc_info(int(name))
            info["inodes"] = held
            found.append(info)
    # The main server process is the oldest listener's group leader when it has one.
    found.sort(key=lambda p: p.get("started_at", 0))
    return found

def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""

def start_ticks(pid):
    # Field 22 of /proc/PID/stat: start time in clock ticks after boot. With the boot id it
    # tells a process from a later one that reuses its pid.
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().decode("utf-8", "replace").rsplit(")", 1)[-1].split()[19])
    except (OSError, IndexError, ValueError):
        return None

def has_launch_id(pid, launch_id):
    if not launch_id:
        return False
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return ("PLATEAU_LAUNCH_ID=" + launch_id).encode() in f.read().split(b"\0")
    except OSError:
        return False

def cmd_probe(a):
    pid, pgid = a.get("pid") or 0, a.get("pgid") or 0
    out = {
        "pid_alive": alive(pid) if pid else False,
        "group": group_members(pgid) if pgid else [],
        "own_pgids": sorted({os.getpgid(0), os.getpgid(os.getppid())}),
        "uid": os.getuid(),
    }
    if a.get("identify") and pid:
        out["start_ticks"] = start_ticks(pid)
        out["boot_id"] = boot_id()
        out["launch_ok"] = has_launch_id(pid, a.get("launch_id"))
    if a.get("port"):
        out["port_free"] = port_free(a.get("host") or "127.0.0.1", a["port"])
        out["listeners"] = listeners(a["port"]) if a.get("listeners") else []
        if a.get("listeners"):
            out["hidden_listeners"] = hidden_listeners(a["port"], out["listeners"])
    return out

def cmd_prepare(a):
    run_dir = own_dir(os.path.abspath(os.path.expanduser(a["run_dir"])))
    # A profile's log_dir (its `~` is this host's home), else <run_dir>/logs.
    logs = os.path.abspath(os.path.expanduser(a.get("log_dir") or os.path.join(run_dir, "logs")))
    os.makedirs(logs, mode=0o700, exist_ok=True)
    for d in (run_dir, logs):  # logs carry what the server prints (its args, the API key)
        if os.stat(d).st_uid == os.getuid():
            os.chmod(d, 0o700)
    # Named for the engine that writes it (a name of letters and '-' from the profile's
    # validated engine; anything else falls back to the first engine's name).
    engine = str(a.get("engine") or "")
    if not (0 < len(engine) <= 32 and all(c in "abcdefghijklmnopqrstuvwxyz-" for c in engine)):
        engine = "sglang"
    base = "%s-%s-%s" % (engine, a["stamp"], a["profile"])
    # Never overwrite an old log: create exclusively, add a counter on collision.
    for n in range(1000):
        path = os.path.join(logs, base + ("" if n == 0 else "-%d" % n) + ".log")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            break
        except FileExistsError:
            continue
    link = os.path.join(run_dir, "current.log")
    tmp = link + ".tmp-%d" % os.getpid()
    os.symlink(path, tmp)
    os.replace(tmp, link)  # atomic swap: a `tail -F current.log` follows the new file
    return {"run_dir": run_dir, "log_path": path, "current_link": link}

def cmd_write(a):
    path = os.path.abspath(os.path.expanduser(a["path"]))
    own_dir(os.path.dirname(path))
    tmp = path + ".tmp-%d" % os.getpid()
    # 0600 from the first byte (records and key files are nobody else's business); a new
    # file, never through a link someone left at its name
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        os.unlink(tmp)  # left by a helper that died mid-write
    except FileNotFoundError:
        pass
    with os.fdopen(os.open(tmp, flags, 0o600), "w") as f:
        f.write(sys.stdin.read())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return {"path": path}

def cmd_read(a):
    path = os.path.abspath(os.path.expanduser(a["path"]))
    nofollow = 0 if a.get("follow") else os.O_NOFOLLOW  # our own state: never through a link
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | nofollow), "rb") as f:
            if a.get("tail"):
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - a["tail"]))
            data = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return {"path": path, "exists": False, "text": ""}
    out = {"path": path, "exists": True, "text": data}
    if a.get("probe_record"):  # a launch record: its process probed in the same round trip
        try:
            rec = json.loads(data)
            probe = cmd_probe({"pid": int(rec["pid"]), "identify": True,
                               "launch_id": rec.get("launch_id") or ""})
            pgid = int(rec["pgid"])
            if not probe["pid_alive"] and pgid:  # members matter only without the leader
                probe["group"] = group_members(pgid)  # (a walk of all /proc)
            out["probe"] = probe
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            pass  # not a record the console can read either
    return out

def cmd_remove(a):
    path = os.path.abspath(os.path.expanduser(a["path"]))
    try:
        os.unlink(path)
        return {"removed": True}
    except FileNotFoundError:
        return {"removed": False}

def cmd_forget_keys(a):
    # API-key files SGLang has read (or that a client killed mid-start left behind): gone at
    # the next stop or start, whatever happened to the client that wrote them.
    run_dir = os.path.abspath(os.path.expanduser(a["run_dir"]))
    removed = 0
    try:
        names = os.listdir(run_dir)
    except OSError:
        return {"removed": 0}
    for name in names:
        if name.startswith("launch-") and "-secret.yaml" in name:
            try:
                os.unlink(os.path.join(run_dir, name))
                removed += 1
            except OSError:
                pass
    return {"removed": removed}

def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def owner_gone(watch, ms):
    # Our owner holds the read end of stdout (a pipe from Plateau, or the SSH channel): when
    # it goes away, poll() reports POLLERR/POLLHUP on our end. No heartbeat needed.
    return bool(watch.poll(ms))

def lease_holder(fd):
    # The record is written right after the lock is taken: retry briefly on a torn read, and
    # on a record whose keeper process is gone (a new holder has not written yet).
    rec = {}
    for _ in range(40):
        try:
            rec = json.loads(os.pread(fd, 65536, 0).decode("utf-8", "replace"))
            if alive(int(rec.get("host_pid", 0))):
                return rec
        except (ValueError, TypeError, AttributeError):
            pass
        time.sleep(0.05)
    return rec if isinstance(rec, dict) else {}

def lease_record(fd):
    try:
        rec = json.loads(os.pread(fd, 65536, 0).decode("utf-8", "replace"))
        return rec if isinstance(rec, dict) else {}
    except (OSError, ValueError):
        return {}

def put_record(fd, rec):
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(rec).encode(), 0)

def token_sha(token):
    import hashlib
    return hashlib.sha256(token.encode()).hexdigest()

LEASE_SOCK = "lease.sock"  # relative to the run dir (cwd): a unix socket path is <= 107 bytes

def keeper_talk(conn, message):
    # One JSON line each way with the keeper; None when it is not there or does not answer.
    conn.settimeout(10)
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                return None
            data += chunk
        return json.loads(data.decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None

def keeper_call(message):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(LEASE_SOCK)
    except OSError:
        conn.close()
        return None, None
    answer = keeper_talk(conn, message)
    if not isinstance(answer, dict):
        conn.close()
        return None, None
    return conn, answer

def keep_lease(fd, listener, attendant, token, grace):
    # The keeper: holds the flock (fd) in a session of its own, so neither the SSH channel's
    # end nor the stream watchdog's group kill reaches it. The lease outlives its holder's
    # connection for `grace` seconds: an attendant (the stream helper of the holder's current
    # connection) keeps it company; when the attendant goes, the grace starts, and a new
    # attendant presenting the holder's token ends it. Release (with the token) or the end of
    # the grace ends the keeper, and the kernel drops the flock with it.
    import select, struct
    uid = os.getuid()
    deadline = None
    while True:
        wait = None if deadline is None else max(0.0, deadline - time.time())
        ready, _, _ = select.select([listener] + ([attendant] if attendant else []), [], [],
                                   wait)
        if deadline is not None and attendant is None and time.time() >= deadline:
            rec = lease_record(fd)
            rec.update(expired_at=time.time())
            rec.pop("reconnecting_since", None)
            put_record(fd, rec)
            return
        if attendant is not None and attendant in ready:
            try:
                data = attendant.recv(4096)
            except OSError:
                data = b""
            if not data:
                attendant.close()
                attendant = None
                deadline = time.time() + grace
                rec = lease_record(fd)
                rec.update(reconnecting_since=time.time(), grace=grace)
                put_record(fd, rec)
        if listener not in ready:
            continue
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        try:
            peer = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                       struct.calcsize("3i")))
        except OSError:
            peer = (0, -1, -1)
        try:
            message = json.loads(read_request(conn, deadline).decode("utf-8", "replace"))
        except (OSError, ValueError):
            conn.close()
            continue
        mine = (peer[1] == uid and isinstance(message, dict)
                and message.get("token") == token and bool(token))
        what = message.get("op") if isinstance(message, dict) else None
        if not mine:
            keeper_answer(conn, {"ok": False})
            conn.close()
        elif what == "release":
            rec = lease_record(fd)
            rec.update(released_at=time.time())
            rec.pop("reconnecting_since", None)
            put_record(fd, rec)
            keeper_answer(conn, {"ok": True})
            return
        elif what == "attach":
            if attendant is not None:  # the holder reconnected before we saw the old one go
                keeper_answer(attendant, {"replaced": True})
                attendant.close()
            attendant, deadline = conn, None
            rec = lease_record(fd)
            rec.pop("reconnecting_since", None)
            rec["reattached_at"] = time.time()
            put_record(fd, rec)
            conn.settimeout(None)
            keeper_answer(conn, {"ok": True})
        else:
            keeper_answer(conn, {"ok": False})
            conn.close()

# How long the keeper reads one request (a local helper sends it at once): a client that
# drips bytes is cut off then, and never past the grace, which the keeper (one thread) could
# not otherwise end while it reads.
KEEPER_READ_S = 2.0

def read_request(conn, grace_deadline):
    # One line from a client of the keeper's socket, read within KEEPER_READ_S in all (not
    # per byte) and within the grace when it runs; OSError when that passes.
    limit = time.time() + KEEPER_READ_S
    if grace_deadline is not None:
        limit = min(limit, grace_deadline)
    line = b""
    while not line.endswith(b"\n") and len(line) < 4096:
        left = limit - time.time()
        if left <= 0:
            raise OSError("too slow")
        conn.settimeout(left)
        chunk = conn.recv(4096)
        if not chunk:
            break
        line += chunk
    return line

def keeper_answer(conn, message):
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass

def attend(keeper, watch):
    # The stream helper of one connection: ends when its owner goes (the keeper then starts
    # the grace) or when the keeper ends or replaces it (the stream's end tells the owner).
    import select
    watch.register(keeper.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
    while True:
        for fd_, _event in watch.poll(-1):
            if fd_ == 1:
                return {"state": "gone"}
            try:
                data = keeper.recv(4096)
            except OSError:
                data = b""
            if not data:
                return {"state": "ended"}
            if b"replaced" in data:
                return {"state": "replaced"}

def start_keeper(fd, token, grace, who):
    import signal
    try:
        os.unlink(LEASE_SOCK)  # a dead keeper's; we hold the flock, so no live one uses it
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(LEASE_SOCK)
    listener.listen(8)
    ours, theirs = socket.socketpair()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the keeper is reaped by the kernel
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for n in (0, 1, 2):  # never keep the SSH channel open
                os.dup2(null, n)
            ours.close()
            keep_lease(fd, listener, theirs, token, grace)
        finally:
            os._exit(0)
    theirs.close()
    listener.close()
    record = dict(who, host_pid=pid, since=time.time(), token_sha=token_sha(token),
                  grace=grace)
    put_record(fd, record)
    os.close(fd)
    return ours, record

def reclaim(fd, token):
    # The holder's new connection asks for its lease back. Held by our keeper: attach to it.
    conn, answer = keeper_call({"op": "attach", "token": token})
    if answer is not None and answer.get("ok"):
        return conn, None
    if conn is not None:
        conn.close()
    rec = lease_record(fd)
    if rec.get("token_sha") != token_sha(token):
        return None, {"state": "lost", "why": "taken", "holder": lease_holder(fd)}
    if rec.get("expired_at"):
        return None, {"state": "lost", "why": "expired", "holder": rec}
    return None, {"state": "lost", "why": "gone", "holder": rec}

TOKEN_PREFIX = "lease-token-"

def read_token(stream):
    # The holder's token arrives on stdin, never in argv: /proc/PID/cmdline (`ps`) is
    # readable by every user of the host, and the token is what attaches to the keeper.
    token = stream.read(256).strip()
    return token if 16 <= len(token) <= 128 and token.isalnum() else ""

def cmd_lease_token(a):
    # Hands the token to the `lease` stream (whose stdin is the transport's watchdog): a
    # file only this user can read, in the checked run dir, named by the token's hash and
    # removed by the stream that reads it (or, left by a dropped connection, an hour on).
    os.chdir(own_dir(os.path.abspath(os.path.expanduser(a["run_dir"]))))
    token = read_token(sys.stdin)
    if not token:
        return {"stashed": ""}
    now = time.time()
    for name in os.listdir("."):
        if name.startswith(TOKEN_PREFIX):
            try:
                if now - os.lstat(name).st_mtime > 3600:
                    os.unlink(name)
            except OSError:
                pass
    name = TOKEN_PREFIX + token_sha(token)[:32]
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, token.encode())
    finally:
        os.close(fd)
    return {"stashed": name}

def stashed_token(a):
    # The token `lease_token` left for this stream (its hash in argv names the file).
    sha = str(a.get("token_sha") or "")
    if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
        return ""
    name = TOKEN_PREFIX + sha[:32]
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    try:
        st = os.fstat(fd)
        token = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
        try:
            os.unlink(name)
        except OSError:
            pass
    mine = stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    return token if mine and token_sha(token) == sha else ""

def cmd_lease(a):
    import fcntl, select
    run_dir = own_dir(os.path.abspath(os.path.expanduser(a["run_dir"])))
    os.chdir(run_dir)
    fd = os.open("lease", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    watch = select.poll()
    watch.register(1, select.POLLERR | select.POLLHUP)
    token = stashed_token(a)
    if not token:
        raise Refused("the lease's token was not handed over (lease_token)")
    if a.get("reclaim"):
        keeper, lost = reclaim(fd, token)
        if keeper is None:
            return lost
        say({"state": "held", "record": lease_record(fd)})
        os.close(fd)
        return attend(keeper, watch)
    waiting = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if not a.get("wait"):
                return {"state": "busy", "holder": lease_holder(fd)}
            if not waiting:
                say({"state": "waiting", "holder": lease_holder(fd)})
                waiting = True
            if owner_gone(watch, 200):
                return {"state": "gone"}
    keeper, record = start_keeper(fd, token, float(a.get("grace") or 0.0), a.get("who") or {})
    say({"state": "held", "record": record})
    return attend(keeper, watch)

def cmd_lease_release(a):
    os.chdir(os.path.abspath(os.path.expanduser(a["run_dir"])))
    token = read_token(sys.stdin)
    if not token:
        return {"released": False}
    conn, answer = keeper_call({"op": "release", "token": token})
    if conn is not None:
        conn.close()
    return {"released": bool(answer and answer.get("ok"))}

def recorded_server_proven(rec):
    pid, pgid = int(rec.get("pid") or 0), int(rec.get("pgid") or 0)
    if pid <= 1 or pgid <= 1 or rec.get("state") == "stopped" or rec.get("start_ticks") is None:
        return False
    if alive(pid):
        return (start_ticks(pid) == rec.get("start_ticks") and boot_id() == rec.get("boot_id")
                and (rec.get("origin") == "adopted" or has_launch_id(pid, rec.get("launch_id"))))
    return pgid == pid and bool(group_members(pgid))  # leader gone, its group still there

def stop_recorded(run_dir):
    import signal
    try:
        fd = os.open(os.path.join(run_dir, "server.json"), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as f:
            rec = json.load(f)
        pgid = int(rec.get("pgid") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return
    if not recorded_server_proven(rec) or pgid == os.getpgid(0):
        return
    try:  # a record can name anyone's process: signal only our own
        if os.stat("/proc/%d" % pgid).st_uid != os.getuid():
            return
    except OSError:
        pass  # the leader is gone; killpg below reaches only what we may signal
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(pgid, sig)
        except OSError:
            return
        deadline = time.time() + wait
        while time.time() < deadline:
            if not group_members(pgid):
                return
            time.sleep(0.05)

def cmd_guard(a):
    # Dies with its owner and cleans up after it: stops the server the run dir's launch
    # record proves (when asked) and removes the run dir (when asked). Runs on owner exit,
    # on SIGTERM/SIGHUP/SIGINT, and when our stdout's reader goes away (the owner died).
    import select, shutil, signal
    run_dir = os.path.abspath(os.path.expanduser(a["run_dir"]))

    def cleanup(*_ignored):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if a.get("stop_server"):
            stop_recorded(run_dir)
        if a.get("remove"):
            shutil.rmtree(run_dir, ignore_errors=True)
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, cleanup)
    watch = select.poll()
    watch.register(1, select.POLLERR | select.POLLHUP)
    say({"state": "guarding", "pid": os.getpid()})
    while not owner_gone(watch, -1):
        pass
    cleanup()

cmd, arg = sys.argv[1], json.loads(sys.argv[2])
try:
    print(json.dumps({"probe": cmd_probe, "prepare": cmd_prepare, "write": cmd_write,
                      "read": cmd_read, "remove": cmd_remove, "lease": cmd_lease,
                      "lease_release": cmd_lease_release, "lease_token": cmd_lease_token,
                      "guard": cmd_guard,
                      "forget_keys": cmd_forget_keys}[cmd](arg)))
except Refused as exc:
    print(json.dumps({"refused": str(exc)}))
    sys.exit(3)
'''



class HostScriptError(PlateauError):
    pass


REFUSED_EXIT = 3
"""The helper refused (an unsafe run dir): its last stdout line is {"refused": reason}."""


def _refusal(stdout: str) -> str | None:
    try:
        parsed = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    reason = parsed.get("refused") if isinstance(parsed, dict) else None
    return f"refused: {sanitize(reason[:400])}" if isinstance(reason, str) else None


def python_failed(python: str, status: int | None, said: str, *, seen: bool = True) -> str:
    """Why the host's python did not run a helper, never an empty reason (`seen`: whether
    its stderr was read; a stream's is not)."""
    shown = sanitize(python[:200])
    if not said:
        what = "with no output" if seen else "without answering"
        return (f"the host python `{shown}` exited {status} {what} (is it a Python 3 on "
                "the host? set the host's `python`)")
    return f"the host python `{shown}` exited {status}: {sanitize(said[-300:])}"


def host_script_argv(
    python: str, program: str, command: str, args: dict[str, Any]
) -> list[str]:
    """`python3 PROGRAM CMD JSON`: PROGRAM is `install_program`'s copy of HOST_SCRIPT."""
    return [python, program, command, json.dumps(args)]


async def stream_host_script(
    transport: Transport, python: str, command: str, args: dict[str, Any]
) -> LineStream:
    """A long-running host helper (e.g. `lease`): its JSON lines; closing ends it."""
    program = await transport.install_program("plateau-hostscript", HOST_SCRIPT)
    return await transport.stream_lines(host_script_argv(python, program, command, args))


async def run_host_script(
    transport: Transport,
    python: str,
    command: str,
    args: dict[str, Any],
    *,
    stdin: str | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    program = await transport.install_program("plateau-hostscript", HOST_SCRIPT)
    result = await transport.run(
        host_script_argv(python, program, command, args), input=stdin, timeout=timeout
    )
    refusal = _refusal(result.stdout) if result.exit_status == REFUSED_EXIT else None
    if refusal is not None:
        raise HostScriptError(refusal)
    if not result.ok:
        said = result.stderr.strip() or result.stdout.strip()
        raise HostScriptError(
            f"host helper `{command}` failed: {python_failed(python, result.exit_status, said)}"
        )
    try:
        parsed = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise HostScriptError(f"host helper `{command}` printed no JSON") from None
    if not isinstance(parsed, dict):
        raise HostScriptError(f"host helper `{command}` printed unexpected output")
    missing = [key for key in _ANSWERS.get(command, ()) if key not in parsed]
    if missing:  # e.g. `python` is a wrapper that prints JSON of its own
        raise HostScriptError(f"host helper `{command}` answered without {', '.join(missing)}: "
                              f"is `{sanitize(python[:200])}` a plain Python on the host?")
    return parsed


_ANSWERS: dict[str, tuple[str, ...]] = {
    "probe": ("pid_alive", "group", "own_pgids", "uid"),
    "prepare": ("run_dir", "log_path", "current_link"),
    "write": ("path",),
    "read": ("path", "exists", "text"),
    "remove": ("removed",),
    "forget_keys": ("removed",),
    "lease_release": ("released",),
    "lease_token": ("stashed",),
}
"""The keys each helper command always answers (the lifecycle reads them without checking)."""
