package registryauth

import "strings"

// Repository is the repository an image is pulled from (repository), the
// image a credential provider plugin is asked about.
func Repository(image string) string { return repository(image) }

// repository is the repository an image is pulled from, fully qualified
// as upstream's ParseImageName makes it before the keyring lookup
// (distribution's ParseNormalizedNamed): without tag or digest, with
// Docker Hub's host docker.io (index.docker.io is the same) and its
// library/ for official images. A first component is a host when it has
// a "." or a ":", is localhost, or has an upper-case letter (which a
// repository path cannot).
func repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	host, path, hasHost := strings.Cut(name, "/")
	if !hasHost || (!strings.ContainsAny(host, ".:") && host != "localhost" && strings.ToLower(host) == host) {
		host, path = "docker.io", name
	}
	if host == "index.docker.io" {
		host = "docker.io"
	}
	if host == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	return host + "/" + path
}
