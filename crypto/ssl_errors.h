#pragma once
// Turning BoringSSL's error queue into messages, for start-up errors that name
// what failed ("cert.pem: no certificate in file").

#include <string>
#include <string_view>

namespace dpquic::crypto {

// The most recent BoringSSL error as text; the queue is cleared afterwards.
std::string last_ssl_error();

// Throws std::runtime_error("SOURCE: PROBLEM"). Start-up and configuration
// only: nothing on a packet path throws.
[[noreturn]] void throw_configuration_error(std::string_view source, std::string_view problem);

}  // namespace dpquic::crypto
