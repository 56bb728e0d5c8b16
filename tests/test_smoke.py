import pytest

pytestmark = pytest.mark.django_db(transaction=True)


async def test_initialize_list_call(ws):
    init = await ws.initialize()
    assert init["result"]["protocolVersion"] == "2025-11-25"
    listing = await ws.request("tools/list")
    assert [t["name"] for t in listing["result"]["tools"]][:2] == ["add", "add_category"]
    call = await ws.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert call["result"] == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
        "isError": False,
    }
