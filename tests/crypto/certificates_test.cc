#include "crypto/certificates.h"

#include <gtest/gtest.h>
#include <openssl/nid.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <stdexcept>
#include <string>

#include "tools/testbed/test_keys.h"

namespace dpquic::crypto {
namespace {

using testing::certificate_pem;
using testing::generate_key;
using testing::make_certificate;
using testing::private_key_pem;
using testing::write_temp_file;

// The message of the runtime_error `load` throws; fails the test if none.
template <typename Load>
std::string error_of(Load load) {
  try {
    load();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no exception thrown";
  return "";
}

std::string expected_fingerprint(X509* certificate) {
  uint8_t* der = nullptr;
  int length = i2d_X509(certificate, &der);
  EXPECT_GT(length, 0);
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(length), digest);
  OPENSSL_free(der);
  std::string text;
  char byte[4];
  for (size_t i = 0; i < sizeof(digest); ++i) {
    std::snprintf(byte, sizeof(byte), i == 0 ? "%02X" : ":%02X", digest[i]);
    text += byte;
  }
  return text;
}

TEST(CertificatesTest, GeneratesSelfSignedP256CertificateForLocalhost) {
  CertificateChain chain = CertificateChain::generate_self_signed("dpquic test");
  ASSERT_EQ(chain.chain().size(), 1u);
  EXPECT_EQ(chain.key_type(), KeyType::kEcdsaP256);
  X509* leaf = chain.leaf();

  EXPECT_EQ(X509_get_version(leaf), X509_VERSION_3);
  EXPECT_EQ(X509_verify(leaf, chain.private_key()), 1);  // self-signature
  EXPECT_EQ(X509_check_private_key(leaf, chain.private_key()), 1);
  EXPECT_EQ(X509_NAME_cmp(X509_get_subject_name(leaf), X509_get_issuer_name(leaf)), 0);

  char common_name[64] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, common_name,
                            sizeof(common_name));
  EXPECT_STREQ(common_name, "dpquic test");

  EXPECT_EQ(X509_check_host(leaf, "localhost", 9, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(leaf, "::1", 0), 1);
  EXPECT_EQ(X509_check_host(leaf, "example.com", 11, 0, nullptr), 0);

  // Valid from an hour ago for a year.
  time_t now = std::time(nullptr);
  time_t in_59_minutes_past = now - 59 * 60;
  time_t in_364_days = now + 364L * 24 * 3600;
  time_t in_366_days = now + 366L * 24 * 3600;
  EXPECT_LT(X509_cmp_time(X509_get0_notBefore(leaf), &in_59_minutes_past), 0);
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(leaf), &in_364_days), 0);
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(leaf), &in_366_days), 0);

  // A 16-byte positive serial, different each time.
  const ASN1_INTEGER* serial = X509_get0_serialNumber(leaf);
  EXPECT_EQ(ASN1_STRING_length(serial), 16);
  EXPECT_EQ(ASN1_STRING_type(serial), V_ASN1_INTEGER);  // not V_ASN1_NEG_INTEGER
  CertificateChain other = CertificateChain::generate_self_signed();
  EXPECT_NE(ASN1_INTEGER_cmp(serial, X509_get0_serialNumber(other.leaf())), 0);

  EXPECT_EQ(X509_check_purpose(leaf, X509_PURPOSE_SSL_SERVER, 0), 1);
}

TEST(CertificatesTest, FingerprintIsColonSeparatedUpperHexSha256OfDer) {
  CertificateChain chain = CertificateChain::generate_self_signed();
  std::string fingerprint = chain.sha256_fingerprint();
  // 32 bytes as "AB:CD:...": two upper-case hex digits, then a colon.
  ASSERT_EQ(fingerprint.size(), 32u * 3 - 1) << fingerprint;
  for (size_t i = 0; i < fingerprint.size(); ++i) {
    const char c = fingerprint[i];
    if (i % 3 == 2) {
      EXPECT_EQ(c, ':') << fingerprint;
    } else {
      EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F')) << fingerprint;
    }
  }
  EXPECT_EQ(fingerprint, expected_fingerprint(chain.leaf()));
  EXPECT_NE(fingerprint, CertificateChain::generate_self_signed().sha256_fingerprint());
}

TEST(CertificatesTest, LeafPemRoundTrips) {
  CertificateChain chain = CertificateChain::generate_self_signed();
  std::vector<bssl::UniquePtr<X509>> parsed = parse_pem_certificates(chain.leaf_pem(), "memory");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(X509_cmp(parsed[0].get(), chain.leaf()), 0);
}

