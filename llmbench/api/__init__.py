"""llmbench as a library: what every CLI command (and `llmbench fleet`) calls, one module per job. `run`
(`run_suite`, `plan_run`), `session` (`oneshot`, `plan_oneshot`), `comparison` (`compare`, `compare_by_suite`,
`report_html`, prices), `answers` (show, spread, project, versus, list, specs), `serve` (serve-bench),
`checks` (`--out` and machine checks) and `bundling` (what a oneshot bundle holds). Each function takes typed
arguments, raises `llmbench.errors.UserError` for bad input (the CLI turns it into one line and exit 2) and
returns what it made. None prints: what a person watching should see goes to the `UI` the caller passes
(`llmbench.harness.ui`, the one event protocol; the default says nothing). The names the commands use are
re-exported here, so a command imports `llmbench.api`, never harness or analysis."""
# ruff: noqa: F401 (the imports are the re-exports)

from llmbench.analysis.caselabels import with_searched_batch
from llmbench.analysis.cost import DEFAULT_RUN_TOKENS
from llmbench.analysis.gate import parse_threshold
from llmbench.analysis.labels import gpu_display_name
from llmbench.analysis.pairs import DEFAULT_PAIR
from llmbench.analysis.suitejoin import MIX_OPTION
from llmbench.api.answers import gpu_specs, listings, newest_set, project_set, spread, validate_projection, versus
from llmbench.api.bundling import bundled_suites
from llmbench.api.checks import (
    ceilings_env,
    check_machine,
    check_out_dir,
    check_out_file,
    stack_problem,
    writable_parent,
)
from llmbench.api.comparison import (
    CompareResult,
    GroupComparison,
    SuitesCompared,
    check_prices,
    compare,
    compare_by_suite,
    measured_prices,
    price_sets,
    report_html,
)
from llmbench.api.run import Plan, RunResult, Selection, plan_passes, plan_run, run_suite, select_cases
from llmbench.api.serve import ServeBenchRun, serve_bench
from llmbench.api.session import (
    BrokenStack,
    OneshotResult,
    clock_text,
    duration_text,
    oneshot,
    plan_oneshot,
    skipped_here,
)
from llmbench.harness.doctor import Check, run_checks
from llmbench.harness.launch import node_placement
from llmbench.harness.launchers.choose import check_launcher, chosen_launcher, launcher_help, option_pairs
from llmbench.harness.plan import CaseTime
from llmbench.harness.ui import FAILED_STATUSES, UI, SuiteRun

SessionUI = UI  # its name before run and session shared one protocol
