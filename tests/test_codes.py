"""The Python code enums agree with the Rust protocol tables."""

from rmq._rmq import request_codes, response_codes
from rmq.codes import RequestCode, ResponseCode


def test_python_codes_match_rust_tables() -> None:
    rust_req, rust_resp = request_codes(), response_codes()
    for code in RequestCode:
        assert rust_req[code.name] == code.value, code.name
    for rcode in ResponseCode:
        assert rust_resp[rcode.name] == rcode.value, rcode.name
    assert rust_req["PULL_MESSAGE"] == 11
    assert len(rust_req) > 80