class LoadPemFilesTest : public ::testing::TestWithParam<KeyType> {};

TEST_P(LoadPemFilesTest, LoadsChainAndMatchingKey) {
  KeyType type = GetParam();
  bssl::UniquePtr<EVP_PKEY> key = generate_key(type);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  std::string name = std::string("load_") + std::to_string(static_cast<int>(type));
  std::string certificate_path =
      write_temp_file(name + "_cert.pem", certificate_pem(certificate.get()));
  std::string key_path = write_temp_file(name + "_key.pem", private_key_pem(key.get()));

  CertificateChain chain = CertificateChain::load_pem_files(certificate_path, key_path);
  EXPECT_EQ(chain.key_type(), type);
  ASSERT_EQ(chain.chain().size(), 1u);
  EXPECT_EQ(X509_cmp(chain.leaf(), certificate.get()), 0);
  EXPECT_EQ(EVP_PKEY_cmp(chain.private_key(), key.get()), 1);
  EXPECT_EQ(chain.sha256_fingerprint(), expected_fingerprint(certificate.get()));
}

INSTANTIATE_TEST_SUITE_P(AllKeyTypes, LoadPemFilesTest,
                         ::testing::Values(KeyType::kEcdsaP256, KeyType::kEd25519, KeyType::kRsa),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case KeyType::kEcdsaP256: return std::string("EcdsaP256");
                             case KeyType::kEd25519: return std::string("Ed25519");
                             case KeyType::kRsa: return std::string("Rsa");
                           }
                           return std::string("Unknown");
                         });

TEST(CertificatesTest, LoadsChainWithIntermediateAndCombinedFile) {
  bssl::UniquePtr<EVP_PKEY> ca_key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> ca = make_certificate(ca_key.get(), "intermediate", ca_key.get());
  bssl::UniquePtr<EVP_PKEY> leaf_key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> leaf = make_certificate(leaf_key.get(), "leaf", ca_key.get(), ca.get());
  // Key between the certificates: other blocks are skipped.
  std::string combined =
      certificate_pem(leaf.get()) + private_key_pem(leaf_key.get()) + certificate_pem(ca.get());
  std::string path = write_temp_file("combined.pem", combined);

  CertificateChain chain = CertificateChain::load_pem_files(path, path);
  ASSERT_EQ(chain.chain().size(), 2u);
  EXPECT_EQ(X509_cmp(chain.chain()[0].get(), leaf.get()), 0);
  EXPECT_EQ(X509_cmp(chain.chain()[1].get(), ca.get()), 0);
  EXPECT_EQ(chain.key_type(), KeyType::kEcdsaP256);
}

TEST(CertificatesTest, LoadsTraditionalEcPrivateKeyFormat) {
  bssl::UniquePtr<EVP_PKEY> key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  bssl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  ASSERT_EQ(PEM_write_bio_ECPrivateKey(bio.get(), EVP_PKEY_get0_EC_KEY(key.get()), nullptr, nullptr,
                                       0, nullptr, nullptr),
            1);
  const uint8_t* data = nullptr;
  size_t length = 0;
  ASSERT_EQ(BIO_mem_contents(bio.get(), &data, &length), 1);
  std::string key_pem(reinterpret_cast<const char*>(data), length);
  ASSERT_NE(key_pem.find("BEGIN EC PRIVATE KEY"), std::string::npos);
  CertificateChain chain =
      CertificateChain::from_pem(certificate_pem(certificate.get()), "cert", key_pem, "key");
  EXPECT_EQ(chain.key_type(), KeyType::kEcdsaP256);
}

TEST(CertificatesTest, MissingFileErrorNamesFile) {
  std::string path = write_temp_file("present.pem", "x");
  std::string missing = path + ".does-not-exist";
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(missing, path); }),
            missing + ": cannot open certificate file: No such file or directory");
  bssl::UniquePtr<EVP_PKEY> key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  std::string certificate_path =
      write_temp_file("missing_key_cert.pem", certificate_pem(certificate.get()));
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(certificate_path, missing); }),
            missing + ": cannot open private key file: No such file or directory");
}

TEST(CertificatesTest, NotPemErrorNamesFile) {
  std::string garbage = write_temp_file("garbage.der", std::string("\x30\x82\x01\x00", 4));
  bssl::UniquePtr<EVP_PKEY> key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  std::string certificate_path = write_temp_file("np_cert.pem", certificate_pem(certificate.get()));
  std::string key_path = write_temp_file("np_key.pem", private_key_pem(key.get()));
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(garbage, key_path); }),
            garbage + ": not a PEM file (no \"-----BEGIN\" line)");
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(certificate_path, garbage); }),
            garbage + ": not a PEM file (no \"-----BEGIN\" line)");
}

