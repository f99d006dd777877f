"""The preflight report as rich tables: engines, the port matrix per destination host, and what to do."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from swarmkit.preflight import GIB, Check, Failure, PortSpec, PreflightReport

STATUS_STYLE = {"ok": "green", "failed": "red", "note": "yellow"}


def render_preflight(report: PreflightReport, console: Console) -> None:
    """Print what passed and what failed; every failure row says what to do about it."""
    console.print(_engines_table(report))
    hosts = [e.host for e in report.engines if e.answered]
    if hosts:
        console.print(_ports_table(report, hosts))
    if report.failures:
        console.print(_failures_table(report.failures))
        console.print(f"[red]preflight failed[/]: {len(report.failures)} failed checks ({report.duration_s:.1f} s)")
    else:
        console.print(f"[green]preflight passed[/]: {len(report.checks)} checks ({report.duration_s:.1f} s)")


def _engines_table(report: PreflightReport) -> Table:
    table = Table(title="Engines")
    for column in ("host", "engine", "swarm", "memory", "result"):
        table.add_column(column)
    by_host: dict[str, list[Check]] = {}
    for check in report.checks:
        if check.check in ("engine", "memory", "probe"):
            by_host.setdefault(check.to, []).append(check)
    for engine in report.engines:
        checks = by_host.get(engine.host, [])
        failed = [c.detail for c in checks if c.status == "failed"]
        result = f"[red]{'; '.join(failed)}[/]" if failed else "[green]ok[/]"
        if not engine.answered:
            table.add_row(engine.host, "[red]no answer[/]", "", "", result)
            continue
        swarm = engine.swarm_state + (f" ({engine.swarm_cluster_id[:12]})" if engine.swarm_cluster_id else "")
        table.add_row(engine.host, engine.version, swarm, f"{engine.memory_bytes / GIB:.1f} GiB", result)
    return table


def _cell(port: PortSpec, host: str, checks: list[Check]) -> str:
    """One destination host and port: free and reachable from everyone, or who is in the way."""
    mine = [c for c in checks if c.to == host and (c.port, c.protocol) == (port.port, port.protocol)]
    if not mine:
        return "[dim]-[/]"
    held = next((c for c in mine if c.check == "port_free" and c.status != "ok"), None)
    if held and held.status == "failed":
        return "[red]in use[/]"
    blocked = [c.from_ for c in mine if c.check == "reachable" and c.status == "failed"]
    if blocked:
        return f"[red]blocked from {', '.join(blocked)}[/]"
    if held:
        return f"[yellow]{held.detail}[/]"
    return "[green]ok[/]"


def _ports_table(report: PreflightReport, hosts: list[str]) -> Table:
    table = Table(title="Ports (to each host, from every other host)")
    table.add_column("port")
    table.add_column("for")
    for host in hosts:
        table.add_column(host)
    checks = [c for c in report.checks if c.port is not None]
    for port in report.ports:
        table.add_row(port.key, port.purpose, *(_cell(port, host, checks) for host in hosts))
    return table


def _failures_table(failures: tuple[Failure, ...]) -> Table:
    """Failures that share a fix are one row, so a blocked port reads as one problem."""
    table = Table(title="What to do", show_lines=True)
    for column in ("check", "from", "to", "port", "detail", "fix"):
        table.add_column(column, overflow="fold")
    groups: dict[tuple, list[Failure]] = {}
    for failure in failures:
        groups.setdefault((failure.check, failure.to, failure.port, failure.protocol, failure.fix), []).append(failure)
    for (check, to, port, protocol, fix), members in groups.items():
        sources = ", ".join(dict.fromkeys(f.from_ for f in members if f.from_))
        details = "; ".join(dict.fromkeys(f.detail for f in members))
        table.add_row(f"[red]{check}[/]", sources, to, f"{port}/{protocol}" if port else "", details, fix)
    return table
