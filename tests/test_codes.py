"""The Python code enums are the Rust protocol tables, member for member."""

from enum import IntEnum

from rmq._rmq import request_codes, response_codes
from rmq.codes import RequestCode, ResponseCode


def test_python_codes_are_the_rust_tables() -> None:
    assert {n: c.value for n, c in RequestCode.__members__.items()} == request_codes()
    assert {n: c.value for n, c in ResponseCode.__members__.items()} == response_codes()
    assert issubclass(RequestCode, IntEnum) and issubclass(ResponseCode, IntEnum)
    assert RequestCode.PULL_MESSAGE == 11 and RequestCode(310) is RequestCode.SEND_MESSAGE_V2
    assert ResponseCode.TOPIC_NOT_EXIST == 17
    assert len(RequestCode) > 80