TEST(CertificatesTest, NoCertificateOrNoKeyErrorNamesFile) {
  bssl::UniquePtr<EVP_PKEY> key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  std::string certificate_path =
      write_temp_file("only_cert.pem", certificate_pem(certificate.get()));
  std::string key_path = write_temp_file("only_key.pem", private_key_pem(key.get()));
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(key_path, key_path); }),
            key_path + ": no CERTIFICATE block found");
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(certificate_path, certificate_path); }),
            certificate_path +
                ": no private key block found (expected PRIVATE KEY, EC PRIVATE KEY or RSA "
                "PRIVATE KEY)");
}

TEST(CertificatesTest, MalformedCertificateBlockErrorNamesFile) {
  std::string path = write_temp_file(
      "malformed.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  std::string message = error_of([&] { CertificateChain::load_pem_files(path, path); });
  EXPECT_EQ(message.rfind(path + ": malformed CERTIFICATE block #1: ", 0), 0u) << message;
}

TEST(CertificatesTest, KeyMismatchIsDetected) {
  bssl::UniquePtr<EVP_PKEY> key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<EVP_PKEY> other_key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  std::string certificate_path = write_temp_file("mm_cert.pem", certificate_pem(certificate.get()));
  std::string key_path = write_temp_file("mm_key.pem", private_key_pem(other_key.get()));
  EXPECT_EQ(error_of([&] { CertificateChain::load_pem_files(certificate_path, key_path); }),
            key_path + ": private key does not match the first certificate in " + certificate_path);
  // A key of another type does not match either.
  bssl::UniquePtr<EVP_PKEY> ed25519 = generate_key(KeyType::kEd25519);
  std::string ed25519_path = write_temp_file("mm_ed25519.pem", private_key_pem(ed25519.get()));
  EXPECT_EQ(
      error_of([&] { CertificateChain::load_pem_files(certificate_path, ed25519_path); }),
      ed25519_path + ": private key does not match the first certificate in " + certificate_path);
}

TEST(CertificatesTest, UnsupportedKeyTypesAreRejected) {
  bssl::UniquePtr<EVP_PKEY> p384 = testing::generate_ec_key(NID_secp384r1);
  bssl::UniquePtr<X509> p384_certificate = make_certificate(p384.get(), "leaf", p384.get());
  EXPECT_EQ(error_of([&] {
              CertificateChain::from_pem(certificate_pem(p384_certificate.get()), "c.pem",
                                         private_key_pem(p384.get()), "k.pem");
            }),
            "k.pem: unsupported key type: ECDSA on curve secp384r1 (only P-256 is supported)");

  bssl::UniquePtr<EVP_PKEY> small_rsa = testing::generate_rsa_key(1024);
  bssl::UniquePtr<X509> rsa_certificate =
      make_certificate(small_rsa.get(), "leaf", small_rsa.get());
  EXPECT_EQ(error_of([&] {
              CertificateChain::from_pem(certificate_pem(rsa_certificate.get()), "c.pem",
                                         private_key_pem(small_rsa.get()), "k.pem");
            }),
            "k.pem: unsupported key type: RSA key of 1024 bits (at least 2048 required)");
}

TEST(CertificatesTest, EncryptedKeyIsReported) {
  bssl::UniquePtr<EVP_PKEY> key = generate_key(KeyType::kEcdsaP256);
  bssl::UniquePtr<X509> certificate = make_certificate(key.get(), "leaf", key.get());
  bssl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  char passphrase[] = "secret";
  ASSERT_EQ(PEM_write_bio_PKCS8PrivateKey(bio.get(), key.get(), EVP_aes_128_cbc(), passphrase, 6,
                                          nullptr, nullptr),
            1);
  const uint8_t* data = nullptr;
  size_t length = 0;
  ASSERT_EQ(BIO_mem_contents(bio.get(), &data, &length), 1);
  std::string key_pem(reinterpret_cast<const char*>(data), length);
  EXPECT_EQ(error_of([&] {
              CertificateChain::from_pem(certificate_pem(certificate.get()), "c.pem", key_pem,
                                         "k.pem");
            }),
            "k.pem: encrypted private keys are not supported; store the key unencrypted");
}

}  // namespace
}  // namespace dpquic::crypto
