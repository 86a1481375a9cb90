// Package apiproxy is an HTTPS reverse proxy between a node agent and
// kube-apiserver that can drop, delay or refuse chosen requests, and make
// the API server unreachable altogether, at run time (issue #22's fault
// tool for the API server).
//
// The node agent authenticates to kube-apiserver with a client
// certificate, which a proxy cannot pass on: the proxy terminates TLS with
// a serving certificate of its own throwaway CA and forwards each request
// with the credentials of the kubeconfig it fronts. It writes a kubeconfig
// for the agent (Kubeconfig) that points at the proxy and trusts its CA,
// with the fronted kubeconfig's credentials.
//
//	p, err := apiproxy.New(e.NodeKubeconfig, dir)
//	defer p.Close()
//	n.Kubeconfig = p.Kubeconfig // before n.Start()
//	p.Add(apiproxy.Rule{Method: "PATCH", Path: regexp.MustCompile(`/status$`), Status: 503})
//	p.SetUnreachable(true)
//
// Responses stream through unbuffered, so watches pass as they are.
package apiproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Rule says what the proxy does with the requests it matches, instead of
// or before forwarding them. Exactly one of Drop, Delay (with Jitter) and Status acts.
type Rule struct {
	// Method matches the request's method ("" any; "WATCH" is not a
	// method: see Watch).
	Method string
	// Path matches the URL path (nil any), e.g. `/leases/` or
	// `/pods/[^/]+/status$`.
	Path *regexp.Regexp
	// Watch matches only watch requests (?watch=true), or with
	// NotWatch only the others.
	Watch, NotWatch bool

	// Drop closes the request without an answer: its HTTP/2 stream is
	// reset, an HTTP/1 connection closed.
	Drop bool
	// Delay holds the request that long, plus a random part of Jitter,
	// then forwards it.
	Delay, Jitter time.Duration
	// Status answers with this code (429, 500, 503, ...) and a
	// metav1.Status body, without forwarding.
	Status int
	// RetryAfter, with Status, sends a Retry-After header of that many
	// seconds (client-go then retries on its own, up to 10 times).
	RetryAfter int

	// Fraction acts on that share of the matching requests, at random (0:
	// all).
	Fraction float64
	// First acts on the first First matching requests only (0: all).
	First int64
}

// Active is a rule in force: Add returns it, Remove takes it back.
type Active struct {
	Rule
	id      int
	matched atomic.Int64 // requests matched
	hits    atomic.Int64 // requests acted on
}

// Hits is how many requests the rule acted on.
func (a *Active) Hits() int64 { return a.hits.Load() }

// Proxy is the running proxy.
type Proxy struct {
	// URL is the proxy's address, https://127.0.0.1:PORT.
	URL string
	// Kubeconfig is the kubeconfig the agent uses to reach the API server
	// through the proxy.
	Kubeconfig string
	// CAFile holds the proxy's CA certificate (PEM).
	CAFile string

	srv      *http.Server
	ln       net.Listener
	upstream *url.URL

	mu          sync.Mutex
	rules       []*Active
	nextID      int
	unreachable bool
	conns       map[net.Conn]struct{}
	seen        map[string]int64

	refused atomic.Int64
	cut     atomic.Int64
}

// New starts a proxy in front of the API server of kubeconfig (its
// current context), and writes the proxy's CA and the agent's kubeconfig
// into dir.
func New(kubeconfig, dir string) (*Proxy, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: load %s: %w", kubeconfig, err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: server %q: %w", cfg.Host, err)
	}
	clientTLS, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiproxy: credentials of %s: %w", kubeconfig, err)
	}
	caPEM, serving, err := selfSigned()
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, conns: map[net.Conn]struct{}{}, seen: map[string]int64{},
		CAFile: filepath.Join(dir, "apiproxy-ca.crt"), Kubeconfig: filepath.Join(dir, "apiproxy.kubeconfig")}
	if err := writeFile(p.CAFile, caPEM); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("apiproxy: listen: %w", err)
	}
	p.ln = &listener{Listener: ln, p: p}
	p.URL = "https://" + ln.Addr().String()
	if err := p.writeKubeconfig(kubeconfig, caPEM); err != nil {
		ln.Close()
		return nil, err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		// Watches and other streams go through as they come.
		FlushInterval: -1,
		Transport: &http.Transport{
			TLSClientConfig:     clientTLS,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away (or was cut)
			}
			writeStatus(w, http.StatusBadGateway, 0, "apiproxy: "+err.Error())
		},
	}
	p.srv = &http.Server{
		Handler:   p.handler(rp),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{serving}, MinVersion: tls.VersionTLS12},
		ConnState: p.connState,
		// Cut connections are the point, not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() { _ = p.srv.ServeTLS(p.ln, "", "") }()
	return p, nil
}

