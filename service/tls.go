package service

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// ReloadingTLS serves a certificate (and, for mTLS, a client CA pool) read
// from files and re-read when they change, so rotated certificates take
// effect without a restart. Files are checked at most once a second.
type ReloadingTLS struct {
	certFile, keyFile, caFile string

	mu      sync.Mutex
	checked time.Time
	mtimes  [3]time.Time
	cert    *tls.Certificate
	pool    *x509.CertPool
	err     error
}

// NewReloadingTLS loads the files once (failing fast on bad ones) and
// returns a tls.Config that keeps them current. With caFile, a client that
// presents a certificate must present one signed by it (mTLS). With
// requireClientCert as well, the handshake fails without one: that is how
// `--tls-client-ca` without an auth section is enforced. Without it,
// clients may omit the certificate and authenticate otherwise (a bearer
// token); the auth section's authenticator then refuses calls that have
// neither.
func NewReloadingTLS(certFile, keyFile, caFile string, requireClientCert bool) (*tls.Config, error) {
	if requireClientCert && caFile == "" {
		return nil, fmt.Errorf("tls: requiring client certificates needs a client CA")
	}
	r := &ReloadingTLS{certFile: certFile, keyFile: keyFile, caFile: caFile}
	if err := r.load(); err != nil {
		return nil, err
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cert, pool, err := r.current()
		if err != nil {
			return nil, err
		}
		c := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}, Certificates: []tls.Certificate{*cert}}
		if pool != nil {
			c.ClientCAs = pool
			c.ClientAuth = tls.VerifyClientCertIfGiven
			if requireClientCert {
				c.ClientAuth = tls.RequireAndVerifyClientCert
			}
		}
		return c, nil
	}
	return base, nil
}

func (r *ReloadingTLS) current() (*tls.Certificate, *x509.CertPool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= time.Second {
		r.checked = time.Now()
		if changed := r.changedLocked(); changed {
			if err := r.loadLocked(); err != nil {
				// Keep serving the last good files; a half-written rotation
				// must not take TLS down.
				r.err = err
			}
		}
	}
	return r.cert, r.pool, nil
}

func (r *ReloadingTLS) changedLocked() bool {
	for i, f := range []string{r.certFile, r.keyFile, r.caFile} {
		if f == "" {
			continue
		}
		if fi, err := os.Stat(f); err == nil && !fi.ModTime().Equal(r.mtimes[i]) {
			return true
		}
	}
	return false
}

func (r *ReloadingTLS) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked()
}

func (r *ReloadingTLS) loadLocked() error {
	var mt [3]time.Time
	for i, f := range []string{r.certFile, r.keyFile, r.caFile} {
		if f == "" {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		mt[i] = fi.ModTime()
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: certificate %s / key %s: %w", r.certFile, r.keyFile, err)
	}
	var pool *x509.CertPool
	if r.caFile != "" {
		pem, err := os.ReadFile(r.caFile)
		if err != nil {
			return fmt.Errorf("tls: client CA: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls: client CA %s: no PEM certificates", r.caFile)
		}
	}
	r.cert, r.pool, r.mtimes, r.err = &cert, pool, mt, nil
	return nil
}
