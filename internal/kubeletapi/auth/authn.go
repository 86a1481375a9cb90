package auth

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// An authenticator identifies the user of a request: ok false when the
// request carries no credential it handles; an error when it carries one
// that is not valid.
type authenticator func(r *http.Request) (u *User, ok bool, err error)

var errInvalidToken = errors.New("invalid bearer token")

// firstOf tries each authenticator in turn and returns the first user
// found. Without one, the errors are collected (upstream's union); a
// request with a bad certificate can still be authenticated by its token.
func firstOf(as ...authenticator) authenticator {
	return func(r *http.Request) (*User, bool, error) {
		var errs []error
		for _, a := range as {
			u, ok, err := a(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return u, true, nil
			}
		}
		return nil, false, utilerrors.NewAggregate(errs)
	}
}

// orAnonymous falls back to the anonymous user only when a found no
// credential at all: a credential that failed is an error, as upstream's
// union with FailOnError.
func orAnonymous(a authenticator) authenticator {
	return func(r *http.Request) (*User, bool, error) {
		u, ok, err := a(r)
		if err != nil || ok {
			return u, ok, err
		}
		return anonymous(r)
	}
}

func anonymous(*http.Request) (*User, bool, error) {
	return &User{Name: AnonymousUser, Groups: []string{UnauthenticatedGroup}}, true, nil
}

// withAuthenticatedGroup adds system:authenticated to the users a
// certificate or a token identified, unless they already carry it or are
// anonymous, as upstream's AuthenticatedGroupAdder.
func withAuthenticatedGroup(next authenticator) authenticator {
	return func(r *http.Request) (*User, bool, error) {
		u, ok, err := next(r)
		if err != nil || !ok {
			return nil, ok, err
		}
		if u.Name == AnonymousUser {
			return u, true, nil
		}
		for _, g := range u.Groups {
			if g == AuthenticatedGroup || g == UnauthenticatedGroup {
				return u, true, nil
			}
		}
		out := *u
		out.Groups = append(append(make([]string, 0, len(u.Groups)+1), u.Groups...), AuthenticatedGroup)
		return &out, true, nil
	}
}

// bearerToken authenticates "Authorization: Bearer <token>" with tokens.
// The header is removed once the token is accepted, so that no handler
// passes it on.
func bearerToken(tokens *tokenReviewer) authenticator {
	return func(r *http.Request) (*User, bool, error) {
		parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3)
		if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
			return nil, false, nil
		}
		u, ok, err := tokens.authenticate(r.Context(), parts[1])
		if ok {
			r.Header.Del("Authorization")
		}
		if !ok && err == nil {
			err = errInvalidToken
		}
		return u, ok, err
	}
}

const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// webSocketToken authenticates the token browsers send as a WebSocket
// subprotocol, since they cannot set headers on a WebSocket request; as
// upstream's websocket.ProtocolAuthenticator. The token's subprotocol is
// removed once accepted.
func webSocketToken(tokens *tokenReviewer) authenticator {
	return func(r *http.Request) (*User, bool, error) {
		if !isWebSocket(r) {
			return nil, false, nil
		}
		token, seen := "", false
		var others []string
		for _, header := range r.Header.Values("Sec-WebSocket-Protocol") {
			for _, p := range strings.Split(header, ",") {
				p = strings.TrimSpace(p)
				encoded, ok := strings.CutPrefix(p, bearerProtocolPrefix)
				if !ok {
					others = append(others, p)
					continue
				}
				if seen {
					return nil, false, errors.New("multiple base64.bearer.authorization tokens specified")
				}
				seen = true
				decoded, err := base64.RawURLEncoding.DecodeString(encoded)
				if err != nil {
					return nil, false, errors.New("invalid base64.bearer.authorization token encoding")
				}
				if !utf8.Valid(decoded) {
					return nil, false, errors.New("invalid base64.bearer.authorization token")
				}
				token = string(decoded)
			}
		}
		if token == "" {
			return nil, false, nil
		}
		if len(others) == 0 {
			return nil, false, errors.New("missing additional subprotocol")
		}
		u, ok, err := tokens.authenticate(r.Context(), token)
		if ok {
			r.Header.Set("Sec-WebSocket-Protocol", strings.Join(others, ","))
		}
		if !ok && err == nil {
			err = errInvalidToken
		}
		return u, ok, err
	}
}

func isWebSocket(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, c := range r.Header.Values("Connection") {
		if strings.Contains(strings.ToLower(c), "upgrade") {
			return true
		}
	}
	return false
}
