"""`sedna-gm`: run the GM, list plugins, check a config, print the CRDs and the RBAC,
and the authoring commands.

Operator errors (a bad gm.yaml, a broken plugin) end with one line on stderr and exit
status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import yaml
from loguru import logger

from sedna import __version__
from sedna.plugins import PluginError, discover_plugins
from sedna.runtime.config import ConfigError, GMConfig, effective_config, load_config
from sedna.runtime.logging import configure_logging

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # what a shell reports for a reader that went away

STARTUP_SWITCH_INTERVAL = 0.001
"""The interpreter's switch interval while the GM starts and for its first heap-settler
interval as ready (then the default, 5 ms, again). Then the informers' lists, the
watches, the probes and the LC websocket, all waiting on I/O, share the interpreter with
threads that compute (decoding lists, the first syncs), and each of their turns came
up to a whole interval late: 10% of the start to ready at 2,000 jobs."""

STOP_DEADLINE_SECONDS = 25.0
"""From the first stop signal to the exit, at most: within a pod's default grace
period (30 s) before the kubelet's SIGKILL. A GM still stopping then writes every
thread's stack to stderr and exits 1, so a hang says where it is."""


@dataclass(frozen=True)
class Command:
    """One subcommand: its help, its own arguments, and what it runs.

    `needs_config` commands get the loaded gm.yaml (`args.config_obj`); the others run
    without one (scaffolding, the bare API server).
    """

    help: str
    run: Callable[[argparse.Namespace], int]
    arguments: Callable[[argparse.ArgumentParser], None] = lambda _p: None
    needs_config: bool = True


def _parser(commands: Mapping[str, Command]) -> argparse.ArgumentParser:
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
    for name, command in commands.items():
        sp = sub.add_parser(name, help=command.help)
        if command.needs_config:
            sp.add_argument("--config", default=argparse.SUPPRESS, help="path of gm.yaml")
        command.arguments(sp)
    return p


def _load(path: str | None) -> GMConfig:
    known = tuple(p.name for p in discover_plugins())
    return load_config(path, known_features=known, feature_options=_option_names(known))


