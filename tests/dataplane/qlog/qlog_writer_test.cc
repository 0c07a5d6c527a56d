// The qlog writer alone: frames as qlog JSON (exact text), the JSON-SEQ
// records it writes for hooks called directly, and the factory's start-up
// checks and failure counting.

#include "dataplane/qlog/qlog_writer.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/qlog/json_writer.h"
#include "dataplane/qlog/qlog_frames.h"
#include "quic/wire/frame_codec.h"
#include "tests/dataplane/qlog/json_value.h"

namespace dpquic::dataplane {
namespace {

using testing::JsonValue;
using testing::parse_json;

std::string temp_dir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/qlogXXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// Splits a JSON-SEQ text into its records, checking each is 0x1E, a JSON
// text and LF (RFC 7464).
std::vector<JsonValue> parse_records(const std::string& text) {
  std::vector<JsonValue> records;
  size_t position = 0;
  while (position < text.size()) {
    EXPECT_EQ(text[position], '\x1e') << "record " << records.size() << " has no RS";
    const size_t end = text.find('\x1e', position + 1);
    const std::string record =
        text.substr(position + 1, (end == std::string::npos ? text.size() : end) - position - 1);
    EXPECT_FALSE(record.empty());
    EXPECT_EQ(record.back(), '\n') << "record " << records.size() << " does not end in LF";
    auto value = parse_json(record);
    EXPECT_TRUE(value.has_value()) << "invalid JSON: " << record;
    if (value) records.push_back(*value);
    if (end == std::string::npos) break;
    position = end;
  }
  return records;
}

std::string frames_json(std::span<const uint8_t> payload, uint64_t exponent = 3) {
  std::string out;
  JsonWriter json(out);
  write_qlog_frames(json, payload, exponent);
  return out;
}

TEST(QlogFramesTest, FramesAsQlogObjects) {
  std::array<uint8_t, 256> buffer{};
  wire::ByteWriter writer(buffer);
  const std::array<wire::AckRange, 2> ranges = {wire::AckRange{10, 12}, wire::AckRange{5, 7}};
  ASSERT_TRUE(wire::encode_ack_frame(writer, ranges, 100));
  const std::array<uint8_t, 5> data = {1, 2, 3, 4, 5};
  wire::StreamFrame stream;
  stream.stream_id = 4;
  stream.offset = 1000;
  stream.data = data;
  stream.fin = true;
  ASSERT_TRUE(wire::encode_stream_frame(writer, stream));
  ASSERT_TRUE(wire::encode_crypto_frame(writer, wire::CryptoFrame{0, std::span(data).first(3)}));
  wire::Frame frame;
  frame.type = wire::FrameType::kMaxStreamsUni;
  frame.max_streams.maximum_streams = 7;
  ASSERT_TRUE(wire::encode_frame(writer, frame));
  frame.type = wire::FrameType::kConnectionCloseTransport;
  frame.connection_close = wire::ConnectionCloseFrame{};
  frame.connection_close.error_code = 0x0a;
  frame.connection_close.frame_type = 0x08;
  static constexpr uint8_t kReason[] = {'b', '"', '\\', '\n', 0xff};
  frame.connection_close.reason_phrase = kReason;
  ASSERT_TRUE(wire::encode_frame(writer, frame));

  EXPECT_EQ(frames_json(writer.written()),
            "\"frames\":[{\"frame_type\":\"ack\",\"ack_delay\":0.800,"
            "\"acked_ranges\":[[10,12],[5,7]]},"
            "{\"frame_type\":\"stream\",\"stream_id\":4,\"offset\":1000,\"length\":5,"
            "\"fin\":true},"
            "{\"frame_type\":\"crypto\",\"offset\":0,\"length\":3},"
            "{\"frame_type\":\"max_streams\",\"stream_type\":\"unidirectional\",\"maximum\":7},"
            "{\"frame_type\":\"connection_close\",\"error_space\":\"transport\","
            "\"error_code\":10,\"raw_error_code\":10,"
            "\"reason\":\"b\\\"\\\\\\u000a\\u00ff\",\"trigger_frame_type\":8}]");
  // Valid JSON whatever the peer's reason phrase held.
  const auto parsed = parse_json("{" + frames_json(writer.written()) + "}");
  ASSERT_TRUE(parsed);
  EXPECT_EQ((*parsed)["frames"].items[4]["reason"].text, "b\"\\\n\xc3\xbf");
}

TEST(QlogFramesTest, PaddingAndAckEcnAndExponent) {
  std::array<uint8_t, 64> buffer{};
  wire::ByteWriter writer(buffer);
  const std::array<wire::AckRange, 1> ranges = {wire::AckRange{0, 3}};
  const wire::EcnCounts ecn{4, 0, 1};
  ASSERT_TRUE(wire::encode_ack_frame(writer, ranges, 2, &ecn));
  ASSERT_TRUE(wire::encode_padding(writer, 3));
  // Exponent 10: 2 * 1024 us.
  EXPECT_EQ(frames_json(writer.written(), 10),
            "\"frames\":[{\"frame_type\":\"ack\",\"ack_delay\":2.048,\"acked_ranges\":[[0,3]],"
            "\"ect0\":4,\"ect1\":0,\"ce\":1},{\"frame_type\":\"padding\",\"length\":3}]");
}

TEST(QlogFramesTest, MalformedFrameEndsTheListAsUnknown) {
  // PING, then a STREAM frame whose Length runs past the payload.
  const std::array<uint8_t, 5> payload = {0x01, 0x0a, 0x00, 0x09, 0x41};
  EXPECT_EQ(frames_json(payload),
            "\"frames\":[{\"frame_type\":\"ping\"},{\"frame_type\":\"unknown\"}]");
}

conn::TracedStart start_of(wire::Role role) {
  conn::TracedStart start;
  start.role = role;
  start.version = 1;
  start.path.local = conn::SocketAddress::ipv4(10, 0, 0, 2, 443);
  start.path.remote = conn::SocketAddress::ipv4(10, 0, 0, 1, 50000);
  const std::array<uint8_t, 4> odcid = {0xde, 0xad, 0xbe, 0xef};
  const std::array<uint8_t, 2> local = {0x01, 0x02};
  const std::array<uint8_t, 1> peer = {0x03};
  start.original_dcid = wire::ConnectionId(odcid);
  start.local_cid = wire::ConnectionId(local);
  start.peer_cid = wire::ConnectionId(peer);
  return start;
}

TEST(QlogWriterTest, HeaderAndEventsAsJsonSeq) {
  const std::string dir = temp_dir();
  {
    QlogWriter writer(dir, 1000.0);
    // Started at 5 ms of the caller's clock: reference_time 1005 ms.
    writer.on_connection_started(5 * kMillisecond, start_of(wire::Role::kServer));
    EXPECT_EQ(writer.path(), dir + "/deadbeef_server.sqlog");
    EXPECT_TRUE(writer.is_open());
    std::array<uint8_t, 1> ping = {0x01};
    std::array<uint8_t, 2> ping_padding = {0x01, 0x00};
    // Built 0 and 1; only 1 reported sent (0's burst failed): 1 gets its own frames.
    writer.on_packet_built(6 * kMillisecond, wire::PacketType::kInitial, 0, ping);
    writer.on_packet_built(6 * kMillisecond, wire::PacketType::kOneRtt, 1, ping_padding);
    writer.on_packet_sent(6 * kMillisecond + 500 * kMicrosecond, wire::PacketType::kOneRtt, 1,
                          1200);
    conn::RecoveryMetrics metrics;
    metrics.congestion_window = 12000;
    metrics.bytes_in_flight = 1200;
    writer.on_metrics_updated(7 * kMillisecond, metrics);
    writer.on_metrics_updated(7 * kMillisecond, metrics);  // unchanged: not logged
    metrics.bytes_in_flight = 0;
    metrics.latest_rtt = metrics.min_rtt = metrics.smoothed_rtt = 20 * kMillisecond;
    metrics.rtt_variance = 10 * kMillisecond;
    writer.on_metrics_updated(8 * kMillisecond, metrics);
    writer.on_packet_lost(9 * kMillisecond, wire::PacketType::kHandshake, 3);
    writer.on_key_updated(10 * kMillisecond, 1, false);
    writer.on_state_changed(11 * kMillisecond, conn::TracedState::kClosing);
    writer.on_state_changed(11 * kMillisecond, conn::TracedState::kClosed);
    conn::TracedClose close;
    close.trigger = conn::TracedCloseTrigger::kTransportError;
    close.error_code = 0x0a;
    close.reason = "bad frame";
    writer.on_connection_closed(11 * kMillisecond, close);
    writer.on_packet_dropped(12 * kMillisecond, true, wire::PacketType::kOneRtt, 50,
                             conn::PacketDropReason::kDecryptionFailure);
  }
  const std::string text = read_file(dir + "/deadbeef_server.sqlog");
  const std::string expected =
      "\x1e{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"dpquic qlog\","
      "\"trace\":{\"title\":\"deadbeef\",\"vantage_point\":{\"name\":\"dpquic\",\"type\":"
      "\"server\"},\"common_fields\":{\"ODCID\":\"deadbeef\",\"group_id\":\"deadbeef\","
      "\"protocol_type\":[\"QUIC\"],\"time_format\":\"relative\",\"reference_time\":1005.000},"
      "\"configuration\":{\"time_offset\":0.000}}}\n"
      "\x1e{\"time\":0.000,\"name\":\"connectivity:connection_started\",\"data\":{"
      "\"ip_version\":\"ipv4\",\"src_ip\":\"10.0.0.2\",\"dst_ip\":\"10.0.0.1\","
      "\"protocol\":\"QUIC\",\"src_port\":443,\"dst_port\":50000,\"src_cid\":\"0102\","
      "\"dst_cid\":\"03\"}}\n"
      "\x1e{\"time\":0.000,\"name\":\"transport:version_information\",\"data\":{"
      "\"chosen_version\":\"00000001\"}}\n"
      "\x1e{\"time\":1.500,\"name\":\"transport:packet_sent\",\"data\":{\"header\":{"
      "\"packet_type\":\"1RTT\",\"packet_number\":1},\"raw\":{\"length\":1200},"
      "\"frames\":[{\"frame_type\":\"ping\"},{\"frame_type\":\"padding\",\"length\":1}]}}\n"
      "\x1e{\"time\":2.000,\"name\":\"recovery:metrics_updated\",\"data\":{"
      "\"congestion_window\":12000,\"bytes_in_flight\":1200}}\n"
      "\x1e{\"time\":3.000,\"name\":\"recovery:metrics_updated\",\"data\":{"
      "\"min_rtt\":20.000,\"smoothed_rtt\":20.000,\"latest_rtt\":20.000,"
      "\"rtt_variance\":10.000,\"bytes_in_flight\":0}}\n"
      "\x1e{\"time\":4.000,\"name\":\"recovery:packet_lost\",\"data\":{\"header\":{"
      "\"packet_type\":\"handshake\",\"packet_number\":3}}}\n"
      "\x1e{\"time\":5.000,\"name\":\"security:key_updated\",\"data\":{"
      "\"key_type\":\"client_1rtt_secret\",\"generation\":1,\"trigger\":\"remote_update\"}}\n"
      "\x1e{\"time\":5.000,\"name\":\"security:key_updated\",\"data\":{"
      "\"key_type\":\"server_1rtt_secret\",\"generation\":1,\"trigger\":\"remote_update\"}}\n"
      "\x1e{\"time\":6.000,\"name\":\"connectivity:connection_state_updated\",\"data\":{"
      "\"new\":\"closing\"}}\n"
      "\x1e{\"time\":6.000,\"name\":\"connectivity:connection_state_updated\",\"data\":{"
      "\"old\":\"closing\",\"new\":\"closed\"}}\n"
      "\x1e{\"time\":6.000,\"name\":\"connectivity:connection_closed\",\"data\":{"
      "\"owner\":\"local\",\"connection_code\":10,\"reason\":\"bad frame\","
      "\"trigger\":\"error\"}}\n"
      "\x1e{\"time\":7.000,\"name\":\"transport:packet_dropped\",\"data\":{\"header\":{"
      "\"packet_type\":\"1RTT\"},\"raw\":{\"length\":50},\"trigger\":\"payload_decrypt_error\"}}\n";
  EXPECT_EQ(text, expected);
  EXPECT_EQ(parse_records(text).size(), 13u);
}

// BBR's model rides on recovery:metrics_updated (pacing_rate and the
// bandwidth estimate in bits per second, its min RTT), and its state
// machine on recovery:congestion_state_updated.
TEST(QlogWriterTest, CongestionStateAndModel) {
  const std::string dir = temp_dir();
  {
    QlogWriter writer(dir, 1000.0);
    writer.on_connection_started(0, start_of(wire::Role::kServer));
    writer.on_congestion_state_updated(kMillisecond, "", "startup");
    conn::RecoveryMetrics metrics;
    metrics.congestion_window = 14720;
    metrics.pacing_rate = 1'000'000;
    metrics.bandwidth_estimate = 500'000;
    metrics.model_min_rtt = 40 * kMillisecond;
    writer.on_metrics_updated(2 * kMillisecond, metrics);
    metrics.bandwidth_estimate = 600'000;
    writer.on_metrics_updated(3 * kMillisecond, metrics);  // only the estimate changed
    writer.on_congestion_state_updated(4 * kMillisecond, "startup", "drain");
  }
  const std::string text = read_file(dir + "/deadbeef_server.sqlog");
  EXPECT_NE(text.find("\"name\":\"recovery:congestion_state_updated\",\"data\":{"
                      "\"new\":\"startup\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"congestion_window\":14720,\"bytes_in_flight\":0,\"pacing_rate\":8000000,"
                      "\"bandwidth_estimate\":4000000,\"model_min_rtt\":40.000}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"recovery:metrics_updated\",\"data\":{\"bandwidth_estimate\":4800000}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"recovery:congestion_state_updated\",\"data\":{\"old\":\"startup\","
                      "\"new\":\"drain\"}"),
            std::string::npos)
      << text;
}

TEST(QlogWriterTest, ParametersSetNamesOwnerAndValues) {
  const std::string dir = temp_dir();
  {
    QlogWriter writer(dir, 0.0);
    writer.on_connection_started(0, start_of(wire::Role::kClient));
    wire::TransportParameters params;
    params.initial_max_data = 1 << 20;
    params.ack_delay_exponent = 5;
    params.mark_present(wire::TransportParameter::kInitialMaxData);
    params.mark_present(wire::TransportParameter::kAckDelayExponent);
    const std::array<uint8_t, 3> scid = {7, 8, 9};
    params.initial_source_connection_id = wire::ConnectionId(scid);
    params.mark_present(wire::TransportParameter::kInitialSourceConnectionId);
    writer.on_parameters_set(0, false, params);
    // The peer's ACKs now scale by 2^5 us.
    const std::array<uint8_t, 5> ack = {0x02, 0x00, 0x01, 0x00, 0x00};  // largest 0, delay 1
    writer.on_packet_received(kMillisecond, wire::PacketType::kHandshake, 0, 60, ack);
  }
  const auto records = parse_records(read_file(dir + "/deadbeef_client.sqlog"));
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0]["trace"]["vantage_point"]["type"].text, "client");
  const JsonValue& params = records[3]["data"];
  EXPECT_EQ(records[3]["name"].text, "transport:parameters_set");
  EXPECT_EQ(params["owner"].text, "remote");
  EXPECT_EQ(params["initial_max_data"].as_uint(), 1u << 20);
  EXPECT_EQ(params["ack_delay_exponent"].as_uint(), 5u);
  EXPECT_EQ(params["initial_source_connection_id"].text, "070809");
  EXPECT_FALSE(params.has("original_destination_connection_id"));
  const JsonValue& received = records[4]["data"];
  EXPECT_EQ(records[4]["name"].text, "transport:packet_received");
  EXPECT_EQ(received["header"]["packet_type"].text, "handshake");
  EXPECT_EQ(received["raw"]["length"].as_uint(), 60u);
  EXPECT_EQ(received["frames"].items[0]["ack_delay"].text, "0.032");
}

