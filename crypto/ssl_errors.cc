#include "crypto/ssl_errors.h"

#include <openssl/err.h>

#include <stdexcept>

namespace dpquic::crypto {

std::string last_ssl_error() {
  const uint32_t code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof(buffer));
  return buffer;
}

void throw_configuration_error(std::string_view source, std::string_view problem) {
  std::string message(source);
  message += ": ";
  message += problem;
  throw std::runtime_error(message);
}

}  // namespace dpquic::crypto