// Close stops the proxy and cuts its connections.
func (p *Proxy) Close() error { return p.srv.Close() }

// Add puts a rule in force, after those already in force: the first rule
// that matches a request and acts on it decides.
func (p *Proxy) Add(r Rule) *Active {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	a := &Active{Rule: r, id: p.nextID}
	p.rules = append(p.rules, a)
	return a
}

// Remove takes rules out of force.
func (p *Proxy) Remove(rules ...*Active) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.rules[:0]
	for _, a := range p.rules {
		gone := false
		for _, r := range rules {
			gone = gone || r == a
		}
		if !gone {
			kept = append(kept, a)
		}
	}
	p.rules = kept
}

// Clear takes every rule out of force (not the unreachable mode).
func (p *Proxy) Clear() {
	p.mu.Lock()
	p.rules = nil
	p.mu.Unlock()
}

// SetUnreachable makes the API server unreachable (true): every open
// connection, watches included, is cut at once and every new one closed
// as it is accepted; until SetUnreachable(false).
func (p *Proxy) SetUnreachable(on bool) {
	p.mu.Lock()
	p.unreachable = on
	var open []net.Conn
	if on {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		p.cut.Add(1)
		reset(c)
	}
}

// Unreachable reports whether the unreachable mode is on.
func (p *Proxy) Unreachable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unreachable
}

// Stats is what the proxy saw.
type Stats struct {
	// Requests counts the requests that reached the proxy's handler by
	// class: "VERB resource", e.g. "PATCH pods/status", "PUT leases",
	// "WATCH pods" (see Class).
	Requests map[string]int64
	// Refused counts the connections closed as they were accepted while
	// unreachable; Cut those cut when it became so.
	Refused, Cut int64
}

