"""Suite files: validation errors name file, key, value and choices; matrix expansion; stable ids."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import llmbench
from llmbench.errors import SuiteError, UserError
from llmbench.ids import case_id
from llmbench.suite import SUITES_DIR, SUITES_ENV, available_suites, filter_cases, load_suite
from tests.conftest import write

GOOD = """
name = "s"
[defaults]
min_seconds = 0.1
[[case]]
scenario = "gemm"
matrix.precision = ["fp32", "bf16"]
matrix.shape = [[64, 64, 64], [128, 128, 128], [32, 32, 32]]
"""


def test_matrix_expands_as_a_cartesian_product_in_file_order(tmp_path: Path) -> None:
    s = load_suite(str(write(tmp_path, GOOD)))
    assert len(s.cases) == 6
    assert [(c.params.precision, c.params.shape[0]) for c in s.cases] == [
        ("fp32", 64), ("fp32", 128), ("fp32", 32), ("bf16", 64), ("bf16", 128), ("bf16", 32)]
    assert all(c.settings.min_seconds == 0.1 for c in s.cases)


def test_defaults_apply_only_where_the_scenario_has_the_key(tmp_path: Path) -> None:
    text = """
[defaults]
size_mib = 8
precision = "fp32"
[[case]]
scenario = "gemm"
shape = [16, 16, 16]
[[case]]
scenario = "bandwidth"
kind = "host"
"""
    s = load_suite(str(write(tmp_path, text)))
    assert s.cases[0].params.precision == "fp32"
    assert s.cases[1].params.size_mib == 8


@pytest.mark.parametrize(
    ("text", "key", "needle"),
    [
        ('[[case]]\nscenario = "gemmm"\n', "scenario", "valid: bandwidth, "),
        ('[[case]]\nscenario = "gemm"\nprecisoin = "bf16"\n', "precisoin", "valid:"),
        ('[[case]]\nscenario = "gemm"\nmatrix.precision = ["bf16", "int3"]\n', "precision",
         "fp32, tf32, fp16, bf16, fp8"),
        ('[[case]]\nscenario = "gemm"\nshape = [0, 16, 16]\n', "shape", ">= 1"),
        ('[[case]]\nscenario = "gemm"\nprecision = "fp8"\nshape = [17, 16, 16]\n', None, "multiple of 16"),
        ('[[case]]\nscenario = "gemm"\nmatrix.shape = []\n', "matrix.shape", "non-empty"),
        ('[[case]]\nscenario = "bandwidth"\nkind = "d2d"\npinned = false\n', None, "pinned applies only"),
        ('[[case]]\nscenario = "gemm"\nmin_iters = 0\n', "min_iters", "greater than or equal to 1"),
        ('[defaults]\nmodle = "x"\n[[case]]\nscenario = "gemm"\n', "modle", "not a parameter of any scenario"),
        ('naem = "x"\n[[case]]\nscenario = "gemm"\n', "naem", "valid: case, defaults, description, launcher, name"),
        ('name = "x"\n', "case", "at least one [[case]]"),
        ('[[case]]\nscenario = "gemm"\n[[case]]\nscenario = "gemm"\n', "case", "repeats case 1"),
    ],
)
def test_bad_suites_name_file_key_value_and_choices(tmp_path: Path, text: str, key: str | None, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SuiteError) as e:
        load_suite(str(path))
    msg = str(e.value)
    assert msg.startswith(str(path))
    assert needle in msg
    if key:
        assert f"key {key!r}" in msg


def test_bad_value_is_quoted_in_the_message(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as e:
        load_suite(str(write(tmp_path, '[[case]]\nscenario = "gemm"\nprecision = "int3"\n')))
    assert "'int3'" in str(e.value)
    assert e.value.choices == ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"]


def test_malformed_toml_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="malformed TOML"):
        load_suite(str(write(tmp_path, "[[case]\nscenario=")))
    with pytest.raises(UserError, match="does not exist"):
        load_suite(str(tmp_path / "nope.toml"))
    with pytest.raises(UserError, match=r"unknown suite 'nope'; `llmbench list suites` lists them"):
        load_suite("nope")


def test_case_ids_depend_on_scenario_and_params_only(tmp_path: Path) -> None:
    a = load_suite(str(write(tmp_path, GOOD, "a.toml"))).cases
    other = GOOD.replace("min_seconds = 0.1", "min_seconds = 5")
    b = load_suite(str(write(tmp_path, other, "b.toml"))).cases
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == len(a)
    # the definition is fixed: the same on every machine and every run (a literal, not recomputed)
    assert case_id("gemm", {"precision": "bf16", "shape": [4096, 4096, 4096]}) == "gemm/3b7d3177710d"
    assert case_id("gemm", {"shape": [4096, 4096, 4096], "precision": "bf16"}) == "gemm/3b7d3177710d"


def test_explicit_default_and_implicit_default_give_the_same_id(tmp_path: Path) -> None:
    s1 = load_suite(str(write(tmp_path, '[[case]]\nscenario = "gemm"\n', "1.toml")))
    s2 = load_suite(str(write(tmp_path, '[[case]]\nscenario = "gemm"\nprecision = "bf16"\n', "2.toml")))
    assert s1.cases[0].id == s2.cases[0].id


def test_filters(tmp_path: Path) -> None:
    cases = load_suite(str(write(tmp_path, GOOD))).cases
    assert len(filter_cases(cases, ["precision=bf16"])) == 3
    assert len(filter_cases(cases, ["precision=bf16,fp32", "shape=64x64x64"])) == 2
    assert len(filter_cases(cases, ["shape=32x32x32"])) == 2
    assert filter_cases(cases, [cases[0].id]) == [cases[0]]
    both = f"id={cases[0].id},{cases[1].id.partition('/')[2]}"  # a whole id and a bare hash
    assert filter_cases(cases, [both]) == cases[:2]
    with pytest.raises(UserError, match="unknown key 'precison'"):
        filter_cases(cases, ["precison=bf16"])
    unfused = filter_cases(load_suite("decode-fusion").cases, ["fuse=false"])  # as the suite file spells it
    assert len(unfused) == 2 and filter_cases(unfused, ["fuse=False"]) == unfused


def test_suites_in_the_working_directory_are_found_before_the_packaged_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "suites").mkdir()
    write(tmp_path / "suites", '[[case]]\nscenario = "gemm"\n', "mine.toml")
    write(tmp_path / "suites", '[[case]]\nscenario = "bandwidth"\nkind = "host"\n', "quickstart.toml")
    (tmp_path / "scenarios").mkdir()  # the older folder name is searched too, after ./suites
    write(tmp_path / "scenarios", '[[case]]\nscenario = "gemm"\n', "old.toml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(SUITES_ENV, raising=False)
    suites = available_suites()
    assert suites["mine"].path == tmp_path / "suites" / "mine.toml" and suites["mine"].origin == "./suites"
    assert suites["old"].origin == "./scenarios"
    mine = suites["quickstart"]  # the user's own wins, and says what it replaces
    assert mine.path == tmp_path / "suites" / "quickstart.toml"
    assert mine.replaces == (SUITES_DIR / "quickstart.toml",)
    assert suites["ceilings"].origin == "packaged"  # the shipped ones are still there
    loaded = load_suite("quickstart")
    assert loaded.cases[0].scenario == "bandwidth"
    assert loaded.where() == f"suite quickstart: {mine.path} (from ./suites, in place of the packaged one)"
    assert load_suite("ceilings").where() == ""  # nothing to say about a shipped suite
    from llmbench.api.answers import suite_row

    assert suite_row(suites["ceilings"]) == ("ceilings", "packaged")
    assert suite_row(mine) == ("quickstart", f"./suites: {mine.path} (replaces the packaged one)")


def test_suite_folders_search_order_option_then_env_then_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opt, env, here = (tmp_path / d for d in ("opt", "env", "here"))
    for folder in (opt, env, here / "suites"):
        folder.mkdir(parents=True)
        write(folder, f'name = "{folder.name}"\n[[case]]\nscenario = "gemm"\n', "x.toml")
    write(env, '[[case]]\nscenario = "gemm"\n', "only-env.toml")
    monkeypatch.chdir(here)
    monkeypatch.setenv(SUITES_ENV, str(env))
    assert load_suite("x", [opt]).name == "opt"
    assert load_suite("x").name == "env"
    assert load_suite("only-env", [opt]).origin == SUITES_ENV
    monkeypatch.delenv(SUITES_ENV)
    assert load_suite("x").name == "suites"
    found = available_suites([opt])["x"]
    assert found.origin == "--suites" and found.replaces == (here / "suites" / "x.toml",)


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_suite_folder_that_is_not_there_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    missing = tmp_path / "nope"
    if how == "env":
        monkeypatch.setenv(SUITES_ENV, str(missing))
    with pytest.raises(UserError, match=f"'{missing}' is not a folder"):
        load_suite("quickstart", [missing] if how == "option" else [])


ROOT = Path(llmbench.__file__).resolve().parents[1]


def test_shipped_suites_run_from_the_checkout_are_its_scenarios_folder_listed_once_and_valid(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """From a checkout the shipped suites are its top-level scenarios/ (what the wheel installs as
    llmbench/suites/). Run in the checkout, that folder is also ./scenarios: it is still the shipped one,
    so every suite is listed once, as packaged, replacing nothing."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv(SUITES_ENV, raising=False)
    assert SUITES_DIR == ROOT / "scenarios"
    suites = available_suites()
    assert {"quickstart", "ceilings", "headline"} <= set(suites)
    assert {p.stem for p in SUITES_DIR.glob("*.toml")} == set(suites)
    for name, s in suites.items():
        assert (s.origin, s.path.parent, s.replaces) == ("packaged", SUITES_DIR, ()), name
        assert load_suite(name).cases and load_suite(name).where() == ""


