"""A real OpenSSH sshd on 127.0.0.1 for integration tests (own keys, config, port, log)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")


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


def start_sshd(directory: Path, *, max_sessions: int = 10) -> Sshd:
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
    shutil.copy(f"{client_key}.pub", directory / "authorized_keys")
    port = _free_port()
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"PidFile {directory / 'sshd.pid'}\nAuthorizedKeysFile {directory / 'authorized_keys'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        f"MaxSessions {max_sessions}\nSubsystem sftp {_sftp_server()}\nLogLevel VERBOSE\n"
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
    user = os.environ.get("USER") or _current_user()
    return Sshd(directory, port, process, host_key, client_key, known_hosts, user)


def _current_user() -> str:
    import pwd

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