def _option_names(known: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """A feature's option keys, from its plugin's option model (imported when asked).

    Only a feature that a SEDNA_GM_ variable addresses is asked about, so the other
    plugins stay unimported as they would be when disabled.
    """
    cache: dict[str, tuple[str, ...]] = {}

    def names(feature: str) -> tuple[str, ...]:
        if feature not in known:
            return ()
        if feature not in cache:
            cache[feature] = _option_names_of(feature, known)
        return cache[feature]

    return names


def _option_names_of(feature: str, known: Sequence[str]) -> tuple[str, ...]:
    from pydantic import BaseModel

    from sedna.plugins import load_plugins

    alone = GMConfig.model_validate({"features": {n: {"enabled": n == feature} for n in known}})
    try:
        loaded = load_plugins(alone, source="defaults").feature(feature)
    except (PluginError, KeyError):
        return ()  # loading the real config reports what is wrong with the plugin
    names = list(loaded.feature.default_options)
    if isinstance(loaded.options, BaseModel):
        for name, field in type(loaded.options).model_fields.items():
            names += [name, field.alias] if field.alias else [name]
    return tuple(dict.fromkeys(names))


def _fail(message: str) -> int:
    print(f"sedna-gm: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    commands = _commands()
    args = _parser(commands).parse_args(argv)
    command = commands[args.command or "run"]
    try:
        if command.needs_config:
            args.config_obj = _load(args.config)
        status = command.run(args)
        sys.stdout.flush()  # here, so that a reader gone away is seen here too
        return status
    except (ConfigError, PluginError) as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        return _stdout_closed()


def _stdout_closed() -> int:
    """`sedna-gm plugins | head -3`: the reader has gone, so stop quietly.

    As Python's documentation recommends (signal module, "Note on SIGPIPE"): point
    stdout at devnull so that the interpreter's final flush does not fail again, and
    exit as a program killed by SIGPIPE would.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_BROKEN_PIPE


def _commands() -> dict[str, Command]:
    return {
        "run": Command("run the manager (the default)", _run_command),
        "plugins": Command(
            "list discovered plugins and which feature reconciles each Sedna kind",
            lambda a: _list_plugins(a.config_obj),
        ),
        "check-config": Command(
            "validate gm.yaml and print the effective config",
            lambda a: _check_config(a.config_obj, a.config),
        ),
        "crds": Command(
            "print the CRDs of Sedna's kinds (or write one file each)",
            lambda a: _crds(a.dir),
            _crds_arguments,
        ),
        "rbac": Command(
            "print the RBAC the enabled features need",
            lambda a: _rbac(a.config_obj, a.config, a.namespace, a.name, a.helm),
            _rbac_arguments,
        ),
        "token": Command(
            "LC credentials: a token per node (token create NODE)",
            lambda a: _create_token(a.config_obj, a.node, a.namespace),
            _token_arguments,
        ),
        "apiserver": Command(
            "run only the embedded API server (Sedna's CRDs), for embedders and plugin authors",
            _apiserver,
            _apiserver_arguments,
            needs_config=False,
        ),
        "new-plugin": Command(
            "write a new feature plugin package (entry point, options, controller, test)",
            _new_plugin,
            _new_plugin_arguments,
            needs_config=False,
        ),
    }


def _crds_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", help="write sedna.io_<plural>.yaml files into this folder")


def _rbac_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--namespace", default="sedna", help="the GM's own namespace")
    p.add_argument("--name", default="sedna-gm", help="ServiceAccount and role name")
    p.add_argument(
        "--helm", action="store_true", help="as the Helm chart's template (features as values)"
    )


def _token_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="token_command", required=True)
    create = sub.add_parser("create", help="issue (or rotate) the token of NODE and print it")
    create.add_argument("node", metavar="NODE")
    create.add_argument(
        "--namespace", default=None, help="namespace of the Secret (websocket.nodeTokenNamespace)"
    )
    create.add_argument("--config", default=argparse.SUPPRESS, help="path of gm.yaml")


def _new_plugin_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the feature's name (its entry point and gm.yaml key)")
    p.add_argument(
        "--kind",
        default="Model",
        help="the kind it reconciles: one of Sedna's (Model) or GROUP/VERSION/KIND for "
        "any CRD's kind (example.com/v1/Widget)",
    )
    p.add_argument(
        "--plural", default=None, help="the resource name of a CRD's kind (default: guessed)"
    )
    p.add_argument("--dir", default=".", help="where to create the plugin's directory")


def _new_plugin(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sedna.scaffold import ScaffoldError, plan, write

    try:
        p = plan(args.name, args.kind, Path(args.dir), args.plural)
        write(p)
    except (ScaffoldError, OSError) as exc:
        return _fail(str(exc))
    print(f"wrote {p.root}: feature {p.name} ({p.kind}) in package {p.package}")
    print(f"next: pip install -e '{p.root}[test]' && (cd {p.root} && pytest)")
    return 0


def _apiserver_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="127.0.0.1", help="a loopback address to listen on")
    p.add_argument("--port", type=int, default=6443, help="port (0: any free port)")
    p.add_argument(
        "--kubeconfig", default=".sedna-gm/kubeconfig", help="where to write its kubeconfig"
    )
    p.add_argument("--state-dir", default=None, help="keep objects in DIR/state.db (SQLite)")
    p.add_argument(
        "--apply", action="append", default=[], help="manifest file or directory to create"
    )


def _apiserver(args: argparse.Namespace) -> int:
    import ipaddress
    from pathlib import Path

    from sedna.embedded.manifests import ManifestError
    from sedna.embedded.standalone import ListenError, serve
    from sedna.embedded.state_lock import StateDirInUse
    from sedna.runtime.stop_request import StopRequest

    try:
        loopback = ipaddress.ip_address(args.address).is_loopback
    except ValueError:
        loopback = args.address == "localhost"
    if not loopback:
        # A development server (one generated token, a self-signed certificate): this
        # machine only.
        return _fail(f"apiserver: --address {args.address}: only loopback addresses are allowed")
    configure_logging("WARNING")
    stop = StopRequest()  # set from a signal handler: no lock
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        serve(
            address=args.address,
            port=args.port,
            kubeconfig=Path(args.kubeconfig),
            state_dir=Path(args.state_dir) if args.state_dir else None,
            apply=args.apply,
            stop=stop,
            announce=lambda line: print(f"sedna-gm: {line}", flush=True),
        )
    except ManifestError as exc:
        # A missing or refused manifest is a usage error like a bad gm.yaml: one line
        # naming it, not a traceback.
        return _fail(f"apiserver: --apply: {exc}")
    except ListenError as exc:
        return _fail(f"apiserver: cannot listen on {args.address}:{args.port}: {exc}")
    except StateDirInUse as exc:
        return _fail(f"apiserver: --state-dir: {exc}")
    except OSError as exc:  # --state-dir or --kubeconfig that cannot be written
        return _fail(f"apiserver: {exc}")
    return 0


def _run_command(args: argparse.Namespace) -> int:
    return _run(args.config_obj, args.config or "defaults")


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


def _crds(folder: str | None) -> int:
    from pathlib import Path

    from sedna.embedded import crds

    if folder is None:
        return crds.main()
    for path in crds.write_dir(Path(folder)):
        print(path)
    return 0


def _rbac(config: GMConfig, path: str | None, namespace: str, name: str, helm: bool) -> int:
    from sedna.plugins import load_plugins
    from sedna.rbac import rbac_manifests

    features = [f.feature for f in load_plugins(config, source=path or "defaults").features]
    if helm:
        from sedna.rbac_helm import helm_rbac_template

        sys.stdout.write(helm_rbac_template(features))
        return 0
    docs = rbac_manifests(config, features, namespace=namespace, name=name)
    sys.stdout.write(
        "# Generated by `sedna-gm rbac` from the enabled features: do not edit.\n"
        + yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)
    )
    return 0


def _print_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _list_plugins(config: GMConfig) -> int:
    from sedna.plugins.loader import describe_kinds, describe_plugins

    rows = describe_plugins(config)
    _print_table(
        ("NAME", "DISTRIBUTION", "VERSION", "KINDS", "ENABLED"),
        [(r.name, r.distribution, r.version, r.kinds, r.enabled) for r in rows],
    )
    print()
    _print_table(
        ("KIND", "FEATURE", "NOTE"),
        [(k.kind, k.feature, k.note) for k in describe_kinds(rows)],
    )
    return 0


def _run(config: GMConfig, source: str) -> int:
    from sedna.heap import HeapSettler
    from sedna.manager import Manager
    from sedna.plugins import load_plugins
    from sedna.startup import StartupError

    configure_logging(config.logging.level, config.logging.format)
    # Every plugin mistake ends here, before the embedded server or anything else starts.
    plugins = load_plugins(config, source=source)
    embedded: Any = None
    manager: Manager | None = None
    settler = HeapSettler()  # full GC walks grow with the caches: see sedna.heap
    received: list[str] = []  # a signal may come before the manager exists

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        # No logging here: loguru's handlers are not re-entrant from a signal handler.
        if not received:
            faulthandler.dump_traceback_later(STOP_DEADLINE_SECONDS, exit=True)
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
    settler.hold()  # no automatic collections on the way to ready (`finally` releases it)
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, STARTUP_SWITCH_INTERVAL))
    try:
        if config.embedded.enabled:
            from sedna.embedded.mode import EmbeddedMode  # only imported when asked for

            embedded = EmbeddedMode(config)
            config = embedded.prepare()
        manager = Manager(config, config_source=source, plugins=plugins)
        if received:
            manager.request_stop(received[0])
        manager.start()
        # collections back on with the first settle, one interval after ready: see sedna.heap
        settler.start(settle_now=False, after_first=lambda: sys.setswitchinterval(switch_interval))
        if embedded is not None:
            embedded.start_simulation(manager)
        manager.run()
        if manager.failure is not None:
            return _fail(manager.failure)
    except (StartupError, PluginError, ConfigError) as exc:
        return _fail(str(exc))
    except Exception:
        logger.exception("sedna-gm failed")
        return 1
    finally:
        settler.stop()
        sys.setswitchinterval(switch_interval)
        if manager is not None:
            manager.stop()
        if embedded is not None:
            embedded.stop()
        faulthandler.cancel_dump_traceback_later()
    logger.info("sedna-gm stopped")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
