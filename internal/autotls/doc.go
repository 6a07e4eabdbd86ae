// Package autotls gives `latchkey serve` its HTTPS certificates: from an
// ACME certificate authority (golang.org/x/crypto/acme/autocert, TLS-ALPN-01
// and HTTP-01), cached in the store so that replicas share them and a
// restart orders nothing (ACME, Cache), or from certificate files read
// again when they change (FileCert). Failures are logged at most once a
// minute each (quietLog); the certificate being served stays in place.
package autotls
