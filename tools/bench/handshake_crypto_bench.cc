// The server's handshake crypto limit on one core: how many TLS 1.3
// handshakes per second the public-key operations alone allow.
//
// A server handshake with an ECDSA P-256 certificate and X25519 key exchange
// costs one CertificateVerify signature (ECDSA over SHA-256, through
// EVP_DigestSign as BoringSSL's TLS stack does it), one X25519 key pair and
// one X25519 shared secret. The limit is 1 / (t_sign + t_keygen + t_shared).
//
// Usage: handshake_crypto_bench [--cpu=N] [--seconds=S] [--repetitions=R]
// Prints human lines and one line "JSON {...}" with p256_sign_per_sec,
// x25519_keygen_per_sec, x25519_shared_per_sec, handshake_crypto_limit_per_sec
// (medians over the repetitions), plus cpu, seconds and repetitions.

#include <openssl/crypto.h>
#include <openssl/curve25519.h>
#include <openssl/digest.h>
#include <openssl/ec.h>
#include <openssl/ec_key.h>
#include <openssl/evp.h>
#include <openssl/nid.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr char kUsage[] =
    "usage: handshake_crypto_bench [--cpu=N] [--seconds=S] [--repetitions=R]\n"
    "\n"
    "Measures, on one core, the public-key operations of a TLS 1.3 server\n"
    "handshake with BoringSSL: ECDSA P-256 CertificateVerify signatures\n"
    "(EVP_DigestSign, SHA-256), X25519 key generation and X25519 shared\n"
    "secrets, and the derived limit 1 / (t_sign + t_keygen + t_shared).\n"
    "\n"
    "  --cpu=N          pin to CPU N first (sched_setaffinity); default: unpinned\n"
    "  --seconds=S      time per measurement (default 1.0)\n"
    "  --repetitions=R  measurements per operation, interleaved; the median is\n"
    "                   reported (default 5)\n"
    "  --help           this text\n"
    "\n"
    "Output: human lines, then one line \"JSON {...}\" with the keys\n"
    "p256_sign_per_sec, x25519_keygen_per_sec, x25519_shared_per_sec,\n"
    "handshake_crypto_limit_per_sec, cpu, seconds, repetitions.\n";

struct Options {
  std::optional<int> cpu;
  double seconds = 1.0;
  int repetitions = 5;
  bool help = false;
};

bool parse_number(std::string_view text, double& out) {
  if (text.empty()) return false;
  const std::string copy(text);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
}

std::optional<Options> parse_options(int argc, char** argv, std::string& error) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    double value = 0;
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg.starts_with("--cpu=")) {
      if (!parse_number(arg.substr(6), value) || value < 0 || value >= CPU_SETSIZE ||
          value != static_cast<int>(value)) {
        error = "bad --cpu: " + std::string(arg);
        return std::nullopt;
      }
      options.cpu = static_cast<int>(value);
    } else if (arg.starts_with("--seconds=")) {
      if (!parse_number(arg.substr(10), value) || !(value > 0) || value > 3600) {
        error = "bad --seconds: " + std::string(arg);
        return std::nullopt;
      }
      options.seconds = value;
    } else if (arg.starts_with("--repetitions=")) {
      if (!parse_number(arg.substr(14), value) || value < 1 || value > 1000 ||
          value != static_cast<int>(value)) {
        error = "bad --repetitions: " + std::string(arg);
        return std::nullopt;
      }
      options.repetitions = static_cast<int>(value);
    } else {
      error = "unknown argument: " + std::string(arg) + " (see --help)";
      return std::nullopt;
    }
  }
  return options;
}

// Keeps results observable so the operations cannot be optimised away.
volatile uint8_t g_sink = 0;

