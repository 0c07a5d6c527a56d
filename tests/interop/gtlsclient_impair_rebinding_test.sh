#!/usr/bin/env bash
# NAT rebinding done by the network, not by the client: every 2.5 s the
# impairment proxy sends the client's datagrams from a new upstream port and
# closes the old one, during a 30 MB download limited to 40 Mbit/s (about
# 6 s). gtlsclient never notices; our server sees its peer move and must
# follow it to each new address (RFC 9000 section 9.3) on the same
# connection: the file is byte-exact, and the proxy's counters show the
# server's datagrams arriving on the new ports.
source "$(dirname "$0")/interop_lib.sh"
DATAPLANE=$1
IMPAIR=$2

impaired_download "$DATAPLANE" "$IMPAIR" 30000000 --seed=5 --rate-down=40M --rebind-every=2.5
# One line per rebinding, with what the server sent to the port it replaced.
mapfile -t carried < <(sed -n 's/^impair: rebind: .*(\([0-9]*\) datagrams from the server).*/\1/p' \
  "$WORK/impair.log")
[[ ${#carried[@]} -ge 2 ]] || fail "only ${#carried[@]} rebindings during the download"
# The port of the first rebinding carried the server's datagrams until the
# second one: the server followed the client to its new address.
[[ ${carried[0]} -ge 20 ]] || fail "only ${carried[0]} datagrams from the server before the first rebinding"
[[ ${carried[1]} -ge 20 ]] ||
  fail "only ${carried[1]} datagrams from the server on the port after the first rebinding"
echo "gtlsclient through proxy NAT rebinding: ok (${#carried[@]} rebindings; server datagrams per port: ${carried[*]})"
