#!/bin/sh
# Regenerates the RSA key pair the credential tests use as a Google service
# account's key: the private key (PKCS#8 PEM, as a service-account JSON file
# holds it) and its public key (PKCS#1 RSAPublicKey, DER), with which the fake
# token endpoint checks the JWT's signature. TEST MATERIAL ONLY: this key is
# public, belongs to no account, and must never be trusted for anything.
# Run from this directory: `sh gen.sh` (OpenSSL 3).
set -eu
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa-test.key
openssl rsa -in rsa-test.key -RSAPublicKey_out -outform DER -out rsa-test.pub.der
