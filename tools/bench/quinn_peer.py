"""quinn as a benchmark peer: builds tools/bench/quinn_perf (a perf-protocol
client and server on Debian's quinn 0.9.3) on first use, and gives their
command lines.

The build is offline: Debian's cargo and rustc against the crates of
/usr/share/cargo/registry (packages cargo, rustc, librust-quinn-dev,
librust-rustls-pemfile-dev; tools/setup.sh installs them). It takes a few
minutes on 2 cores, so it is not part of the Bazel build or CI: the binary
is cached under $XDG_CACHE_HOME/dpquic/quinn_perf/<hash of the sources>
(default ~/.cache) and rebuilt only when the sources change.
"""

import hashlib
import os
import shutil

import bench_common

CARGO = "/usr/bin/cargo"
RUSTC = "/usr/bin/rustc"
REGISTRY = "/usr/share/cargo/registry"
BUILD_TIMEOUT = 1800
READY = "quinn_perf: listening on"
# quinn 0.9 has no path MTU discovery: it sends datagrams of exactly this size.
PAYLOAD = 1452

CARGO_CONFIG = """\
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "%s"
[net]
offline = true
""" % REGISTRY


class Unavailable(RuntimeError):
    """quinn_perf cannot be had here: the message says what is missing."""


def source_files(source_dir):
    """Cargo.toml and src/*.rs, relative to `source_dir`, sorted."""
    files = ["Cargo.toml"]
    src = os.path.join(source_dir, "src")
    files += sorted("src/" + n for n in os.listdir(src) if n.endswith(".rs"))
    return files


def source_hash(source_dir):
    digest = hashlib.sha256()
    for name in source_files(source_dir):
        digest.update(name.encode() + b"\0")
        with open(os.path.join(source_dir, name), "rb") as f:
            digest.update(f.read() + b"\0")
    return digest.hexdigest()[:16]


def cache_root(environ=None):
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "/root"), ".cache")
    return os.path.join(base, "dpquic", "quinn_perf")


def missing_tools():
    """What the offline build lacks, as a list of reasons (empty: nothing)."""
    missing = [path for path in (CARGO, RUSTC) if not os.access(path, os.X_OK)]
    if not any(n.startswith("quinn-0.9") for n in _listdir(REGISTRY)):
        missing.append("quinn 0.9 in %s (librust-quinn-dev)" % REGISTRY)
    return missing


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def cached_binary(source_dir, root=None):
    """The built binary for these sources, or None when not built yet."""
    path = os.path.join(root or cache_root(), source_hash(source_dir), "target", "release",
                        "quinn_perf")
    return path if os.access(path, os.X_OK) else None


def build(source_dir, root=None, progress=None, timeout=BUILD_TIMEOUT):
    """The path of quinn_perf built from `source_dir`, building it when the
    cache has none. Raises Unavailable when the tools are missing or the
    build fails."""
    existing = cached_binary(source_dir, root)
    if existing:
        return existing
    missing = missing_tools()
    if missing:
        raise Unavailable("cannot build quinn_perf: missing %s (run tools/setup.sh)" %
                          ", ".join(missing))
    work = os.path.join(root or cache_root(), source_hash(source_dir))
    for name in source_files(source_dir):
        os.makedirs(os.path.dirname(os.path.join(work, "crate", name)), exist_ok=True)
        shutil.copyfile(os.path.join(source_dir, name), os.path.join(work, "crate", name))
    os.makedirs(os.path.join(work, "cargo-home"), exist_ok=True)
    with open(os.path.join(work, "cargo-home", "config.toml"), "w") as f:
        f.write(CARGO_CONFIG)
    env = dict(os.environ, CARGO_HOME=os.path.join(work, "cargo-home"), RUSTC=RUSTC,
               CARGO_TARGET_DIR=os.path.join(work, "target"))
    if progress:
        progress("building quinn_perf with %s (offline, a few minutes)" % CARGO)
    result = bench_common.run_bounded([CARGO, "build", "--release", "--offline", "--quiet"],
                                      timeout=timeout, env=env, cwd=os.path.join(work, "crate"))
    if not result.ok:
        what = "timed out after %d s" % timeout if result.timed_out else \
            "exited %d" % result.returncode
        raise Unavailable("cargo build of quinn_perf %s: %s" % (what, result.stderr.strip()[-500:]))
    built = cached_binary(source_dir, root)
    if not built:
        raise Unavailable("cargo build of quinn_perf left no binary in %s" % work)
    return built


def server_command(binary, host, port, key, cert, payload=PAYLOAD):
    return [binary, "server", "--listen=%s:%d" % (host, port), "--cert=" + cert, "--key=" + key,
            "--max-udp-payload=%d" % payload]


def client_command(binary, host, port, size, ca, payload=PAYLOAD):
    return [binary, "client", "--connect=%s:%d" % (host, port), "--size=%d" % size,
            "--ca=" + ca, "--max-udp-payload=%d" % payload]
