package imagepull

import "testing"

// TestTrimTagDigest follows upstream's TestTrimImageTagDigest.
func TestTrimTagDigest(t *testing.T) {
	const digest = "sha256:38a8906435c4dd5f4258899d46621bfd8eea3ad6ff494ee3c2f17ef0321625bd"
	for _, tc := range []struct {
		image, want string
		fail        bool
	}{
		{image: "myimage", want: "myimage"},
		{image: "myimage:latest", want: "myimage"},
		{image: "myimage@" + digest, want: "myimage"},
		{image: "myimage:v1@" + digest, want: "myimage"},
		{image: "registry.io/myimage:v1.0", want: "registry.io/myimage"},
		{image: "registry.io/myorg/myimage:v2@" + digest, want: "registry.io/myorg/myimage"},
		{image: "registry.io/a/b/c/myimage:latest", want: "registry.io/a/b/c/myimage"},
		{image: "127.0.0.1:15001/private/busybox:1.36", want: "127.0.0.1:15001/private/busybox"},
		{image: "localhost:5000/foo", want: "localhost:5000/foo"},
		{image: "registry.io/myorg/", fail: true},
		{image: "registry.io/myorg/:tag", fail: true},
		{image: "registry.io/MyOrg/app", fail: true},
		{image: "", fail: true},
	} {
		got, err := trimTagDigest(tc.image)
		if (err != nil) != tc.fail || got != tc.want {
			t.Errorf("trimTagDigest(%q) = %q, %v; want %q, failure %t", tc.image, got, err, tc.want, tc.fail)
		}
	}
}

// TestAllowlist follows upstream's TestNewNeverVerifyAllowListedPullPolicy.
func TestAllowlist(t *testing.T) {
	const image = "test.io/test/test-image:sometag"
	for _, tc := range []struct {
		name      string
		allow     []string
		image     string
		verify    bool
		badConfig bool
	}{
		{name: "not listed", allow: []string{"test.io/test/image1", "test.io/test/image2"}, image: image, verify: true},
		{name: "listed", allow: []string{"test.io/test/image1", "test.io/test/test-image"}, image: image},
		{name: "another repo's wildcard", allow: []string{"different.repo/test/*"}, image: image, verify: true},
		{name: "org wildcard", allow: []string{"test.io/test/*"}, image: image},
		{name: "registry wildcard", allow: []string{"test.io/*"}, image: image},
		{name: "familiar name against the full name", allow: []string{"docker.io/library/ubuntu"}, image: "ubuntu", verify: true},
		{name: "familiar name against a full wildcard", allow: []string{"docker.io/library/*"}, image: "ubuntu", verify: true},
		{name: "familiar names", allow: []string{"ubuntu"}, image: "ubuntu:tagged"},
		{name: "familiar name with a digest", allow: []string{"ubuntu"}, image: "ubuntu@sha256:38a8906435c4dd5f4258899d46621bfd8eea3ad6ff494ee3c2f17ef0321625bd"},
		{name: "wildcard in the middle", allow: []string{"image.repo/pokus*/imagename"}, badConfig: true},
		{name: "trailing non-segment wildcard", allow: []string{"image.repo/pokus*"}, badConfig: true},
		{name: "wildcard segment in the middle", allow: []string{"image.repo/*/imagename"}, badConfig: true},
		{name: "only a wildcard segment", allow: []string{"/*"}, badConfig: true},
		{name: "ends with a slash", allow: []string{"image.repo/"}, badConfig: true},
		{name: "empty", allow: []string{""}, badConfig: true},
		{name: "asterisk", allow: []string{"*"}, badConfig: true},
		{name: "tagged", allow: []string{"test.io/test/image1:tagged"}, badConfig: true},
		{name: "with a digest", allow: []string{"test.io/test/image1@sha256:38a8906435c4dd5f4258899d46621bfd8eea3ad6ff494ee3c2f17ef0321625bd"}, badConfig: true},
		{name: "trailing space", allow: []string{"test.io/test/image1 "}, badConfig: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateAllowlist(tc.allow); (err != nil) != tc.badConfig {
				t.Fatalf("ValidateAllowlist = %v, want failure %t", err, tc.badConfig)
			}
			p, err := NewPolicy("NeverVerifyAllowlistedImages", tc.allow)
			if (err != nil) != tc.badConfig {
				t.Fatalf("NewPolicy = %v, want failure %t", err, tc.badConfig)
			}
			if tc.badConfig {
				return
			}
			if got := p.requireVerification(tc.image, true); got != tc.verify {
				t.Errorf("requireVerification(%q) = %t, want %t", tc.image, got, tc.verify)
			}
		})
	}
}

// TestUnknownPolicy: a policy upstream does not know is refused.
func TestUnknownPolicy(t *testing.T) {
	if _, err := NewPolicy("Sometimes", nil); err == nil {
		t.Fatal("NewPolicy(Sometimes) succeeded")
	}
}
