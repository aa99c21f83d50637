"""How gunicorn serves the webhook receiver: this module is its config file, and holds its worker class.

    gunicorn -c python:bot.serving --bind 0.0.0.0:8000 bot.wsgi:app

Workers of gevent's event loop, not threads: a connection costs a greenlet while it waits, so clients
that send their headers or body slowly (or never) hold no thread that a delivery needs; each worker
takes up to `worker_connections` connections at once, and the kernel queues up to `backlog` more.
The timeouts a client gets:

- headers: the request line and headers within `keepalive` seconds of the connection opening or of
  the previous answer on it (gunicorn's gevent worker reads them under that timeout), else the
  connection is closed;
- body and answer: the app must have read the body and answered within OPTIMAS_REQUEST_TIMEOUT_S
  (default 10 s, GitHub's own wait for a delivery) of the headers, else 408 (`Worker`); the response
  body is written after that without a deadline (a dashboard file to a slow reader);
- size: a body over OPTIMAS_MAX_BODY_BYTES gets 413 before it is read (the app), headers are capped
  by gunicorn's limit_request_* defaults.
"""

from __future__ import annotations

import os

import gevent
from gevent import monkey, socket
from gunicorn.workers.ggevent import GeventWorker
from werkzeug.exceptions import RequestTimeout

REQUEST_TIMEOUT_S = 10.0


def request_timeout_s(env: dict[str, str] | None = None) -> float:
    """OPTIMAS_REQUEST_TIMEOUT_S: seconds from a request's headers to its answer (default 10)."""
    text = (os.environ if env is None else env).get("OPTIMAS_REQUEST_TIMEOUT_S", "")
    try:
        value = float(text) if text else REQUEST_TIMEOUT_S
    except ValueError:
        raise SystemExit(f"OPTIMAS_REQUEST_TIMEOUT_S={text!r}: expected a number of seconds") from None
    if not 0 < value <= 3600:
        raise SystemExit(f"OPTIMAS_REQUEST_TIMEOUT_S={text!r}: expected more than 0 and at most 3600 seconds")
    return value


class Worker(GeventWorker):
    """gunicorn's gevent worker, with a deadline on the app's call: a request whose body is still
    arriving (or whose answer is not ready) when it expires gets 408 Request Timeout. Raised as
    werkzeug's RequestTimeout inside the app, Flask answers it like any HTTP error."""

    def patch(self) -> None:
        """gevent's monkey-patching, `select` left as it is: redis-py's hiredis parser asks poll(),
        with no wait, whether a pooled connection holds stray data before each command, and with
        gevent's cooperative poll() taking a connection cost 66 to 87 us of CPU, with the system's
        23 us. Nothing the receiver runs waits in select or poll (gevent's own sockets and
        subprocesses wait on its hub)."""
        monkey.patch_all(select=False)
        # gunicorn's listening sockets, made gevent sockets (as GeventWorker.patch does)
        self.sockets = [socket.socket(s.FAMILY, socket.SOCK_STREAM, fileno=s.sock.detach()) for s in self.sockets]

    def load_wsgi(self) -> None:
        """Load the app, and wrap it in the deadline."""
        super().load_wsgi()
        app, seconds = self.wsgi, request_timeout_s()

        def within_deadline(environ, start_response):
            with gevent.Timeout(seconds, RequestTimeout(f"the request took longer than {seconds:g} s")):
                return app(environ, start_response)

        self.wsgi = within_deadline


# gunicorn's settings: it reads this module's lowercase names that are its settings' names.
worker_class = "bot.serving.Worker"
workers = 2  # one per core of the 2-core machine the benchmarks ran on; give each worker a core
worker_connections = 1000  # per worker: connections open at once, slow ones included
backlog = 2048  # connections the kernel holds before a worker accepts them
keepalive = 5  # seconds for a request's headers, and for the next request on a kept-alive connection
timeout = 30  # seconds a worker may go without a heartbeat (a loop blocked that long) before it is restarted
graceful_timeout = 30
