"""The nameserver's request handling: RocketMQ's ``DefaultRequestProcessor`` over
:class:`RouteInfoManager`. Frames are decoded and encoded by the Rust transport
(``rmq._rmq.RemotingServer``); this module only maps requests to the route table and back,
with RocketMQ's header field names, JSON bodies and response codes."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rmq import fastjson
from rmq.codes import RequestCode, ResponseCode
from rmq.config import parse_properties
from rmq.namesrv.config import NamesrvConfig, NamesrvConfigError
from rmq.namesrv.route_info import (
    RouteInfoManager,
    check_topic_config_wrapper,
    to_json_bytes,
    topic_list_body,
)

if TYPE_CHECKING:
    from rmq._rmq import RemotingRequest, RemotingResponse

__all__ = ["NamesrvProcessor"]

log = logging.getLogger("rmq.namesrv")

APPLY_TOPIC_HINT = (
    "create the topic (rmq updateTopic -t TOPIC -b BROKER_ADDR) or enable "
    "autoCreateTopicEnable on a broker"
)


REFUSAL_LOG_PERIOD_S = 300.0
"""A broker whose registrations are refused gets one log line per this many seconds."""


class BadRequest(Exception):
    """A request header misses a field or has a bad value (answered with SYSTEM_ERROR)."""


def _field(ext: Mapping[str, str], name: str) -> str:
    value = ext.get(name)
    if value is None:
        raise BadRequest(f"the request header has no {name!r} field")
    return value


def _int_field(ext: Mapping[str, str], name: str) -> int:
    raw = _field(ext, name)
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"header field {name!r} = {raw!r} is not an integer") from None


class NamesrvProcessor:
    """Handles nameserver request codes; unknown codes get REQUEST_CODE_NOT_SUPPORTED."""

    def __init__(
        self, routes: RouteInfoManager | None = None, config: NamesrvConfig | None = None
    ) -> None:
        self.routes = routes or RouteInfoManager()
        self.config = config or NamesrvConfig()
        self._refusal_lock = threading.Lock()
        self._refusals_logged: dict[str, float] = {}
        self._handlers: dict[int, Callable[[RemotingRequest], RemotingResponse]] = {
            RequestCode.REGISTER_BROKER: self._register_broker,
            RequestCode.UNREGISTER_BROKER: self._unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self._get_route,
            RequestCode.GET_BROKER_CLUSTER_INFO: self._cluster_info,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self._topic_list,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self._wipe_write_perm,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self._add_write_perm,
            RequestCode.GET_TOPICS_BY_CLUSTER: self._topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self._system_topics,
            RequestCode.GET_UNIT_TOPIC_LIST: self._unit_topics,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._unit_sub_topics,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self._unit_sub_ununit_topics,
            RequestCode.GET_NAMESRV_CONFIG: self._get_config,
            RequestCode.UPDATE_NAMESRV_CONFIG: self._update_config,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self._delete_topic,
            RequestCode.PUT_KV_CONFIG: self._put_kv,
            RequestCode.GET_KV_CONFIG: self._get_kv,
            RequestCode.DELETE_KV_CONFIG: self._delete_kv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self._kv_list,
            RequestCode.QUERY_DATA_VERSION: self._query_data_version,
        }

    # The transport calls these two.

    def handle(self, request: RemotingRequest) -> RemotingResponse | None:
        from rmq._rmq import RemotingResponse

        handler = self._handlers.get(request.code)
        if handler is None:
            return RemotingResponse(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f"request code {request.code} is not supported by the nameserver",
            )
        try:
            return handler(request)
        except BadRequest as exc:
            log.warning("bad request code %d from %s: %s", request.code, request.peer, exc)
            return RemotingResponse(ResponseCode.SYSTEM_ERROR, str(exc))

    def on_close(self, connection_id: int) -> None:
        self.routes.on_connection_closed(connection_id)

    # Handlers.

    @staticmethod
    def _ok(
        body: Mapping[str, Any] | None = None, ext_fields: Mapping[str, str] | None = None
    ) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        return RemotingResponse(
            ResponseCode.SUCCESS,
            None,
            dict(ext_fields or {}),
            to_json_bytes(body) if body is not None else None,
        )

    def _register_broker(self, req: RemotingRequest) -> RemotingResponse:
        ext = req.ext_fields
        if ext.get("compressed", "false").lower() == "true":
            raise BadRequest(
                "compressed REGISTER_BROKER bodies are not supported; set compressedRegister=false"
            )
        wrapper = None
        if req.body:
            try:
                body = fastjson.loads(req.body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise BadRequest(f"REGISTER_BROKER body is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise BadRequest("REGISTER_BROKER body is not a JSON object")
            wrapper = body.get("topicConfigSerializeWrapper")
            try:
                check_topic_config_wrapper(wrapper)
            except ValueError as exc:
                return self._refuse_registration(req, str(exc))
        result = self.routes.register_broker(
            cluster_name=_field(ext, "clusterName"),
            broker_addr=_field(ext, "brokerAddr"),
            broker_name=_field(ext, "brokerName"),
            broker_id=_int_field(ext, "brokerId"),
            ha_server_addr=ext.get("haServerAddr", ""),
            topic_config_wrapper=wrapper,
            connection=req.connection_id,
        )
        return self._ok(
            {"table": result.kv_table},
            {"haServerAddr": result.ha_server_addr, "masterAddr": result.master_addr},
        )

    def _refuse_registration(self, req: RemotingRequest, reason: str) -> RemotingResponse:
        """Answer an absurd REGISTER_BROKER with SYSTEM_ERROR; log it once per broker per
        :data:`REFUSAL_LOG_PERIOD_S` (a broker re-registers every 30 s)."""
        from rmq._rmq import RemotingResponse

        broker = req.ext_fields.get("brokerAddr") or str(req.peer)
        now = time.monotonic()
        with self._refusal_lock:
            last = self._refusals_logged.get(broker)
            due = last is None or now - last >= REFUSAL_LOG_PERIOD_S
            if due:
                if len(self._refusals_logged) >= 10_000:  # addresses are the sender's to pick
                    self._refusals_logged.clear()
                self._refusals_logged[broker] = now
        if due:
            log.warning(
                "REGISTER_BROKER from %s (broker %s at %s) refused: %s",
                req.peer,
                req.ext_fields.get("brokerName", "?")[:200],
                broker[:200],
                reason,
            )
        return RemotingResponse(ResponseCode.SYSTEM_ERROR, f"REGISTER_BROKER refused: {reason}")

    def _unregister_broker(self, req: RemotingRequest) -> RemotingResponse:
        ext = req.ext_fields
        self.routes.unregister_broker(
            cluster_name=_field(ext, "clusterName"),
            broker_addr=_field(ext, "brokerAddr"),
            broker_name=_field(ext, "brokerName"),
            broker_id=_int_field(ext, "brokerId"),
        )
        return self._ok()

    def _get_route(self, req: RemotingRequest) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        topic = _field(req.ext_fields, "topic")
        route = self.routes.pick_topic_route_data(topic)
        if route is None:
            return RemotingResponse(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {topic}; {APPLY_TOPIC_HINT}",
            )
        return self._ok(route)

    def _cluster_info(self, req: RemotingRequest) -> RemotingResponse:
        return self._ok(self.routes.cluster_info())

    def _topic_list(self, req: RemotingRequest) -> RemotingResponse:
        return self._ok(self.routes.topic_list())

    def _wipe_write_perm(self, req: RemotingRequest) -> RemotingResponse:
        n = self.routes.wipe_write_perm_of_broker(_field(req.ext_fields, "brokerName"))
        return self._ok(ext_fields={"wipeTopicCount": str(n)})

    def _add_write_perm(self, req: RemotingRequest) -> RemotingResponse:
        broker_name = _field(req.ext_fields, "brokerName")
        n = self.routes.add_write_perm_of_broker(broker_name)
        log.info("write permission of broker %s restored on %d topics", broker_name, n)
        return self._ok(ext_fields={"addTopicCount": str(n)})

    def _topics_by_cluster(self, req: RemotingRequest) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        cluster = _field(req.ext_fields, "cluster")
        topics = self.routes.topics_by_cluster(cluster)
        if topics is None:
            return RemotingResponse(
                ResponseCode.SYSTEM_ERROR,
                f"cluster {cluster!r} has no broker registered with this nameserver",
            )
        return self._ok(topic_list_body(topics))

    def _system_topics(self, req: RemotingRequest) -> RemotingResponse:
        return self._ok(self.routes.system_topic_list())

    def _unit_topics(self, req: RemotingRequest) -> RemotingResponse:
        return self._ok(topic_list_body(self.routes.topics_with_sys_flag(unit=True)))

    def _unit_sub_topics(self, req: RemotingRequest) -> RemotingResponse:
        return self._ok(topic_list_body(self.routes.topics_with_sys_flag(unit_sub=True)))

    def _unit_sub_ununit_topics(self, req: RemotingRequest) -> RemotingResponse:
        return self._ok(
            topic_list_body(self.routes.topics_with_sys_flag(unit=False, unit_sub=True))
        )

    def _get_config(self, req: RemotingRequest) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        return RemotingResponse(ResponseCode.SUCCESS, None, {}, self.config.format().encode())

    def _update_config(self, req: RemotingRequest) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        try:
            updates = parse_properties((req.body or b"").decode("utf-8"), "request body")
            self.config.update(updates)
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the UPDATE_NAMESRV_CONFIG body is not UTF-8: {exc}") from None
        except NamesrvConfigError as exc:
            code = ResponseCode.NO_PERMISSION if exc.path_key else ResponseCode.SYSTEM_ERROR
            log.warning("UPDATE_NAMESRV_CONFIG from %s refused: %s", req.peer, exc)
            return RemotingResponse(code, f"{exc}. Nothing was changed")
        except ValueError as exc:
            raise BadRequest(f"the UPDATE_NAMESRV_CONFIG body does not parse: {exc}") from None
        log.info("nameserver config updated by %s: %s", req.peer, updates)
        return self._ok()

    def _delete_topic(self, req: RemotingRequest) -> RemotingResponse:
        self.routes.delete_topic(_field(req.ext_fields, "topic"))
        return self._ok()

    def _put_kv(self, req: RemotingRequest) -> RemotingResponse:
        ext = req.ext_fields
        self.routes.put_kv_config(
            _field(ext, "namespace"), _field(ext, "key"), _field(ext, "value")
        )
        return self._ok()

    def _get_kv(self, req: RemotingRequest) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        ns, key = _field(req.ext_fields, "namespace"), _field(req.ext_fields, "key")
        value = self.routes.get_kv_config(ns, key)
        if value is None:
            return RemotingResponse(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {ns} Key: {key}"
            )
        return self._ok(ext_fields={"value": value})

    def _delete_kv(self, req: RemotingRequest) -> RemotingResponse:
        self.routes.delete_kv_config(
            _field(req.ext_fields, "namespace"), _field(req.ext_fields, "key")
        )
        return self._ok()

    def _kv_list(self, req: RemotingRequest) -> RemotingResponse:
        from rmq._rmq import RemotingResponse

        ns = _field(req.ext_fields, "namespace")
        table = self.routes.kv_list_by_namespace(ns)
        if table is None:
            return RemotingResponse(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {ns}"
            )
        return self._ok({"table": table})

    def _query_data_version(self, req: RemotingRequest) -> RemotingResponse:
        """QUERY_DATA_VERSION (322): has the broker's topic config changed since its last
        registration? Header ``changed``; body the DataVersion this nameserver holds for the
        broker (none when it does not know it), as ``DefaultRequestProcessor`` answers."""
        from rmq._rmq import RemotingResponse

        broker_addr = _field(req.ext_fields, "brokerAddr")
        for name in ("brokerName", "clusterName", "brokerId"):
            _field(req.ext_fields, name)
        try:
            version = fastjson.loads(req.body or b"")
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the QUERY_DATA_VERSION body is not a DataVersion: {exc}") from None
        if not isinstance(version, dict):
            raise BadRequest("the QUERY_DATA_VERSION body is not a DataVersion JSON object")
        changed = self.routes.check_data_version(broker_addr, version)
        stored = self.routes.broker_data_version(broker_addr)
        return RemotingResponse(
            ResponseCode.SUCCESS,
            None,
            {"changed": "true" if changed else "false"},
            to_json_bytes(stored) if stored is not None else None,
        )
