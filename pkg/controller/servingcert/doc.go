// Package servingcert is the webhook's serving certificate (source.go):
// Source loads it from PEM files it polls, or from a kubernetes.io/tls
// Secret it watches, and serves it to TLS handshakes (GetCertificate),
// to /readyz (Loaded), to the expiry metric (NotAfter) and to the webhook
// registration (CABundle: the Secret's ca.crt, else the top of the served
// chain). Until a certificate is loaded, handshakes fail.
package servingcert
