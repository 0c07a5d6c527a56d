#include "crypto/certificates.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/bytestring.h>
#include <openssl/ec.h>
#include <openssl/ec_key.h>
#include <openssl/err.h>
#include <openssl/nid.h>
#include <openssl/obj.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "crypto/ssl_errors.h"

namespace dpquic::crypto {
namespace {

constexpr int kMinRsaBits = 2048;
constexpr long kNotBeforeSkewSeconds = 60 * 60;
constexpr long kValiditySeconds = 365L * 24 * 60 * 60;

bool last_error_is_no_pem_block() {
  uint32_t code = ERR_peek_last_error();
  return ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE;
}

bssl::UniquePtr<BIO> memory_bio(std::string_view text) {
  return bssl::UniquePtr<BIO>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Refuses to prompt for a passphrase: encrypted keys are reported instead.
int no_passphrase(char*, int, int, void*) { return 0; }

bool contains_pem_header(std::string_view text) {
  return text.find("-----BEGIN ") != std::string_view::npos;
}

std::vector<bssl::UniquePtr<X509>> parse_certificates(std::string_view pem,
                                                      std::string_view source) {
  if (!contains_pem_header(pem))
    throw_configuration_error(source, "not a PEM file (no \"-----BEGIN\" line)");
  bssl::UniquePtr<BIO> bio = memory_bio(pem);
  std::vector<bssl::UniquePtr<X509>> chain;
  ERR_clear_error();
  while (true) {
    // Blocks of other types (e.g. a key in a combined file) are skipped.
    bssl::UniquePtr<X509> certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (certificate == nullptr) {
      if (last_error_is_no_pem_block()) {
        ERR_clear_error();
        break;
      }
      throw_configuration_error(source, "malformed CERTIFICATE block #" +
                                            std::to_string(chain.size() + 1) + ": " +
                                            last_ssl_error());
    }
    chain.push_back(std::move(certificate));
  }
  if (chain.empty()) throw_configuration_error(source, "no CERTIFICATE block found");
  return chain;
}

bssl::UniquePtr<EVP_PKEY> parse_private_key(std::string_view pem, std::string_view source) {
  bssl::UniquePtr<BIO> bio = memory_bio(pem);
  ERR_clear_error();
  bssl::UniquePtr<EVP_PKEY> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (key != nullptr) return key;
  if (pem.find("ENCRYPTED") != std::string_view::npos) {
    ERR_clear_error();
    throw_configuration_error(
        source, "encrypted private keys are not supported; store the key unencrypted");
  }
  if (last_error_is_no_pem_block()) {
    ERR_clear_error();
    throw_configuration_error(
        source,
        "no private key block found (expected PRIVATE KEY, EC PRIVATE KEY or RSA "
        "PRIVATE KEY)");
  }
  throw_configuration_error(source, "malformed private key: " + last_ssl_error());
}

KeyType classify_key(EVP_PKEY* key, std::string_view source) {
  switch (EVP_PKEY_id(key)) {
    case EVP_PKEY_EC: {
      const EC_GROUP* group = EC_KEY_get0_group(EVP_PKEY_get0_EC_KEY(key));
      int curve = group == nullptr ? NID_undef : EC_GROUP_get_curve_name(group);
      if (curve != NID_X9_62_prime256v1) {
        const char* name = OBJ_nid2sn(curve);
        throw_configuration_error(source, std::string("unsupported key type: ECDSA on curve ") +
                                              (name != nullptr ? name : "unknown") +
                                              " (only P-256 is supported)");
      }
      return KeyType::kEcdsaP256;
    }
    case EVP_PKEY_ED25519: return KeyType::kEd25519;
    case EVP_PKEY_RSA:
      if (EVP_PKEY_bits(key) < kMinRsaBits) {
        throw_configuration_error(
            source, "unsupported key type: RSA key of " + std::to_string(EVP_PKEY_bits(key)) +
                        " bits (at least " + std::to_string(kMinRsaBits) + " required)");
      }
      return KeyType::kRsa;
    default: {
      const char* name = OBJ_nid2sn(EVP_PKEY_id(key));
      throw_configuration_error(source, std::string("unsupported key type ") +
                                            (name != nullptr ? name : "unknown") +
                                            " (supported: ECDSA P-256, Ed25519, RSA)");
    }
  }
}

void add_extension(X509* certificate, int nid, void* value, bool critical) {
  if (X509_add1_ext_i2d(certificate, nid, value, critical ? 1 : 0, X509V3_ADD_DEFAULT) != 1) {
    throw_configuration_error(
        "self-signed certificate",
        "cannot add extension " + std::string(OBJ_nid2sn(nid)) + ": " + last_ssl_error());
  }
}

void add_subject_alt_names(X509* certificate) {
  std::unique_ptr<GENERAL_NAMES, decltype(&GENERAL_NAMES_free)> names(sk_GENERAL_NAME_new_null(),
                                                                      GENERAL_NAMES_free);
  auto push = [&](int type, ASN1_STRING* value) {
    GENERAL_NAME* name = GENERAL_NAME_new();
    if (name == nullptr || value == nullptr) {
      GENERAL_NAME_free(name);
      ASN1_STRING_free(value);
      throw_configuration_error("self-signed certificate", "out of memory building subjectAltName");
    }
    GENERAL_NAME_set0_value(name, type, value);
    if (sk_GENERAL_NAME_push(names.get(), name) == 0) {
      GENERAL_NAME_free(name);
      throw_configuration_error("self-signed certificate", "out of memory building subjectAltName");
    }
  };
  auto string_value = [](int asn1_type, const void* data, size_t length) -> ASN1_STRING* {
    ASN1_STRING* value = ASN1_STRING_type_new(asn1_type);
    if (value != nullptr && ASN1_STRING_set(value, data, static_cast<int>(length)) != 1) {
      ASN1_STRING_free(value);
      return nullptr;
    }
    return value;
  };
  static constexpr char kDnsName[] = "localhost";
  static constexpr uint8_t kIpv4Loopback[4] = {127, 0, 0, 1};
  static constexpr uint8_t kIpv6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  push(GEN_DNS, string_value(V_ASN1_IA5STRING, kDnsName, sizeof(kDnsName) - 1));
  push(GEN_IPADD, string_value(V_ASN1_OCTET_STRING, kIpv4Loopback, sizeof(kIpv4Loopback)));
  push(GEN_IPADD, string_value(V_ASN1_OCTET_STRING, kIpv6Loopback, sizeof(kIpv6Loopback)));
  add_extension(certificate, NID_subject_alt_name, names.get(), false);
}

void add_leaf_extensions(X509* certificate) {
  bssl::UniquePtr<BASIC_CONSTRAINTS> constraints(BASIC_CONSTRAINTS_new());
  if (constraints == nullptr) throw_configuration_error("self-signed certificate", "out of memory");
  constraints->ca = 0;
  add_extension(certificate, NID_basic_constraints, constraints.get(), true);

  // No keyUsage: a verifier that trusts this certificate directly treats it
  // as its own issuer, and digitalSignature alone (without keyCertSign,
  // which RFC 5280 reserves for CAs) would make it reject the self-issue.

  std::unique_ptr<EXTENDED_KEY_USAGE, decltype(&EXTENDED_KEY_USAGE_free)> extended(
      sk_ASN1_OBJECT_new_null(), EXTENDED_KEY_USAGE_free);
  if (extended == nullptr ||
      sk_ASN1_OBJECT_push(extended.get(), OBJ_nid2obj(NID_server_auth)) == 0) {
    throw_configuration_error("self-signed certificate", "out of memory");
  }
  add_extension(certificate, NID_ext_key_usage, extended.get(), false);

  add_subject_alt_names(certificate);
}

}  // namespace

const char* to_string(KeyType type) {
  switch (type) {
    case KeyType::kEcdsaP256: return "ECDSA P-256";
    case KeyType::kEd25519: return "Ed25519";
    case KeyType::kRsa: return "RSA";
  }
  return "unknown";
}

std::vector<bssl::UniquePtr<X509>> parse_pem_certificates(std::string_view pem,
                                                          std::string_view source) {
  return parse_certificates(pem, source);
}

std::string read_file_or_throw(const std::string& path, std::string_view what) {
  errno = 0;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    int error = errno;
    throw_configuration_error(path, std::string("cannot open ") + std::string(what) + ": " +
                                        (error != 0 ? std::strerror(error) : "unknown error"));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw_configuration_error(path, std::string("cannot read ") + std::string(what));
  return contents.str();
}

CertificateChain::CertificateChain(std::vector<bssl::UniquePtr<X509>> chain,
                                   bssl::UniquePtr<EVP_PKEY> key, KeyType key_type)
    : chain_(std::move(chain)), key_(std::move(key)), key_type_(key_type) {}

CertificateChain CertificateChain::load_pem_files(const std::string& certificate_path,
                                                  const std::string& key_path) {
  std::string certificate_pem = read_file_or_throw(certificate_path, "certificate file");
  std::string key_pem = read_file_or_throw(key_path, "private key file");
  return from_pem(certificate_pem, certificate_path, key_pem, key_path);
}

CertificateChain CertificateChain::from_pem(std::string_view certificate_pem,
                                            std::string_view certificate_source,
                                            std::string_view key_pem, std::string_view key_source) {
  std::vector<bssl::UniquePtr<X509>> chain =
      parse_certificates(certificate_pem, certificate_source);
  if (!contains_pem_header(key_pem))
    throw_configuration_error(key_source, "not a PEM file (no \"-----BEGIN\" line)");
  bssl::UniquePtr<EVP_PKEY> key = parse_private_key(key_pem, key_source);
  KeyType key_type = classify_key(key.get(), key_source);
  ERR_clear_error();
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    throw_configuration_error(key_source, "private key does not match the first certificate in " +
                                              std::string(certificate_source));
  }
  return CertificateChain(std::move(chain), std::move(key), key_type);
}

CertificateChain CertificateChain::generate_self_signed(std::string_view common_name) {
  constexpr std::string_view kSource = "self-signed certificate";
  bssl::UniquePtr<EC_KEY> ec_key(EC_KEY_new_by_curve_name(NID_X9_62_prime256v1));
  bssl::UniquePtr<EVP_PKEY> key(EVP_PKEY_new());
  if (ec_key == nullptr || key == nullptr || EC_KEY_generate_key(ec_key.get()) != 1 ||
      EVP_PKEY_assign_EC_KEY(key.get(), ec_key.release()) != 1) {
    throw_configuration_error(kSource, "cannot generate a P-256 key: " + last_ssl_error());
  }

  bssl::UniquePtr<X509> certificate(X509_new());
  if (certificate == nullptr || X509_set_version(certificate.get(), X509_VERSION_3) != 1) {
    throw_configuration_error(kSource, "cannot create X509: " + last_ssl_error());
  }

  // RFC 5280 §4.1.2.2: positive, at most 20 octets. 128 random bits with the
  // top bit clear (positive) and the next set (no leading zero octet).
  uint8_t serial_bytes[16];
  RAND_bytes(serial_bytes, sizeof(serial_bytes));
  serial_bytes[0] = static_cast<uint8_t>((serial_bytes[0] & 0x7f) | 0x40);
  bssl::UniquePtr<BIGNUM> serial(BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr));
  if (serial == nullptr ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(certificate.get())) == nullptr) {
    throw_configuration_error(kSource, "cannot set serial number: " + last_ssl_error());
  }

  if (X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -kNotBeforeSkewSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(certificate.get()), kValiditySeconds) == nullptr) {
    throw_configuration_error(kSource, "cannot set validity: " + last_ssl_error());
  }

  bssl::UniquePtr<X509_NAME> name(X509_NAME_new());
  std::string common_name_text(common_name);
  if (name == nullptr ||
      X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const uint8_t*>(common_name_text.data()),
                                 static_cast<int>(common_name_text.size()), -1, 0) != 1 ||
      X509_set_subject_name(certificate.get(), name.get()) != 1 ||
      X509_set_issuer_name(certificate.get(), name.get()) != 1 ||
      X509_set_pubkey(certificate.get(), key.get()) != 1) {
    throw_configuration_error(kSource, "cannot set subject: " + last_ssl_error());
  }

  add_leaf_extensions(certificate.get());

  if (X509_sign(certificate.get(), key.get(), EVP_sha256()) == 0) {
    throw_configuration_error(kSource, "cannot sign: " + last_ssl_error());
  }

  std::vector<bssl::UniquePtr<X509>> chain;
  chain.push_back(std::move(certificate));
  return CertificateChain(std::move(chain), std::move(key), KeyType::kEcdsaP256);
}

std::string CertificateChain::sha256_fingerprint() const {
  uint8_t digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (X509_digest(leaf(), EVP_sha256(), digest, &length) != 1) {
    throw_configuration_error("certificate",
                              "cannot compute SHA-256 fingerprint: " + last_ssl_error());
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string text;
  text.reserve(length * 3);
  for (unsigned int i = 0; i < length; ++i) {
    if (i != 0) text.push_back(':');
    text.push_back(kHex[digest[i] >> 4]);
    text.push_back(kHex[digest[i] & 0x0f]);
  }
  return text;
}

std::string CertificateChain::leaf_pem() const {
  bssl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  const uint8_t* contents = nullptr;
  size_t length = 0;
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), leaf()) != 1 ||
      BIO_mem_contents(bio.get(), &contents, &length) != 1) {
    throw_configuration_error("certificate", "cannot encode as PEM: " + last_ssl_error());
  }
  return std::string(reinterpret_cast<const char*>(contents), length);
}

}  // namespace dpquic::crypto
