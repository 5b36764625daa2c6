"""A tiny `tail -F` that runs ON THE HOST (`python3 <run_dir>/bin/plateau-follow-<hash>.py ARGS`,
a verified copy of this file), stdlib only.

It follows PATH (usually the server area's `current.log` symlink) and prints one record per
line on stdout, so the console can resume after a dropped connection at an exact byte offset:

    P <pid>                               first line: the follower's own pid
    F <dev>:<ino> <offset> <json path>    now reading this file (real path) from offset
    B <start> <len,len,...> <json list>   complete lines read together: line i is bytes
                                          [start_i, start_i + len_i) plus its newline, and
                                          start_i+1 = start_i + len_i + 1
    L <start> <end> <json text>           one line without a newline (the writer moved on, or
                                          a line over MAX_PARTIAL); bytes [start, end)
    N <kind> <json detail>                rotated | switched | truncated | gap | waiting
    H                                     heartbeat after HEARTBEAT seconds of silence

Lines are JSON strings, so control characters, `\\r` and invalid UTF-8 (replaced) cannot
break the framing. Batching lines into `B` records (up to MAX_RECORD bytes of log each) keeps
a log growing by thousands of lines a second to a few records and writes a second.
Arguments: PATH START_LINES [RESUME_PATH RESUME_ID RESUME_OFFSET].
START_LINES is how many trailing lines to send on a fresh start. With a resume triple, the
follower continues that file (found by dev:inode, even if it was renamed by rotation in the
same directory) from RESUME_OFFSET, then moves on to whatever PATH points to now.
Keep this file compatible with Python 3.8 (it runs on whatever python3 the host has).
"""

# Runs on the host's own python3: plain, old-fashioned code on purpose; files stay open
# across calls because the reader owns them.
# ruff: noqa: UP031, SIM105, SIM108, SIM115

import json
import os
import sys
import time

POLL = 0.1
HEARTBEAT = 5.0
CHUNK = 1 << 18
MAX_RECORD = 1 << 18  # raw log bytes per B record; the console reads records up to 8 MiB
MAX_PARTIAL = 1 << 22  # a line longer than 4 MiB is emitted in pieces rather than buffered


def out(text):
    sys.stdout.write(text)


def ident(st):
    return "%d:%d" % (st.st_dev, st.st_ino)


def tail_offset(f, size, count):
    """Offset where the last `count` lines begin (a final line without newline counts)."""
    if count <= 0:
        return size
    if size == 0:
        return 0
    f.seek(size - 1)
    search_end = size - 1 if f.read(1) == b"\n" else size
    needed = count
    pos = size
    while pos > 0:
        step = min(CHUNK, pos)
        pos -= step
        f.seek(pos)
        block = f.read(step)
        hi = min(len(block), search_end - pos)
        while hi > 0:
            nl = block.rfind(b"\n", 0, hi)
            if nl < 0:
                break
            needed -= 1
            if needed == 0:
                return pos + nl + 1
            hi = nl
    return 0


def find_by_id(hint_path, wanted):
    """The file with dev:inode `wanted`: at hint_path, or renamed within its directory."""
    try:
        if ident(os.stat(hint_path)) == wanted:
            return hint_path
    except OSError:
        pass
    directory = os.path.dirname(hint_path) or "."
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    for name in names:
        candidate = os.path.join(directory, name)
        try:
            if ident(os.lstat(candidate)) == wanted:
                return candidate
        except OSError:
            continue
    return None


class Reader:
    def __init__(self, f, real, fid, offset):
        self.f = f
        self.real = real
        self.fid = fid
        self.pos = offset
        self.partial = b""
        f.seek(offset)
        out("F %s %d %s\n" % (fid, offset, json.dumps(real)))

    def pump(self):
        """Read what is there; print complete lines. True when anything was read."""
        got = False
        while True:
            data = self.f.read(CHUNK)
            if not data:
                return got
            got = True
            data = self.partial + data
            start = self.pos - len(self.partial)
            cut = data.rfind(b"\n")
            if cut < 0:
                self.partial = data
                if len(self.partial) > MAX_PARTIAL:
                    self.emit(self.partial, start)
                    self.partial = b""
                self.pos = start + len(data)
                continue
            emit_lines(data[: cut + 1], start)
            self.partial = data[cut + 1 :]
            self.pos = start + len(data)
            sys.stdout.flush()

    def emit(self, raw, start):
        out("L %d %d %s\n" % (start, start + len(raw), enc(raw)))

    def finish(self):
        """The writer moved on: whatever is left, even without a newline, is the last line."""
        self.pump()
        if self.partial:
            self.emit(self.partial, self.pos - len(self.partial))
            self.partial = b""
        self.f.close()


