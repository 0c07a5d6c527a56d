"""What the browser test reads after the fact: the server's qlog files
(did any connection end with an error?) and Chromium's net log (where did it
send data, how did its QUIC sessions close)."""

import glob
import json
import os

H3_NO_ERROR = 0x100


def qlog_connections(qlog_dir):
    """{file name: [connection_closed data, ...]} of the qlog files."""
    found = {}
    for path in sorted(glob.glob(os.path.join(qlog_dir, "*.sqlog"))):
        closes = []
        with open(path, errors="replace") as f:
            for record in f.read().split("\x1e"):
                try:
                    event = json.loads(record)
                except ValueError:
                    continue
                if event.get("name") == "connectivity:connection_closed":
                    closes.append(event.get("data", {}))
        found[os.path.basename(path)] = closes
    return found


def close_problem(close):
    """Why a connection_closed event is an error, or None when it is clean:
    NO_ERROR (transport), H3_NO_ERROR (application), or an idle timeout."""
    trigger = close.get("trigger")
    if trigger in ("stateless_reset", "handshake_timeout", "version_mismatch"):
        return trigger
    if close.get("connection_code", 0) != 0:
        return "%s transport error 0x%x %s" % (close.get("owner"), close["connection_code"],
                                              close.get("reason", ""))
    if "application_code" in close and close["application_code"] != H3_NO_ERROR:
        return "%s application error 0x%x %s" % (close.get("owner"), close["application_code"],
                                                 close.get("reason", ""))
    return None


def check_qlog(qlog_dir, report):
    connections = qlog_connections(qlog_dir)
    problems = []
    for name, closes in connections.items():
        if not closes:
            problems.append("%s: no connection_closed event" % name)
        for close in closes:
            why = close_problem(close)
            if why:
                problems.append("%s: %s" % (name, why.strip()))
    if not connections:
        detail = "no qlog files: no connection reached the server"
    elif problems:
        detail = "%d connection(s), %d problem(s): %s" % (len(connections), len(problems),
                                                          "; ".join(problems[:5]))
    else:
        detail = "%d connection(s), all closed cleanly" % len(connections)
    report.add("no connection ended with an error (server qlog)",
               bool(connections) and not problems, detail)


# --- Chromium's net log ---------------------------------------------------------


def read_netlog(path):
    """(events, {type number: name}) of Chromium's net log; the log may lack
    its closing brackets if Chromium was killed. None when unreadable."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    for ending in ("", "]}", "{}]}"):
        try:
            log = json.loads(text.rstrip().rstrip(",") + ending)
            break
        except ValueError:
            continue
    else:
        return None
    names = {v: k for k, v in log.get("constants", {}).get("logEventTypes", {}).items()}
    return log.get("events", []), names


def netlog_sent_to(path):
    """{address: bytes sent} of every UDP socket and every TCP connection
    attempt in the net log that sent data. (A UDP socket that only
    connect()s, as Chromium's IPv6 reachability probe does, sends nothing.)"""
    log = read_netlog(path)
    if log is None:
        return None
    events, names = log
    address_of = {}
    for event in events:
        params = event.get("params") or {}
        if names.get(event.get("type")) in ("UDP_CONNECT", "TCP_CONNECT_ATTEMPT") and \
                "address" in params:
            address_of[event["source"]["id"]] = params["address"]
    sent = {}
    for event in events:
        if names.get(event.get("type")) in ("UDP_BYTES_SENT", "SOCKET_BYTES_SENT"):
            address = address_of.get(event["source"]["id"], "(unknown)")
            sent[address] = sent.get(address, 0) + (event.get("params") or {}).get("byte_count", 0)
    return sent


def check_destinations(net_log, hosts, report):
    """Chromium sent data to the origins' hosts only (the net log's sockets)."""
    sent = netlog_sent_to(net_log)
    if sent is None:
        report.add("Chromium talked only to the server", False, "net log unreadable")
        return
    allowed = {h.strip("[]") for h in hosts}
    others = sorted(a for a in sent if a.rsplit(":", 1)[0].strip("[]") not in allowed)
    report.add("Chromium talked only to the server", bool(sent) and not others,
               "sent to %s, expected only %s" % (", ".join(sorted(sent)) or "nobody",
                                                 " or ".join(sorted(allowed))))


def netlog_quic_closes(path):
    """The QUIC session close events of Chromium's net log, as text lines."""
    log = read_netlog(path)
    if log is None:
        return ["(net log unreadable)"]
    events, names = log
    counts = {}
    for event in events:
        name = names.get(event.get("type"), "")
        if name in ("QUIC_SESSION_CLOSE_ON_ERROR", "QUIC_SESSION_CONNECTION_CLOSE_FRAME_RECEIVED",
                    "QUIC_SESSION_CONNECTION_CLOSE_FRAME_SENT", "QUIC_SESSION_CLOSED"):
            line = "%s %s" % (name, json.dumps(event.get("params", {}), sort_keys=True))
            counts[line] = counts.get(line, 0) + 1
    return ["%dx %s" % (n, line) for line, n in counts.items()]
