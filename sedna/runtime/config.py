"""gm.yaml: Sedna's GM keys with Sedna's defaults, plus the sections of this GM.

Parsing goes through pydantic so that every error can name the file and the key
path (`gm.yaml: websocket.port: expected an integer, got "abc"`); operators read
these messages, not tracebacks.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

ENV_PREFIX = "SEDNA_GM_"

FeatureOptionNames = Callable[[str], Iterable[str]]
"""A feature's name -> the option keys its plugin knows (for the environment overrides)."""


class ConfigError(Exception):
    """A configuration problem, already phrased for the operator (source: key: reason)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


class TLSConfig(_Section):
    certFile: str = ""
    keyFile: str = ""
    # LCs must present a client certificate from this CA whose CN is their Node-Name
    clientCAFile: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.certFile and self.keyFile)


class WebsocketConfig(_Section):
    address: str = "0.0.0.0"
    port: int = Field(default=9000, ge=0, le=65535)
    # Sedna's Go LC sends no token; "none" keeps it working but must be chosen explicitly.
    # "node": a token per node, in Secret <nodeTokenNamespace>/sedna-lc-token-<node>
    # (`sedna-gm token create NODE`); "token": one shared token (compatibility mode)
    auth: Literal["node", "token", "none"] = "node"
    tokenFile: str = ""
    tokenSecret: str = ""  # "namespace/name", key "token"
    nodeTokenNamespace: str = "sedna"
    # how long a live connection has to answer a ping before a newer one replaces it
    replaceProbeSeconds: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    # an LC that does not take a frame for this long is disconnected (its queue is kept)
    writeTimeoutSeconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    # the websocket upgrade must be done within this (slow or silent handshakes are cut)
    handshakeTimeoutSeconds: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # the GM pings every LC this often and cuts one whose pong takes longer than this: a
    # frame trickled in (the pong waits behind it) or a silent peer is cut within twice this
    readTimeoutSeconds: float = Field(default=20.0, gt=0, allow_inf_nan=False)
    # the longest the message layer holds a shutdown (SIGTERM), slow peers included
    shutdownGraceSeconds: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    # connected LCs at most (what they may make the GM buffer is maxBufferedBytes)
    maxConnections: int = Field(default=2000, gt=0)
    # accept a Node-Name only from one of that Node's status.addresses; off by default,
    # since NAT and proxies hide the node's own address (binds identity for auth: none)
    nodeAddressBinding: bool = False
    tls: TLSConfig = Field(default_factory=TLSConfig)
    allowPlainCredentials: bool = False
    maxFrameBytes: int = Field(default=1024 * 1024, gt=0)
    # bytes all LCs together may make the GM buffer (frames received, not yet handled);
    # over it the connection holding the most is refused (lc_buffered_bytes)
    maxBufferedBytes: int = Field(default=64 * 1024 * 1024, gt=0)
    maxQueuePerNode: int = Field(default=1000, gt=0)
    # accepted reports waiting per node and kind; beyond, the oldest is dropped (counted)
    maxReportsPerNode: int = Field(default=1000, gt=0)
    # accept an LC's report only for objects the GM routed to its node (messaging.routes)
    authorizeReports: bool = True
    # how long a report may wait for its route (after a GM restart), and how many per node
    unroutedReportGraceSeconds: float = Field(default=30.0, ge=0, allow_inf_nan=False)
    maxUnroutedReportsPerNode: int = Field(default=100, ge=0)
    # bytes of all reports waiting for their route, over every node, shared fairly between nodes
    maxUnroutedReportBytes: int = Field(default=16 * 1024 * 1024, ge=0)
    # bytes of accepted reports waiting for their handler, per kind, shared fairly between nodes
    maxReportBytes: int = Field(default=256 * 1024 * 1024, gt=0)
    updatesAsInsert: bool = True
    idleQueueTTLSeconds: float = Field(default=24 * 3600.0, ge=0, allow_inf_nan=False, strict=True)
    """Forget the queue of a node that is not connected and got no message for this long.

    Deleted Nodes are forgotten at once through the nodes informer; this bounds memory
    where no informer tells (an embedded message layer, nodes that never registered).
    A day outlasts any LC outage worth waiting for, and the controllers resend the
    current state on their resync anyway. 0 keeps queues for ever (Sedna's behaviour).
    Strict: a quoted or boolean value is a typo, not a duration, and is refused.
    """

    @model_validator(mode="after")
    def _buffer_holds_two_frames(self) -> WebsocketConfig:
        # below two frames, one LC's legal frame could refuse another LC's
        if self.maxBufferedBytes < 2 * self.maxFrameBytes:
            raise ValueError(
                f"maxBufferedBytes ({self.maxBufferedBytes}) must be at least twice "
                f"maxFrameBytes ({self.maxFrameBytes})"
            )
        return self


class ServerRef(_Section):
    server: str


class LocalControllerConfig(ServerRef):
    server: str = "http://localhost:9100"


class KnowledgeBaseConfig(ServerRef):
    server: str = "http://localhost:9020"


class LoggingConfig(_Section):
    level: Literal["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    format: Literal["text", "json"] = "text"


class MetricsConfig(_Section):
    """The HTTP endpoint for /metrics, /healthz and /readyz.

    /metrics names every node and job, so it wants a bearer token (as controller-runtime
    serves metrics behind authentication); the kubelet's probes /healthz, /livez and
    /readyz stay public. "none" must be chosen explicitly and is warned about.
    """

    enabled: bool = True
    address: str = "0.0.0.0"
    port: int = Field(default=9091, ge=0, le=65535)
    # "token": `Authorization: Bearer <t>` with a token of tokenFile or tokenSecret
    auth: Literal["token", "none"] = "token"
    tokenFile: str = ""  # one token a line, re-read when it changes (a mounted Secret)
    tokenSecret: str = ""  # "namespace/name", key "token"
    # the request line and headers must arrive within this, across all reads (slowloris)
    requestTimeoutSeconds: float = Field(default=5.0, gt=0, le=60, allow_inf_nan=False)
    # connections still sending their request, at most, in all and from one address;
    # over either, the oldest of that address (or of the busiest one) is closed
    maxConnections: int = Field(default=64, gt=0, le=4096)
    maxConnectionsPerPeer: int = Field(default=8, gt=0, le=4096)

    @model_validator(mode="after")
    def _token_secret_is_a_reference(self) -> MetricsConfig:
        if self.tokenSecret:
            parts = self.tokenSecret.split("/")
            if len(parts) != 2 or not all(parts):
                raise ValueError(
                    f"tokenSecret: expected 'namespace/name', got {self.tokenSecret!r}"
                )
        return self


class LeaderElectionConfig(_Section):
    enabled: bool = False
    leaseName: str = "sedna-gm"
    leaseNamespace: str = "sedna"
    leaseDurationSeconds: float = Field(default=15.0, gt=0)
    renewDeadlineSeconds: float = Field(default=10.0, gt=0)
    retryPeriodSeconds: float = Field(default=2.0, gt=0)


class CredentialsConfig(_Section):
    # secretKeyRef keeps secret values out of pod specs; env is Sedna's plain-value behaviour.
    injection: Literal["secretKeyRef", "env"] = "secretKeyRef"


class StorageInitializerConfig(_Section):
    image: str = "kubeedge/sedna-storage-initializer:v0.3.0"


class SimulateConfig(_Section):
    nodes: list[str] = Field(default_factory=list)
    # nodes of `nodes` whose LC is a real one (e.g. Sedna's sedna-lc): a kubelet only
    externalLC: list[str] = Field(default_factory=list)
    podStartSeconds: float = Field(default=1.0, ge=0)
    podRunSeconds: float = Field(default=3.0, ge=0)
    datasetGrowthPerSecond: float = Field(default=20.0, ge=0)
    # the simulated LC's loops; Sedna's LC: jobs every 10 s, datasets every 60 s
    jobTickSeconds: float = Field(default=0.5, gt=0, le=3600)
    datasetPollSeconds: float = Field(default=1.0, gt=0, le=3600)

    @field_validator("externalLC")
    @classmethod
    def _external_nodes_are_simulated(cls, value: list[str], info: ValidationInfo) -> list[str]:
        nodes = info.data.get("nodes") or []
        for i, node in enumerate(value):
            if node not in nodes:
                raise PydanticCustomError(
                    "external_lc",
                    "{node} is not one of embedded.simulate.nodes (its kubelet stand-in "
                    "runs there)",
                    {"node": repr(node)},
                )
            if node in value[:i]:
                raise PydanticCustomError(
                    "external_lc", "{node} is listed twice", {"node": repr(node)}
                )
        return value


class EmbeddedConfig(_Section):
    enabled: bool = False
    address: str = "127.0.0.1"
    port: int = Field(default=6443, ge=0, le=65535)
    stateDir: str = ".sedna-gm"
    simulate: SimulateConfig = Field(default_factory=SimulateConfig)
    apply: list[str] = Field(default_factory=list)
    # kube-apiserver's --event-ttl (0: Events never expire)
    eventTTLSeconds: float = Field(default=3600.0, ge=0)
    # kube-controller-manager's --terminated-pod-gc-threshold (0: keep every one)
    terminatedPodGCThreshold: int = Field(default=100, ge=0)
    # open watches on the embedded API server, in all and per client (token and
    # address); over either a new watch gets 429 with Retry-After
    maxWatches: int = Field(default=4096, gt=0)
    maxWatchesPerClient: int = Field(default=1024, gt=0)
    # a request body must arrive within this in all (a slower one is answered 408, closed)
    requestBodyTimeoutSeconds: float = Field(default=30.0, gt=0, allow_inf_nan=False)


class FeatureConfig(BaseModel):
    """Per-feature switch and worker count; every other key is the feature's own option."""

    model_config = ConfigDict(extra="allow", validate_default=True)

    enabled: bool = True
    workers: int = Field(default=1, ge=1, le=64)

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class GMConfig(_Section):
    kubeConfig: str = ""
    master: str = ""
    namespace: str = ""
    websocket: WebsocketConfig = Field(default_factory=WebsocketConfig)
    localController: LocalControllerConfig = Field(default_factory=LocalControllerConfig)
    knowledgeBaseServer: KnowledgeBaseConfig = Field(default_factory=KnowledgeBaseConfig)
    minResyncPeriodSeconds: int = Field(default=30, ge=1)
    features: dict[str, FeatureConfig] = Field(default_factory=dict)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    leaderElection: LeaderElectionConfig = Field(default_factory=LeaderElectionConfig)
    credentials: CredentialsConfig = Field(default_factory=CredentialsConfig)
    storageInitializer: StorageInitializerConfig = Field(default_factory=StorageInitializerConfig)
    embedded: EmbeddedConfig = Field(default_factory=EmbeddedConfig)
    # key path -> the SEDNA_GM_ variable that set it (load_config fills it in)
    _set_by: dict[tuple[str, ...], str] = PrivateAttr(default_factory=dict)

    @property
    def names_features(self) -> bool:
        """Whether `features:` names a feature to run (a section not switched off).

        Then it is the list of what runs: a config for one feature need not switch off
        every other installed one. A map that names none (absent, empty, or only
        `enabled: false` sections) leaves every installed feature on but those.
        """
        return any(section.enabled for section in self.features.values())

    def feature(self, name: str) -> FeatureConfig:
        """The section of one feature; an absent one is off when others are named."""
        section = self.features.get(name)
        if section is not None:
            return section
        return FeatureConfig(enabled=not self.names_features)

    def source_of(self, loc: Iterable[str], source: str) -> str:
        """Where the value at `loc` came from: `environment VAR`, else `source` (the file).

        Checks made after loading (a feature's own options) blame the variable this way.
        """
        var = _setter(tuple(loc), self._set_by)
        return f"environment {var}" if var else source


def _show(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


_TYPE_WORDS = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "a boolean",
    "bool_type": "a boolean",
    "string_type": "a string",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
}


def describe_error(err: Mapping[str, Any]) -> str:
    """One pydantic error as `key.path: reason` in the operator's words."""
    path = ".".join(str(p) for p in err.get("loc", ()))
    kind = str(err.get("type", ""))
    value = err.get("input")
    if kind == "extra_forbidden":
        reason = "unknown key"
    elif kind == "missing":
        reason = "required key is missing"
    elif kind in _TYPE_WORDS:
        reason = f"expected {_TYPE_WORDS[kind]}, got {_show(value)}"
    elif kind == "literal_error":
        expected = (err.get("ctx") or {}).get("expected", "")
        reason = f"expected one of {expected}, got {_show(value)}"
    else:
        reason = f"{err.get('msg', 'invalid value')}, got {_show(value)}"
    return f"{path}: {reason}" if path else reason


def validation_message(
    source: str,
    exc: ValidationError,
    prefix: str = "",
    set_by: Mapping[tuple[str, ...], str] | None = None,
) -> str:
    """One line per error, blamed on the variable that set the key if one did."""
    lines = []
    for err in exc.errors():
        text = describe_error(err)
        var = _setter(tuple(str(p) for p in err.get("loc", ())), set_by or {})
        where = f"environment {var}" if var else source
        lines.append(f"{where}: {prefix}{text}")
    return "\n".join(lines)


def _setter(loc: tuple[str, ...], set_by: Mapping[tuple[str, ...], str]) -> str | None:
    for n in range(len(loc), 0, -1):
        if loc[:n] in set_by:
            return set_by[loc[:n]]
    return None


def _env_key(name: str) -> str:
    return name.replace("-", "_").upper()


def _env_keys(name: str) -> tuple[str, ...]:
    """The spellings of a key in a variable name: `maxConditions` is `MAX_CONDITIONS`.

    Environment variables are upper case, so a capital of a camelCase key is written
    as `_` before the letter; the run-together spelling (`MAXCONDITIONS`) is accepted too.
    """
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return tuple(dict.fromkeys((_env_key(snake), _env_key(name))))


def _apply_override(
    data: dict[str, Any],
    model: type[BaseModel] | None,
    rest: str,
    value: Any,
    var: str,
    known: tuple[str, ...] = (),
    path: tuple[str, ...] = (),
    set_by: dict[tuple[str, ...], str] | None = None,
    feature_options: FeatureOptionNames | None = None,
) -> None:
    """Place one SEDNA_GM_ value by matching the upper-cased remainder against known keys.

    `model` is None inside free-form sections (the features map, a feature's options),
    where the keys present in the file are the known ones; in a feature's section the
    framework's keys (`enabled`, `workers`) and the options its plugin declares
    (`feature_options`) are known too, so `MAXCONDITIONS` finds `maxConditions` as a
    core section's keys are found. `set_by` records which variable set which key path,
    so that errors name the variable, not the file.
    """
    set_by = {} if set_by is None else set_by
    keys: list[str] = list(model.model_fields) if model is not None else list(data)
    if model is None and len(path) == 2 and path[0] == "features":
        keys += [k for k in FeatureConfig.model_fields if k not in keys]
        if feature_options is not None:
            keys += [k for k in feature_options(path[1]) if k not in keys]
    # Longest spellings first so that FEATURES_INCREMENTAL_LEARNING_WORKERS finds the feature.
    spellings = sorted(
        ((norm, key) for key in keys for norm in _env_keys(key)),
        key=lambda pair: len(pair[0]),
        reverse=True,
    )
    for norm, key in spellings:
        if rest == norm:
            data[key] = value
            set_by[(*path, key)] = var
            return
        if not rest.startswith(norm + "_"):
            continue
        sub_model: type[BaseModel] | None = None
        if model is not None:
            ann = model.model_fields[key].annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                sub_model = ann
            elif key != "features":
                continue  # a scalar key that merely shares a prefix
        sub = data.get(key)
        if key == "features" and model is not None:
            sub = _features_with_known(sub, known)
            data[key] = sub
        if not isinstance(sub, dict):
            sub = {}
            data[key] = sub
        _apply_override(
            sub,
            sub_model,
            rest[len(norm) + 1 :],
            value,
            var,
            known,
            (*path, key),
            set_by,
            feature_options,
        )
        return
    if model is None:
        # A feature or option not in the file: keep the key in gm.yaml's camelCase style.
        data[_free_key(rest)] = value
        set_by[(*path, _free_key(rest))] = var
        return
    raise ConfigError(f"environment {var}: no such key in gm.yaml")


def _features_with_known(sub: Any, known: tuple[str, ...]) -> Any:
    """Let overrides name installed features that the file does not mention."""
    if sub is None:
        sub = {}
    if not isinstance(sub, dict):
        return sub
    for name in known:
        sub.setdefault(name, {})
    return sub


def _free_key(rest: str) -> str:
    """FEATURE_OPTION_NAME -> camelCase, the style of gm.yaml keys."""
    parts = rest.lower().split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def apply_env_overrides(
    data: dict[str, Any],
    environ: Mapping[str, str],
    known_features: tuple[str, ...] = (),
    set_by: dict[tuple[str, ...], str] | None = None,
    feature_options: FeatureOptionNames | None = None,
) -> dict[str, Any]:
    """Apply every SEDNA_GM_ variable to `data`; `set_by` receives key path -> variable.

    `feature_options` names a feature's options (asked only for a feature that a
    variable addresses), so that their run-together spellings resolve.
    """
    for var in sorted(environ):
        if not var.startswith(ENV_PREFIX) or var == ENV_PREFIX + "CONFIG":
            continue
        raw = environ[var]
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError:
            value = raw
        _apply_override(
            data,
            GMConfig,
            var[len(ENV_PREFIX) :],
            value,
            var,
            known_features,
            (),
            set_by,
            feature_options,
        )
    return data


def _parse_yaml(text: str) -> Any:
    """gm.yaml's data: parsed by libyaml when PyYAML has it (3 ms less of every start),
    and a document it refuses parsed again by PyYAML's own parser, whose error (line,
    column, problem) is the one operators and the tests know."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def load_config(
    path: str | Path | None,
    environ: Mapping[str, str] | None = None,
    known_features: tuple[str, ...] = (),
    feature_options: FeatureOptionNames | None = None,
) -> GMConfig:
    """Read gm.yaml (None = defaults only) and the SEDNA_GM_ overrides; raise ConfigError.

    `known_features` are installed feature names, so that an override can address a
    feature the file does not mention (feature names may contain underscores);
    `feature_options` gives a feature's option keys, so that an override can spell an
    option the file does not mention run together (`MAXCONDITIONS`).
    """
    environ = os.environ if environ is None else environ
    source = str(path) if path is not None else "defaults"
    data: Any = {}
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{source}: file not found") from None
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read: {exc.strerror}") from None
        try:
            data = _parse_yaml(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError(f"{source}: not valid YAML{where}: {problem}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping at the top level, got {_show(data)}")
    set_by: dict[tuple[str, ...], str] = {}
    data = apply_env_overrides(data, environ, known_features, set_by, feature_options)
    try:
        cfg = GMConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_message(source, exc, set_by=set_by)) from None
    cfg._set_by = set_by
    if path is not None:
        resolve_relative_paths(cfg, Path(path).parent, set_by)
    if cfg.kubeConfig and not Path(cfg.kubeConfig).is_file():  # as Sedna's Validate()
        where = f"environment {set_by[('kubeConfig',)]}" if ("kubeConfig",) in set_by else source
        raise ConfigError(f"{where}: kubeConfig: file not found: {cfg.kubeConfig}")
    return cfg


def _against(base: Path, value: str) -> str:
    return value if not value or Path(value).is_absolute() else str(base / value)


def resolve_relative_paths(
    cfg: GMConfig, base: Path, set_by: Mapping[tuple[str, ...], str] | None = None
) -> None:
    """Make the file's relative paths relative to the file's folder, not to the shell's.

    `sedna-gm --config deploy/gm.yaml` then reads the same files from any working
    directory. Values set from the environment stay relative to the working
    directory, as paths given on a command line do.
    """
    from_env = set_by or {}

    def fix(owner: BaseModel, key: str, *loc: str) -> None:
        if (*loc, key) not in from_env:
            setattr(owner, key, _against(base, getattr(owner, key)))

    fix(cfg, "kubeConfig")
    fix(cfg.websocket, "tokenFile", "websocket")
    fix(cfg.websocket.tls, "certFile", "websocket", "tls")
    fix(cfg.websocket.tls, "keyFile", "websocket", "tls")
    fix(cfg.metrics, "tokenFile", "metrics")
    emb = cfg.embedded
    if "stateDir" in emb.model_fields_set:
        fix(emb, "stateDir", "embedded")
    if ("embedded", "apply") not in from_env:
        emb.apply = [_against(base, p) for p in emb.apply]


def effective_config(cfg: GMConfig) -> dict[str, Any]:
    """The config as gm.yaml keys, for `sedna-gm check-config`."""
    return cfg.model_dump(mode="json")
