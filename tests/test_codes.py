"""The code enums Python uses are the Rust protocol tables, with RocketMQ's numbers, and the
admin tool names codes through them."""

from enum import IntEnum

from rmq import _rmq
from rmq.admin.client import _code_name
from rmq.codes import RequestCode, ResponseCode


def test_python_codes_are_the_rust_enums() -> None:
    assert RequestCode is _rmq.RequestCode and ResponseCode is _rmq.ResponseCode
    assert issubclass(RequestCode, IntEnum) and issubclass(ResponseCode, IntEnum)
    assert len(RequestCode) > 80 and len(ResponseCode) > 30


def test_codes_have_rocketmqs_numbers() -> None:
    # A spread of RequestCode.java / ResponseCode.java, from every area the broker serves.
    assert RequestCode.SEND_MESSAGE == 10 and RequestCode.PULL_MESSAGE == 11
    assert RequestCode(310) is RequestCode.SEND_MESSAGE_V2
    assert RequestCode.CONSUMER_SEND_MSG_BACK == 36 and RequestCode.END_TRANSACTION == 37
    assert RequestCode.GET_ROUTEINFO_BY_TOPIC == 105 and RequestCode.LITE_PULL_MESSAGE == 361
    assert ResponseCode.SUCCESS == 0 and ResponseCode.SYSTEM_BUSY == 2
    assert ResponseCode.NO_PERMISSION == 16 and ResponseCode.TOPIC_NOT_EXIST == 17
    assert ResponseCode.PULL_NOT_FOUND == 19


def test_the_admin_tool_names_codes_from_the_tables() -> None:
    assert _code_name(202) == "GET_TOPIC_STATS_INFO"
    assert _code_name(99_999) == "request code 99999"
