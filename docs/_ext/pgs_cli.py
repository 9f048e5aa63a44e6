"""The ``pgs-cli`` directive: every command and option of the ``pgs`` command line, read from
its argparse parser (`pgs.cli.main._build_parser`) with the help text ``pgs COMMAND --help``
prints, defaults filled in, so that the page cannot drift from the code."""

import argparse
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def _escape(text):
    """Help text as reST text: no markup."""
    text = re.sub(r"([\\*`|])", r"\\\1", text)
    return re.sub(r"(\w)_(?=\W|$)", r"\1\\_", text)


def _action_lines(parser, action):
    """An ``.. option::`` block for one argparse action."""
    if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
        return []
    formatter = parser.formatter_class(parser.prog)
    metavar = formatter._format_args(action, action.dest.upper()) if action.nargs != 0 else ""
    names = ", ".join(f"{flag} {metavar}".strip() for flag in action.option_strings)
    help_text = formatter._expand_help(action) if action.help else ""
    return [f".. option:: {names or metavar}", "", f"   {_escape(help_text)}", ""]


def cli_lines(parser):
    """The reST of `parser`'s options and of each of its commands'."""
    lines = [".. program:: pgs", ""]
    for action in parser._actions:
        lines += _action_lines(parser, action)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in commands._choices_actions}
    for name, command in commands.choices.items():
        title = f"pgs {name}"
        lines += [title, "-" * len(title), "", _escape(command.description or helps[name]), "",
                  ".. code-block:: text", "", "   " + command.format_usage().strip(), "",
                  f".. program:: pgs {name}", ""]
        for action in command._actions:
            lines += _action_lines(command, action)
    return lines


class CLIOptions(SphinxDirective):
    """``.. pgs-cli::``: the commands and options of ``pgs``, from its parser."""

    def run(self):
        from pgs.cli.main import _build_parser

        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(cli_lines(_build_parser())), node)
        return node.children


def setup(app):
    app.add_directive("pgs-cli", CLIOptions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