// Total is the number of requests seen whose class starts with prefix
// (all with "").
func (s Stats) Total(prefix string) int64 {
	var n int64
	for k, v := range s.Requests {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// String lists the classes, most seen first.
func (s Stats) String() string {
	keys := make([]string, 0, len(s.Requests))
	for k := range s.Requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if s.Requests[keys[i]] != s.Requests[keys[j]] {
			return s.Requests[keys[i]] > s.Requests[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %d; ", k, s.Requests[k])
	}
	fmt.Fprintf(&b, "refused %d, cut %d", s.Refused, s.Cut)
	return b.String()
}

// Stats returns what the proxy saw so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Requests: make(map[string]int64, len(p.seen)), Refused: p.refused.Load(), Cut: p.cut.Load()}
	for k, v := range p.seen {
		s.Requests[k] = v
	}
	return s
}

// Class is a request's class for Stats: its verb (the method, or WATCH)
// and its resource with subresource, without namespace and name:
// "GET pods", "PATCH pods/status", "WATCH nodes", "PUT leases"; paths that
// name no resource are kept as they are ("GET /healthz").
func Class(r *http.Request) string {
	verb := r.Method
	if isWatch(r) {
		verb = "WATCH"
	}
	return verb + " " + resource(r.URL.Path)
}

// resource is the resource and subresource a path names: /api/v1/RES,
// /api/v1/namespaces/NS/RES/NAME/SUB, /apis/G/V/..., else the path.
func resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return path
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	switch len(rest) {
	case 0:
		return path
	case 1, 2:
		return rest[0]
	default:
		return rest[0] + "/" + rest[2]
	}
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1" || strings.Contains(r.URL.Path, "/watch/")
}

func (r *Rule) matches(req *http.Request) bool {
	if r.Method != "" && !strings.EqualFold(r.Method, req.Method) {
		return false
	}
	if r.Path != nil && !r.Path.MatchString(req.URL.Path) {
		return false
	}
	w := isWatch(req)
	return !(r.Watch && !w) && !(r.NotWatch && w)
}

// pick returns the rule that acts on req, if any, and counts it.
func (p *Proxy) pick(req *http.Request) *Active {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[Class(req)]++
	for _, a := range p.rules {
		if !a.matches(req) {
			continue
		}
		n := a.matched.Add(1)
		if a.First > 0 && n > a.First {
			continue
		}
		if a.Fraction > 0 && mrand.Float64() >= a.Fraction {
			continue
		}
		a.hits.Add(1)
		return a
	}
	return nil
}

func (p *Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.Unreachable() {
			panic(http.ErrAbortHandler)
		}
		a := p.pick(r)
		switch {
		case a == nil:
		case a.Drop:
			panic(http.ErrAbortHandler)
		case a.Status != 0:
			writeStatus(w, a.Status, a.RetryAfter, fmt.Sprintf("apiproxy: rule %d answers %d", a.id, a.Status))
			return
		case a.Delay > 0 || a.Jitter > 0:
			d := a.Delay
			if a.Jitter > 0 {
				d += mrand.N(a.Jitter)
			}
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
			if p.Unreachable() {
				panic(http.ErrAbortHandler)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// writeStatus answers code with the metav1.Status body kube-apiserver
// would send.
func writeStatus(w http.ResponseWriter, code, retryAfter int, msg string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Code: int32(code),
		Reason: reasonFor(code),
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(retryAfter)}
	}
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}

func (p *Proxy) connState(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
	}
}

// listener closes what it accepts while the proxy is unreachable.
type listener struct {
	net.Listener
	p *Proxy
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || !l.p.Unreachable() {
			return c, err
		}
		l.p.refused.Add(1)
		reset(c)
	}
}

// reset closes c at once, with a reset rather than an orderly close where
// it can.
func reset(c net.Conn) {
	raw := c
	if tc, ok := c.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = raw.Close()
}

// writeKubeconfig writes the agent's kubeconfig: the fronted one's, its
// current cluster pointed at the proxy with the proxy's CA.
func (p *Proxy) writeKubeconfig(kubeconfig string, caPEM []byte) error {
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return fmt.Errorf("apiproxy: load %s: %w", kubeconfig, err)
	}
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return fmt.Errorf("apiproxy: %s: no current context", kubeconfig)
	}
	cluster, ok := kc.Clusters[ctx.Cluster]
	if !ok {
		return fmt.Errorf("apiproxy: %s: no cluster %q", kubeconfig, ctx.Cluster)
	}
	// Relative credential paths were relative to the fronted file.
	if auth, ok := kc.AuthInfos[ctx.AuthInfo]; ok {
		base := filepath.Dir(kubeconfig)
		for _, f := range []*string{&auth.ClientCertificate, &auth.ClientKey} {
			if *f != "" && !filepath.IsAbs(*f) {
				*f = filepath.Join(base, *f)
			}
		}
	}
	cluster.Server = p.URL
	cluster.CertificateAuthority = ""
	cluster.CertificateAuthorityData = caPEM
	cluster.InsecureSkipTLSVerify = false
	cluster.TLSServerName = ""
	return clientcmd.WriteToFile(*kc, p.Kubeconfig)
}

// selfSigned makes a throwaway CA and a serving certificate it signs for
// 127.0.0.1 and localhost; it returns the CA in PEM and the serving pair.
func selfSigned() ([]byte, tls.Certificate, error) {
	fail := func(err error) ([]byte, tls.Certificate, error) {
		return nil, tls.Certificate{}, fmt.Errorf("apiproxy: certificates: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "apiproxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		return fail(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "apiproxy"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fail(err)
	}
	pair, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return fail(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pair, nil
}

func writeFile(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("apiproxy: %w", err)
	}
	return nil
}
