#pragma once
// The TLS server's certificate chain and private key: loaded from PEM files
// or generated in memory (self-signed ECDSA P-256) when none is configured.
//
// Start-up only: every failure throws std::runtime_error whose message names
// the file and the problem.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dpquic::crypto {

enum class KeyType : uint8_t { kEcdsaP256, kEd25519, kRsa };

const char* to_string(KeyType type);

class CertificateChain {
 public:
  // Reads the chain (leaf first, then intermediates) from `certificate_path`
  // and the private key from `key_path` (which may be the same file). The key
  // must be ECDSA P-256, Ed25519 or RSA (>= 2048 bits) and must match the
  // leaf certificate.
  static CertificateChain load_pem_files(const std::string& certificate_path,
                                         const std::string& key_path);

  // Same checks on PEM text already in memory; `certificate_source` and
  // `key_source` name where the text came from, for error messages.
  static CertificateChain from_pem(std::string_view certificate_pem,
                                   std::string_view certificate_source, std::string_view key_pem,
                                   std::string_view key_source);

  // A fresh ECDSA P-256 key and a self-signed certificate for it: random
  // 128-bit serial, valid from one hour ago (clock skew) for 365 days,
  // subject CN=`common_name`, subjectAltName DNS:localhost, IP:127.0.0.1 and
  // IP:::1, extendedKeyUsage serverAuth, basicConstraints CA:FALSE.
  static CertificateChain generate_self_signed(std::string_view common_name = "localhost");

  CertificateChain(CertificateChain&&) noexcept = default;
  CertificateChain& operator=(CertificateChain&&) noexcept = default;
  ~CertificateChain() = default;

  // Borrowed pointers; valid while this object lives.
  X509* leaf() const { return chain_.front().get(); }
  const std::vector<bssl::UniquePtr<X509>>& chain() const { return chain_; }
  EVP_PKEY* private_key() const { return key_.get(); }
  KeyType key_type() const { return key_type_; }

  // SHA-256 of the leaf's DER encoding as upper-case hex bytes joined by ':'
  // ("AB:CD:..."), the form `openssl x509 -fingerprint -sha256` prints.
  std::string sha256_fingerprint() const;

  // The leaf certificate as PEM text, e.g. to hand to a client as its trust
  // anchor in tests.
  std::string leaf_pem() const;

 private:
  CertificateChain(std::vector<bssl::UniquePtr<X509>> chain, bssl::UniquePtr<EVP_PKEY> key,
                   KeyType key_type);

  std::vector<bssl::UniquePtr<X509>> chain_;
  bssl::UniquePtr<EVP_PKEY> key_;
  KeyType key_type_;
};

// Every CERTIFICATE block in `pem` (other blocks are skipped), in order.
// Throws naming `source` if there is none or one is malformed.
std::vector<bssl::UniquePtr<X509>> parse_pem_certificates(std::string_view pem,
                                                          std::string_view source);

// Reads a whole file; throws std::runtime_error naming the file and the OS
// error if it cannot be opened or read.
std::string read_file_or_throw(const std::string& path, std::string_view what);

}  // namespace dpquic::crypto
