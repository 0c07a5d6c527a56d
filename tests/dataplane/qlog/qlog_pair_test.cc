// qlog on a whole connection: a perf download between two endpoints of the
// in-memory network, each with a QlogFactory writing into one directory.
// The files are checked against the connections' own counters.

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/qlog/json_writer.h"
#include "dataplane/qlog/qlog_writer.h"
#include "tests/dataplane/qlog/json_value.h"
#include "tools/testbed/perf_app.h"
#include "tools/testbed/quic_pair.h"

namespace dpquic::harness {
namespace {

using dataplane::QlogFactory;
using dataplane::testing::JsonValue;
using dataplane::testing::parse_json;

constexpr uint64_t kDownload = 256 * 1024;

std::string temp_dir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/qlogpairXXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return names;
  while (const dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(handle);
  std::sort(names.begin(), names.end());
  return names;
}

std::string hex(const wire::ConnectionId& id) {
  std::string out;
  dataplane::JsonWriter::append_hex(out, id.span());
  return out;
}

// The records of a JSON-SEQ file, each checked: 0x1E, one JSON text, LF.
std::vector<JsonValue> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  const std::string text = content.str();
  std::vector<JsonValue> records;
  EXPECT_FALSE(text.empty()) << path;
  size_t position = 0;
  while (position < text.size()) {
    if (text[position] != '\x1e') {
      ADD_FAILURE() << path << ": record " << records.size() << " does not start with 0x1E";
      break;
    }
    size_t end = text.find('\x1e', position + 1);
    if (end == std::string::npos) end = text.size();
    const std::string record = text.substr(position + 1, end - position - 1);
    if (record.empty() || record.back() != '\n') {
      ADD_FAILURE() << path << ": record " << records.size() << " does not end in LF";
    }
    auto value = parse_json(record);
    if (!value) {
      ADD_FAILURE() << path << ": record " << records.size() << " is not JSON: " << record;
      break;
    }
    records.push_back(std::move(*value));
    position = end;
  }
  return records;
}

size_t count_named(const std::vector<JsonValue>& records, const std::string& name) {
  return static_cast<size_t>(std::count_if(
      records.begin(), records.end(), [&](const JsonValue& r) { return r["name"].text == name; }));
}

uint64_t sum_raw_length(const std::vector<JsonValue>& records, const std::string& name) {
  uint64_t total = 0;
  for (const JsonValue& r : records) {
    if (r["name"].text == name) total += r["data"]["raw"]["length"].as_uint();
  }
  return total;
}

// Header and event shape common to every trace.
void check_trace(const std::vector<JsonValue>& records, const std::string& vantage,
                 const std::string& odcid) {
  ASSERT_GE(records.size(), 2u);
  const JsonValue& header = records[0];
  EXPECT_EQ(header["qlog_version"].text, "0.3");
  EXPECT_EQ(header["qlog_format"].text, "JSON-SEQ");
  EXPECT_EQ(header["trace"]["vantage_point"]["type"].text, vantage);
  EXPECT_EQ(header["trace"]["common_fields"]["ODCID"].text, odcid);
  EXPECT_EQ(header["trace"]["common_fields"]["time_format"].text, "relative");
  EXPECT_EQ(header["trace"]["common_fields"]["reference_time"].kind, JsonValue::Kind::kNumber);
  double last_time = 0;
  for (size_t i = 1; i < records.size(); ++i) {
    const JsonValue& event = records[i];
    ASSERT_EQ(event["time"].kind, JsonValue::Kind::kNumber) << "event " << i;
    ASSERT_EQ(event["data"].kind, JsonValue::Kind::kObject) << "event " << i;
    EXPECT_GE(event["time"].number, last_time) << "event " << i << " goes back in time";
    last_time = event["time"].number;
    const std::string& name = event["name"].text;
    EXPECT_NE(name.find(':'), std::string::npos) << name;
    if (name == "transport:packet_sent" || name == "transport:packet_received") {
      const JsonValue& data = event["data"];
      EXPECT_TRUE(data["header"].has("packet_type")) << "event " << i;
      EXPECT_TRUE(data["header"].has("packet_number")) << "event " << i;
      EXPECT_GT(data["raw"]["length"].as_uint(), 0u) << "event " << i;
      ASSERT_EQ(data["frames"].kind, JsonValue::Kind::kArray) << "event " << i;
      EXPECT_FALSE(data["frames"].items.empty()) << "event " << i;
      for (const JsonValue& frame : data["frames"].items) {
        EXPECT_TRUE(frame.has("frame_type")) << "event " << i;
        EXPECT_NE(frame["frame_type"].text, "unknown") << "event " << i;
      }
    }
  }
  EXPECT_EQ(records[1]["name"].text, "connectivity:connection_started");
}

struct QlogDownload {
  explicit QlogDownload(PairOptions options = PairOptions())
      : dir(temp_dir()), server_qlog(dir, 0.0), client_qlog(dir, 0.0) {
    options.server.tracer_factory = &server_qlog;
    options.client.tracer_factory = &client_qlog;
    pair = std::make_unique<QuicPair>(options);
    server_app = std::make_unique<PerfServer>(*pair->server);
    client_app = std::make_unique<PerfClient>(*pair->client);
    attach(*pair, *server_app, *client_app);
  }

