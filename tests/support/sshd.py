"""A real OpenSSH sshd on 127.0.0.1 for integration tests (own keys, config, port, log).

The sshd runs as root when the tests do (CI does), so it can authenticate other users:
`ensure_login_user(shell)` creates (once per machine, idempotently) a non-root account whose
login shell is bash, dash, zsh, fish or tcsh, and `Sshd.login_as(...)` authorises the
client key for it. Fixtures in tests/support/host_fixtures.py wrap this (`ssh_user`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")

# Login shells the tests log in with; each must be installed (`.ci/run` apt-installs them).
LOGIN_SHELLS = ("bash", "dash", "zsh", "fish", "tcsh")
USER_PREFIX = "plateau-t-"  # test accounts: plateau-t-<shell>[<tag>]
_USERADD_LOCK = Path(tempfile.gettempdir()) / "plateau-test-useradd.lock"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sftp_server() -> str:
    for candidate in ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server"):
        if Path(candidate).exists():
            return candidate
    return "internal-sftp"


@dataclass
class Sshd:
    directory: Path
    port: int
    process: subprocess.Popen[bytes]
    host_key: Path
    client_key: Path
    known_hosts: Path
    user: str
    keys_dir: Path  # per-sshd authorized_keys, one file per user (AuthorizedKeysFile .../%u)

    @property
    def log(self) -> str:
        return (self.directory / "sshd.log").read_text(errors="replace")

    def session_pids(self) -> list[int]:
        """PIDs of the per-connection sshd children (killing them drops connections)."""
        result = subprocess.run(
            ["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False
        )
        return [int(pid) for pid in result.stdout.split()]

    def drop_connections(self) -> int:
        pids = self.session_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.keys_dir, ignore_errors=True)

    def login_as(self, shell: str = "bash", *, tag: str = "") -> SshUser:
        """A non-root account with login shell SHELL that this sshd lets the client key in as.

        TAG makes a distinct account with the same shell (e.g. a second user on the host)."""
        account = ensure_login_user(shell, tag=tag)
        authorized = self.keys_dir / account.pw_name
        if not authorized.exists():
            shutil.copy(f"{self.client_key}.pub", authorized)
            authorized.chmod(0o644)  # sshd reads it as the user; a public key is not secret
        return SshUser(
            host="127.0.0.1",
            port=self.port,
            user=account.pw_name,
            key=self.client_key,
            known_hosts=self.known_hosts,
            shell=account.pw_shell,
            home=Path(account.pw_dir),
        )


@dataclass(frozen=True)
class SshUser:
    """How to log in to the test sshd as one non-root user (see `Sshd.login_as`)."""

    host: str
    port: int
    user: str
    key: Path
    known_hosts: Path
    shell: str  # absolute path of the login shell
    home: Path

    def ssh_argv(self, *command: str) -> list[str]:
        """OpenSSH client argv logging in as this user (the command goes to the login shell)."""
        return [
            "ssh", "-p", str(self.port), "-i", str(self.key), "-F", "/dev/null",
            "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", f"{self.user}@{self.host}", *command,
        ]


def ensure_login_user(shell: str, *, tag: str = "") -> pwd.struct_passwd:
    """The account plateau-t-SHELL[TAG], created with `useradd` if missing (needs root).

    Accounts persist across runs and are shared by concurrent test sessions, so creation is
    idempotent and nothing is written into their homes here. The password field is `*`
    (no password login) rather than useradd's `!`, which sshd without PAM treats as locked."""
    if shell not in LOGIN_SHELLS:
        raise ValueError(f"unsupported login shell {shell!r}; one of {', '.join(LOGIN_SHELLS)}")
    name = f"{USER_PREFIX}{shell}{tag}"
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    path = shutil.which(shell)
    if path is None:
        raise RuntimeError(
            f"login shell {shell} is not installed: apt-get install {shell} (bash .ci/run does it)"
        )
    if os.geteuid() != 0:
        raise RuntimeError(f"test user {name} is missing and only root can create it (useradd)")
    # On a fresh machine the pytest-xdist workers create the same accounts at once, and a
    # useradd that cannot get /etc/passwd's lock soon enough gives up ("cannot lock
    # /etc/passwd; try again later"): creations take turns and re-check once their turn comes.
    with _USERADD_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
        result = subprocess.run(
            ["useradd", "--create-home", "--shell", path, "--password", "*", name],
            capture_output=True, text=True, check=False,
        )
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise RuntimeError(f"useradd {name} failed: {result.stderr.strip()}") from None


def start_sshd(
    directory: Path, *, max_sessions: int = 10, max_startups: int | None = None
) -> Sshd:
    """`max_startups`: unauthenticated connections at once before sshd drops new ones (its
    default, 10:30:100, drops 30% beyond 10: many hosts connecting at once need more)."""
    if not SSHD.exists():
        raise RuntimeError(
            "OpenSSH server not installed (/usr/sbin/sshd): apt-get install openssh-server "
            "(bash .ci/run does it)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    host_key = directory / "hostkey"
    client_key = directory / "client_key"
    for key in (host_key, client_key):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True
        )
    # Other users must be able to read their authorized_keys, and the pytest temp directory is
    # private to root: keep them in a traversable directory of their own.
    keys_dir = Path(tempfile.mkdtemp(prefix="plateau-sshd-keys-"))
    keys_dir.chmod(0o711)
    user = os.environ.get("USER") or _current_user()
    shutil.copy(f"{client_key}.pub", keys_dir / user)
    port = _free_port()
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"PidFile {directory / 'sshd.pid'}\nAuthorizedKeysFile {keys_dir}/%u\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        f"MaxSessions {max_sessions}\nSubsystem sftp {_sftp_server()}\nLogLevel VERBOSE\n"
        + (f"MaxStartups {max_startups}\n" if max_startups else "")
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    process = subprocess.Popen(
        [str(SSHD), "-D", "-E", str(directory / "sshd.log"), "-f", str(config)],
        stdin=subprocess.DEVNULL,
    )
    known_hosts = directory / "known_hosts"
    public = Path(f"{host_key}.pub").read_text().split()
    known_hosts.write_text(f"[127.0.0.1]:{port} {public[0]} {public[1]}\n")
    _wait_listening(port, process, directory)
    return Sshd(directory, port, process, host_key, client_key, known_hosts, user, keys_dir)


def _current_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _wait_listening(port: int, process: subprocess.Popen[bytes], directory: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (directory / "sshd.log").read_text(errors="replace")
            raise RuntimeError(f"sshd exited with {process.returncode}: {log[-2000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("sshd did not start listening within 10 s")