def test_the_wheel_installs_scenarios_as_llmbench_suites_beside_every_package() -> None:
    """pyproject.toml lists the packages (one of them, llmbench.suites, is mapped from scenarios/): the list
    is every package folder of llmbench/ and that one, so a new sub-package cannot be left out of the wheel."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "llmbench").rglob("__init__.py")}
    assert set(config["packages"]) == folders | {"llmbench.suites"}
    assert config["package-dir"] == {"llmbench.suites": "scenarios"}
    assert config["package-data"]["llmbench.suites"] == ["*.toml"]
    assert not (ROOT / "llmbench" / "suites").exists()  # one copy in the tree


def test_a_param_added_later_keeps_the_ids_of_cases_that_leave_it_at_its_default() -> None:
    from typing import ClassVar

    from llmbench.ids import case_id
    from llmbench.scenarios.base import ScenarioParams

    class Before(ScenarioParams):
        size: int = 1

    class After(ScenarioParams):
        added_later: ClassVar[frozenset[str]] = frozenset({"parallel"})
        size: int = 1
        parallel: int = 1

    old = case_id("x", Before(size=4).model_dump(mode="json"))
    assert case_id("x", After(size=4).model_dump(mode="json")) == old
    assert After(size=4, parallel=2).model_dump(mode="json") == {"size": 4, "parallel": 2}
    assert case_id("x", After(size=4, parallel=2).model_dump(mode="json")) != old


# -- engine and placement: the new spelling, the old one, and the ids they keep ------------------------

OLD = """
name = "old"
[defaults]
model = "tiny-llama"
mode = "compiled"
[[case]]
scenario = "generate"
engine = "vllm"
matrix.tensor_parallel = [1, 2]
[[case]]
scenario = "ddp"
gpus = 4
[[case]]
scenario = "serving"
preset = "tiny-llama"
concurrency = 1
server = ["{python}", "-m", "x"]
server_scope = "suite"
n_gpus = 2
"""

NEW = """
name = "new"
[defaults]
model = "tiny-llama"
[[case]]
scenario = "generate"
matrix.engine = [{name = "vllm", mode = "compiled"}, {name = "vllm", mode = "compiled", tensor_parallel = 2}]
[[case]]
scenario = "ddp"
placement = {gpus = 4}
[[case]]
scenario = "serving"
preset = "tiny-llama"
concurrency = 1
engine = {name = "command", command = ["{python}", "-m", "x"], server_scope = "suite"}
placement = {gpus = 2}
"""


def test_an_old_suite_file_parses_to_the_same_cases_with_one_line_naming_the_new_spelling(tmp_path: Path) -> None:
    old, new = load_suite(str(write(tmp_path, OLD, "old.toml"))), load_suite(str(write(tmp_path, NEW, "new.toml")))
    assert [c.id for c in old.cases] == [c.id for c in new.cases]
    assert [(c.engine, c.placement) for c in old.cases] == [(c.engine, c.placement) for c in new.cases]
    assert [c.placement.gpus for c in new.cases] == [1, 2, 4, 2]
    assert new.notes() == []
    [line] = old.notes()  # one line for the file, however many cases
    assert "mode, n_gpus, server, server_scope, tensor_parallel" in line and "placement = {gpus = N}" in line
    assert old.old_keys == ("gpus", "mode", "n_gpus", "server", "server_scope", "tensor_parallel")


def test_a_gpus_filter_reads_the_placement_however_the_suite_spells_it(tmp_path: Path) -> None:
    """`-k gpus=2` picks the cases placed on two GPUs: a TP engine's, a serving case's `n_gpus`, a
    `placement` table's; `-k engine=vllm` the cases on that engine."""
    for text in (OLD, NEW):
        cases = load_suite(str(write(tmp_path, text, "s.toml"))).cases
        two = filter_cases(cases, ["gpus=2"])
        assert [(c.scenario, c.placement.gpus) for c in two] == [("generate", 2), ("serving", 2)]
        assert [c.scenario for c in filter_cases(cases, ["gpus=1,4"])] == ["generate", "ddp"]
        assert [c.scenario for c in filter_cases(cases, ["engine=vllm", "gpus=2"])] == ["generate"]
        with pytest.raises(UserError, match="gpus=3 names no case"):
            filter_cases(cases, ["gpus=3"])
    served = 'name = "s"\n[[case]]\nscenario = "serving"\npreset = "tiny-llama"\nconcurrency = 1\n' \
             'url = "http://127.0.0.1:8000"\n'  # the old spelling of the url engine: no `engine` key at all
    (case,) = load_suite(str(write(tmp_path, served, "u.toml"))).cases
    assert filter_cases([case], ["engine=url"]) == [case]
    with pytest.raises(UserError, match=r"engine=vllm names no case; .*valid engine values: url"):
        filter_cases([case], ["engine=vllm"])


