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
