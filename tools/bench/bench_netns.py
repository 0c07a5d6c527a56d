"""A network namespace of the benchmark's own whose loopback has a chosen
MTU, so that every stack in a comparison meets the same path MTU (1500, an
Ethernet path) instead of loopback's 65536.

    with bench_netns.LoopbackNamespace(1500) as ns:
        cmd = ns.wrap(["taskset", "-c", "0", "dataplane", ...])

Traffic inside stays on the namespace's own 127.0.0.1. The namespace is
deleted when the block ends; processes started in it must be stopped by
their PIDs first (`ip netns exec` execs the command, so the PID is the
program's). Needs root and iproute2.
"""

import os
import shutil
import subprocess

import bench_common


class NamespaceError(RuntimeError):
    """The namespace could not be made (not root, no `ip`, no netns support)."""


def namespace_name(mtu, pid=None):
    """dpquic-mtu<MTU>-<pid>: one per benchmark process and MTU."""
    return "dpquic-mtu%d-%d" % (mtu, os.getpid() if pid is None else pid)


def wrap_command(name, cmd):
    """`cmd` run inside namespace `name`."""
    return ["ip", "netns", "exec", name] + list(cmd)


class LoopbackNamespace:
    """Context manager: a fresh namespace with `lo` up at `mtu` bytes."""

    def __init__(self, mtu, timeout=10):
        if not 1280 <= mtu <= 65536:
            raise ValueError("MTU %d is outside 1280..65536" % mtu)
        self.mtu = mtu
        self.name = namespace_name(mtu)
        self._timeout = timeout
        self._created = False

    def _ip(self, *args):
        result = bench_common.run_bounded(["ip"] + list(args), timeout=self._timeout)
        if not result.ok:
            raise NamespaceError("ip %s: %s" % (" ".join(args), (result.stderr or
                                 "exit %s" % result.returncode).strip()[-300:]))

    def __enter__(self):
        if shutil.which("ip") is None:
            raise NamespaceError("ip (iproute2) not found on PATH")
        if os.geteuid() != 0:
            raise NamespaceError("making a network namespace needs root")
        # A namespace left by a killed run of this same PID is replaced.
        self._delete()
        self._ip("netns", "add", self.name)
        self._created = True
        try:
            self._ip("-n", self.name, "link", "set", "lo", "mtu", str(self.mtu), "up")
        except NamespaceError:
            self.close()
            raise
        return self

    def wrap(self, cmd):
        return wrap_command(self.name, cmd)

    def _delete(self):
        """`ip netns del`, quietly: the namespace may not exist."""
        subprocess.run(["ip", "netns", "del", self.name], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=self._timeout, check=False)

    def close(self):
        if self._created:
            self._created = False
            self._delete()

    def __exit__(self, *exc):
        self.close()
        return False