TEST(QlogWriterTest, SameOriginalDcidNeverOverwritesAnotherConnectionsFile) {
  const std::string dir = temp_dir();
  QlogWriter first(dir, 0.0);
  first.on_connection_started(0, start_of(wire::Role::kServer));
  first.on_packet_lost(1, wire::PacketType::kOneRtt, 7);
  first.flush();
  const std::string first_text = read_file(dir + "/deadbeef_server.sqlog");
  ASSERT_FALSE(first_text.empty());
  {
    QlogWriter second(dir, 0.0);
    second.on_connection_started(0, start_of(wire::Role::kServer));
    EXPECT_EQ(second.path(), dir + "/deadbeef_server_2.sqlog");
    QlogWriter third(dir, 0.0);
    third.on_connection_started(0, start_of(wire::Role::kServer));
    EXPECT_EQ(third.path(), dir + "/deadbeef_server_3.sqlog");
    EXPECT_TRUE(second.is_open());
    EXPECT_TRUE(third.is_open());
    EXPECT_FALSE(third.failed());
  }
  EXPECT_EQ(first.path(), dir + "/deadbeef_server.sqlog");
  EXPECT_EQ(read_file(dir + "/deadbeef_server.sqlog"), first_text);
  EXPECT_EQ(parse_records(read_file(dir + "/deadbeef_server_2.sqlog")).size(),
            parse_records(read_file(dir + "/deadbeef_server_3.sqlog")).size());
  // The client's file of the same ODCID is a name of its own.
  QlogWriter client(dir, 0.0);
  client.on_connection_started(0, start_of(wire::Role::kClient));
  EXPECT_EQ(client.path(), dir + "/deadbeef_client.sqlog");
}

