"""The admin peer check (agent.allowedAdminGroups): real second and third users on this machine.

The socket files let every member of one group connect; the peer check then tells admins from other
members by the kernel's credentials for each connection (ZAP), and answers the others `not_permitted`.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest

from agent_harness import bin_dir, read_log, request, start_agent, stop_agent, wait_until

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("groupadd"),
    reason="needs root and useradd/groupadd to create the second user",
)

def run(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def accounts():
    """A group that may open the socket files, a narrower admin group, and one user in each."""
    tag = uuid.uuid4().hex[:8]
    names = {"sockets": f"pfs{tag}", "admins": f"pfa{tag}", "member": f"pfm{tag}", "admin": f"pfx{tag}"}
    run("groupadd", names["sockets"])
    run("groupadd", names["admins"])
    run("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", names["sockets"], names["member"])
    run("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin",
        "-G", f"{names['sockets']},{names['admins']}", names["admin"])
    yield names
    for user in (names["member"], names["admin"]):
        subprocess.run(["userdel", user], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for group in (names["sockets"], names["admins"]):
        subprocess.run(["groupdel", group], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def as_user(user, folder, *args):
    """Runs preflightctl as `user` (its own uid, gid and groups); returns (exit code, JSON output).

    The binary is copied into the shared folder: the build folder may sit where other users cannot
    reach (a clone under /root).
    """
    import grp
    import pwd

    tool = os.path.join(folder, "preflightctl")
    if not os.path.exists(tool):
        shutil.copy(os.path.join(bin_dir(), "preflightctl"), tool)
        os.chmod(tool, 0o755)
    entry = pwd.getpwnam(user)
    groups = [g.gr_gid for g in grp.getgrall() if user in g.gr_mem]

    def drop():
        os.setgroups(groups)
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)

    result = subprocess.run([tool, "--json", *args], preexec_fn=drop, capture_output=True, text=True,
                            timeout=60, cwd=folder, env={"PATH": "/usr/bin:/bin", "HOME": folder})
    try:
        output = json.loads(result.stdout) if result.stdout.strip() else None
    except json.JSONDecodeError:
        output = result.stdout
    return result.returncode, output, result.stderr


@pytest.fixture
def shared_folder():
    # pytest's tmp_path sits under a root-only folder; the other users must reach the sockets.
    folder = tempfile.mkdtemp(prefix="pf-peers-")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_admin_commands_from_users_outside_the_allowed_groups_are_refused(accounts, shared_folder):
    handle = start_agent(shared_folder, agent_extra={
        "appSocketGroup": accounts["sockets"],
        "adminSocketGroup": accounts["sockets"],
        "allowedAdminGroups": [accounts["admins"]],
    })
    try:
        os.chmod(os.path.join(shared_folder, "run"), 0o755)
        # The member may open the admin socket file, but is not an admin: exit 4, and why.
        code, output, stderr = as_user(accounts["member"], shared_folder, "status", "--endpoint", handle.admin)
        assert code == 4, (code, output, stderr)
        assert "not_permitted" in f"{output}{stderr}" and accounts["admins"] in f"{output}{stderr}"
        # A member of an allowed group, and root, are served.
        code, output, stderr = as_user(accounts["admin"], shared_folder, "status", "--endpoint", handle.admin)
        assert code == 0, (code, output, stderr)
        assert output["version"]
        assert request(handle.admin, "status")["ok"] is True
        wait_until("the refusal in the log",
                   lambda: "outside agent.allowedAdminGroups" in read_log(shared_folder))
        # The refused request changed nothing and the agent still serves everyone.
        assert request(handle.app, "ping")["ok"] is True
    finally:
        stop_agent(handle)


def test_without_allowed_groups_the_socket_mode_is_the_only_check(accounts, shared_folder):
    handle = start_agent(shared_folder, agent_extra={"adminSocketGroup": accounts["sockets"]})
    try:
        os.chmod(os.path.join(shared_folder, "run"), 0o755)
        code, output, stderr = as_user(accounts["member"], shared_folder, "status", "--endpoint", handle.admin)
        assert code == 0, (code, output, stderr)
    finally:
        stop_agent(handle)
