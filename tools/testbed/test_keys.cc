#include "tools/testbed/test_keys.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/curve25519.h>
#include <openssl/ec_key.h>
#include <openssl/nid.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace dpquic::crypto::testing {
namespace {

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test key helper: ") + what);
}

std::string bio_contents(BIO* bio) {
  const uint8_t* data = nullptr;
  size_t length = 0;
  check(BIO_mem_contents(bio, &data, &length) == 1, "BIO_mem_contents");
  return std::string(reinterpret_cast<const char*>(data), length);
}

}  // namespace

bssl::UniquePtr<EVP_PKEY> generate_ec_key(int curve_nid) {
  bssl::UniquePtr<EC_KEY> ec(EC_KEY_new_by_curve_name(curve_nid));
  bssl::UniquePtr<EVP_PKEY> key(EVP_PKEY_new());
  check(ec != nullptr && key != nullptr && EC_KEY_generate_key(ec.get()) == 1 &&
            EVP_PKEY_assign_EC_KEY(key.get(), ec.release()) == 1,
        "EC key");
  return key;
}

bssl::UniquePtr<EVP_PKEY> generate_rsa_key(unsigned bits) {
  bssl::UniquePtr<RSA> rsa(RSA_new());
  bssl::UniquePtr<BIGNUM> exponent(BN_new());
  bssl::UniquePtr<EVP_PKEY> key(EVP_PKEY_new());
  check(rsa != nullptr && exponent != nullptr && key != nullptr &&
            BN_set_word(exponent.get(), RSA_F4) == 1 &&
            RSA_generate_key_ex(rsa.get(), static_cast<int>(bits), exponent.get(), nullptr) == 1 &&
            EVP_PKEY_assign_RSA(key.get(), rsa.release()) == 1,
        "RSA key");
  return key;
}

bssl::UniquePtr<EVP_PKEY> generate_key(KeyType type) {
  switch (type) {
    case KeyType::kEcdsaP256: return generate_ec_key(NID_X9_62_prime256v1);
    case KeyType::kEd25519: {
      uint8_t public_key[ED25519_PUBLIC_KEY_LEN];
      uint8_t private_key[ED25519_PRIVATE_KEY_LEN];
      ED25519_keypair(public_key, private_key);
      // BoringSSL's raw Ed25519 private key is the 32-byte seed.
      bssl::UniquePtr<EVP_PKEY> key(
          EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, private_key, 32));
      check(key != nullptr, "Ed25519 key");
      return key;
    }
    case KeyType::kRsa: return generate_rsa_key(2048);
  }
  return nullptr;
}

bssl::UniquePtr<X509> make_certificate(EVP_PKEY* key, std::string_view common_name,
                                       EVP_PKEY* signer_key, X509* issuer) {
  bssl::UniquePtr<X509> certificate(X509_new());
  check(certificate != nullptr && X509_set_version(certificate.get(), X509_VERSION_3) == 1 &&
            ASN1_INTEGER_set(X509_get_serialNumber(certificate.get()), 4711) == 1 &&
            X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -3600) != nullptr &&
            X509_gmtime_adj(X509_getm_notAfter(certificate.get()), 86400) != nullptr,
        "X509 fields");
  bssl::UniquePtr<X509_NAME> name(X509_NAME_new());
  std::string cn(common_name);
  check(
      X509_NAME_add_entry_by_txt(name.get(), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const uint8_t*>(cn.data()),
                                 static_cast<int>(cn.size()), -1, 0) == 1 &&
          X509_set_subject_name(certificate.get(), name.get()) == 1 &&
          X509_set_issuer_name(certificate.get(), issuer != nullptr ? X509_get_subject_name(issuer)
                                                                    : name.get()) == 1 &&
          X509_set_pubkey(certificate.get(), key) == 1,
      "X509 names");
  bssl::UniquePtr<X509_EXTENSION> san(
      X509V3_EXT_nconf_nid(nullptr, nullptr, NID_subject_alt_name, "DNS:localhost"));
  check(san != nullptr && X509_add_ext(certificate.get(), san.get(), -1) == 1, "SAN");
  // Ed25519 signs the whole message: no separate digest.
  const EVP_MD* digest = EVP_PKEY_id(signer_key) == EVP_PKEY_ED25519 ? nullptr : EVP_sha256();
  check(X509_sign(certificate.get(), signer_key, digest) != 0, "X509_sign");
  return certificate;
}

std::string certificate_pem(X509* certificate) {
  bssl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_X509(bio.get(), certificate) == 1, "PEM_write_bio_X509");
  return bio_contents(bio.get());
}

std::string private_key_pem(EVP_PKEY* key) {
  bssl::UniquePtr<BIO> bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return bio_contents(bio.get());
}

std::string write_temp_file(std::string_view name, std::string_view contents) {
  const char* directory = std::getenv("TEST_TMPDIR");
  std::string path =
      std::string(directory != nullptr ? directory : "/tmp") + "/" + std::string(name);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  check(file.good(), "write_temp_file");
  return path;
}

}  // namespace dpquic::crypto::testing
