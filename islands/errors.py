"""The error every layer raises for bad user input (``ConfigError``): the launcher and the
experiment CLI print its one-line message and exit 2. Its own module, below the config
package, so that modules the config package reads (the cluster file's cost model) can raise
it without importing the config package back."""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad user input; the message is one line naming the problem."""
