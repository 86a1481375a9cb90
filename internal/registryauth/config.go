package registryauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// entry is one registry's credentials in a docker config, as upstream's
// DockerConfigEntry: a username and a password, given as such or as the
// "auth" field (base64 of user:password), which wins. Other fields
// (email, identitytoken, registrytoken) are not read from pull secrets by
// upstream's kubelet, so not here either.
type entry struct {
	Username string
	Password string
}

// UnmarshalJSON decodes an entry, failing on an "auth" field that is not
// base64 of user:password, as upstream.
func (e *entry) UnmarshalJSON(data []byte) error {
	var raw struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Email    string `json:"email,omitempty"`
		Auth     string `json:"auth,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Username, e.Password = raw.Username, raw.Password
	if raw.Auth == "" {
		return nil
	}
	var err error
	e.Username, e.Password, err = decodeAuth(raw.Auth)
	return err
}

// configEntry is an entry as a docker config holds it, with the email
// that upstream keeps beside the credentials: it does not authenticate,
// but it is part of the credentials' hash (CredentialHash) in the records
// of pulled images.
type configEntry struct {
	entry
	Email string
}

// UnmarshalJSON decodes the entry and its email.
func (e *configEntry) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &e.entry); err != nil {
		return err
	}
	var raw struct {
		Email string `json:"email,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Email = raw.Email
	return nil
}

// dockerConfig maps a registry (host, host/path, with or without scheme,
// possibly with wildcards in the host) to its credentials: the content of
// a .dockercfg, and the "auths" of a .dockerconfigjson.
type dockerConfig map[string]configEntry

// dockerConfigJSON is the content of a .dockerconfigjson.
type dockerConfigJSON struct {
	Auths dockerConfig `json:"auths"`
}

// errAuthField is a well-formed base64 "auth" that has no colon.
var errAuthField = errors.New("unable to parse auth field, must be formatted as base64(username:password)")

// decodeAuth splits the "auth" field, base64(user:password), padded or
// not (upstream accepts both; StdEncoding skips newlines, nothing else).
func decodeAuth(field string) (username, password string, err error) {
	var decoded []byte
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		decoded, err = base64.StdEncoding.DecodeString(field)
	} else {
		decoded, err = base64.RawStdEncoding.DecodeString(field)
	}
	if err != nil {
		return "", "", err
	}
	username, password, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errAuthField
	}
	return username, password, nil
}

// parseError describes why a secret's docker config does not decode,
// without any of its content: encoding/json quotes the offending character
// of a syntax error, which may be one of a password's, and an error here
// ends up in the container's waiting message and its event. Upstream
// returns encoding/json's error as it is.
func parseError(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("invalid JSON at offset %d", syntax.Offset)
	}
	// The other errors (a JSON type where another was expected, an "auth"
	// that is not base64 of user:password) name a place, never a value.
	return err
}
