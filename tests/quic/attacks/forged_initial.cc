#include "tests/quic/attacks/forged_initial.h"

#include <gtest/gtest.h>

#include "crypto/aead_burst.h"
#include "crypto/header_protection.h"
#include "quic/conn/packet_unprotect.h"
#include "quic/wire/frame_codec.h"
#include "quic/wire/header.h"
#include "quic/wire/transport_params.h"
#include "quic/wire/version.h"

namespace dpquic::attacks {

using crypto::EncryptionLevel;
using wire::TransportParameter;

std::vector<uint8_t> client_transport_parameters(const wire::ConnectionId& scid, bool with_scid) {
  wire::TransportParameters params;
  params.initial_max_data = 1 << 20;
  params.mark_present(TransportParameter::kInitialMaxData);
  params.initial_max_stream_data_bidi_local = 1 << 16;
  params.mark_present(TransportParameter::kInitialMaxStreamDataBidiLocal);
  params.initial_max_streams_bidi = 16;
  params.mark_present(TransportParameter::kInitialMaxStreamsBidi);
  params.max_idle_timeout_ms = 30000;
  params.mark_present(TransportParameter::kMaxIdleTimeout);
  if (with_scid) {
    params.initial_source_connection_id = scid;
    params.mark_present(TransportParameter::kInitialSourceConnectionId);
  }
  std::vector<uint8_t> bytes(512);
  wire::ByteWriter writer(bytes);
  EXPECT_TRUE(wire::encode_transport_parameters(params, wire::Role::kClient, writer));
  bytes.resize(writer.position());
  return bytes;
}

ForgedInitial forge_client_initial(const crypto::MbManager& mb, crypto::TlsContext& client_tls,
                                   const wire::ConnectionId& dcid, const wire::ConnectionId& scid,
                                   std::span<const uint8_t> transport_parameters) {
  ForgedInitial out;
  out.keys = std::make_unique<crypto::ConnectionKeys>(mb, wire::Role::kClient, wire::kVersion1);
  if (!out.keys->install_initial_keys(dcid.span())) {
    ADD_FAILURE() << "Initial keys";
    return out;
  }
  out.tls = crypto::TlsSession::create_client(client_tls, *out.keys, "localhost");
  if (!out.tls->set_local_transport_parameters(transport_parameters) || !out.tls->advance()) {
    ADD_FAILURE() << "ClientHello";
    return out;
  }
  const std::span<const uint8_t> hello = out.tls->pending_handshake_data(EncryptionLevel::kInitial);

  // Long header, CRYPTO(ClientHello), PADDING to 1200 bytes (RFC 9000 §14.1).
  std::vector<uint8_t> datagram(wire::kMinInitialDatagramSize);
  wire::ByteWriter writer(datagram);
  wire::LongHeaderFields fields;
  fields.version = wire::kVersion1;
  fields.type = wire::PacketType::kInitial;
  fields.dcid = dcid.span();
  fields.scid = scid.span();
  fields.packet_number = 0;
  fields.packet_number_length = 4;
  wire::EncodedHeader header;
  if (hello.empty() || !wire::encode_long_header(writer, fields, header)) {
    ADD_FAILURE() << "Initial header";
    return out;
  }
  const size_t payload_size = datagram.size() - header.header_size - crypto::kAeadTagLength;
  wire::ByteWriter payload(std::span<uint8_t>(datagram).subspan(header.header_size, payload_size));
  wire::Frame crypto_frame;
  crypto_frame.type = wire::FrameType::kCrypto;
  crypto_frame.crypto = wire::CryptoFrame{0, hello};
  crypto::ProtectOp op;
  op.keys = out.keys->write_keys(EncryptionLevel::kInitial);
  op.packet_number = 0;
  op.packet = datagram;
  op.header_length = header.header_size;
  op.payload = std::span<const uint8_t>(datagram).subspan(header.header_size, payload_size);
  if (!wire::encode_frame(payload, crypto_frame) ||
      !wire::encode_padding(payload, payload.remaining()) ||
      !wire::patch_long_header_length(datagram, header, payload_size + crypto::kAeadTagLength) ||
      crypto::protect(mb, op) != crypto::PacketStatus::kOk) {
    ADD_FAILURE() << "Initial payload";
    return out;
  }
  out.datagram = std::move(datagram);
  return out;
}

void open_server_initials(const crypto::MbManager& mb, crypto::ConnectionKeys& keys,
                          size_t scid_length, std::span<uint8_t> datagram,
                          InitialContents& contents) {
  std::span<uint8_t> rest = datagram;
  while (!rest.empty()) {
    wire::ParsedHeader header;
    if (wire::parse_packet_header(rest, scid_length, header) != wire::WireError::kOk) return;
    std::span<uint8_t> packet = rest.first(header.packet_size);
    rest = rest.subspan(header.packet_size);
    if (!header.long_header || header.type != wire::PacketType::kInitial) continue;
    const crypto::HeaderProtectionKey* hp = keys.read_header_protection(EncryptionLevel::kInitial);
    ASSERT_NE(hp, nullptr);
    wire::PacketNumberFields pn;
    ASSERT_EQ(conn::remove_packet_header_protection(mb, *hp, packet, header, std::nullopt, pn),
              wire::WireError::kOk);
    const auto selection =
        keys.select_read_key(EncryptionLevel::kInitial, false, pn.packet_number, 0);
    ASSERT_NE(selection.key, nullptr);
    std::span<const uint8_t> frames;
    ASSERT_EQ(conn::open_packet_payload(mb, *selection.key, packet, pn, frames),
              crypto::PacketStatus::kOk);
    ++contents.packets;
    wire::FrameDecoder decoder(frames);
    wire::Frame frame;
    while (!decoder.done() && decoder.next(frame) == wire::WireError::kOk) {
      if (frame.type == wire::FrameType::kConnectionCloseTransport && !contents.close_error) {
        contents.close_error = frame.connection_close.error_code;
      }
      if (frame.type == wire::FrameType::kCrypto) contents.crypto = true;
    }
  }
}

}  // namespace dpquic::attacks
