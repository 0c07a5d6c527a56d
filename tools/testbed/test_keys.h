#pragma once
// Test-only helpers: keys and certificates of every supported type, made
// with BoringSSL, and PEM files written under TEST_TMPDIR.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <string>
#include <string_view>

#include "crypto/certificates.h"

namespace dpquic::crypto::testing {

bssl::UniquePtr<EVP_PKEY> generate_key(KeyType type);
bssl::UniquePtr<EVP_PKEY> generate_ec_key(int curve_nid);
bssl::UniquePtr<EVP_PKEY> generate_rsa_key(unsigned bits);

// A certificate for `key` with subject CN=`common_name` and
// subjectAltName DNS:localhost, signed by `signer_key` as `issuer` (self-signed
// when `issuer` is null).
bssl::UniquePtr<X509> make_certificate(EVP_PKEY* key, std::string_view common_name,
                                       EVP_PKEY* signer_key, X509* issuer = nullptr);

std::string certificate_pem(X509* certificate);
std::string private_key_pem(EVP_PKEY* key);  // PKCS#8 "PRIVATE KEY"

// TEST_TMPDIR/name, written with `contents`.
std::string write_temp_file(std::string_view name, std::string_view contents);

}  // namespace dpquic::crypto::testing
