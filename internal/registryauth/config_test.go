package registryauth

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// TestEntryDecode follows upstream's TestDockerConfigEntryJSONDecode.
func TestEntryDecode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  entry
		fail  bool
	}{
		{"fields", `{"username": "foo", "password": "bar", "email": "foo@example.com"}`, entry{Username: "foo", Password: "bar"}, false},
		{"auth gives username and password", `{"auth": "Zm9vOmJhcg==", "email": "foo@example.com"}`, entry{Username: "foo", Password: "bar"}, false},
		{"auth wins over username and password", `{"username": "foo", "password": "bar", "auth": "cGluZzpwb25n"}`, entry{Username: "ping", Password: "pong"}, false},
		{"tokens are not read", `{"identitytoken": "tok", "registrytoken": "rtok"}`, entry{}, false},
		{"auth not base64", `{"auth": "pants", "email": "foo@example.com"}`, entry{}, true},
		{"wrong JSON type", `{"email": false}`, entry{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got entry
			err := json.Unmarshal([]byte(tc.input), &got)
			if (err != nil) != tc.fail {
				t.Fatalf("err = %v, want failure %t", err, tc.fail)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDecodeAuth follows upstream's TestDecodeDockerConfigFieldAuth.
func TestDecodeAuth(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		user, pass  string
		fail        bool
	}{
		{"padded", "Zm9vOmJhcg==", "foo", "bar", false},
		{"unpadded", "Zm9vOmJhcg", "foo", "bar", false},
		{"newlines skipped", "Zm9vOm\nJhcg==\n", "foo", "bar", false},
		{"standard encoding", base64.StdEncoding.EncodeToString([]byte("foo:bar")), "foo", "bar", false},
		{"raw encoding", base64.RawStdEncoding.EncodeToString([]byte("foo:bar")), "foo", "bar", false},
		{"colon in password", base64.StdEncoding.EncodeToString([]byte("foo:b:ar")), "foo", "b:ar", false},
		{"no colon", "cGFudHM=", "", "", true},
		{"trailing space", "Zm9vOmJhcg== ", "", "", true},
		{"not base64", "pants", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, pass, err := decodeAuth(tc.input)
			if (err != nil) != tc.fail {
				t.Fatalf("err = %v, want failure %t", err, tc.fail)
			}
			if user != tc.user || pass != tc.pass {
				t.Errorf("got %q %q, want %q %q", user, pass, tc.user, tc.pass)
			}
		})
	}
}
