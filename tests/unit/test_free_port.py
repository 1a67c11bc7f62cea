"""``free_port``: a port picked for one server is not picked again before that server binds it."""

from __future__ import annotations

import socket

import pytest

from durable_agui.cli.devserver import free_port, port_in_use

pytestmark = pytest.mark.unit


def test_a_picked_port_is_not_picked_again_until_its_server_binds_it() -> None:
    picked = {free_port() for _ in range(200)}
    assert len(picked) == 200  # 200 random picks from 12,768 would collide about 4 times in 5

    port = picked.pop()
    with socket.socket() as other_picker, pytest.raises(OSError):
        other_picker.bind(("127.0.0.1", port))  # how free_port tests a port: reserved
    assert not port_in_use("127.0.0.1", port)  # the server's own check finds it free
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
