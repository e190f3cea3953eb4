"""`toolbench system check|tune|reset`: how quiet this machine is for a measurement, and the
settings that make it quieter, applied and undone."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.cli.scenarios_cmd import scenario_arg
from toolbench.cli.terminal import safe

if TYPE_CHECKING:
    from toolbench.hosts.system_tune import TuneStep

EXIT_NOT_RESTORED = 1
STATES = {True: "ok", False: "noisy", None: "not visible"}


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser(
        "system", help="check how quiet this machine is; tune it for measuring, and undo that",
        epilog="examples:\n  toolbench system check\n  toolbench system check --json --sample 3s\n"
               "  toolbench system check --scenario scenarios/quickstart.yaml   # its placement's CPUs\n"
               "  sudo toolbench system tune      # governor performance, boost off, THP madvise\n"
               "  sudo toolbench system reset     # back to what tune found",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("check", "tune", "reset"),
                   help="check: found / wanted / why for each thing that makes a machine noisy (exit 0 even "
                        "when noisy); tune: set what can be set (root); reset: undo what tune set")
    p.add_argument("--json", action="store_true", help="check: the findings as JSON on stdout")
    p.add_argument("--sample", type=_duration, default=1.0, metavar="DURATION",
                   help="check: how long to watch other processes and steal (default 1s)")
    p.add_argument("--scenario", type=scenario_arg, metavar="FILE",
                   help="check: take the target's and the generator's CPUs from this scenario's placement")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "check":
        return _check(args)
    if args.json or args.scenario is not None:
        from toolbench.errors import UsageError

        raise UsageError(f"--json and --scenario are options of `system check`, not of `system {args.action}`")
    from toolbench.hosts import system_tune

    state = system_tune.state_file()
    return _tune(system_tune.tune(state), state) if args.action == "tune" else _reset(system_tune.reset(state), state)


def _check(args: argparse.Namespace) -> int:
    from toolbench.hosts import system
    from toolbench.record import codec

    target, generator = _placed_cpus(args.scenario) if args.scenario is not None else (None, None)
    found = system.check("local", args.sample, target, generator)
    if args.json:
        print(safe(json.dumps(codec.encode(found), indent=2)))
        return 0
    for f in found.findings:
        seen = f.found if f.found is not None else f.note
        also = f" ({f.note})" if f.found is not None and f.note else ""
        print(safe(f"{STATES[f.ok]:<11} {f.name:<11} {seen}{also}; wanted {f.wanted}: {f.why}"))
    noisy = [f.name for f in found.noisy]
    print(f"noisy: {', '.join(noisy)}" if noisy else "nothing noisy found")
    return 0


def _placed_cpus(scenario: str) -> tuple[list[int] | None, list[int] | None]:
    """The target's and the generator's CPUs as `run` would place them here; none when either
    runs on another machine or the placement leaves them unplaced."""
    import warnings

    from toolbench.errors import Notice
    from toolbench.hosts import placement
    from toolbench.scenario import read

    loaded = read.load(scenario)
    if not (loaded.generator.is_local and loaded.target_host.is_local):
        warnings.warn(Notice(f"{scenario}: the target and the generator are not both on this machine; "
                             "smt is not compared"), stacklevel=1)
        return None, None
    here = placement.read_local()
    starts_target = any(t.kind != "url" for t in loaded.targets.values())
    sides = placement.resolve(loaded.placement, here if starts_target else None, here, here, same_machine=True,
                              where=loaded.locations)
    return (list(sides.target) if sides.target else None, list(sides.generator) if sides.generator else None)


def _tune(steps: list[TuneStep], state: Path) -> int:
    from toolbench.hosts.system_tune import APPLIED

    for step in steps:
        print(safe(_describe(step)))
    if any(step.outcome == APPLIED for step in steps):
        print(safe(f"the values replaced are in {state}; `toolbench system reset` puts them back "
                   "(a restart does too: none of this outlives it)"))
    else:
        print("nothing changed")
    return 0


def _reset(steps: list[TuneStep] | None, state: Path) -> int:
    from toolbench.hosts.system_tune import NOT_RESTORED

    if steps is None:
        print(safe(f"nothing to undo: no {state} (`toolbench system tune` writes it)"))
        return 0
    for step in steps:
        print(safe(_describe(step)))
    left = [s for s in steps if s.outcome == NOT_RESTORED]
    if left:
        print(safe(f"{len(left)} not restored: they stay in {state} for another try"))
        return EXIT_NOT_RESTORED
    return 0


def _describe(step: TuneStep) -> str:
    change = f"{step.before} -> {step.wanted}" if step.before is not None else f"wanted {step.wanted}"
    reason = f": {step.reason}" if step.reason else ""
    return f"{step.outcome:<13} {step.name:<14} {change}{reason}"


def _duration(text: str) -> float:
    from toolbench.engine.options import EngineError, parse_duration

    try:
        seconds = parse_duration(text)
    except EngineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0.1 <= seconds <= 60:
        raise argparse.ArgumentTypeError(f"expected a sample from 100ms to 60s, got {text!r}")
    return seconds
