"""The run configuration: one flat dataclass, the single place for defaults.

Every field is a command-line flag (``--migration-interval`` for ``migration_interval``) and a
YAML key (``--config run.yaml``); the one-line ``help`` of each field is its documentation.
Precedence: field default < per-environment table (:mod:`islands.envdefaults`, only for
fields left unset) < YAML file < command line.

Modules, in the order a value goes through them:

- ``schema``: the :class:`Config` dataclass (fields, defaults, help), ``ConfigError``.
- ``fieldtypes``: pydantic types that read a flag's string or a YAML value (``coerce``).
- ``parse``: argparse and YAML -> an unresolved Config (``parse_args``, ``from_dict``).
- ``checks``: one-line checks of sizes, names, island specs, topology and device.
- ``resolve``: environment-table defaults, the checks, derived values (``resolve``).

``resolve`` raises :class:`ConfigError` with a one-line message; the launcher turns that into
exit code 2 before creating anything. A resolved config is fully resolved (test step limit,
checkpoint location); ``to_yaml_dict`` of it is what ``config.yaml`` in a run directory
holds, and feeding that back with ``--config`` gives the same resolved config.
"""

from .fieldtypes import coerce
from .parse import (
    build_parser,
    check_run_dir,
    default_out_dir,
    from_dict,
    from_options,
    load_yaml,
    parse_args,
)
from .resolve import (
    check_env_id,
    observation_shape,
    registered_step_limit,
    resolve,
)
from .schema import (
    DEVICES,
    FIELDS,
    ISLAND_SPEC_KEYS,
    Config,
    ConfigError,
    policy_options,
    strategies_of,
)

__all__ = [
    "DEVICES", "FIELDS", "ISLAND_SPEC_KEYS", "Config", "ConfigError", "build_parser",
    "check_env_id", "check_run_dir", "coerce", "default_out_dir",
    "from_dict", "from_options", "load_yaml", "observation_shape", "parse_args", "policy_options",
    "registered_step_limit", "resolve", "strategies_of",
]
