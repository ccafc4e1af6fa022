"""redis-cli used interactively: on a pseudo-terminal, as a person at a shell uses it.

With a terminal, redis-cli runs its line editor (linenoise), prints a prompt "HOST:PORT> ",
asks the server for COMMAND DOCS to show hints, and formats replies for people ("(integer) 2",
quoted strings). This types commands at that prompt and checks what appears on the screen.

usage: /usr/bin/python3 interactive_cli.py --port P     exit status 0 if every line matched
"""
import argparse
import os
import pty
import re
import select
import sys
import time

# What to type, and a pattern the screen must show after it (before the next prompt).
SESSION = [
    ("PING", r"PONG"),
    ("SET greeting hello", r"OK"),
    ("GET greeting", r'"hello"'),
    ("INCR visits", r"\(integer\) 1"),
    ("RPUSH talk a b", r"\(integer\) 2"),
    ("LRANGE talk 0 -1", r'1\) "a"\s+2\) "b"'),
    ("GET talk", r"\(error\) WRONGTYPE"),
    ("NOSUCHCOMMAND x", r"\(error\) ERR unknown command"),
    ("EXISTS greeting visits talk nope", r"\(integer\) 3"),
]


def read_until(fd, pattern, timeout=10.0):
    """Reads the terminal until `pattern` (a regex) appears; returns everything read."""
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if re.search(pattern, seen.decode(errors="replace")):
                return seen.decode(errors="replace")
    raise TimeoutError(f"waited for {pattern!r}; the screen shows {seen.decode(errors='replace')!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    prompt = rf"127\.0\.0\.1:{args.port}> "
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "dumb"  # no escape sequences to strip, the line editor still runs
        os.execvp("redis-cli", ["redis-cli", "-p", str(args.port)])
    failures = 0
    try:
        read_until(fd, prompt)
        for line, expected in SESSION:
            os.write(fd, line.encode() + b"\r")
            screen = read_until(fd, prompt)
            # The screen echoes the typed line first; look after it.
            after = screen.split(line, 1)[-1]
            if re.search(expected, after):
                print(f"  ok   interactive: {line}")
            else:
                print(f"  FAIL interactive: {line}: expected /{expected}/, the screen shows {after!r}")
                failures += 1
        os.write(fd, b"quit\r")
    except TimeoutError as e:
        print(f"  FAIL interactive: {e}")
        failures += 1
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
