"""`sedna-gm`: run the GM, list plugins, check a config.

Operator errors (a bad gm.yaml, a broken plugin) end with one line on stderr and exit
status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

import yaml
from loguru import logger

from sedna import __version__
from sedna.plugins import PluginError, discover_plugins
from sedna.runtime.config import ConfigError, GMConfig, effective_config, load_config
from sedna.runtime.logging import configure_logging

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sedna-gm", description="GlobalManager for KubeEdge Sedna, built from plugins."
    )
    p.add_argument("--version", action="version", version=f"sedna-gm {__version__}")
    p.add_argument(
        "--config",
        default=os.environ.get("SEDNA_GM_CONFIG"),
        help="path of gm.yaml (default: $SEDNA_GM_CONFIG, else built-in defaults)",
    )
    sub = p.add_subparsers(dest="command")
    sub.add_parser("run", help="run the manager (the default)")
    sub.add_parser("plugins", help="list discovered plugins, their kinds and state")
    sub.add_parser("check-config", help="validate gm.yaml and print the effective config")
    token = sub.add_parser("token", help="LC credentials: a token per node")
    token_sub = token.add_subparsers(dest="token_command", required=True)
    create = token_sub.add_parser("create", help="issue (or rotate) the token of NODE and print it")
    create.add_argument("node", metavar="NODE")
    create.add_argument(
        "--namespace", default=None, help="namespace of the Secret (websocket.nodeTokenNamespace)"
    )
    create.add_argument("--config", default=argparse.SUPPRESS, help="path of gm.yaml")
    for name in ("run", "plugins", "check-config"):
        sub.choices[name].add_argument(
            "--config", default=argparse.SUPPRESS, help="path of gm.yaml"
        )
    return p


def _load(path: str | None) -> GMConfig:
    known = tuple(p.name for p in discover_plugins())
    return load_config(path, known_features=known)


def _fail(message: str) -> int:
    print(f"sedna-gm: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = args.command or "run"
    try:
        config = _load(args.config)
        if command == "check-config":
            return _check_config(config, args.config)
        if command == "plugins":
            return _list_plugins(config)
        if command == "token":
            return _create_token(config, args.node, args.namespace)
        return _run(config, args.config or "defaults")
    except (ConfigError, PluginError) as exc:
        return _fail(str(exc))


def _create_token(config: GMConfig, node: str, namespace: str | None) -> int:
    from sedna.runtime.kube import ApiError
    from sedna.runtime.kube.config import KubeConfigError
    from sedna.tokens import create_token_command

    try:
        token = create_token_command(config, node, namespace)
    except (ApiError, ValueError, KubeConfigError) as exc:
        return _fail(f"token create {node}: {exc}")
    print(token)  # stdout only, for a pipe into the LC's secret; never logged
    return 0


def _check_config(config: GMConfig, path: str | None) -> int:
    from sedna.plugins import load_plugins

    load_plugins(config, source=path or "defaults")  # features' own options too
    sys.stdout.write(yaml.safe_dump(effective_config(config), sort_keys=False))
    return 0


def _list_plugins(config: GMConfig) -> int:
    from sedna.plugins.loader import describe_plugins

    rows = describe_plugins(config)
    header = ("NAME", "DISTRIBUTION", "VERSION", "KINDS", "ENABLED")
    table = [header, *[(r.name, r.distribution, r.version, r.kinds, r.enabled) for r in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _run(config: GMConfig, source: str) -> int:
    from sedna.manager import Manager, StartupError

    configure_logging(config.logging.level, config.logging.format)
    embedded: Any = None
    manager: Manager | None = None
    received: list[str] = []  # a signal may come before the manager exists

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        # No logging here: loguru's handlers are not re-entrant from a signal handler.
        received.append(f"received {signal.Signals(signum).name}")
        if manager is not None:
            manager.request_stop(received[0])
        if embedded is not None:
            embedded.request_stop()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    # `kill -USR1 <pid>` writes every thread's stack to stderr (Go's SIGQUIT dump):
    # what an operator needs from a GM that hangs, without stopping it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        if config.embedded.enabled:
            from sedna.embedded.mode import EmbeddedMode  # only imported when asked for

            embedded = EmbeddedMode(config)
            config = embedded.prepare()
        manager = Manager(config, config_source=source)
        if received:
            manager.request_stop(received[0])
        manager.start()
        if embedded is not None:
            embedded.start_simulation(manager)
        manager.run()
    except (StartupError, PluginError, ConfigError) as exc:
        return _fail(str(exc))
    except Exception:
        logger.exception("sedna-gm failed")
        return 1
    finally:
        if manager is not None:
            manager.stop()
        if embedded is not None:
            embedded.stop()
    logger.info("sedna-gm stopped")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
