package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	asn1util "k8s.io/apimachinery/pkg/apis/asn1"
	certutil "k8s.io/client-go/util/cert"
)

// caRecheck is how long the client CA bundle is trusted before the file is
// read again.
const caRecheck = 10 * time.Second

// credentialIDKey is the user extra upstream sets to identify the
// certificate a user authenticated with.
const credentialIDKey = "authentication.kubernetes.io/credential-id"

// uidOID is the subject attribute upstream reads a user's UID from
// (AllowParsingUserUIDFromCertAuth, on by default since 1.33).
var uidOID = asn1util.X509UID()

// clientCA is the client CA bundle of authentication.x509.clientCAFile,
// re-read when requests come in and the last read is older than every.
type clientCA struct {
	path  string
	every time.Duration
	log   zerolog.Logger

	mu      sync.Mutex
	pool    *x509.CertPool
	content []byte // what was last read, usable or not: a bad file is logged once
	lastErr string
	checked time.Time
}

func loadClientCA(path string, log zerolog.Logger) (*clientCA, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authentication.x509.clientCAFile: %w", err)
	}
	pool, err := certutil.NewPoolFromBytes(content)
	if err != nil {
		return nil, fmt.Errorf("authentication.x509.clientCAFile %s: %w", path, err)
	}
	return &clientCA{path: path, every: caRecheck, log: log, pool: pool, content: content, checked: time.Now()}, nil
}

// current is the bundle to verify with, read again from the file when the
// last read is older than every. A file that went missing or no longer
// parses leaves the previous bundle in place, as upstream's dynamic CA
// content does.
func (c *clientCA) current() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) < c.every {
		return c.pool
	}
	c.checked = time.Now()
	content, err := os.ReadFile(c.path)
	if err == nil && bytes.Equal(content, c.content) {
		c.lastErr = ""
		return c.pool
	}
	var pool *x509.CertPool
	if err == nil {
		c.content = content
		pool, err = certutil.NewPoolFromBytes(content)
	}
	if err != nil {
		if err.Error() != c.lastErr {
			c.lastErr = err.Error()
			c.log.Error().Err(err).Str("file", c.path).Msg("client CA file is not usable; keeping the previous bundle")
		}
		return c.pool
	}
	c.pool, c.lastErr = pool, ""
	c.log.Info().Str("file", c.path).Msg("client CA file reloaded")
	return c.pool
}

// authenticate is upstream's x509 authenticator with its CommonName user
// conversion.
func (c *clientCA) authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	peers := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{Roots: c.current(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if len(peers) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, cert := range peers[1:] {
			opts.Intermediates.AddCert(cert)
		}
	}
	if _, err := peers[0].Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certificateID(peers[0]), err)
	}
	return userFromCertificate(peers[0])
}

func userFromCertificate(cert *x509.Certificate) (*User, bool, error) {
	if cert.Subject.CommonName == "" {
		return nil, false, nil
	}
	var uids []string
	for _, name := range cert.Subject.Names {
		if !name.Type.Equal(uidOID) {
			continue
		}
		uid, ok := name.Value.(string)
		if !ok {
			return nil, false, fmt.Errorf("certificate %s: unable to parse UID into a string", certificateID(cert))
		}
		uids = append(uids, uid)
	}
	if len(uids) > 1 {
		return nil, false, fmt.Errorf("certificate %s: expected 1 UID, but found multiple: %v", certificateID(cert), uids)
	}
	u := &User{Name: cert.Subject.CommonName, Groups: cert.Subject.Organization}
	if len(uids) == 1 {
		if uids[0] == "" {
			return nil, false, errors.New("certificate " + certificateID(cert) + ": UID cannot be an empty string")
		}
		u.UID = uids[0]
	}
	fp := sha256.Sum256(cert.Raw)
	u.Extra = map[string][]string{credentialIDKey: {"X509SHA256=" + hex.EncodeToString(fp[:])}}
	return u, true, nil
}

// certificateID names a certificate in errors as upstream does.
func certificateID(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, colonHex(c.SubjectKeyId), colonHex(c.AuthorityKeyId))
}

func colonHex(b []byte) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":")
}
