"""The nameserver: broker registry and topic routes (``python -m rmq.namesrv``)."""

from rmq.namesrv.route_info import RouteInfoManager

__all__ = ["RouteInfoManager"]
