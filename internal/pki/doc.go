// Package pki gives a rudder server the keys and certificates it needs on
// first start, and hands back the same ones on every start after, so that
// kubeconfigs and node credentials issued yesterday keep working today.
//
// # Usage
//
//	b, err := pki.Ensure(pki.Config{
//		Dir:   filepath.Join(dataDir, "tls"),
//		Hosts: tlsSANs, // from --tls-san
//	})
//	if err != nil {
//		return err
//	}
//	srv.TLSConfig = &tls.Config{
//		Certificates: []tls.Certificate{b.ServingCert},
//		ClientCAs:    b.CAPool,
//		ClientAuth:   tls.VerifyClientCertIfGiven,
//	}
//	err = pki.WriteKubeconfig(filepath.Join(dataDir, "admin.kubeconfig"),
//		"https://127.0.0.1:6443", b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM, "rudder-admin")
//
// Ensure is meant to run once, early in start-up and before anything
// listens; it is not safe to run concurrently against the same directory
// from two processes. The Bundle it returns is immutable and safe for
// concurrent use.
//
// # The data directory
//
// Ensure creates Config.Dir with mode 0700 if it is missing and keeps these
// files in it (keys 0600, certificates 0644):
//
//	ca.crt, ca.key         self-signed CA, ECDSA P-256, CN "rudder-ca", 10 years
//	server.crt, server.key serving certificate (server auth), 1 year
//	admin.crt, admin.key   client certificate (client auth), 1 year,
//	                       CN "rudder-admin", O "system:masters"
//	sa.key, sa.pub         service-account token signing key and its public
//	                       half (PKIX); ECDSA P-256 when generated, an RSA
//	                       key placed there by an operator is accepted too
//
// # When files are regenerated
//
// The CA and the service-account key are roots of trust: every credential
// ever issued depends on them, so Ensure never replaces one that exists.
// If ca.crt or sa.key is present but unusable (unparsable, key missing or
// not matching, CA expired), Ensure fails with ErrUnusable and leaves the
// files alone; an operator who really wants a fresh CA deletes ca.crt and
// ca.key. A ca.key without ca.crt, on the other hand, is what a crash during
// the very first start leaves behind, and is overwritten.
//
// The serving and admin certificates are cheap to re-derive from the CA, so
// they are re-issued (with a fresh key) whenever they are missing, do not
// parse, do not match their key, do not chain to the CA, or expire within
// 30 days. The serving certificate is also re-issued when its SANs no
// longer cover the requested set: 127.0.0.1, ::1, localhost, the host
// name, kubernetes, kubernetes.default, kubernetes.default.svc,
// kubernetes.default.svc.cluster.local and Config.Hosts. Dropping a name
// from --tls-san does not re-issue; the old certificate still covers
// everything asked for. sa.pub is rewritten from sa.key when it is missing
// or does not match.
//
// Everything else is reused byte for byte. Every file is written to a
// temporary file in the same directory, synced, and renamed into place, so
// a crash leaves either the old file or the new one. A key is always
// written before its certificate: the certificate's presence is what marks
// a pair as complete.
package pki
