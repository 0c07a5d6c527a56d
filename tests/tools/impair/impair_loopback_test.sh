#!/usr/bin/env bash
# The real impair binary between two UDP sockets on loopback: datagrams of
# every size cross intact both ways, replies reach the client that sent,
# --duplicate-down doubles every reply, --rebind-every moves the client's
# upstream port (the server sees a new source), the counters printed at
# SIGTERM add up, --max-packets and --duration end the relay by themselves,
# and bad flags or a non-loopback server give one line and exit 2.
set -uo pipefail
IMPAIR=$1
export IMPAIR

python3 - <<'PY'
import os, re, select, signal, socket, subprocess, sys, time

impair = os.environ["IMPAIR"]

def fail(message, log=""):
    print("FAIL:", message)
    if log:
        print(log)
    sys.exit(1)

def start(server_port, *flags):
    process = subprocess.Popen(
        [impair, "--listen=127.0.0.1:0", f"--server=127.0.0.1:{server_port}", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    banner = process.stdout.readline()
    match = re.search(r"listening on 127\.0\.0\.1:(\d+), forwarding to 127\.0\.0\.1:%d" % server_port,
                      banner)
    if not match:
        process.kill()
        fail("no banner: " + banner)
    return process, int(match.group(1))

def finish(process, timeout=10):
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        fail("impair did not exit within %d s" % timeout)
    return out

def counters(out, label, direction):
    line = [l for l in out.splitlines() if f"impair: {label} " in l and f" {direction}: " in l]
    if not line:
        fail(f"no '{label} {direction}' counters", out)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line[-1])}

def receive(sock, timeout=2.0):
    ready, _, _ = select.select([sock], [], [], timeout)
    if not ready:
        return None, None
    return sock.recvfrom(70000)

server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind(("127.0.0.1", 0))
server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
server_port = server.getsockname()[1]
client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
client.bind(("127.0.0.1", 0))
client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)

# 1. Relay both ways, duplicated replies, NAT rebinding.
process, port = start(server_port, "--duration=20", "--duplicate-down=100%",
                      "--rebind-every=1.5", "--seed=3")
sources = []
sent = 0

def exchange(i):
    global sent
    size = [1, 100, 1200, 1500, 9000, 60000][i % 6]
    payload = bytes([(i + k) % 251 for k in range(size)])
    client.sendto(payload, ("127.0.0.1", port))
    sent += 1
    data, source = receive(server)
    if data != payload:
        fail(f"datagram {i}: the server got {None if data is None else len(data)} bytes, "
             f"not the {size} sent")
    sources.append(source)
    reply = payload[::-1] + b"reply"
    server.sendto(reply, source)
    for copy in range(2):
        data, origin = receive(client)
        if data != reply:
            fail(f"reply {i} copy {copy}: got {None if data is None else len(data)} bytes")
        if origin != ("127.0.0.1", port):
            fail(f"reply {i} came from {origin}, not the proxy")

for i in range(40):
    exchange(i)
first_source = sources[0]
if any(s != first_source for s in sources):
    fail(f"the upstream port changed before any rebinding: {set(sources)}")
time.sleep(1.7)
for i in range(40, 60):
    exchange(i)
if sources[-1] == first_source or sources[-1][0] != "127.0.0.1":
    fail(f"no new upstream port after the rebinding: {first_source} then {sources[-1]}")
if receive(client, 0.2)[0] is not None or receive(server, 0.2)[0] is not None:
    fail("an extra datagram arrived")
process.send_signal(signal.SIGTERM)
out = finish(process)
if process.returncode != 0:
    fail(f"impair exited {process.returncode} on SIGTERM", out)
if "impair: stopping: signal" not in out:
    fail("no 'stopping: signal' line", out)
up, down = counters(out, "final", "up"), counters(out, "final", "down")
if (up["received"], up["forwarded"], up["duplicated"]) != (60, 60, 0):
    fail(f"up counters {up}", out)
if (down["received"], down["forwarded"], down["duplicated"]) != (60, 120, 60):
    fail(f"down counters {down}", out)
drops = sum(v for k, v in {**up, **down}.items() if k.startswith("dropped_"))
if drops:
    fail(f"{drops} datagrams dropped", out)
flows = re.search(r"final t=\S+ flows: clients=1 refused=0 rebinds=(\d+)", out)
if not flows or int(flows.group(1)) < 1:
    fail("no rebinding counted", out)
if not re.search(r"rebind: client 127\.0\.0\.1:%d upstream port %d \(40 datagrams from the server\)"
                 % (client.getsockname()[1], first_source[1]), out):
    fail("the rebinding line does not show 40 replies on the first port", out)

# 2. --max-packets ends the relay by itself.
process, port = start(server_port, "--max-packets=10", "--duration=20")
for i in range(20):
    client.sendto(b"x%d" % i, ("127.0.0.1", port))
    time.sleep(0.01)
out = finish(process)
if process.returncode != 0 or "impair: stopping: max packets reached" not in out:
    fail(f"--max-packets: exit {process.returncode}", out)
if counters(out, "final", "up")["received"] != 10:
    fail("--max-packets=10 did not stop at 10 datagrams", out)
while receive(server, 0.1)[0] is not None:
    pass

# 3. --duration ends it by itself, with --stats lines on the way.
began = time.monotonic()
process, port = start(server_port, "--duration=1", "--stats=0.3")
out = finish(process)
elapsed = time.monotonic() - began
if process.returncode != 0 or "impair: stopping: duration elapsed" not in out:
    fail(f"--duration: exit {process.returncode}", out)
if not 0.9 <= elapsed <= 3:
    fail(f"--duration=1 took {elapsed:.2f} s", out)
if len([l for l in out.splitlines() if l.startswith("impair: stats ") and " up: " in l]) != 3:
    fail("expected 3 --stats=0.3 reports in 1 s", out)

# 4. Bad flags: one line on stderr, exit 2.
for flags, expected in [
        (["--listen=127.0.0.1:0", "--server=192.0.2.1:443"],
         "impair: --server: only loopback addresses are allowed (127.0.0.0/8 or ::1)"),
        (["--listen=127.0.0.1:0", f"--server=127.0.0.1:{server_port}", "--loss=150%"],
         "impair: --loss: bad value '150%' (see --help)"),
        (["--frobnicate=1"], "impair: --frobnicate: unknown flag (see --help)")]:
    result = subprocess.run([impair, *flags], capture_output=True, text=True, timeout=10)
    if result.returncode != 2 or result.stderr != expected + "\n" or result.stdout:
        fail(f"{flags}: exit {result.returncode}, stderr {result.stderr!r}")
result = subprocess.run([impair, "--help"], capture_output=True, text=True, timeout=10)
if result.returncode != 0 or "--blackhole=ON/OFF" not in result.stdout:
    fail("--help")
print("impair loopback: ok")
PY
