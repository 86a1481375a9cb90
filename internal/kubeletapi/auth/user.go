package auth

import "context"

// Well-known users and groups, as k8s.io/apiserver names them.
const (
	AnonymousUser        = "system:anonymous"
	AuthenticatedGroup   = "system:authenticated"
	UnauthenticatedGroup = "system:unauthenticated"
)

// User is who made a request, as authentication found it.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is what the authenticator added: the TokenReview's extra
	// fields, or the x509 credential ID.
	Extra map[string][]string
}

type userKey struct{}

// WithUser returns ctx carrying u, as Wrap passes it to the next handler.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user Wrap authenticated for the request whose
// context is ctx.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}