// Operations per second of `operation`, run in batches until `seconds` pass.
double measure(const std::function<void()>& operation, double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  uint64_t count = 0;
  auto now = start;
  do {
    for (int i = 0; i < 16; ++i) operation();
    count += 16;
    now = Clock::now();
  } while (now < deadline);
  return static_cast<double>(count) / std::chrono::duration<double>(now - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// The TLS 1.3 CertificateVerify input (RFC 8446, 4.4.3): 64 spaces, the
// context string, a zero byte and a SHA-256 transcript hash.
std::vector<uint8_t> certificate_verify_input() {
  static constexpr std::string_view kContext = "TLS 1.3, server CertificateVerify";
  std::vector<uint8_t> input(64 + kContext.size() + 1 + 32, 0x20);
  std::memcpy(input.data() + 64, kContext.data(), kContext.size());
  input[64 + kContext.size()] = 0;
  for (size_t i = 0; i < 32; ++i)
    input[64 + kContext.size() + 1 + i] = static_cast<uint8_t>(0xa0 + i);
  return input;
}

struct SigningKey {
  bssl::UniquePtr<EVP_PKEY> key;
};

SigningKey make_p256_key() {
  bssl::UniquePtr<EC_KEY> ec(EC_KEY_new_by_curve_name(NID_X9_62_prime256v1));
  if (!ec || !EC_KEY_generate_key(ec.get())) return {};
  bssl::UniquePtr<EVP_PKEY> key(EVP_PKEY_new());
  if (!key || !EVP_PKEY_set1_EC_KEY(key.get(), ec.get())) return {};
  return {std::move(key)};
}

// One signature as the TLS stack makes it: a fresh context per signature.
size_t sign_once(EVP_PKEY* key, const std::vector<uint8_t>& input,
                 std::array<uint8_t, 80>& signature) {
  bssl::ScopedEVP_MD_CTX context;
  size_t length = signature.size();
  if (!EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key) ||
      !EVP_DigestSign(context.get(), signature.data(), &length, input.data(), input.size())) {
    std::fprintf(stderr, "handshake_crypto_bench: ECDSA signing failed\n");
    std::exit(1);
  }
  return length;
}

bool verify_once(EVP_PKEY* key, const std::vector<uint8_t>& input, const uint8_t* signature,
                 size_t length) {
  bssl::ScopedEVP_MD_CTX context;
  return EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr, key) &&
         EVP_DigestVerify(context.get(), signature, length, input.data(), input.size());
}

// Pins this thread to `cpu`; false, with the reason on stderr, when it
// cannot.
bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    std::fprintf(stderr, "handshake_crypto_bench: cannot pin to CPU %d: %s\n", cpu,
                 std::strerror(errno));
    return false;
  }
  return true;
}

// Signs `input` once into `signature`; true when the signature verifies.
bool sign_and_verify(EVP_PKEY* key, const std::vector<uint8_t>& input,
                     std::array<uint8_t, 80>& signature) {
  const size_t length = sign_once(key, input, signature);
  return verify_once(key, input, signature.data(), length);
}

// Makes the peer's key pair, then ours; true when both sides derive the same
// shared secret from them.
bool make_x25519_pairs(uint8_t peer_public[32], uint8_t peer_private[32], uint8_t own_public[32],
                       uint8_t own_private[32]) {
  X25519_keypair(peer_public, peer_private);
  X25519_keypair(own_public, own_private);
  uint8_t shared[32];
  uint8_t peer_shared[32];
  return X25519(shared, own_private, peer_public) &&
         X25519(peer_shared, peer_private, own_public) &&
         std::memcmp(shared, peer_shared, sizeof(shared)) == 0;
}

// Operations per second, the medians over the repetitions.
struct Rates {
  double sign = 0;
  double keygen = 0;
  double shared = 0;
};

// A warm-up, then the repetitions interleaved so drifts hit every operation.
Rates measure_rates(const std::function<void()>& sign, const std::function<void()>& keygen,
                    const std::function<void()>& agree, const Options& options) {
  measure(sign, std::min(0.1, options.seconds));
  std::vector<double> sign_rates;
  std::vector<double> keygen_rates;
  std::vector<double> shared_rates;
  for (int r = 0; r < options.repetitions; ++r) {
    sign_rates.push_back(measure(sign, options.seconds));
    keygen_rates.push_back(measure(keygen, options.seconds));
    shared_rates.push_back(measure(agree, options.seconds));
  }
  return {median(sign_rates), median(keygen_rates), median(shared_rates)};
}

