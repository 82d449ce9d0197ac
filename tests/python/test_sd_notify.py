"""sd_notify as systemd sees it: a datagram socket owned by the test stands in for NOTIFY_SOCKET."""

import os
import shutil
import signal
import socket
import tempfile
import time


from agent_harness import request, start_agent, stop_agent, wait_until


class FakeSystemd:
    def __init__(self, folder):
        self.path = os.path.join(folder, "notify.sock")
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(self.path)
        self.socket.settimeout(0.05)
        self.messages = []  # (monotonic time, {key: value})

    def drain(self):
        while True:
            try:
                data = self.socket.recv(4096).decode()
            except socket.timeout:
                return
            fields = dict(line.split("=", 1) for line in data.strip().split("\n") if "=" in line)
            self.messages.append((time.monotonic(), fields))

    def wait_for(self, key, value=None, after=0):
        def seen():
            self.drain()
            return any(k == key and (value is None or v == value)
                       for _, m in self.messages[after:] for k, v in m.items())

        wait_until(f"{key}={value or '*'} from preflightd", seen)

    def close(self):
        self.socket.close()


def test_ready_watchdog_reload_and_stopping():
    folder = tempfile.mkdtemp(prefix="pf-sd-", dir="/tmp")
    systemd = FakeSystemd(folder)
    try:
        agent = start_agent(folder, env={"NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "400000"}, wait=False)
        systemd.wait_for("READY", "1")
        # READY=1 only once every endpoint accepts connections: a request right now is answered.
        assert request(agent.app, "ping", timeout_ms=2000)["ok"]
        ready = next(m for _, m in systemd.messages if m.get("READY") == "1")
        assert ready["STATUS"].startswith("serving; 0 offers cached")

        # WATCHDOG=1 every half of WATCHDOG_USEC (0.2 s), from the I/O loop.
        start = len(systemd.messages)
        wait_until("five watchdog pings", lambda: (systemd.drain(), sum(
            1 for _, m in systemd.messages[start:] if m.get("WATCHDOG") == "1"))[1] >= 5)
        pings = [t for t, m in systemd.messages[start:] if m.get("WATCHDOG") == "1"]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        assert max(gaps) < 0.4, gaps  # never as late as systemd's limit

        # SIGHUP: RELOADING=1 (with MONOTONIC_USEC), then READY=1 again.
        mark = len(systemd.messages)
        os.kill(agent.process.pid, signal.SIGHUP)
        systemd.wait_for("RELOADING", "1", after=mark)
        systemd.wait_for("READY", "1", after=mark)
        reloading = next(m for _, m in systemd.messages[mark:] if m.get("RELOADING") == "1")
        assert int(reloading["MONOTONIC_USEC"]) > 0

        # SIGTERM: STOPPING=1, then a clean exit.
        mark = len(systemd.messages)
        agent.process.send_signal(signal.SIGTERM)
        systemd.wait_for("STOPPING", "1", after=mark)
        assert stop_agent(agent) == 0
    finally:
        systemd.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_without_notify_socket_nothing_is_sent_and_the_agent_runs():
    folder = tempfile.mkdtemp(prefix="pf-sd-", dir="/tmp")
    try:
        agent = start_agent(folder, env={"NOTIFY_SOCKET": ""})
        assert request(agent.app, "ping")["ok"]
        assert stop_agent(agent) == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_sigterm_as_soon_as_the_sockets_exist_is_a_graceful_stop():
    """From the moment a socket file exists (an app or systemd can reach the agent), SIGTERM is a graceful stop:
    exit 0, socket files removed. It used to kill the agent by the signal's default action when it arrived
    between binding and the service group's start, a window a loaded machine widens (CI saw it)."""
    for attempt in range(10):
        folder = tempfile.mkdtemp(prefix="pf-term-", dir="/tmp")
        try:
            agent = start_agent(folder, wait=False)
            deadline = time.monotonic() + 60
            while not os.path.exists(f"{folder}/run/app.sock"):
                assert agent.process.poll() is None, f"preflightd exited with {agent.process.returncode}"
                assert time.monotonic() < deadline, "no socket file within 60 s"
                time.sleep(0.0005)
            agent.process.send_signal(signal.SIGTERM)
            code = agent.process.wait(timeout=60)
            assert code == 0, f"attempt {attempt}: exit {code} (-15 is SIGTERM's default action)"
            wait_until("the socket files to be removed",
                       lambda: not any(os.path.exists(f"{folder}/run/{n}.sock") for n in ("app", "admin", "events")))
        finally:
            if agent.process.poll() is None:
                agent.process.kill()
                agent.process.wait()
            shutil.rmtree(folder, ignore_errors=True)
