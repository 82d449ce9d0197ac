"""The socket files carry the access control of PROTOCOL.md: mode 0660 and the configured groups."""

import grp
import os
import shutil
import stat
import tempfile

from agent_harness import start_agent, stop_agent


def test_socket_files_are_0660_with_their_groups():
    # Groups every Debian system has, standing in for preflight and preflight-admin.
    folder = tempfile.mkdtemp(prefix="pf-sock-", dir="/tmp")
    try:
        agent = start_agent(folder, agent_extra={"appSocketGroup": "daemon", "adminSocketGroup": "adm"})
        expected = {"app": "daemon", "events": "daemon", "admin": "adm"}
        for name, group in expected.items():
            info = os.stat(f"{folder}/run/{name}.sock")
            assert stat.S_ISSOCK(info.st_mode)
            assert stat.S_IMODE(info.st_mode) == 0o660, name
            assert info.st_gid == grp.getgrnam(group).gr_gid, name
        assert stop_agent(agent) == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_preflightd(config_path):
    import subprocess

    from agent_harness import bin_dir

    return subprocess.run(
        [os.path.join(bin_dir(), "preflightd"), "--config", config_path],
        capture_output=True,
        text=True,
        timeout=30,
    )


def write_config(folder):
    import json

    path = os.path.join(folder, "preflight.json")
    with open(path, "w") as handle:
        json.dump(
            {
                "agent": {
                    "appEndpoint": f"ipc://{folder}/run/app.sock",
                    "adminEndpoint": f"ipc://{folder}/run/admin.sock",
                    "eventsEndpoint": f"ipc://{folder}/run/events.sock",
                    "stateDirectory": f"{folder}/state",
                },
                "target": {"clientCode": "acme"},
            },
            handle,
        )
    return path


def test_a_configuration_file_others_can_write_is_refused():
    folder = tempfile.mkdtemp(prefix="pf-perm-", dir="/tmp")
    try:
        path = write_config(folder)
        os.chmod(path, 0o666)
        result = run_preflightd(path)
        assert result.returncode == 78
        assert "writable by group or others" in result.stderr and "chmod go-w" in result.stderr
        assert not os.path.exists(f"{folder}/run/app.sock")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_registration_file_others_can_write_is_refused():
    folder = tempfile.mkdtemp(prefix="pf-perm-", dir="/tmp")
    try:
        path = write_config(folder)
        os.makedirs(f"{folder}/state")
        registration = f"{folder}/state/pass-registration.json"
        with open(registration, "w") as handle:
            handle.write("{}")
        os.chmod(registration, 0o620)
        result = run_preflightd(path)
        assert result.returncode == 78
        assert "registration file" in result.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)
