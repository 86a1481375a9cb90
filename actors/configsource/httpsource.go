package configsource

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
)

// urlTimeout bounds one GET of the manifest URL, as upstream's client.
const urlTimeout = 10 * time.Second

// urlSource polls the manifest URL. It is used by one goroutine only.
type urlSource struct {
	url    string
	header http.Header
	node   string
	// usernsHostNetwork is Params.UserNamespacesHostNetwork.
	usernsHostNetwork bool
	period            time.Duration
	send              func(*messages.SourceScanned)
	client            *http.Client
	// body and pods are the last body read and its pods: an unchanged body
	// keeps its pods (and their seen time) and is not parsed again.
	body []byte
	pods []*v1.Pod
}

func newURLSource(url string, header http.Header, node string, period time.Duration, send func(*messages.SourceScanned)) *urlSource {
	return &urlSource{
		url:    url,
		header: header,
		node:   node,
		period: period,
		send:   send,
		client: &http.Client{Timeout: urlTimeout},
	}
}

// run polls at once, then every period, until ctx is cancelled.
func (s *urlSource) run(ctx context.Context) {
	ticker := time.NewTicker(s.period)
	defer ticker.Stop()
	for {
		if m := s.poll(ctx); ctx.Err() == nil {
			s.send(m)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// poll reads the URL once. As upstream, a failure (no answer, a status
// other than 200, an invalid body) leaves the last pods in place, while an
// empty body means no pods.
func (s *urlSource) poll(ctx context.Context) *messages.SourceScanned {
	failed := func(reason, version string) *messages.SourceScanned {
		return &messages.SourceScanned{Source: messages.SourceHTTP, Failed: true,
			Invalid: []messages.ManifestError{{Location: s.url, Reason: reason, Version: version}}}
	}
	body, err := s.get(ctx)
	if err != nil {
		return failed(err.Error(), "")
	}
	if len(body) == 0 {
		s.body, s.pods = body, nil
		return &messages.SourceScanned{Source: messages.SourceHTTP, Pods: []*v1.Pod{}}
	}
	if !bytes.Equal(body, s.body) {
		pods, err := manifest.FromURL(body, manifest.Origin{Source: manifest.SourceHTTP, Location: s.url, NodeName: s.node, UserNamespacesHostNetwork: s.usernsHostNetwork}, time.Now())
		if err != nil {
			return failed(err.Error(), manifest.Version(body))
		}
		s.body, s.pods = body, pods
	}
	// The source keeps its pods: the message gets copies it may own.
	out := &messages.SourceScanned{Source: messages.SourceHTTP, Pods: make([]*v1.Pod, len(s.pods))}
	for i, p := range s.pods {
		out.Pods[i] = p.DeepCopy()
	}
	return out
}

func (s *urlSource) get(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("manifest URL %s: %w", s.url, err)
	}
	req.Header = s.header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err // names the method and URL already
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, manifest.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("manifest URL %s: read body: %w", s.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("manifest URL %s: %s", s.url, resp.Status)
	}
	if len(body) > manifest.MaxSize {
		return nil, fmt.Errorf("manifest URL %s: body larger than the %d bytes allowed", s.url, manifest.MaxSize)
	}
	return body, nil
}