def test_tensor_parallel_and_placement_that_disagree_are_one_error_naming_both(tmp_path: Path) -> None:
    text = ('[[case]]\nscenario = "generate"\nmodel = "tiny-llama"\n'
            'engine = {name = "vllm", tensor_parallel = 2}\nplacement = {gpus = 4}\n')
    with pytest.raises(SuiteError, match="engine tensor_parallel = 2 but placement gpus = 4"):
        load_suite(str(write(tmp_path, text)))
    with pytest.raises(SuiteError, match="valid keys: mode, tensor_parallel, gpu_memory_utilization"):
        load_suite(str(write(tmp_path, '[[case]]\nscenario = "generate"\nmodel = "tiny-llama"\n'
                                       'engine = {name = "vllm", tp = 2}\n')))
    with pytest.raises(SuiteError, match=r"key 'engine'.*unknown key for scenario 'gemm'"):
        load_suite(str(write(tmp_path, '[[case]]\nscenario = "gemm"\nengine = "hf"\n')))


def committed_cases() -> list[tuple[str, dict]]:
    import json

    out = []
    from tests.conftest import tracked

    for path in tracked("results", "*.json"):  # the committed sets, not a user's own runs
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("cases"), list):
            out += [(path.name, c) for c in data["cases"]]
    return out


