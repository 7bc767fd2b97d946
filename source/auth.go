package source

import "tether.dev/tether/source/git"

// Auth holds the credentials of a repository (git.Auth), under the name the
// callers of source know.
type Auth = git.Auth
