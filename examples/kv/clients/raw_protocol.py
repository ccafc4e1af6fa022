#!/usr/bin/python3
"""RESP at the byte level, where the client libraries do not go: inline commands, pipelined
inline commands, and malformed requests.

A malformed request must get an error reply starting with "-ERR" and then the connection must be
closed (the server cannot know where the next request starts), and the server must go on serving
new connections. The requests:
  - "*abc\\r\\n": a multibulk count that is not a number;
  - "*1\\r\\n$1073741824\\r\\n": a 1 GB bulk, past any sane limit (Redis: proto-max-bulk-len,
    512 MB). The server must refuse it from the header, without waiting for (or allocating) the
    gigabyte.

usage: /usr/bin/python3 raw_protocol.py --port P
"""
import argparse
import socket
import sys
import time

failures = []


def check(ok, what):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_exactly(s, n):
    """Reads n bytes, or fewer if the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_until_closed(s, limit=65536, timeout=5.0):
    """Everything the server sends until it closes; (data, closed)."""
    s.settimeout(timeout)
    data = b""
    try:
        while len(data) < limit:
            chunk = s.recv(4096)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False
    except ConnectionResetError:
        return data, True
    return data, False


def inline_ping(port):
    with connect(port) as s:
        s.sendall(b"PING\r\n")
        check(read_exactly(s, 7) == b"+PONG\r\n", "inline PING answers +PONG")
        s.sendall(b"PING\r\nPING\r\n")
        check(read_exactly(s, 14) == b"+PONG\r\n+PONG\r\n",
              "two pipelined inline PINGs answer +PONG twice")
        # Inline arguments are split on spaces; redis-benchmark's PING_INLINE depends on it.
        s.sendall(b"SET inline:k hello\r\nGET inline:k\r\n")
        check(read_exactly(s, 16) == b"+OK\r\n$5\r\nhello\r\n", "inline SET and GET")
        # A request split across writes must be reassembled.
        s.sendall(b"*1\r\n$4\r\nPI")
        time.sleep(0.05)
        s.sendall(b"NG\r\n")
        check(read_exactly(s, 7) == b"+PONG\r\n", "a request split across two writes")


def malformed(port, request, what):
    with connect(port) as s:
        s.sendall(request)
        data, closed = read_until_closed(s)
        check(data.startswith(b"-ERR"), f"{what}: reply starts with -ERR (got {data[:80]!r})")
        check(closed, f"{what}: the server closes the connection")


def still_serving(port):
    with connect(port) as s:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        check(read_exactly(s, 7) == b"+PONG\r\n", "a new connection is served afterwards")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    inline_ping(port)
    malformed(port, b"*abc\r\n", "multibulk count '*abc'")
    malformed(port, b"*1\r\n$1073741824\r\n", "1 GB bulk header")
    malformed(port, b"*1\r\n$-5\r\n", "negative bulk length")
    still_serving(port)
    print(f"raw_protocol: {'all passed' if not failures else f'{len(failures)} failed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
