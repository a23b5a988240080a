"""Help a person can hold in their head: commands in sections, the tuning knobs apart under "Advanced options"."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

import click

from vdbguard.config import Declared

F = TypeVar("F", bound=Callable[..., Any])


class Option(click.Option):
    """An option that ``--help`` lists under "Advanced options" when made with ``advanced=True``, and whose default
    may be ``Declared`` elsewhere (shown in ``--help`` as its value, not as "dynamic")."""

    def __init__(self, *args: Any, advanced: bool = False, help_from: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.advanced, self.help_from, self.declared_help = advanced, help_from, self.help

    def get_default(self, ctx: click.Context, call: bool = True) -> Any:
        value = super().get_default(ctx, call=call)
        return value() if isinstance(value, Declared) else value

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.help_from is not None:  # read now: loading what it names costs every other command
            module, _, function = self.help_from.partition(":")
            self.help = f"{self.declared_help} {getattr(importlib.import_module(module), function)()}"
        return super().get_help_record(ctx)


def advanced(*declarations: str, **settings: Any) -> Callable[[F], F]:
    """``click.option`` for a knob most runs leave alone: deep tier, calibration, executors, verdict, internals."""
    return click.option(*declarations, cls=Option, advanced=True, **settings)


def is_advanced(param: click.Parameter) -> bool:
    return getattr(param, "advanced", False)


class Command(click.Command):
    """``--help`` with the everyday options first, then the advanced ones under their own heading."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, wanted in (("Options", False), ("Advanced options", True)):
            rows = [
                row
                for param in self.get_params(ctx)
                if is_advanced(param) == wanted and (row := param.get_help_record(ctx)) is not None
            ]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(click.Group):
    """Subcommands listed in sections, in the order added: ``group.add_command(command, section="Scan")``."""

    command_class = Command
    group_class = type  # subgroups list their commands the same way

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections: dict[str, list[str]] = {}

    def add_command(self, cmd: click.Command, name: str | None = None, section: str = "") -> None:
        super().add_command(cmd, name)
        self.sections.setdefault(section, []).append(name or cmd.name or "")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(map(len, self.commands), default=0)
        for section, names in self.sections.items():
            rows = [(name, self.commands[name].get_short_help_str(limit)) for name in names]
            with formatter.section(f"{section} commands" if section else "Commands"):
                formatter.write_dl(rows)
