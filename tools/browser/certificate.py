"""A throwaway server certificate for the browser tests, made with openssl.

make(directory, names, addresses) writes cert.pem and key.pem (ECDSA P-256,
a leaf: CA:FALSE, serverAuth, SAN with the DNS names and IP addresses) and
returns (cert, key, spki): spki is the base64 SHA-256 of the public key,
what Chromium's --ignore-certificate-errors-spki-list takes.
"""

import base64
import hashlib
import os
import subprocess

TIMEOUT = 30


class CertificateError(Exception):
    pass


def _openssl(args, stdin=None):
    result = subprocess.run(["openssl"] + args, input=stdin, capture_output=True,
                            timeout=TIMEOUT)
    if result.returncode != 0:
        raise CertificateError("openssl %s: %s" % (args[0], result.stderr.decode(errors="replace")))
    return result.stdout


def spki_hash(cert_path):
    """Base64 SHA-256 of the certificate's DER SubjectPublicKeyInfo."""
    public_pem = _openssl(["x509", "-in", cert_path, "-pubkey", "-noout"])
    der = _openssl(["pkey", "-pubin", "-outform", "der"], stdin=public_pem)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def make(directory, names=("localhost",), addresses=("127.0.0.1",)):
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    san = ",".join(["DNS:" + n for n in names] + ["IP:" + a for a in addresses])
    _openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-nodes", "-days", "2", "-subj", "/CN=" + (names[0] if names else addresses[0]),
              "-addext", "subjectAltName=" + san,
              "-addext", "basicConstraints=critical,CA:FALSE",
              "-addext", "extendedKeyUsage=serverAuth",
              "-keyout", key, "-out", cert])
    return cert, key, spki_hash(cert)