def enc(raw):
    return json.dumps(raw.decode("utf-8", "replace"), ensure_ascii=False)


def emit_lines(block, start):
    """`block` is complete lines (it ends with a newline) starting at byte `start`."""
    pos = 0
    size = len(block)
    while pos < size:
        # Cut at a newline so each record stays under MAX_RECORD (one long line may exceed it).
        cut = block.rfind(b"\n", pos, pos + MAX_RECORD) if size - pos > MAX_RECORD else size - 1
        if cut < pos:
            cut = block.index(b"\n", pos + MAX_RECORD)
        part = block[pos : cut + 1]
        raws = part.split(b"\n")
        raws.pop()  # empty string after the final newline
        # A newline byte never belongs to a UTF-8 sequence, so decoding the part at once and
        # splitting gives the same text per line as decoding line by line.
        texts = part.decode("utf-8", "replace").split("\n")
        texts.pop()
        if len(texts) != len(raws):  # cannot happen; never risk misaligned offsets
            texts = [raw.decode("utf-8", "replace") for raw in raws]
        out("B %d %s %s\n" % (start + pos, ",".join([str(len(raw)) for raw in raws]),
                               json.dumps(texts, ensure_ascii=False)))
        pos = cut + 1


def note(kind, detail):
    out("N %s %s\n" % (kind, json.dumps(detail)))
    sys.stdout.flush()


def open_current(path, start_lines, from_start):
    """Open what PATH points to now; None while it does not exist."""
    try:
        real = os.path.realpath(path)
        f = open(real, "rb")
    except OSError:
        return None
    st = os.fstat(f.fileno())
    if from_start:
        offset = 0
    else:
        offset = tail_offset(f, st.st_size, start_lines)
    return Reader(f, real, ident(st), offset)


def main(argv):
    path = argv[0]
    start_lines = int(argv[1])
    out("P %d\n" % os.getpid())
    reader = None
    if len(argv) >= 5:
        resume_path, resume_id, resume_offset = argv[2], argv[3], int(argv[4])
        found = find_by_id(resume_path, resume_id)
        if found is None:
            note("gap", "%s is gone; lines written after offset %d were lost"
                 % (resume_path, resume_offset))
        else:
            f = open(found, "rb")
            size = os.fstat(f.fileno()).st_size
            if size < resume_offset:
                note("truncated", found)
                resume_offset = 0
            reader = Reader(f, os.path.realpath(found), resume_id, resume_offset)
    if reader is None:
        reader = open_current(path, start_lines, from_start=len(argv) >= 5)
        if reader is None:
            note("waiting", path)
    sys.stdout.flush()
    quiet_since = time.monotonic()
    while True:
        if reader is None:
            time.sleep(POLL)
            reader = open_current(path, start_lines, from_start=True)
            if reader is not None:
                note("switched", reader.real)
            continue
        if reader.pump():
            quiet_since = time.monotonic()
            continue
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and ident(st) != reader.fid:
            reader.finish()
            old = reader.real
            reader = open_current(path, start_lines, from_start=True)
            kind = "rotated" if reader is not None and reader.real == old else "switched"
            note(kind, reader.real if reader is not None else path)
            continue
        size = os.fstat(reader.f.fileno()).st_size
        if size < reader.pos:
            note("truncated", reader.real)
            reader.partial = b""
            reader.pos = 0
            reader.f.seek(0)
            continue
        now = time.monotonic()
        if now - quiet_since >= HEARTBEAT:
            out("H\n")
            sys.stdout.flush()
            quiet_since = now
        time.sleep(POLL)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (BrokenPipeError, KeyboardInterrupt):
        pass
