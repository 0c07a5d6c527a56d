#include "tools/flood/initial_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "crypto/aead_burst.h"
#include "crypto/secret_sink.h"
#include "crypto/tls_context.h"
#include "crypto/tls_session.h"
#include "quic/conn/transport_config.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/header.h"
#include "quic/wire/transport_params.h"
#include "quic/wire/varint.h"
#include "quic/wire/version.h"

namespace dpquic::flood {

namespace {

// The client's first flight installs no secrets (no ticket, so no 0-RTT):
// anything else would be a surprise worth failing on.
class NoSecrets final : public crypto::SecretSink {
 public:
  bool install_secret(crypto::EncryptionLevel, crypto::Direction, crypto::CipherSuite,
                      std::span<const uint8_t>) override {
    return false;
  }
};

// Where `needle` occurs in `haystack`; npos unless exactly once.
size_t find_once(std::span<const uint8_t> haystack, std::span<const uint8_t> needle) {
  size_t found = std::string::npos;
  auto it = haystack.begin();
  for (;;) {
    it = std::search(it, haystack.end(), needle.begin(), needle.end());
    if (it == haystack.end()) return found;
    if (found != std::string::npos) return std::string::npos;
    found = static_cast<size_t>(it - haystack.begin());
    ++it;
  }
}

}  // namespace

ClientHelloTemplate make_client_hello_template(const char* server_name) {
  crypto::TlsClientConfig config;
  config.alpn_protocols = {"h3"};
  config.verification = crypto::PeerVerification::kInsecureNoVerify;
  config.early_data_enabled = false;
  auto context = crypto::TlsContext::create_client(config);
  NoSecrets sink;
  impair::Rng random(0x464c4f4f44ull);  // a marker SCID unlikely to occur elsewhere
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::array<uint8_t, kScidLength> marker;
    random.fill(marker);
    auto session = crypto::TlsSession::create_client(*context, sink, server_name);
    wire::TransportParameters params = conn::make_local_transport_parameters(
        conn::TransportConfig{}, wire::Role::kClient, wire::ConnectionId(marker), nullptr, nullptr,
        nullptr, nullptr);
    params.version_information.chosen_version = wire::kVersion1;
    params.version_information.available_versions[0] = wire::kVersion1;
    params.version_information.available_version_count = 1;
    params.mark_present(wire::TransportParameter::kVersionInformation);
    std::array<uint8_t, 512> encoded;
    wire::ByteWriter writer(encoded);
    if (!wire::encode_transport_parameters(params, wire::Role::kClient, writer) ||
        !session->set_local_transport_parameters(writer.written()) || !session->advance()) {
      throw std::runtime_error("flood: TLS could not write a ClientHello: " +
                               session->error_reason());
    }
    const auto flight = session->pending_handshake_data(crypto::EncryptionLevel::kInitial);
    // Handshake header (4) + legacy_version (2) + random (32).
    if (flight.size() < 38 || flight[0] != 1) {
      throw std::runtime_error("flood: TLS wrote no ClientHello");
    }
    ClientHelloTemplate hello;
    hello.bytes.assign(flight.begin(), flight.end());
    hello.random_offset = 6;
    hello.scid_offset = find_once(hello.bytes, marker);
    if (hello.scid_offset != std::string::npos && hello.scid_offset >= 38) return hello;
  }
  throw std::runtime_error("flood: could not locate the SCID in the ClientHello");
}

InitialBuilder::InitialBuilder(const crypto::MbManager& mb, ClientHelloTemplate hello,
                               uint64_t seed)
    : mb_(mb),
      hello_(std::move(hello)),
      hello_scratch_(hello_.bytes),
      keys_(mb, wire::Role::kClient, wire::kVersion1),
      random_(seed) {}

size_t InitialBuilder::valid(std::span<uint8_t> out) {
  if (out.size() < kDatagramSize) return 0;
  std::array<uint8_t, wire::kMaxConnectionIdLength> dcid;
  const size_t dcid_length = 8 + random_.below(13);
  random_.fill({dcid.data(), dcid_length});
  std::array<uint8_t, kScidLength> scid;
  random_.fill(scid);
  // Fresh per packet: the client random and our SCID, echoed in the
  // transport parameters as RFC 9000 §7.3 requires.
  random_.fill({hello_scratch_.data() + hello_.random_offset, 32});
  std::copy(scid.begin(), scid.end(), hello_scratch_.begin() + hello_.scid_offset);

  wire::ByteWriter writer(out.first(kDatagramSize - crypto::kAeadTagLength));
  wire::LongHeaderFields fields;
  fields.version = wire::kVersion1;
  fields.type = wire::PacketType::kInitial;
  fields.dcid = {dcid.data(), dcid_length};
  fields.scid = scid;
  fields.packet_number = 0;
  fields.packet_number_length = 1;
  wire::EncodedHeader header;
  if (!wire::encode_long_header(writer, fields, header) ||
      !wire::encode_crypto_frame(writer, wire::CryptoFrame{0, hello_scratch_}) ||
      !wire::encode_padding(writer, writer.remaining())) {
    return 0;
  }
  const size_t payload_size = writer.position() - header.header_size;
  std::span<uint8_t> packet = out.first(kDatagramSize);
  if (!wire::patch_long_header_length(packet, header, payload_size + crypto::kAeadTagLength) ||
      !keys_.install_initial_keys(fields.dcid)) {
    return 0;
  }
  const crypto::PacketKeys* write = keys_.write_keys(crypto::EncryptionLevel::kInitial);
  if (write == nullptr) return 0;
  crypto::ProtectOp op;
  op.keys = write;
  op.packet_number = 0;
  op.packet = packet;
  op.header_length = header.header_size;
  op.payload = packet.subspan(header.header_size, payload_size);
  return crypto::protect(mb_, op) == crypto::PacketStatus::kOk ? kDatagramSize : 0;
}

size_t InitialBuilder::garbage(std::span<uint8_t> out) {
  if (out.size() < kDatagramSize) return 0;
  std::span<uint8_t> packet = out.first(kDatagramSize);
  random_.fill(packet);
  const size_t dcid_length = 8 + random_.below(13);
  // Long header, fixed bit, type Initial (v1: 0); the low four bits (under
  // header protection in a real packet) stay random, as do both CIDs and
  // everything after the Length.
  packet[0] = static_cast<uint8_t>(0xc0 | (packet[0] & 0x0f));
  packet[5] = static_cast<uint8_t>(dcid_length);
  size_t offset = 6 + dcid_length;
  packet[offset++] = kScidLength;
  offset += kScidLength;
  packet[offset++] = 0;  // token length
  wire::ByteWriter writer(packet.subspan(1));
  wire::ByteWriter length(packet.subspan(offset));
  if (!writer.write_u32(wire::kVersion1) ||
      !length.write_varint_fixed(kDatagramSize - offset - 2, 2)) {
    return 0;
  }
  return kDatagramSize;
}

}  // namespace dpquic::flood