  std::string dir;
  QlogFactory server_qlog;
  QlogFactory client_qlog;
  std::unique_ptr<QuicPair> pair;
  std::unique_ptr<PerfServer> server_app;
  std::unique_ptr<PerfClient> client_app;
};

TEST(QlogPairTest, OneTracePerConnectionAndSideMatchingTheCounters) {
  QlogDownload d;
  const auto handle = d.pair->connect();
  d.client_app->request(handle, kDownload);
  ASSERT_TRUE(d.pair->run_until([&] { return d.client_app->completed() == 1; }));
  EXPECT_EQ(d.client_app->mismatches(), 0u);

  const conn::Connection* client = d.pair->client_connection(handle);
  const conn::Connection* server = d.pair->server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  const std::string odcid = hex(client->original_dcid());
  EXPECT_EQ(hex(server->original_dcid()), odcid);
  EXPECT_EQ(d.server_qlog.writers_created(), 1u);
  EXPECT_EQ(d.client_qlog.writers_created(), 1u);
  EXPECT_EQ(d.server_qlog.failures() + d.client_qlog.failures(), 0u);

  // Both connections are live: everything so far is in their counters.
  d.server_qlog.flush_all();
  d.client_qlog.flush_all();
  EXPECT_EQ(list_dir(d.dir),
            (std::vector<std::string>{odcid + "_client.sqlog", odcid + "_server.sqlog"}));
  for (const auto& [connection, vantage] :
       {std::pair{client, std::string("client")}, std::pair{server, std::string("server")}}) {
    SCOPED_TRACE(vantage);
    const auto records = read_records(d.dir + "/" + odcid + "_" + vantage + ".sqlog");
    check_trace(records, vantage, odcid);
    const conn::ConnectionStats& stats = connection->stats();
    EXPECT_EQ(count_named(records, "transport:packet_sent"), stats.packets_sent);
    EXPECT_EQ(count_named(records, "transport:packet_received"), stats.packets_received);
    EXPECT_EQ(count_named(records, "transport:packet_dropped"), stats.packets_dropped);
    EXPECT_EQ(count_named(records, "recovery:packet_lost"), stats.packets_lost);
    // Packets fill their datagrams exactly, padding included.
    EXPECT_EQ(sum_raw_length(records, "transport:packet_sent"), stats.bytes_sent);
    EXPECT_EQ(count_named(records, "transport:parameters_set"), 2u);
    EXPECT_GE(count_named(records, "recovery:metrics_updated"), 1u);
    std::set<std::string> states;
    for (const JsonValue& r : records) {
      if (r["name"].text == "connectivity:connection_state_updated") {
        states.insert(r["data"]["new"].text);
      }
    }
    EXPECT_EQ(states, (std::set<std::string>{"handshake_complete", "handshake_confirmed"}));
  }

  // The client's first packet: an Initial carrying the ClientHello.
  const auto client_records = read_records(d.dir + "/" + odcid + "_client.sqlog");
  const JsonValue* first_sent = nullptr;
  uint64_t stream_bytes_received = 0;
  for (const JsonValue& r : client_records) {
    if (r["name"].text == "transport:packet_sent" && first_sent == nullptr) first_sent = &r;
    if (r["name"].text != "transport:packet_received") continue;
    for (const JsonValue& frame : r["data"]["frames"].items) {
      if (frame["frame_type"].text == "stream" && frame["stream_id"].as_uint() == 0) {
        stream_bytes_received += frame["length"].as_uint();
      }
    }
  }
  ASSERT_NE(first_sent, nullptr);
  EXPECT_EQ((*first_sent)["data"]["header"]["packet_type"].text, "initial");
  EXPECT_EQ((*first_sent)["data"]["header"]["packet_number"].as_uint(), 0u);
  EXPECT_GE((*first_sent)["data"]["raw"]["length"].as_uint(), 1200u);
  EXPECT_EQ((*first_sent)["data"]["frames"].items[0]["frame_type"].text, "crypto");
  EXPECT_EQ((*first_sent)["data"]["frames"].items[0]["offset"].as_uint(), 0u);
  // Every byte of the response arrived in STREAM frames the trace shows.
  EXPECT_EQ(stream_bytes_received, kDownload);

  // Close: the connections end, the endpoints release the writers, and the
  // files end with the close.
  d.pair->client->close(d.pair->simulator->now(), handle, 0, "done");
  ASSERT_TRUE(d.pair->run_until([&] {
    return d.pair->client->connection_count() == 0 && d.pair->server->connection_count() == 0;
  }));
  EXPECT_EQ(d.server_qlog.live_writers(), 0u);
  EXPECT_EQ(d.client_qlog.live_writers(), 0u);
  for (const std::string vantage : {"client", "server"}) {
    SCOPED_TRACE(vantage);
    const auto records = read_records(d.dir + "/" + odcid + "_" + vantage + ".sqlog");
    check_trace(records, vantage, odcid);
    const JsonValue* closed = nullptr;
    for (const JsonValue& r : records) {
      if (r["name"].text == "connectivity:connection_closed") {
        EXPECT_EQ(closed, nullptr) << "closed twice";
        closed = &r;
      }
    }
    ASSERT_NE(closed, nullptr);
    EXPECT_EQ((*closed)["data"]["owner"].text, vantage == "client" ? "local" : "remote");
    EXPECT_EQ((*closed)["data"]["application_code"].as_uint(), 0u);
    EXPECT_EQ((*closed)["data"]["trigger"].text, "application");
    EXPECT_EQ(records.back()["name"].text, "connectivity:connection_state_updated");
    EXPECT_EQ(records.back()["data"]["new"].text, "closed");
  }
}

TEST(QlogPairTest, LostPacketsAppearAsPacketLost) {
  LinkConfig lossy;
  lossy.one_way_delay = 10 * kMillisecond;
  lossy.drop_indices = {8, 9, 15};  // server datagrams in the middle of the download
  PairOptions options;
  options.server_to_client = lossy;
  QlogDownload d(options);
  const auto handle = d.pair->connect();
  d.client_app->request(handle, kDownload);
  ASSERT_TRUE(d.pair->run_until([&] { return d.client_app->completed() == 1; }));
  EXPECT_EQ(d.client_app->mismatches(), 0u);
  const conn::Connection* server = d.pair->server_connection();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(server->stats().packets_lost, 0u);
  d.server_qlog.flush_all();

  const std::string path = d.dir + "/" + hex(server->original_dcid()) + "_server.sqlog";
  const auto records = read_records(path);
  check_trace(records, "server", hex(server->original_dcid()));
  EXPECT_EQ(count_named(records, "recovery:packet_lost"), server->stats().packets_lost);
  EXPECT_EQ(count_named(records, "transport:packet_sent"), server->stats().packets_sent);
  // Each lost packet was sent before, with the same type and number.
  std::set<std::pair<std::string, uint64_t>> sent;
  for (const JsonValue& r : records) {
    const JsonValue& header = r["data"]["header"];
    const auto key = std::pair{header["packet_type"].text, header["packet_number"].as_uint()};
    if (r["name"].text == "transport:packet_sent") sent.insert(key);
    if (r["name"].text == "recovery:packet_lost") {
      EXPECT_EQ(sent.count(key), 1u) << key.first << " " << key.second << " lost, never sent";
    }
  }
}

size_t count_key_updates(const std::vector<JsonValue>& records, const std::string& trigger) {
  return static_cast<size_t>(std::count_if(records.begin(), records.end(), [&](const JsonValue& r) {
    return r["name"].text == "security:key_updated" && r["data"]["trigger"].text == trigger;
  }));
}

TEST(QlogPairTest, RetryKeepsTheOriginalDcidAndKeyUpdatesAreLogged) {
  PairOptions options;
  options.server.retry.mode = endpoint::RetryMode::kAlways;
  options.client.connection.key_update_interval_packets = 40;
  QlogDownload d(options);
  const auto handle = d.pair->connect();
  d.client_app->request(handle, kDownload);
  ASSERT_TRUE(d.pair->run_until([&] { return d.client_app->completed() == 1; }));
  EXPECT_EQ(d.pair->server->stats().retries_sent, 1u);
  const conn::Connection* client = d.pair->client_connection(handle);
  const conn::Connection* server = d.pair->server_connection();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  ASSERT_GT(client->stats().key_updates_initiated, 0u);
  d.server_qlog.flush_all();
  d.client_qlog.flush_all();

  // Both traces are named after the client's very first DCID, the one the
  // Retry answered, not the DCID the client used after it.
  const std::string odcid = hex(client->original_dcid());
  EXPECT_EQ(hex(server->original_dcid()), odcid);
  EXPECT_EQ(list_dir(d.dir),
            (std::vector<std::string>{odcid + "_client.sqlog", odcid + "_server.sqlog"}));
  const auto client_records = read_records(d.dir + "/" + odcid + "_client.sqlog");
  const auto server_records = read_records(d.dir + "/" + odcid + "_server.sqlog");
  check_trace(client_records, "client", odcid);
  check_trace(server_records, "server", odcid);
  // Each update is logged for both secrets: ours, started by the client and
  // answered by the server.
  EXPECT_EQ(count_key_updates(client_records, "local_update"),
            2 * client->stats().key_updates_initiated);
  EXPECT_EQ(count_key_updates(client_records, "remote_update"),
            2 * (client->stats().key_updates - client->stats().key_updates_initiated));
  EXPECT_EQ(count_key_updates(server_records, "remote_update"),
            2 * (server->stats().key_updates - server->stats().key_updates_initiated));
  EXPECT_GT(count_key_updates(server_records, "remote_update"), 0u);
  EXPECT_EQ(count_named(client_records, "transport:packet_sent"), client->stats().packets_sent);
  EXPECT_EQ(count_named(client_records, "transport:packet_received"),
            client->stats().packets_received);
  EXPECT_EQ(count_named(server_records, "transport:packet_received"),
            server->stats().packets_received);
  // The server learnt the original DCID from the Retry token: its transport
  // parameters carry it.
  bool odcid_sent = false;
  for (const JsonValue& r : server_records) {
    if (r["name"].text == "transport:parameters_set" && r["data"]["owner"].text == "local") {
      odcid_sent = r["data"]["original_destination_connection_id"].text == odcid &&
                   r["data"].has("retry_source_connection_id");
    }
  }
  EXPECT_TRUE(odcid_sent);
}

TEST(QlogPairTest, WithoutAFactoryNoTracerIsAttached) {
  QuicPair pair;
  PerfServer server_app(*pair.server);
  PerfClient client_app(*pair.client);
  attach(pair, server_app, client_app);
  const auto handle = pair.connect();
  client_app.request(handle, 16 * 1024);
  ASSERT_TRUE(pair.run_until([&] { return client_app.completed() == 1; }));
  ASSERT_NE(pair.client_connection(handle), nullptr);
  EXPECT_EQ(pair.client_connection(handle)->tracer(), nullptr);
  ASSERT_NE(pair.server_connection(), nullptr);
  EXPECT_EQ(pair.server_connection()->tracer(), nullptr);
}

}  // namespace
}  // namespace dpquic::harness