def test_every_committed_case_re_derives_its_id_from_its_recorded_params() -> None:
    """A result set records a case's params in the spelling they had as params (suite.flat_record): read
    back as a case (engine and placement split out) each gives the id it was recorded under, so `compare`
    joins the committed sets with new runs of the same cases, whichever way their suite writes them."""
    from llmbench.suite import case_from

    cases = committed_cases()
    wrong = [(name, c["id"]) for name, c in cases if case_from(c["scenario"], dict(c["params"])).id != c["id"]]
    assert len(cases) > 500 and wrong == []
    named = ("headline-20261125T134209Z.json", "serving-vllm-bf16-20261124T061021Z.json")
    kinds = {(c["scenario"], c["params"].get("engine"), "url" if c["params"].get("url") else "")
             for name, c in cases if name in named}
    assert {("generate", "vllm", ""), ("generate", "hf", ""), ("qlora", "hf", ""), ("trainer", "hf", ""),
            ("serving", None, "url")} <= kinds


def test_the_headline_written_the_new_way_joins_the_committed_headline() -> None:
    import json

    committed = json.loads((Path(llmbench.__file__).resolve().parent.parent / "results" / "h100-sxm-80gb"
                            / "headline-20261125T134209Z.json").read_text())
    ids = {c["id"] for c in committed["cases"]}
    suite = load_suite("headline")
    # the transformers fp8 cases left torchao's kernel settings out since that set: their earlier ids are
    # fp8-kernel-tuning's cases with the settings, and the headline holds that suite's cases without them
    tuning, now = {c.id for c in load_suite("fp8-kernel-tuning").cases}, {c.id for c in suite.cases}
    moved = ids & tuning
    assert len(moved) == 1 and not moved & now and len(tuning & now) == 3
    assert suite.notes() == [] and ids - moved <= now
    vllm = [c for c in suite.cases if c.params_dict.get("engine") == "vllm"]
    assert len(vllm) == 6 and all(c.id in ids and c.engine.mode == "compiled" for c in vllm)  # type: ignore[union-attr]
