"""systemd's notify protocol: READY, STATUS, STOPPING and WATCHDOG.

A datagram to the socket named by $NOTIFY_SOCKET (a leading '@' is the
Linux abstract namespace). Without that variable (not started by systemd)
every call is a no-op, so the agent runs the same everywhere.
"""
from collections.abc import Mapping
import logging
import os
import socket

LOG = logging.getLogger(__name__)


class Notifier:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        self.address: str | None = environ.get('NOTIFY_SOCKET') or None
        if self.address and self.address.startswith('@'):
            self.address = '\0' + self.address[1:]
        self.watchdog_interval = self._watchdog_interval(environ)

    @staticmethod
    def _watchdog_interval(environ: Mapping[str, str]) -> float | None:
        """Seconds between keep-alives: half of WATCHDOG_USEC, or None."""
        usec = environ.get('WATCHDOG_USEC')
        pid = environ.get('WATCHDOG_PID')
        # WATCHDOG_PID is the launcher's; the agent runs in its worker.
        if not usec or (pid and pid not in (str(os.getpid()), str(os.getppid()))):
            return None
        try:
            return int(usec) / 2e6
        except ValueError:
            return None

    def send(self, **fields: object) -> bool:
        """Send KEY=value lines; True when delivered."""
        if not self.address:
            return False
        message = '\n'.join('%s=%s' % (key.upper(), value)
                            for key, value in fields.items())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(message.encode(), self.address)
            return True
        except OSError as exc:
            # The service keeps running without systemd's supervision.
            LOG.warning('systemd notify failed: %s', exc)
            return False

    def ready(self, status: str | None = None) -> bool:
        return self.send(ready=1, **({'status': status} if status else {}))

    def status(self, text: str) -> bool:
        return self.send(status=text)

    def watchdog(self) -> bool:
        return self.send(watchdog=1)

    def stopping(self) -> bool:
        return self.send(stopping=1)
