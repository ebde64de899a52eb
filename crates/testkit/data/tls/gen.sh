#!/bin/sh
# Regenerates the test PKI these tests use: a CA, a server certificate for
# localhost and 127.0.0.1, and a client certificate (mTLS), all ECDSA P-256,
# valid for a hundred years so the tests never expire. Test material only: the
# keys are public. Run from this directory: `sh gen.sh` (OpenSSL 3).
set -eu
days=36500
ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

openssl req -x509 $ec -keyout "$tmp/ca.key" -out ca.pem -days $days \
  -subj "/CN=Switchyard test CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign"

leaf() { # name, subject, extensions
  openssl req $ec -keyout "$1.key" -out "$tmp/$1.csr" -subj "$2"
  printf '%s\n' "$3" > "$tmp/$1.ext"
  openssl x509 -req -in "$tmp/$1.csr" -CA ca.pem -CAkey "$tmp/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days $days -extfile "$tmp/$1.ext" -out "$1.pem"
}

leaf server "/CN=localhost" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"

leaf client "/CN=switchyard test client" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