TEST(QlogFactoryTest, RejectsWhatIsNotAWritableDirectory) {
  const std::string dir = temp_dir();
  EXPECT_THROW(QlogFactory(dir + "/missing"), std::runtime_error);
  const std::string file = dir + "/file";
  std::ofstream(file) << "x";
  try {
    QlogFactory factory(file);
    ADD_FAILURE() << "a regular file was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("is not a directory"), std::string::npos);
  }
  EXPECT_NO_THROW(QlogFactory factory(dir));
}

TEST(QlogFactoryTest, OpenFailureIsCountedOnceAndNotFatal) {
  const std::string dir = temp_dir();
  QlogFactory factory(dir, 0.0);
  ASSERT_EQ(rmdir(dir.c_str()), 0);  // gone after start-up
  conn::ConnectionTracer* tracer = factory.create_tracer(wire::Role::kServer);
  auto* writer = static_cast<QlogWriter*>(tracer);
  writer->on_connection_started(0, start_of(wire::Role::kServer));
  writer->on_packet_lost(1, wire::PacketType::kOneRtt, 1);  // nothing to write to: ignored
  writer->flush();
  EXPECT_FALSE(writer->is_open());
  EXPECT_TRUE(writer->failed());
  EXPECT_EQ(writer->records_written(), 0u);
  EXPECT_EQ(factory.failures(), 1u);
  EXPECT_EQ(factory.live_writers(), 1u);
  factory.release_tracer(tracer);
  EXPECT_EQ(factory.live_writers(), 0u);
  EXPECT_EQ(factory.writers_created(), 1u);
  EXPECT_EQ(factory.failures(), 1u);
}

