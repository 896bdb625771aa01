"""The LC websocket server: Sedna's GM side of the edge protocol, on an asyncio loop thread.

Controllers are threads and must never wait for the network, so `send` only encodes
the object and puts it on the node's `NodeQueue`; the loop thread owns the sockets.
Per connected node there is one reader (decode, validate, hand to the upstream
workers without blocking) and one writer (drain the node's queue). At most one
writer per node runs at a time: a reconnect first retires the old connection and
waits for its writer to put back an unfinished message, so the order per object is
kept across reconnects.

Differences from the Go GM, on purpose:
- LCs authenticate with a bearer token before the upgrade (401 otherwise), and
  objects that carry credentials are refused on plain ws unless the operator allows it.
- A reconnect closes the old connection (Go keeps both, and their write loops share
  one queue). Two LCs with one node name will therefore take turns; the warning on
  every replacement names the node.
- Malformed frames are refused one by one with a reason (Go's ReadJSON error ends the
  connection, and Go even accepts binary frames). A frame above `maxFrameBytes` is
  refused while the connection goes on; the websockets limit is set to
  `_OVERSIZE_FACTOR` times that, and only a message above *that* ends the
  connection (close code 1009), since it must be buffered whole before it can be judged.
- The Go server handles every path (its mux pattern "/" matches all); so do we.

Queues are forgotten with their nodes (Go keeps them for ever; see `forgetting`): when
the Node object is deleted (`watch_nodes` hooks a nodes informer up) and when a
disconnected node's queue stays idle for `idleQueueTTLSeconds`.

Delivery is at most once per successful write, as in Go: a message counts as sent
when the websocket library accepted it for the socket. A failed write puts the
message back for the next connection. Every connection starts with the last message
of each object routed to its node (`retained`), so an LC that restarted has its
datasets, models and jobs at once (Go's GM waits for its next resync). Queues live in
memory only; after a GM restart the controllers' initial list resends every object.

Accounting: every frame an LC sends, except its initial bare header, ends in exactly
one of lc_messages_received{kind} (handed to a handler) or
lc_messages_rejected{reason}. Refused handshakes are counted under the reasons
`unauthorized` and `missing_node_name`; a connection cut off because LCs together
buffer more than `maxBufferedBytes` (`budget`) counts once under `buffer_full`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from loguru import logger
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from sedna.runtime.clock import Clock, RealClock
from sedna.runtime.config import ConfigError, WebsocketConfig
from sedna.runtime.informers import HandlerRegistration, SharedInformer
from sedna.runtime.log_safety import clip, quiet_logger
from sedna.runtime.messaging.auth import (
    NodeTokenProvider,
    TokenProvider,
    bearer_token,
    credential_id,
    file_token_provider,
    peer_common_name,
    server_ssl_context,
    token_valid,
)
from sedna.runtime.messaging.budget import FrameBudget
from sedna.runtime.messaging.forgetting import (
    ForgetReason,
    IdleSweeper,
    NodeDeletionHandler,
)
from sedna.runtime.messaging.log_limit import LogLimiter
from sedna.runtime.messaging.metered import MeteredConnection, metered_connection_class
from sedna.runtime.messaging.queues import NodeQueue, Outgoing, QueueRetired
from sedna.runtime.messaging.routes import PendingReports, RouteTable, key_of
from sedna.runtime.messaging.upstream import DEFAULT_BACKLOG, Dispatch, UpstreamDispatcher
from sedna.runtime.messaging.wire import (
    CREDENTIAL_ANNOTATION,
    MAX_NAME_LENGTH,
    FrameError,
    Header,
    Reason,
    decode_frame,
    decode_payload,
    encode_frame,
    encode_payload,
    has_credential,
    object_header,
)
from sedna.runtime.metrics import Metrics
from sedna.runtime.tls_buffers import limit_tls_read_buffers
from sedna.runtime.upstream import UpstreamHandler, UpstreamMessage, UpstreamRegistry

_EVENTS = frozenset(("insert", "update", "delete"))
NODE_NAME_HEADER = "Node-Name"
# Library limit = this many times maxFrameBytes: frames in between are refused one by one.
_OVERSIZE_FACTOR = 4
# How long a replaced connection's writer may finish its current write.
_REPLACE_GRACE_SECONDS = 2.0
_START_TIMEOUT_SECONDS = 30.0
# Close code and reason for the LC of a node whose Node object was deleted.
_NODE_DELETED_CLOSE = (1000, "node deleted from the cluster")
# The LogLimiter key of handshake refusals: one for all peers (see _log_refusal).
_HANDSHAKE = "(handshake)"
_PING_TIMEOUT = "keepalive ping timeout"  # websockets' close reason
_SERVER_ERRORS_LOG = quiet_logger("websockets.sedna-gm", "LC websocket")


class _LoopWaker:
    """Coalesces wake-ups from controller threads into one loop callback.

    Each call_soon_threadsafe writes to the loop's self-pipe; with many idle nodes,
    one per send would cost a syscall and a loop turn per message. Events are
    collected instead, and one scheduled callback sets all that piled up.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: list[asyncio.Event] = []

    def wake(self, event: asyncio.Event) -> None:
        with self._lock:
            self._pending.append(event)
            if len(self._pending) > 1:
                return  # a flush is already scheduled
        with contextlib.suppress(RuntimeError):  # loop closed: the GM is shutting down
            self._loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for event in pending:
            event.set()


