"""The session's startup tap (console/session/startup_tap.py): a launch's feed passes on the
batches its session's follower read from that launch's file, from the first one after it was
opened, and nothing of the file the follower read before (the previous launch's, which
current.log pointed at until the new launch's file was made); the follower's notices stay the
session's; a closed feed ends its iteration and leaves the tap."""

from __future__ import annotations

from console.logs.follower import FollowBatch, FollowPosition
from console.logs.models import FollowerNotice, LogEvent, Severity
from console.session.startup_tap import StartupTap

OLD = "/run/logs/sglang-20260101T000000.000001Z-a.log"
NEW = "/run/logs/sglang-20260101T000100.000002Z-b.log"


def batch(path: str, *lines: str, notices: tuple[FollowerNotice, ...] = ()) -> FollowBatch:
    events = tuple(LogEvent(seq=i, kind="plain", lines=(line,), message=line,
                            severity=Severity.INFO) for i, line in enumerate(lines))
    return FollowBatch(events, notices, FollowPosition(path, "1:2", 100))


async def test_a_feed_takes_only_its_launchs_file_and_ends_when_closed() -> None:
    tap = StartupTap()
    tap.feed(batch(NEW, "before the feed was opened"))
    feed = tap.follow("/home/op/run/logs/" + NEW.rsplit("/", 1)[1])  # not the real path
    tap.feed(batch(OLD, "the previous server's last line"))
    tap.feed(batch(NEW, "server_args=...", notices=(FollowerNotice("switched", NEW),)))
    tap.feed(batch(NEW))  # a batch of notices only
    tap.feed(batch(NEW, "Load weight begin", "Load weight end"))
    await feed.close()
    tap.feed(batch(NEW, "after the close"))
    got = [b async for b in feed]
    assert [[line for e in b.events for line in e.lines] for b in got] == [
        ["server_args=..."], ["Load weight begin", "Load weight end"]]
    assert all(b.notices == () for b in got)
    assert tap.open_feeds == 0
    await feed.close()  # twice: nothing more