// A factory whose byte budget runs out: the writer that crosses it stops
// after its last whole record (the file stays valid JSON-SEQ), later
// connections get no file at all, and the total written stays within the
// budget.
TEST(QlogFactoryTest, ByteBudgetBoundsAllFiles) {
  const std::string dir = temp_dir();
  QlogFactory factory(dir, 0.0);
  constexpr uint64_t kBudget = 4096;
  factory.set_byte_budget(kBudget);
  std::vector<conn::ConnectionTracer*> tracers;
  for (uint8_t i = 0; i < 40; ++i) {
    conn::ConnectionTracer* tracer = factory.create_tracer(wire::Role::kServer);
    tracers.push_back(tracer);
    conn::TracedStart start = start_of(wire::Role::kServer);
    const std::array<uint8_t, 4> odcid = {0x0b, 0x0d, 0x9e, i};
    start.original_dcid = wire::ConnectionId(odcid);
    tracer->on_connection_started(0, start);
    for (uint64_t pn = 0; pn < 20; ++pn) tracer->on_packet_lost(1, wire::PacketType::kOneRtt, pn);
  }
  EXPECT_LE(factory.bytes_written(), kBudget);
  EXPECT_GT(factory.bytes_written(), kBudget / 2);  // it did fill up
  EXPECT_EQ(factory.failures(), 0u);
  for (conn::ConnectionTracer* tracer : tracers) factory.release_tracer(tracer);

  // Files on disk: fewer than the connections, every one valid, all within
  // the budget.
  size_t files = 0;
  uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    const std::string text = read_file(entry.path().string());
    bytes += text.size();
    EXPECT_FALSE(parse_records(text).empty()) << entry.path();
  }
  EXPECT_GT(files, 0u);
  EXPECT_LT(files, 40u);
  EXPECT_EQ(bytes, factory.bytes_written());
  // Every connection without a file, and the one the budget ran out in.
  EXPECT_GE(factory.over_budget_writers(), 40u - files);
  EXPECT_LE(factory.over_budget_writers(), 40u - files + 1);
}

}  // namespace
}  // namespace dpquic::dataplane
