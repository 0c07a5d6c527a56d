#!/usr/bin/env bash
# The server binary's command line: --help, and a one-line error with exit
# code 2 for every bad flag, value or configuration.
set -uo pipefail
bin="$1"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/cli.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$bin" --help) || fail "--help exited $?"
for flag in --backend --listen --cert --key --root --cores --poll --retry --max-connections \
  --max-half-open-per-address --cc --gso --qlog-dir --qlog-max-mb --stats --drain-timeout --eal \
  --server-id --host-key --ticket-key --metrics; do
  grep -q -- "$flag" <<<"$out" || fail "--help does not mention $flag"
done

# expect_error "what the message must contain" ARGS...: exit 2, one line.
expect_error() {
  local want=$1
  shift
  local err rc
  err=$(timeout 10 "$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  [[ $rc -eq 2 ]] || fail "'$*' exited $rc, expected 2 (stderr: $err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "'$*' printed more than one line: $err"
  grep -q -- "$want" <<<"$err" || fail "'$*' said '$err', expected it to mention '$want'"
}

port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

expect_error "unknown flag --frobnicate" --frobnicate=1
expect_error "expected udp or dpdk" --backend=tcp
expect_error "needs --ip and/or --ip6" --backend=dpdk
expect_error "there is no --ip6" --backend=dpdk --ip=10.0.0.2/24 --gateway=fd00::1
expect_error "--listen=nowhere" --listen=nowhere
expect_error "--listen=127.0.0.1:99999" --listen=127.0.0.1:99999
expect_error "--cores=0" --cores=0
expect_error "online cores" --cores=255
expect_error "expected auto, always or never" --retry=sometimes
expect_error "--max-connections=0" --max-connections=0
expect_error "--max-half-open-per-address=some" --max-half-open-per-address=some
expect_error "--max-half-open-per-address=-1" --max-half-open-per-address=-1
expect_error "expected cubic, newreno or bbr" --cc=bbr2
expect_error "expected on or off" --gso=maybe
expect_error "--stats=x" --stats=x
expect_error "--drain-timeout=x" --drain-timeout=x
expect_error "--drain-timeout=-1" --drain-timeout=-1
expect_error "--qlog-max-mb=0" --qlog-max-mb=0
expect_error "--qlog-max-mb=lots" --qlog-max-mb=lots
expect_error "--cert and --key go together" --cert=/nonexistent.pem
expect_error "needs a value" --listen
expect_error "invalid CIDR" --backend=dpdk --ip=10.0.0.2/33
expect_error "invalid CIDR" --backend=dpdk --ip=10.0.0.300/24
expect_error "invalid CIDR" --backend=dpdk --ip6=fd00::2/129
expect_error "IPv6 goes in --ip6" --backend=dpdk --ip=fd00::2/64
expect_error "expected an IP address" --backend=dpdk --gateway=10.0.0.1/24
expect_error "apply to --backend=dpdk only" --ip=10.0.0.2/24
expect_error "not a directory" --listen=127.0.0.1:$port --root="$work/missing"
expect_error "not a directory" --listen=127.0.0.1:$port --qlog-dir="$work/missing"
expect_error "/nonexistent/cert.pem" --listen=127.0.0.1:$port --cert=/nonexistent/cert.pem \
  --key=/nonexistent/key.pem

# A certificate file that holds no certificate.
echo "not a certificate" >"$work/junk.pem"
expect_error "junk.pem" --listen=127.0.0.1:$port --cert="$work/junk.pem" --key="$work/junk.pem"

# A key that does not match the certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=a \
  -keyout "$work/a.key" -out "$work/a.pem" >/dev/null 2>&1 || fail "openssl"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/b.key" >/dev/null 2>&1 ||
  fail "openssl"
expect_error "match" --listen=127.0.0.1:$port --cert="$work/a.pem" --key="$work/b.key"

# Fleet flags: server ID, host secrets, ticket keys.
expect_error "--server-id=zz: expected 1 to 8 bytes" --server-id=zz
expect_error "--server-id=abc: expected 1 to 8 bytes" --server-id=abc
expect_error "--server-id=0x01: expected 1 to 8 bytes" --server-id=0x01
expect_error "--server-id=: expected 1 to 8 bytes" --server-id=
expect_error "--server-id=010203040506070809: expected" --server-id=010203040506070809
head -c 32 /dev/urandom >"$work/host.key"
head -c 31 /dev/urandom >"$work/short.key"
head -c 48 /dev/urandom >"$work/ticket48.key"
head -c 47 /dev/urandom >"$work/ticket47.key"
expect_error "--host-key=$work/missing.key" --listen=127.0.0.1:$port --host-key="$work/missing.key"
expect_error "short.key: .*31 bytes" --listen=127.0.0.1:$port --host-key="$work/short.key"
expect_error "--host-key: at most 4" $(for _ in 1 2 3 4 5; do echo --host-key="$work/host.key"; done)
expect_error "--ticket-key=$work/missing.key" --listen=127.0.0.1:$port \
  --ticket-key="$work/missing.key"
expect_error "ticket47.key: .*47 bytes; expected 48 or 80" --listen=127.0.0.1:$port \
  --ticket-key="$work/ticket47.key"
expect_error "--ticket-key: at most 8" \
  $(for _ in 1 2 3 4 5 6 7 8 9; do echo --ticket-key="$work/ticket48.key"; done)

# Good fleet flags: the server starts and its banner says what it took.
"$bin" --listen=127.0.0.1:$port --server-id=0a0b0c --host-key="$work/host.key" \
  --ticket-key="$work/ticket48.key" >"$work/fleet.out" 2>&1 &
fleet_pid=$!
pids+=($fleet_pid)
for _ in $(seq 1 100); do grep -q "server ID" "$work/fleet.out" && break; sleep 0.1; done
grep -q "server ID 0a0b0c" "$work/fleet.out" || fail "banner: $(cat "$work/fleet.out")"
grep -q "host.key" "$work/fleet.out" || fail "banner names no host key: $(cat "$work/fleet.out")"
grep -q "ticket48.key" "$work/fleet.out" || fail "banner names no ticket key"
kill -TERM $fleet_pid
wait $fleet_pid || fail "the fleet-flag server exited $?"

# --metrics: bad addresses, and a TCP port another process listens on.
expect_error "--metrics=nowhere" --metrics=nowhere
expect_error "--metrics=127.0.0.1:99999" --metrics=127.0.0.1:99999
expect_error "--metrics=127.0.0.1:0" --metrics=127.0.0.1:0
expect_error "--metrics=::1:9100" --metrics=::1:9100
expect_error "--metrics needs a value" --metrics
python3 -c "
import os, socket, time
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen()
open('$work/tcp_port.tmp', 'w').write(str(s.getsockname()[1]))
os.rename('$work/tcp_port.tmp', '$work/tcp_port')
time.sleep(30)
" &
pids+=($!)
for _ in $(seq 1 100); do [[ -e $work/tcp_port ]] && break; sleep 0.1; done
[[ -e $work/tcp_port ]] || fail "the TCP port holder did not start"
tcp_port=$(cat "$work/tcp_port")
expect_error "--metrics=127.0.0.1:$tcp_port: Address already in use" --listen=127.0.0.1:$port \
  --metrics=127.0.0.1:$tcp_port

# A port another process holds, even one that set SO_REUSEPORT.
python3 -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(('127.0.0.1', $port))
open('$work/bound', 'w').close()
time.sleep(30)
" &
pids+=($!)
# Bound for sure before the server tries (a loaded machine starts python slowly).
for _ in $(seq 1 100); do [[ -e $work/bound ]] && break; sleep 0.1; done
[[ -e $work/bound ]] || fail "the port holder did not start"
expect_error "Address already in use" --listen=127.0.0.1:$port

echo "dataplane CLI: ok"
