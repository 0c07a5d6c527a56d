// H3Server: what the client may open (stream limits for nghttp3), the order
// responses are sent in (RFC 9218 priorities, applied by the transport's
// stream scheduler), and the graceful stop (RFC 9114 §5.2).

#include <nghttp3/nghttp3.h>

#include <algorithm>

#include "dataplane/app/h3_server_state.h"

namespace dpquic::dataplane {

namespace {

// Between the GOAWAY announcing a stop and the final one, requests the
// client sent before it saw the first still arrive and are served: two
// round trips, plus the ACK delay a peer may add.
Duration final_goaway_delay(Duration smoothed_rtt) { return 2 * smoothed_rtt + 25 * kMillisecond; }

}  // namespace

void H3Server::sync_stream_limit(Connection& connection) {
  // nghttp3 answers a PRIORITY_UPDATE naming a request stream beyond this
  // cumulative count with H3_ID_ERROR (RFC 9218 §7.1).
  const uint64_t limit = endpoint_.peer_stream_limit(connection.session.handle(),
                                                     conn::StreamDirection::kBidirectional);
  nghttp3_conn_set_max_client_streams_bidi(connection.session.conn(), limit);
}

void H3Server::apply_priority(Connection& connection, Request& request) {
  // Also once the whole response is queued: the transport may still hold it.
  nghttp3_pri pri{};
  if (nghttp3_conn_get_stream_priority(connection.session.conn(), &pri, request.stream_id) != 0) {
    return;
  }
  conn::StreamPriority priority;
  priority.urgency = static_cast<uint8_t>(std::min<uint32_t>(pri.urgency, NGHTTP3_URGENCY_LOW));
  priority.incremental = pri.inc != 0;
  if (request.priority_set && request.priority == priority) return;
  if (endpoint_.set_stream_priority(connection.session.handle(),
                                    static_cast<uint64_t>(request.stream_id), priority)) {
    request.priority = priority;
    request.priority_set = true;
  }
}

void H3Server::apply_priorities(Connection& connection) {
  for (auto& entry : connection.requests) apply_priority(connection, *entry.second);
}

void H3Server::drain(Instant now) {
  draining_ = true;
  for (auto& connection : connections_) {
    if (connection) send_goaway(now, *connection);
  }
}

void H3Server::send_goaway(Instant now, Connection& connection) {
  H3Session& session = connection.session;
  if (session.failed() || !session.bound() || connection.goaway_notice_sent) return;
  const int rv = nghttp3_conn_submit_shutdown_notice(session.conn());
  if (rv != 0) return fail(now, connection, rv);
  connection.goaway_notice_sent = true;
  connection.final_goaway_at = now + final_goaway_delay(endpoint_.smoothed_rtt(session.handle()));
  next_drain_step_ = std::min(next_drain_step_, connection.final_goaway_at);
  mark_ready(connection);
}

void H3Server::advance_drain(Instant now) {
  next_drain_step_ = kNever;
  for (auto& owned : connections_) {
    if (!owned || owned->session.failed()) continue;
    Connection& connection = *owned;
    if (!connection.goaway_notice_sent) {
      send_goaway(now, connection);  // bound since the drain began, or not yet
    } else if (!connection.final_goaway_sent) {
      send_final_goaway(now, connection);
    } else {
      close_when_idle(now, connection);
    }
  }
}

void H3Server::send_final_goaway(Instant now, Connection& connection) {
  if (now < connection.final_goaway_at) {
    next_drain_step_ = std::min(next_drain_step_, connection.final_goaway_at);
    return;
  }
  const int rv = nghttp3_conn_shutdown(connection.session.conn());
  if (rv != 0) return fail(now, connection, rv);
  connection.final_goaway_sent = true;
  mark_ready(connection);
}

void H3Server::close_when_idle(Instant now, Connection& connection) {
  // Every request settled and every response acknowledged, then idle.
  H3Session& session = connection.session;
  if (!connection.requests.empty() ||
      endpoint_.peer_open_streams(session.handle(), conn::StreamDirection::kBidirectional) != 0) {
    connection.idle_since = kNever;
    return;
  }
  if (connection.idle_since == kNever) connection.idle_since = now;
  const Instant close_at = connection.idle_since + kDrainIdleGrace;
  if (now < close_at) {
    next_drain_step_ = std::min(next_drain_step_, close_at);
    return;
  }
  session.fail_with_code(now, NGHTTP3_H3_NO_ERROR, "server draining");
}

}  // namespace dpquic::dataplane
