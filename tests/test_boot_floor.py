"""The boot-to-boot floor (issue 40): an A/A across fresh boots reports how much boots differ;
a verdict reads it, so a difference inside it is "within boot noise" and one outside it is
"real"; the floor is stored per host+profile+version, in a database an older build's history
migrates to.

The boots are the simulator's with `--sim-boot-spread` (each launch draws its kernel speed
within the spread), swept on its virtual clock (tests/support/virtual_ab.py); every launch is
seeded from its name, so each A/B here measures the same every time."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from console.bench.bootfloor import BootFloor, LevelFloor, measure_floor
from console.bench.models import RunMeta, StepResult
from console.bench.verdict import judge
from console.cli import main
from console.config_models import FlagValue, SweepPreset
from console.store.db import SCHEMA_VERSION, RunStore
from tests.support.ab_sim import FASTER, SLOWER
from tests.support.bench_fixtures import fake_step
from tests.support.virtual_ab import virtual_passes

Capture = pytest.CaptureFixture[str]
SPEC = SweepPreset(concurrency=[4, 16], input_len=256, output_len=128,
                   prompts_per_concurrency=4)
SPREAD = 0.04  # boots within +-4 %: a uniform draw's sd is 0.08 / sqrt(12) = 2.3 %


def _floor(tmp: Path, flags: dict[str, FlagValue], repeats: int) -> BootFloor:
    a, b = virtual_passes(tmp, f"aa{flags.get('sim-boot-spread')}", flags, flags, SPEC,
                          repeats)
    return measure_floor(a, b, host="virtual", profile="p", version="0.5.23", measured_at=1.0)


@pytest.mark.timeout(300)
def test_an_aa_across_fresh_boots_reports_its_floor(tmp_path: Path) -> None:
    floor = _floor(tmp_path, {"sim-boot-spread": SPREAD}, repeats=4)
    assert [lv.concurrency for lv in floor.levels] == [4, 16]
    for level in floor.levels:
        assert level.boots == 8  # 4 passes a side, a fresh boot each
        assert 1.2 < level.sd_pct < 4.0, level  # the spread's 2.3 %, from 8 draws
    assert floor.summary().startswith("two boots differ by \u00b1")
    assert "8 boots measured" in floor.summary()
    # a tight host has a tight floor: the spread is what it measures
    tight = _floor(tmp_path, {"sim-boot-spread": 0.005}, repeats=4)
    assert all(t.sd_pct < 0.5 * w.sd_pct for t, w in zip(tight.levels, floor.levels,
                                                          strict=True))


@pytest.mark.timeout(300)
def test_an_ab_inside_the_floor_is_within_boot_noise(tmp_path: Path) -> None:
    flags: dict[str, FlagValue] = {"sim-boot-spread": SPREAD}
    floor = _floor(tmp_path, flags, repeats=4)
    # The same profile, one boot a side with 3 repeats each (not interleaved): the repeats
    # agree within a boot, so the boots' luck alone reads as a real difference...
    a, b = virtual_passes(tmp_path, "s2", flags, flags, SPEC, 3, interleave=False)
    blind = judge(a, b, interleaved=False)
    assert blind.knee_word == "real", blind.sentence
    assert any("boot-to-boot floor unknown" in n and "--aa" in n for n in blind.notes)
    # ...and with the host's floor it is within boot noise, the floor shown
    verdict = judge(a, b, interleaved=False, floor=floor)
    assert (verdict.boots_a, verdict.boots_b) == (1, 1)
    assert verdict.knee_word == "within boot noise", verdict.sentence
    assert verdict.knee_floor_pct is not None and verdict.knee_half_width_pct is not None
    assert abs(verdict.knee_delta_pct or 0.0) <= verdict.knee_floor_pct
    assert f"boots differ by \u00b1{verdict.knee_floor_pct:.1f}%: within boot noise" in \
        verdict.sentence
    assert all(p.word in ("within noise", "within boot noise") for p in verdict.points)
    assert any(p.word == "within boot noise" for p in verdict.points)


@pytest.mark.timeout(300)
def test_an_ab_outside_the_floor_is_real(tmp_path: Path) -> None:
    spread: dict[str, FlagValue] = {"sim-boot-spread": 0.005}
    floor = _floor(tmp_path, spread, repeats=3)
    a, b = virtual_passes(tmp_path, "diff", {**SLOWER, **spread}, {**FASTER, **spread}, SPEC,
                          3, interleave=False)
    verdict = judge(a, b, interleaved=False, floor=floor)
    assert verdict.knee_word == "real", verdict.sentence
    assert verdict.sentence.startswith("B +")
    assert verdict.knee_floor_pct is not None
    assert abs(verdict.knee_delta_pct or 0.0) > verdict.knee_floor_pct
    assert all(p.word == "better" for p in verdict.points)
    # the same A/B with a noisier host's floor says it could be the boots
    wide = floor.model_copy(update={"levels": [
        lv.model_copy(update={"sd_pct": 10.0}) for lv in floor.levels]})
    assert judge(a, b, interleaved=False, floor=wide).knee_word == "within boot noise"


def test_interleaved_boots_narrow_the_floor() -> None:
    level = LevelFloor(concurrency=8, boots=8, mean=100.0, sd_pct=2.0)
    floor = BootFloor(host="h", profile="p", version="0.5.23", levels=[level])

    def steps(side: float, repeats: int) -> list[StepResult]:
        return [fake_step(8, side + r * 0.01, index=r, repeat=r) for r in range(repeats)]

    # +5 %: inside two single boots' ±6.7 % (t(7) x 2 % x sqrt 2), outside 4 boots' ±3.3 %
    one = judge(steps(100.0, 3), steps(105.0, 3), interleaved=False, floor=floor)
    four = judge(steps(100.0, 4), steps(105.0, 4), interleaved=True, floor=floor)
    assert (one.boots_a, four.boots_a) == (1, 4)
    assert one.points[0].floor_pct is not None and four.points[0].floor_pct is not None
    assert four.points[0].floor_pct == pytest.approx(one.points[0].floor_pct / 2.0, rel=0.01)
    assert one.points[0].word == "within boot noise" and four.points[0].word == "better"


def test_the_floor_is_stored_per_host_profile_and_version(tmp_path: Path) -> None:
    floor = BootFloor(host="h", profile="p", version="0.5.23", measured_at=5.0,
                      levels=[LevelFloor(concurrency=4, boots=6, mean=900.0, sd_pct=1.5)])
    with RunStore(tmp_path / "h.sqlite") as store:
        store.save_floor(floor.model_copy(update={"levels": []}))
        store.save_floor(floor)  # the newest wins
        assert store.boot_floor("h", "p", "0.5.23") == floor
        assert store.boot_floor("h", "p", "0.5.18") is None
        assert store.boot_floor("other", "p", "0.5.23") is None


def test_a_version_4_database_migrates_and_an_unmigrated_one_still_reads(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with RunStore(path) as store:
        store.add_step(store.create_run(RunMeta(profile="a")), fake_step(4, 400.0))
    with sqlite3.connect(path) as raw:  # back to what version 4 wrote
        raw.executescript("DROP TABLE boot_floors; ALTER TABLE steps DROP COLUMN warmup_s; "
                          "PRAGMA user_version = 4;")
    path.chmod(0o444)  # read-only: opened as it is, no migration
    with RunStore(path) as store:
        assert store.get_run(1).steps[0].metrics is not None
        assert store.boot_floor("h", "a", "") is None  # no table yet: no floor, no crash
    path.chmod(0o644)
    with RunStore(path) as store:
        assert store.get_run(1).steps[0].metrics is not None
        store.save_floor(BootFloor(host="h", profile="a", version=""))
        assert store.boot_floor("h", "a", "") is not None
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = {row[1] for row in raw.execute("PRAGMA table_info(steps)")}
        assert "warmup_s" in columns


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_plateau_ab_aa_on_the_demo_measures_and_stores_the_floor(tmp_path: Path,
                                                                   capsys: Capture) -> None:
    """What the lead's rig calls: `plateau ab HOST --aa --a PROFILE`, here on the demo host
    (its restarts draw each boot's speed, console/demo.py REAL_RESTARTS)."""
    db = tmp_path / "aa.sqlite"
    argv = ["ab", "--demo", "--aa", "--a", "cutlass-moe", "--repeats", "2",
            "--concurrency", "1", "--json", "--db", str(db)]
    assert main(argv) == 0
    said = json.loads(capsys.readouterr().out)
    floor = BootFloor.model_validate(said["boot_floor"])
    assert said["interleave"] and said["a"] == said["b"] == "cutlass-moe"
    assert floor.host == "demo" and floor.profile == "cutlass-moe" and floor.version == "0.5.23"
    assert [(lv.concurrency, lv.boots) for lv in floor.levels] == [(1, 4)]
    assert 0.0 < floor.levels[0].sd_pct < 10.0
    with RunStore(db) as store:
        assert store.boot_floor("demo", "cutlass-moe", "0.5.23") == floor
    assert main(["ab", "--demo", "--aa", "--a", "cutlass-moe", "--b", "triton-moe"]) == 2
    assert "--aa compares --a with itself" in capsys.readouterr().err
