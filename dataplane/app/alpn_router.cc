#include "dataplane/app/alpn_router.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace dpquic::dataplane {

AlpnRouter::AlpnRouter(endpoint::Endpoint& endpoint, size_t max_connections)
    : endpoint_(endpoint), owner_(max_connections, kUnassigned) {}

void AlpnRouter::add(std::string alpn, Application* application) {
  if (routes_.size() >= kUnassigned) throw std::runtime_error("too many ALPN routes");
  routes_.push_back({std::move(alpn), application});
}

uint8_t AlpnRouter::index_of(Application* application) {
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (routes_[i].application == application) return static_cast<uint8_t>(i);
  }
  routes_.push_back({std::string(), application});
  return static_cast<uint8_t>(routes_.size() - 1);
}

void AlpnRouter::assign(endpoint::ConnectionHandle handle, Application* application) {
  if (handle < owner_.size()) owner_[handle] = index_of(application);
}

void AlpnRouter::on_event(Instant now, const endpoint::EndpointEvent& event) {
  if (event.connection >= owner_.size()) {
    ++unrouted_events_;
    return;
  }
  uint8_t& owner = owner_[event.connection];
  if (owner == kUnassigned) {
    const std::string_view alpn = endpoint_.alpn(event.connection);
    for (size_t i = 0; i < routes_.size() && !alpn.empty(); ++i) {
      if (routes_[i].alpn == alpn) owner = static_cast<uint8_t>(i);
    }
  }
  const bool last = event.event.type == conn::ConnectionEventType::kClosed;
  if (owner == kUnassigned) {
    ++unrouted_events_;
    return;
  }
  routes_[owner].application->on_event(now, event);
  if (last) owner = kUnassigned;
}

void AlpnRouter::pump(Instant now) {
  for (const Route& route : routes_) route.application->pump(now);
}

void AlpnRouter::shutdown(Instant now) {
  for (const Route& route : routes_) route.application->shutdown(now);
}

void AlpnRouter::drain(Instant now) {
  for (const Route& route : routes_) route.application->drain(now);
}

Instant AlpnRouter::next_deadline() const {
  Instant deadline = kNever;
  for (const Route& route : routes_) {
    deadline = std::min(deadline, route.application->next_deadline());
  }
  return deadline;
}

bool AlpnRouter::wants_pump() const {
  for (const Route& route : routes_) {
    if (route.application->wants_pump()) return true;
  }
  return false;
}

}  // namespace dpquic::dataplane