class _Connection:
    """One LC connection as seen by its reader and writer."""

    __slots__ = ("closed", "credential", "event", "node", "waker", "writer", "ws")

    def __init__(
        self, node: str, ws: ServerConnection, waker: _LoopWaker, credential: str | None
    ) -> None:
        self.node = node
        self.credential = credential
        self.ws = ws
        self.waker = waker
        self.event = asyncio.Event()
        self.closed = False
        self.writer: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Called by NodeQueue.put from any thread."""
        self.waker.wake(self.event)

    def stop(self) -> None:
        """Tell the writer to end (loop thread only)."""
        self.closed = True
        self.event.set()


class MessageLayer:
    """Downstream sends to, and upstream reports from, the LocalControllers of edge nodes.

    `token_provider` returns the valid bearer tokens; with `auth: token` and no
    provider, `tokenFile` is used, and a `tokenSecret` needs the caller to pass
    `secret_token_provider(...)` (this layer has no Kubernetes client).
    `upstream` is the runtime's shared handler registry (a private one if None);
    each kind's handler runs on `upstream_workers_per_kind` threads of its own with at
    most `upstream_backlog` reports waiting. `clock` times the idle forgetting of
    queues (a FakeClock in tests).
    """

    def __init__(
        self,
        settings: WebsocketConfig,
        *,
        metrics: Metrics,
        token_provider: Callable[[], Iterable[str]] | None = None,
        upstream: UpstreamRegistry | None = None,
        upstream_backlog: int = DEFAULT_BACKLOG,
        upstream_workers_per_kind: int = 1,
        clock: Clock | None = None,
        node_token_provider: NodeTokenProvider | None = None,
        node_addresses: Callable[[str], Iterable[str] | None] | None = None,
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._clock: Clock = clock if clock is not None else RealClock()
        self._idle_ttl = settings.idleQueueTTLSeconds
        self._sweeper: IdleSweeper | None = None
        self._pending_sweeper: IdleSweeper | None = None
        self._reject_log_window = 60.0
        self._reject_log = LogLimiter(burst=5, window=self._reject_log_window)
        # A stalled node's queue drops on every send; a line for each would make every
        # controller that sends pay for that node (300 lines for one burst of 360 sends).
        self._drop_log = LogLimiter(burst=5, window=self._reject_log_window)
        self._tls = settings.tls.enabled
        self._limit = settings.maxFrameBytes
        self._budget = FrameBudget(settings.maxBufferedBytes, metrics.lc_buffered_bytes)
        self._auth_mode = settings.auth
        self._auth_required = settings.auth in ("token", "node")
        self._node_tokens = node_token_provider
        self._node_addresses = node_addresses
        if settings.nodeAddressBinding and node_addresses is None:
            raise ConfigError(
                "websocket.nodeAddressBinding needs the caller to pass node_addresses "
                "(the addresses of a Node by name)"
            )
        self._client_certs = bool(settings.tls.enabled and settings.tls.clientCAFile)
        # the credential of each connection between its handshake and its handler
        self._credentials: weakref.WeakKeyDictionary[ServerConnection, str | None] = (
            weakref.WeakKeyDictionary()
        )
        if settings.auth == "node":
            if node_token_provider is None:
                raise ConfigError(
                    "websocket.auth: 'node' needs the caller to pass node_token_provider "
                    "(auth.node_token_provider over the Secrets of websocket.nodeTokenNamespace)"
                )
        elif self._auth_required and token_provider is None:
            if settings.tokenFile:
                token_provider = file_token_provider(settings.tokenFile)
            elif settings.tokenSecret:
                raise ConfigError(
                    "websocket.tokenSecret: the caller must build the token provider "
                    "(secret_token_provider) and pass it to MessageLayer"
                )
            else:
                raise ConfigError(
                    "websocket.auth: 'token' needs websocket.tokenFile or websocket.tokenSecret "
                    "(or auth: none, which leaves LCs unauthenticated)"
                )
        self._token_provider: TokenProvider | None = token_provider
        self.upstream = upstream if upstream is not None else UpstreamRegistry()
        self._dispatcher = UpstreamDispatcher(
            self.upstream,
            metrics,
            backlog=upstream_backlog,
            per_node=settings.maxReportsPerNode,
            max_bytes=settings.maxReportBytes,
            workers_per_kind=upstream_workers_per_kind,
            clock=self._clock,
        )
        self._authorize = settings.authorizeReports
        self.routes = RouteTable()
        self._pending = PendingReports(
            settings.maxUnroutedReportsPerNode,
            settings.unroutedReportGraceSeconds,
            self._clock.now,
            max_bytes=settings.maxUnroutedReportBytes,
        )
        self._lock = threading.Lock()
        # names of the cluster's Nodes, once watch_nodes hooks an informer up (None before)
        self._known_nodes: set[str] | None = None
        self._queues: dict[str, NodeQueue] = {}
        self._conns: dict[str, _Connection] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._waker: _LoopWaker | None = None
        self._sent: dict[str, Any] = {}  # metric children per kind, looked up once
        self._startup_error: BaseException | None = None
        self._stopped = False
        self.port = 0

    # ---- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Listen on address:port in a loop thread of its own; return once listening."""
        if self._thread is not None or self._stopped:
            raise RuntimeError("MessageLayer.start may be called once")
        ssl_ctx = server_ssl_context(self._settings.tls) if self._tls else None
        if ssl_ctx is not None:
            limit_tls_read_buffers()  # else 256 KiB per LC connection
        if self._auth_mode == "token":
            logger.warning(
                "websocket.auth is token (compatibility mode): every LC shares one token, so "
                "any LC holding it may connect as any node; reports are still authorized "
                "against the routing. Use auth: node (a token per node) or client certificates"
            )
        if not self._tls:
            logger.info("LC websocket without TLS (ws://); set websocket.tls for wss://")
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ssl_ctx, ready), name="sedna-messaging", daemon=True
        )
        self._thread.start()
        if not ready.wait(_START_TIMEOUT_SECONDS):
            raise RuntimeError("LC websocket server did not start in time")
        if self._startup_error is not None:
            self._thread.join()
            err = self._startup_error
            raise RuntimeError(
                f"cannot listen on {self._settings.address}:{self._settings.port}: {err}"
            ) from err
        logger.info(
            "LC websocket server listening on {}://{}:{}",
            "wss" if self._tls else "ws",
            self._settings.address,
            self.port,
        )
        if not self._auth_required:  # after binding: the port it names is the one bound
            logger.warning(
                "websocket.auth is none: LCs are not authenticated; anyone who reaches "
                "{}:{} can receive job specs and send status reports",
                self._settings.address,
                self.port,
            )
        if self._idle_ttl > 0:
            self._sweeper = IdleSweeper(self._idle_ttl, self._clock, self._forget_idle)
            self._sweeper.start()
        if self._authorize and self._pending.enabled:
            # held reports expire on time, not only when their node sends again
            self._pending_sweeper = IdleSweeper(
                self._pending.grace, self._clock, self._expire_pending
            )
            self._pending_sweeper.start()

    def stop(self, timeout: float | None = None) -> None:
        """Close every connection (1001), stop the loop and the upstream workers, all
        within `timeout` (websocket.shutdownGraceSeconds by default): a peer that does
        not read, or does not close, cannot hold the GM's shutdown."""
        if self._stopped:
            return
        if timeout is None:
            timeout = self._settings.shutdownGraceSeconds
        deadline = time.monotonic() + timeout
        self._stopped = True
        if self._sweeper is not None:
            self._sweeper.stop()
        if self._pending_sweeper is not None:
            self._pending_sweeper.stop()
        loop, stop_event, thread = self._loop, self._stop_event, self._thread
        if loop is not None and stop_event is not None:
            with contextlib.suppress(RuntimeError):  # loop already gone
                loop.call_soon_threadsafe(stop_event.set)
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                logger.warning("LC websocket thread did not stop within {} s", timeout)
        self._dispatcher.stop(max(0.1, deadline - time.monotonic()))
        self._metrics.lc_connected_nodes.set(0)

    def _run(self, ssl_ctx: Any, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(ssl_ctx, ready))
            loop.run_until_complete(loop.shutdown_default_executor())
        except BaseException as exc:  # a crash must not leave start() waiting
            if not ready.is_set():
                self._startup_error = exc
                ready.set()
            else:
                logger.opt(exception=exc).error("LC websocket loop crashed")
        finally:
            loop.close()

    async def _serve(self, ssl_ctx: Any, ready: threading.Event) -> None:
        self._stop_event = asyncio.Event()
        self._waker = _LoopWaker(asyncio.get_running_loop())
        try:
            server: Server = await serve(
                self._handle,
                self._settings.address,
                self._settings.port,
                process_request=self._process_request,
                ssl=ssl_ctx,
                max_size=self._limit * _OVERSIZE_FACTOR,
                # One frame waits while the next is read; what all LCs together make
                # the GM buffer is capped by the budget (websocket.maxBufferedBytes).
                max_queue=1,
                create_connection=metered_connection_class(
                    self._budget,
                    self._refused_over_budget,
                    self._limit,
                    self._limit * _OVERSIZE_FACTOR,
                    self._skipped_oversize,
                ),
                # Go's LC never negotiates permessage-deflate; keep frames as Go sends them.
                compression=None,
                server_header="sedna-gm",
                open_timeout=self._settings.handshakeTimeoutSeconds,
                ping_interval=self._settings.readTimeoutSeconds,
                ping_timeout=self._settings.readTimeoutSeconds,
                # a request it cannot handle: one counted line, no traceback
                logger=_SERVER_ERRORS_LOG,
                close_timeout=min(2.0, self._settings.shutdownGraceSeconds / 2),
            )
        except OSError as exc:
            self._startup_error = exc
            ready.set()
            return
        self.port = int(server.sockets[0].getsockname()[1])
        ready.set()
        await self._stop_event.wait()
        server.close(close_connections=True)
        try:
            await asyncio.wait_for(server.wait_closed(), self._settings.shutdownGraceSeconds / 2)
        except TimeoutError:  # peers that do not finish the closing handshake: cut them off
            for conn in list(self._conns.values()):
                conn.ws.transport.abort()

    # ---- public API ------------------------------------------------------------------

    def send(self, node_name: str, event: str, obj: Mapping[str, Any]) -> None:
        """Queue obj for the LC of node_name and return at once (thread-safe).

        The object is encoded now, so the caller may change or reuse it afterwards.
        With `updatesAsInsert` an update goes out as `insert`, the only upsert Go LCs
        know. An object with credentials is refused here, not later, when the
        connection is not TLS and `allowPlainCredentials` is off: the caller's log line
        is then next to the cause. Raises ValueError for a bad event or an object
        without kind/name (caller bugs); never logs the payload.
        """
        if event not in _EVENTS:
            raise ValueError(f"event must be insert, update or delete, got {event!r}")
        if not node_name:
            raise ValueError("node_name must not be empty")
        operation = "insert" if event == "update" and self._settings.updatesAsInsert else event
        header = object_header(obj, operation)
        credential = has_credential(obj)
        if credential and not self._tls and not self._settings.allowPlainCredentials:
            self._metrics.lc_messages_rejected.labels(reason=Reason.PLAIN_CREDENTIALS.value).inc()
            logger.error(
                "refused to send {} {}/{} to node {}: it carries credentials "
                "(annotation {}) and the LC websocket is not TLS; configure websocket.tls "
                "or set websocket.allowPlainCredentials",
                header.kind,
                header.namespace,
                header.name,
                node_name,
                CREDENTIAL_ANNOTATION,
            )
            return
        try:
            payload = encode_payload(obj)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"cannot encode {header.kind} {header.namespace}/{header.name} "
                f"for node {node_name}: {exc}"
            ) from None
        msg = Outgoing(header=header, frame=encode_frame(header, payload), credential=credential)
        while True:
            try:
                dropped = self._queue_for(node_name).put(msg)
                break
            except QueueRetired:
                continue  # the node was forgotten just now: this message starts its new queue
        self._route(node_name, header)
        if dropped is not None:
            self._metrics.lc_messages_dropped.labels(kind=dropped.header.kind).inc()
            if self._admit_drop_line(node_name):
                logger.warning(
                    "queue of node {} is full ({} messages): dropped the oldest, {} {} {}/{}",
                    node_name,
                    self._settings.maxQueuePerNode,
                    dropped.header.operation,
                    dropped.header.kind,
                    dropped.header.namespace,
                    dropped.header.name,
                )

    def _admit_drop_line(self, node: str) -> bool:
        """Drops are counted one by one (lc_messages_dropped_total) but logged at most a few
        times per node and minute, with a summary of the lines left out."""
        admitted, suppressed = self._drop_log.admit(node, "dropped")
        if suppressed:
            logger.warning(
                "queue of node {} is full: {} more message(s) dropped in the last {:.0f} s, "
                "not logged (lc_messages_dropped_total counts them all)",
                node,
                suppressed,
                self._reject_log_window,
            )
        return admitted

    def _route(self, node: str, header: Header) -> None:
        """Every downstream send is routing: reports on this object from this node are allowed
        while it is routed there (insert/update), and no longer after a delete."""
        key = key_of(header.kind, header.namespace, header.name)
        if header.operation == "delete":
            self.routes.unroute(key, node)
            return
        if self.routes.route(key, node):
            ready, expired = self._pending.release(node, key)
            for msg in ready:
                self._hand_on(msg, None)
            self._reject_unrouted(expired)

    def _expire_pending(self, now: float) -> float | None:
        """Reject the held reports whose grace ended; when the next one ends (the sweeper's
        wake-up). Any node's: a node that filled the bound and went quiet gives it back."""
        try:
            self._reject_unrouted(self._pending.expire())
        except Exception as exc:  # a bug here must not end the expiry for good
            logger.opt(exception=exc).error("expiring held LC reports failed")
        return self._pending.next_expiry()

    def _reject_unrouted(self, expired: list[UpstreamMessage]) -> None:
        for msg in expired:
            header = Header(msg.namespace, msg.kind, msg.name, msg.operation)
            self._reject(
                msg.node_name,
                Reason.NOT_ROUTED,
                "the GM routed no such object to this node (websocket.authorizeReports)",
                header,
            )

    def register_upstream(self, kind: str, handler: UpstreamHandler) -> None:
        """Route `status` reports of kind (case-insensitive) to handler, on worker threads.

        Same as registering on the shared `upstream` registry. A second registration
        for a kind raises DuplicateHandlerError (a ValueError) naming the kind.
        """
        self.upstream.register(kind, handler)

    def connected_nodes(self) -> list[str]:
        with self._lock:
            return sorted(self._conns)

    def queue_depth(self, node_name: str) -> int:
        with self._lock:
            q = self._queues.get(node_name)
        return len(q) if q is not None else 0

    def queued_nodes(self) -> list[str]:
        """Nodes the layer keeps a queue for (an empty one too), i.e. has not forgotten."""
        with self._lock:
            return sorted(self._queues)

    def watch_nodes(self, informer: SharedInformer) -> HandlerRegistration:
        """Forget a node's queue, and close its LC, when its Node object is deleted.

        `informer` is a shared informer of core/v1 nodes; the layer only listens to it.
        """
        with self._lock:
            if self._known_nodes is None:
                self._known_nodes = set()
        return informer.add_event_handler(NodeDeletionHandler(self.forget_node, self._know_node))

    def _know_node(self, node: str) -> None:
        with self._lock:
            if self._known_nodes is not None:
                self._known_nodes.add(node)

    def _may_queue(self, node: str) -> bool:
        """Whether a connection of node gets a queue before the GM routes it anything.

        A node proven by its credential, or one the cluster has a Node for, does; a
        self-declared name that is neither waits for the GM's first message to it
        (2,000 made-up names once made 2,000 queues and metric series).
        """
        if self._auth_mode == "node" or self._client_certs:
            return True
        with self._lock:
            return node in self._queues or self._known_nodes is None or node in self._known_nodes

    def forget_node(self, node_name: str) -> int:
        """The node left the cluster: drop its queue and close its LC (thread-safe).

        Returns how many waiting messages were dropped. Messages sent afterwards start a
        new queue, and the LC may reconnect; both start fresh.
        """
        self.routes.forget_node(node_name)
        self._reject_unrouted(self._pending.drop_node(node_name))
        with self._lock:
            if self._known_nodes is not None:
                self._known_nodes.discard(node_name)
            q = self._queues.pop(node_name, None)
            dropped = q.retire() if q is not None else 0
            if q is not None:
                self._forget_depth_series(node_name)
            conn = self._conns.get(node_name)
        if q is None and conn is None:
            logger.debug("node {} deleted; the message layer held nothing for it", node_name)
            return 0
        if q is not None:
            self._count_forgotten(ForgetReason.NODE_DELETED, dropped)
        logger.info(
            "node {} deleted from the cluster: forgot its queue, dropped {} waiting message(s){}",
            node_name,
            dropped,
            "; closing its LC connection" if conn is not None else "",
        )
        if conn is not None:
            self._close_from_thread(conn, *_NODE_DELETED_CLOSE)
        return dropped

    # ---- internals -------------------------------------------------------------------

    def _queue_for(self, node: str) -> NodeQueue:
        q = self._queues.get(node)
        if q is not None:
            return q
        with self._lock:
            q = self._queues.get(node)
            if q is None:
                gauge = self._metrics.lc_queue_depth.labels(node=node)
                q = NodeQueue(node, self._settings.maxQueuePerNode, gauge, self._clock.now)
                self._queues[node] = q
                waiting = self._conns.get(node)
                if waiting is not None:
                    waiting.wake()  # its writer waits for this queue
            return q

    def _count_forgotten(self, reason: ForgetReason, messages: int) -> None:
        self._metrics.lc_queues_forgotten.labels(reason=reason.value).inc()
        if messages:
            self._metrics.lc_messages_forgotten.labels(reason=reason.value).inc(messages)

    def _forget_depth_series(self, node: str) -> None:
        """Drop the node's lc_queue_depth series (caller holds self._lock).

        Under the lock, so that a new queue of the same node cannot have made a new
        series yet that this would remove.
        """
        with contextlib.suppress(KeyError):
            self._metrics.lc_queue_depth.remove(node)

    def _forget_idle(self, now: float) -> float | None:
        """Forget the queues of disconnected nodes idle since a TTL before now.

        Returns when the next remaining queue of a disconnected node expires (None if
        there is none), for the sweeper to sleep until then. Checking that the node is
        not connected and retiring its queue happen under self._lock, which `_handle`
        also holds while it registers or unregisters a connection: a node that
        connects during the sweep keeps its queue.
        """
        cutoff = now - self._idle_ttl
        forgotten: list[tuple[str, int]] = []
        next_due: float | None = None
        with self._lock:
            for node, q in list(self._queues.items()):
                if node in self._conns:
                    continue
                dropped = q.retire_if_idle(cutoff)
                if dropped is None:
                    due = q.last_active + self._idle_ttl
                    next_due = due if next_due is None else min(next_due, due)
                    continue
                del self._queues[node]
                self._forget_depth_series(node)
                forgotten.append((node, dropped))
        for node, dropped in forgotten:
            self._count_forgotten(ForgetReason.IDLE, dropped)
            logger.info(
                "forgot the queue of node {}: disconnected and idle for {:g} s "
                "(websocket.idleQueueTTLSeconds); dropped {} waiting message(s)",
                node,
                self._idle_ttl,
                dropped,
            )
        return next_due

    def _close_from_thread(self, conn: _Connection, code: int, reason: str) -> None:
        """Close conn from any thread; its reader ends and `_handle` cleans up as usual."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(RuntimeError):  # loop closed: the GM is shutting down
            loop.call_soon_threadsafe(self._close_on_loop, conn, code, reason)

    def _close_on_loop(self, conn: _Connection, code: int, reason: str) -> None:
        conn.stop()
        closing = asyncio.create_task(conn.ws.close(code, reason))
        self._background.add(closing)
        closing.add_done_callback(self._background.discard)

    def _tokens(self) -> frozenset[str]:
        assert self._token_provider is not None
        try:
            return frozenset(self._token_provider())
        except Exception as exc:
            logger.error("websocket token provider failed ({}); refusing LCs", type(exc).__name__)
            return frozenset()

    async def _process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """Refuse before the upgrade: 401 without a valid credential, 400 without a node
        name, 403 when the node name is not the credential's, 409 while the node is
        connected and answering (or connected with another credential)."""
        names = request.headers.get_all(NODE_NAME_HEADER)
        node = names[0].strip() if len(names) == 1 else ""
        peer = connection.remote_address
        credential: str | None = None
        if len(self._conns) >= self._settings.maxConnections:
            return self._refuse(
                connection,
                node,
                Reason.TOO_MANY_CONNECTIONS,
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"{self._settings.maxConnections} LCs connected (websocket.maxConnections)",
            )
        if self._auth_required:
            auth = request.headers.get_all("Authorization")
            candidate = bearer_token(auth[0]) if len(auth) == 1 else None
            loop = asyncio.get_running_loop()
            if self._auth_mode == "node":
                tokens = (
                    await loop.run_in_executor(None, self._tokens_of, node) if node else frozenset()
                )
            else:
                tokens = await loop.run_in_executor(None, self._tokens)
            if not token_valid(candidate, tokens):
                self._metrics.lc_messages_rejected.labels(reason=Reason.UNAUTHORIZED.value).inc()
                self._log_refusal(
                    node,
                    Reason.UNAUTHORIZED,
                    f"refused LC connection from {peer} (node {clip(node)!r}): "
                    f"{'missing' if candidate is None else 'invalid'} bearer token",
                )
                response = connection.respond(
                    HTTPStatus.UNAUTHORIZED, "missing or invalid bearer token\n"
                )
                response.headers["WWW-Authenticate"] = 'Bearer realm="sedna-gm"'
                return response
            credential = credential_id(candidate)
        if not node:
            self._metrics.lc_messages_rejected.labels(reason=Reason.MISSING_NODE_NAME.value).inc()
            self._log_refusal(
                "", Reason.MISSING_NODE_NAME, f"refused LC connection from {peer}: no Node-Name"
            )
            return connection.respond(HTTPStatus.BAD_REQUEST, "missing Node-Name header\n")
        if len(node) > MAX_NAME_LENGTH:  # a Node's name is a Kubernetes name
            return self._refuse(
                connection,
                node,
                Reason.INVALID_NAME,
                HTTPStatus.BAD_REQUEST,
                f"Node-Name is {len(node)} characters long, over {MAX_NAME_LENGTH}",
            )
        if self._settings.nodeAddressBinding:
            peer_ip = peer[0] if isinstance(peer, tuple) and peer else ""
            addresses = await asyncio.get_running_loop().run_in_executor(
                None, self._addresses_of, node
            )
            if peer_ip not in addresses:
                return self._refuse(
                    connection,
                    node,
                    Reason.ADDRESS_MISMATCH,
                    HTTPStatus.FORBIDDEN,
                    f"{peer_ip} is not an address of Node {clip(node)!r} "
                    "(websocket.nodeAddressBinding)",
                )
        if self._client_certs:
            ssl_object = connection.transport.get_extra_info("ssl_object")
            cn = peer_common_name(ssl_object.getpeercert() if ssl_object is not None else None)
            if cn != node:
                return self._refuse(
                    connection,
                    node,
                    Reason.NODE_MISMATCH,
                    HTTPStatus.FORBIDDEN,
                    f"the client certificate is for {clip(cn)!r}, not for node {clip(node)!r}",
                )
            credential = f"{credential}/cert:{cn}"
        old = self._conns.get(node)
        if old is not None:
            if old.credential != credential:
                return self._refuse(
                    connection,
                    node,
                    Reason.ALREADY_CONNECTED,
                    HTTPStatus.CONFLICT,
                    f"node {clip(node)!r} is connected with another credential",
                )
            if await self._answers(old):
                return self._refuse(
                    connection,
                    node,
                    Reason.ALREADY_CONNECTED,
                    HTTPStatus.CONFLICT,
                    f"node {clip(node)!r} is connected and answers pings",
                )
        self._credentials[connection] = credential
        return None

    async def _answers(self, conn: _Connection) -> bool:
        """Whether conn answers a ping within websocket.replaceProbeSeconds."""
        try:
            pong = await conn.ws.ping()
            await asyncio.wait_for(pong, self._settings.replaceProbeSeconds)
        except (TimeoutError, ConnectionClosed, RuntimeError):
            return False
        return not conn.closed

    def _refuse(
        self,
        connection: ServerConnection,
        node: str,
        reason: Reason,
        status: HTTPStatus,
        detail: str,
    ) -> Response:
        self._metrics.lc_messages_rejected.labels(reason=reason.value).inc()
        self._log_refusal(
            node, reason, f"refused LC connection from {connection.remote_address}: {detail}"
        )  # detail names the node clipped
        return connection.respond(status, detail + "\n")

    def _log_refusal(self, node: str, reason: Reason, text: str) -> None:
        """Refusals are logged rate-limited per reason over all peers: the node name is
        the peer's to choose, so a limit per name would let made-up names flood the log."""
        admitted, suppressed = self._reject_log.admit(_HANDSHAKE, reason.value)
        if suppressed:
            logger.warning(
                "{} more LC connection(s) refused ({}) in the last {:.0f} s, not logged",
                suppressed,
                reason.value,
                self._reject_log_window,
            )
        if admitted:
            logger.warning("{}", text)

    def _addresses_of(self, node: str) -> frozenset[str]:
        assert self._node_addresses is not None
        try:
            return frozenset(self._node_addresses(node) or ())
        except Exception as exc:
            logger.error("node address lookup failed ({}); refusing node {}", exc, node)
            return frozenset()

    def _tokens_of(self, node: str) -> frozenset[str]:
        assert self._node_tokens is not None
        try:
            return frozenset(self._node_tokens(node))
        except Exception as exc:
            logger.error("node token provider failed ({}); refusing LCs", type(exc).__name__)
            return frozenset()

    async def _handle(self, ws: ServerConnection) -> None:
        node = ws.request.headers[NODE_NAME_HEADER].strip() if ws.request else ""
        assert self._waker is not None
        conn = _Connection(node, ws, self._waker, self._credentials.pop(ws, None))
        with self._lock:
            old = self._conns.get(node)
            self._conns[node] = conn
            count = len(self._conns)
        self._metrics.lc_connected_nodes.set(count)
        if old is not None:
            logger.warning(
                "node {} connected again from {}; closing its previous connection",
                node,
                ws.remote_address,
            )
            await self._retire(old)
        else:
            logger.info("node {} connected from {}", clip(node), ws.remote_address)
        try:
            if not conn.closed:  # not already replaced by a third connection
                q = self._queue_for(node) if self._may_queue(node) else None
                if q is not None:
                    self._replay(q)
                conn.writer = asyncio.create_task(self._write_loop(conn, q))
                await self._read_loop(conn)
        finally:
            conn.stop()
            unheld: list[UpstreamMessage] = []
            with self._lock:
                if self._conns.get(node) is conn:
                    del self._conns[node]
                    q = self._queues.get(node)
                    if q is not None:
                        q.touch()  # the idle time of a disconnected node starts now
                    # its reports waiting for a route go with its last connection
                    unheld = self._pending.drop_node(node)
                count = len(self._conns)
            self._metrics.lc_connected_nodes.set(count)
            self._reject_unrouted(unheld)
            if conn.writer is not None:
                await asyncio.wait({conn.writer})
            sent = ws.protocol.close_sent
            if sent is not None and sent.reason == _PING_TIMEOUT:  # silent, or mid-frame
                self._metrics.lc_messages_rejected.labels(reason=Reason.READ_TIMEOUT.value).inc()
            logger.info(
                "node {} disconnected (close code {}, {!r})",
                clip(node),
                ws.close_code,
                clip(ws.close_reason or ""),
            )

    async def _retire(self, old: _Connection) -> None:
        """Close a replaced connection and wait until its writer has let go of the queue."""
        old.stop()
        closing = asyncio.create_task(old.ws.close(1000, "replaced by a newer connection"))
        self._background.add(closing)
        closing.add_done_callback(self._background.discard)
        if old.writer is None:
            return
        done, _ = await asyncio.wait({old.writer}, timeout=_REPLACE_GRACE_SECONDS)
        if not done:
            old.ws.transport.abort()  # a dead peer: do not wait for its TCP buffers
            await asyncio.wait({old.writer})

    async def _write_loop(self, conn: _Connection, q: NodeQueue | None) -> None:
        while q is None:  # an unknown node: its queue starts with the GM's first message
            if conn.closed:
                return
            conn.event.clear()
            q = self._queues.get(conn.node)
            if q is None:
                await conn.event.wait()
        try:
            while not conn.closed:
                conn.event.clear()
                msg = q.pop_or_arm(conn.wake)
                if msg is None:
                    await conn.event.wait()
                    continue
                try:
                    await asyncio.wait_for(
                        conn.ws.send(msg.frame), self._settings.writeTimeoutSeconds
                    )
                except TimeoutError:
                    self._requeue(q, msg)
                    logger.warning(
                        "node {} took no frame for {:g} s (websocket.writeTimeoutSeconds): "
                        "disconnected, its queue is kept",
                        conn.node,
                        self._settings.writeTimeoutSeconds,
                    )
                    conn.ws.transport.abort()
                    return
                except BaseException as exc:
                    self._requeue(q, msg)
                    if isinstance(exc, ConnectionClosed):
                        logger.info(
                            "write to node {} failed (connection closed); {} {}/{} kept for "
                            "the next connection",
                            conn.node,
                            msg.header.kind,
                            msg.header.namespace,
                            msg.header.name,
                        )
                        return
                    if isinstance(exc, Exception):
                        logger.error(
                            "write to node {} failed ({}); closing the connection",
                            conn.node,
                            type(exc).__name__,
                        )
                        conn.ws.transport.abort()
                        return
                    raise
                self._sent_counter(msg.header.kind).inc()
        finally:
            q.disarm(conn.wake)

    def _replay(self, q: NodeQueue) -> None:
        """A connection starts with everything routed to its node (`retained`): an LC
        that restarted has it at once, not at the next resync as with Go's GM."""
        for dropped in q.replay():
            self._metrics.lc_messages_dropped.labels(kind=dropped.header.kind).inc()
        evicted = q.retained_evicted
        if evicted and self._admit_drop_line(q.node):
            logger.warning(
                "node {} was routed more objects than websocket.maxQueuePerNode ({}): {} "
                "sent longest ago were pushed out of what its LC gets when it connects "
                "(they reach it when they change, staged jobs and Datasets at the next "
                "resync); raise the bound",
                q.node,
                self._settings.maxQueuePerNode,
                evicted,
            )
        logger.debug("node {}: {} routed object(s) queued for its LC", q.node, q.retained)

    def _sent_counter(self, kind: str) -> Any:
        counter = self._sent.get(kind)
        if counter is None:
            counter = self._sent[kind] = self._metrics.lc_messages_sent.labels(kind=kind)
        return counter

    def _requeue(self, q: NodeQueue, msg: Outgoing) -> None:
        dropped = q.requeue(msg)
        if dropped is not None:
            self._metrics.lc_messages_dropped.labels(kind=dropped.header.kind).inc()
            if not self._admit_drop_line(q.node):
                return
            logger.warning(
                "queue of node {} is full: dropped {} {} {}/{} after a failed write",
                q.node,
                dropped.header.operation,
                dropped.header.kind,
                dropped.header.namespace,
                dropped.header.name,
            )

    async def _read_loop(self, conn: _Connection) -> None:
        ws = conn.ws
        metered = ws if isinstance(ws, MeteredConnection) else None
        try:
            async for data in ws:
                try:
                    self._on_frame(conn.node, data)
                except Exception as exc:  # a bug here must not cost the node its connection
                    # counted and rate-limited like any rejection; no traceback flood
                    self._reject(
                        conn.node,
                        Reason.INTERNAL_ERROR,
                        f"the frame could not be handled ({type(exc).__name__})",
                        None,
                    )
                finally:
                    # the loop variable would keep the last message alive until the next
                    del data
                    if metered is not None:
                        metered.message_taken()
        except ConnectionClosed:
            pass

    def _refused_over_budget(self, node: str, held: int, used: int, cap: int) -> None:
        """The budget cut this node's connection off: count and log it (loop thread)."""
        self._reject(
            node or "-",
            Reason.BUFFER_FULL,
            f"LCs made the GM buffer {used} bytes, over websocket.maxBufferedBytes ({cap}); "
            f"this connection held the most ({held} bytes) and is closed",
            None,
        )

    def _skipped_oversize(self, node: str, size: int) -> None:
        """A frame above maxFrameBytes went by unread (loop thread): refused, as if read."""
        detail = f"frame of {size} bytes exceeds websocket.maxFrameBytes ({self._limit})"
        self._reject(node or "-", Reason.FRAME_TOO_LARGE, detail, None)

    @property
    def buffered_bytes(self) -> int:
        """Bytes LCs sent that the layer buffers now, not yet handled (lc_buffered_bytes)."""
        return self._budget.used

    @property
    def buffered_bytes_peak(self) -> int:
        """The most the layer buffered at once after enforcing websocket.maxBufferedBytes."""
        return self._budget.peak

    def _reject(self, node: str, reason: Reason, detail: str, header: Header | None) -> None:
        self._metrics.lc_messages_rejected.labels(reason=reason.value).inc()
        admitted, suppressed = self._reject_log.admit(node, reason.value)
        if suppressed:
            logger.warning(
                "node {}: {} more frame(s) rejected ({}) in the last {:.0f} s, not logged",
                clip(node),
                suppressed,
                reason.value,
                self._reject_log_window,
            )
        if not admitted:
            return
        if header is None:
            logger.warning(
                "rejected a frame from node {} ({}): {}",
                clip(node),
                reason.value,
                clip(detail, 300),
            )
        else:
            logger.warning(
                "rejected a message from node {} ({}): {}; kind={} namespace={} name={}",
                clip(node),
                reason.value,
                clip(detail, 300),
                clip(header.kind),
                clip(header.namespace),
                clip(header.name),
            )

    def _on_frame(self, node: str, data: str | bytes) -> None:
        if isinstance(data, bytes):
            self._reject(
                node, Reason.BINARY_FRAME, "binary frame; the LC protocol uses JSON text", None
            )
            return
        size = len(data)
        if not data.isascii() and size * 4 > self._limit:
            size = len(data.encode())
        if size > self._limit:
            detail = f"frame of {size} bytes exceeds websocket.maxFrameBytes ({self._limit})"
            self._reject(node, Reason.FRAME_TOO_LARGE, detail, None)
            return
        try:
            decoded = decode_frame(data)
            if decoded is None:
                logger.debug("node {} sent its initial empty header", node)
                return
            header, payload = decoded
            if header.operation != "status":
                raise FrameError(
                    Reason.UNSUPPORTED_OPERATION,
                    f"operation {header.operation!r} ignored; LCs report with 'status'",
                    header,
                )
            if not self._dispatcher.handles(header.kind):
                raise FrameError(
                    Reason.UNKNOWN_KIND, f"no handler for kind {header.kind!r}", header
                )
            content = decode_payload(payload, header)
        except FrameError as err:
            self._reject(node, err.reason, err.detail, err.header)
            return
        msg = UpstreamMessage(
            node_name=node,
            kind=header.kind,
            namespace=header.namespace,
            name=header.name,
            operation=header.operation,
            content=content,
            received_at=self._clock.wall().timestamp(),
            size=size,
        )
        if (
            self._authorize
            and not self.upstream.node_checked(header.kind)
            and not self.routes.allows(key_of(header.kind, header.namespace, header.name), node)
        ):
            held, expired = self._pending.hold(msg)
            self._reject_unrouted(expired)
            if held:
                logger.debug(
                    "holding a report from node {} for {} {}/{} until it is routed there",
                    node,
                    header.kind,
                    header.namespace,
                    header.name,
                )
            else:
                self._reject_unrouted([msg])
            return
        self._hand_on(msg, header)

    def _hand_on(self, msg: UpstreamMessage, header: Header | None) -> None:
        """Give an authorized report to its kind's workers (from any thread)."""
        if header is None:
            header = Header(msg.namespace, msg.kind, msg.name, msg.operation)
        outcome = self._dispatcher.dispatch(msg)
        if outcome is not Dispatch.QUEUED:
            detail = (
                f"no handler for kind {header.kind!r}"
                if outcome is Dispatch.NO_HANDLER
                else "the handler of this kind is too far behind"
            )
            reason = (
                Reason.UNKNOWN_KIND if outcome is Dispatch.NO_HANDLER else Reason.HANDLER_BACKLOG
            )
            self._reject(msg.node_name, reason, detail, header)
            return
        self._metrics.lc_messages_received.labels(kind=header.kind).inc()
