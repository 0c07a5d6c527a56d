#include "tools/quicload/load_report.h"

#include <gtest/gtest.h>

#include <string>

namespace dpquic::tools {
namespace {

LoadSummary sample_summary() {
  LoadSummary s;
  s.connections = 4;
  s.streams = 8;
  s.cores = 2;
  s.duration_sec = 2.0;
  s.counters.connections_opened = 5;
  s.counters.handshakes = 4;
  s.counters.handshakes_failed = 1;
  s.counters.resumed = 3;
  s.counters.zero_rtt_offered = 2;
  s.counters.zero_rtt_accepted = 1;
  s.counters.requests_ok = 990;
  s.counters.requests_failed = 10;
  s.counters.requests_not_sent = 4;
  s.counters.requests_abandoned = 2;
  s.counters.bytes_received = 250'000'000;  // 1 Gbps over 2 s
  s.counters.bytes_sent = 77;
  s.counters.count(ErrorKind::kHandshakeTimeout);
  for (int i = 0; i < 6; ++i) s.counters.count(ErrorKind::kMismatch);
  // Tops of their buckets (2^k - 1), so percentiles are these exact values.
  for (int i = 0; i < 50; ++i) s.latency.record((1u << 20) - 1);  // 1.049 ms
  for (int i = 0; i < 49; ++i) s.latency.record((1u << 22) - 1);  // 4.194 ms
  s.latency.record((1u << 24) - 1);                               // 16.777 ms
  s.handshake.record((1u << 21) - 1);                             // 2.097 ms
  s.source_ports = 4;
  return s;
}

TEST(LoadReportTest, JsonHasTheStableKeysAndValues) {
  const std::string json = format_report_json(sample_summary());
  EXPECT_EQ(json,
            "{\"mode\":\"requests\",\"backend\":\"udp\",\"duration_sec\":2.000000,"
            "\"connections\":4,\"streams\":8,\"cores\":2,\"connections_opened\":5,"
            "\"handshakes\":4,\"handshakes_failed\":1,\"handshakes_per_sec\":2.000,"
            "\"resumed\":3,\"zero_rtt_offered\":2,\"zero_rtt_accepted\":1,"
            "\"requests_ok\":990,\"requests_failed\":10,\"requests_not_sent\":4,"
            "\"requests_abandoned\":2,\"requests_retried_after_goaway\":0,\"goaways\":0,"
            "\"connections_refused_after_goaway\":0,\"source_ports\":4,"
            "\"bytes_received\":250000000,\"bytes_sent\":77,"
            "\"goodput_gbps\":1.000000,\"latency_p50_ms\":1.049,\"latency_p99_ms\":4.194,"
            "\"latency_max_ms\":16.777,\"latency_mean_ms\":2.747,\"handshake_p50_ms\":2.097,"
            "\"handshake_p99_ms\":2.097,\"errors\":{\"handshake_timeout\":1,\"refused\":0,"
            "\"reset\":0,\"mismatch\":6,\"closed\":0,\"protocol\":0,\"status\":0}}");
}

TEST(LoadReportTest, JsonOfAnEmptyRunHasEveryKeyAtZero) {
  LoadSummary s;
  s.mode = "handshakes";
  s.backend = "dpdk";
  const std::string json = format_report_json(s);
  for (const char* key :
       {"\"duration_sec\":0.000000", "\"connections\":0", "\"handshakes\":0",
        "\"handshakes_per_sec\":0.000", "\"requests_ok\":0", "\"requests_failed\":0",
        "\"bytes_received\":0", "\"bytes_sent\":0", "\"goodput_gbps\":0.000000",
        "\"latency_p50_ms\":0.000", "\"latency_p99_ms\":0.000", "\"latency_max_ms\":0.000",
        "\"errors\":{\"handshake_timeout\":0,\"refused\":0,\"reset\":0,\"mismatch\":0,"
        "\"closed\":0,\"protocol\":0,\"status\":0}",
        "\"mode\":\"handshakes\"", "\"backend\":\"dpdk\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  }
}

TEST(LoadReportTest, TextReport) {
  const std::string text = format_report_text(sample_summary());
  EXPECT_NE(text.find("quicload: requests, 4 connections x 8 streams on 2 cores (udp)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("duration       2.000 s"), std::string::npos) << text;
  EXPECT_NE(text.find("4 ok, 1 failed (2.0/s); resumed 3, 0-RTT offered 2, accepted 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("990 ok, 10 failed (4 never sent), 2 abandoned"), std::string::npos);
  EXPECT_NE(text.find("goodput 1.000 Gbps"), std::string::npos);
  EXPECT_NE(text.find("p50 1.049 ms, p99 4.194 ms, max 16.777 ms, mean 2.747 ms (100 samples)"),
            std::string::npos);
  EXPECT_NE(text.find("handshake_timeout 1, refused 0, reset 0, mismatch 6, closed 0, protocol 0, "
                      "status 0\n"),
            std::string::npos)
      << text;
}

TEST(LoadReportTest, GoawayFiguresAndSourcePorts) {
  LoadSummary s = sample_summary();
  EXPECT_EQ(format_report_text(s).find("goaway "), std::string::npos);
  s.counters.goaways = 3;
  s.counters.requests_retried_after_goaway = 17;
  s.counters.connections_refused_after_goaway = 2;
  const std::string json = format_report_json(s);
  for (const char* key : {"\"requests_retried_after_goaway\":17", "\"goaways\":3",
                          "\"connections_refused_after_goaway\":2", "\"source_ports\":4"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  }
  const std::string text = format_report_text(s);
  EXPECT_NE(text.find("  goaway         3 connections retired, 17 requests sent again, 2 new "
                      "connections refused while draining\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  source ports   4\n"), std::string::npos) << text;
  LoadCounters sum;
  sum.add(s.counters);
  sum.add(s.counters);
  EXPECT_EQ(sum.requests_retried_after_goaway, 34u);
  EXPECT_EQ(sum.goaways, 6u);
  EXPECT_EQ(sum.connections_refused_after_goaway, 4u);
  // Retried requests and refusals while draining are not failures.
  LoadCounters retried;
  retried.connections_opened = 3;
  retried.handshakes = 2;
  retried.requests_ok = 5;
  retried.requests_retried_after_goaway = 4;
  retried.connections_refused_after_goaway = 1;
  EXPECT_EQ(exit_code_for(retried), 0);
}

TEST(LoadReportTest, ProgressLine) {
  LoadCounters before, now;
  before.bytes_received = 0;
  before.handshakes = 10;
  now.bytes_received = 125'000'000;  // 1 Gbps over 1 s
  now.handshakes = 30;
  now.requests_ok = 40;
  now.requests_failed = 2;
  now.count(ErrorKind::kReset);
  now.count(ErrorKind::kReset);
  LatencyHistogram latency;
  latency.record(2'000'000);
  EXPECT_EQ(format_progress(3.0, 1.0, 100, false, now, before, latency),
            "[    3.0s] requests 42/100  goodput 1.000 Gbps  handshakes 20.0/s  errors 2  "
            "p50 2.000 ms  p99 2.000 ms");
  EXPECT_EQ(format_progress(3.0, 1.0, 0, true, now, before, latency),
            "[    3.0s] handshakes 30  goodput 1.000 Gbps  handshakes 20.0/s  errors 2  "
            "p50 2.000 ms  p99 2.000 ms");
}

TEST(LoadReportTest, CountersAddUp) {
  LoadCounters a, b;
  a.requests_ok = 1;
  a.count(ErrorKind::kClosed);
  b.requests_ok = 2;
  b.bytes_received = 5;
  b.count(ErrorKind::kClosed);
  b.count(ErrorKind::kProtocol);
  a.add(b);
  EXPECT_EQ(a.requests_ok, 3u);
  EXPECT_EQ(a.bytes_received, 5u);
  EXPECT_EQ(a.errors[static_cast<size_t>(ErrorKind::kClosed)], 2u);
  EXPECT_EQ(a.error_total(), 3u);
}

TEST(LoadReportTest, ExitCodes) {
  LoadCounters ok;
  ok.connections_opened = 1;
  ok.handshakes = 1;
  ok.requests_ok = 5;
  EXPECT_EQ(exit_code_for(ok), 0);
  LoadCounters failed = ok;
  failed.requests_failed = 1;
  failed.count(ErrorKind::kMismatch);
  EXPECT_EQ(exit_code_for(failed), 1);
  LoadCounters handshake = ok;
  handshake.handshakes_failed = 1;
  handshake.count(ErrorKind::kHandshakeTimeout);
  EXPECT_EQ(exit_code_for(handshake), 1);
  LoadCounters silent;  // tried, never connected (a timed run ended first)
  silent.connections_opened = 3;
  EXPECT_EQ(exit_code_for(silent), 1);
  EXPECT_EQ(std::string(error_key(ErrorKind::kHandshakeTimeout)), "handshake_timeout");
  EXPECT_EQ(std::string(error_key(ErrorKind::kStatus)), "status");
}

}  // namespace
}  // namespace dpquic::tools