void print_rates(const Rates& rates, const Options& options) {
  const double sign_per_sec = rates.sign;
  const double keygen_per_sec = rates.keygen;
  const double shared_per_sec = rates.shared;
  const double limit = 1.0 / (1.0 / sign_per_sec + 1.0 / keygen_per_sec + 1.0 / shared_per_sec);

  std::printf("ECDSA P-256 sign (SHA-256):  %10.0f /s  %8.2f us\n", sign_per_sec,
              1e6 / sign_per_sec);
  std::printf("X25519 key generation:       %10.0f /s  %8.2f us\n", keygen_per_sec,
              1e6 / keygen_per_sec);
  std::printf("X25519 shared secret:        %10.0f /s  %8.2f us\n", shared_per_sec,
              1e6 / shared_per_sec);
  std::printf("handshake crypto limit:      %10.0f handshakes/s (sign + keygen + shared)\n", limit);
  std::printf(
      "JSON {\"p256_sign_per_sec\": %.1f, \"x25519_keygen_per_sec\": %.1f, "
      "\"x25519_shared_per_sec\": %.1f, \"handshake_crypto_limit_per_sec\": %.1f, "
      "\"cpu\": %d, \"pinned\": %s, \"seconds\": %.3f, \"repetitions\": %d}\n",
      sign_per_sec, keygen_per_sec, shared_per_sec, limit, sched_getcpu(),
      options.cpu ? "true" : "false", options.seconds, options.repetitions);
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's BoringSSL runs its CPU feature detection here, not in a static
  // initializer: without it X25519 takes the generic code path.
  CRYPTO_library_init();
  std::string error;
  const std::optional<Options> options = parse_options(argc, argv, error);
  if (!options) {
    std::fprintf(stderr, "handshake_crypto_bench: %s\n", error.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (options->cpu && !pin_to_cpu(*options->cpu)) return 2;

  const SigningKey signing_key = make_p256_key();
  if (!signing_key.key) {
    std::fprintf(stderr, "handshake_crypto_bench: cannot generate a P-256 key\n");
    return 1;
  }
  const std::vector<uint8_t> input = certificate_verify_input();
  std::array<uint8_t, 80> signature{};
  // The measured operation must produce real, valid signatures.
  if (!sign_and_verify(signing_key.key.get(), input, signature)) {
    std::fprintf(stderr, "handshake_crypto_bench: the signature does not verify\n");
    return 1;
  }

  uint8_t peer_public[32];
  uint8_t peer_private[32];
  uint8_t own_public[32];
  uint8_t own_private[32];
  if (!make_x25519_pairs(peer_public, peer_private, own_public, own_private)) {
    std::fprintf(stderr, "handshake_crypto_bench: X25519 self-check failed\n");
    return 1;
  }
  uint8_t shared[32];

  const std::function<void()> sign = [&] {
    sign_once(signing_key.key.get(), input, signature);
    g_sink = g_sink ^ signature[8];
  };
  const std::function<void()> keygen = [&] {
    X25519_keypair(own_public, own_private);
    g_sink = g_sink ^ own_public[0];
  };
  const std::function<void()> agree = [&] {
    if (!X25519(shared, own_private, peer_public)) std::abort();
    g_sink = g_sink ^ shared[0];
  };

  std::printf("handshake_crypto_bench: CPU %d%s, %d x %.2f s per operation (median)\n",
              sched_getcpu(), options->cpu ? " (pinned)" : " (unpinned)", options->repetitions,
              options->seconds);
  std::fflush(stdout);
  print_rates(measure_rates(sign, keygen, agree, *options), *options);
  return 0;
}
