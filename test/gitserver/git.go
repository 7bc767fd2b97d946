package gitserver

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Author is the identity of every commit and tag the helpers make.
const (
	AuthorName  = "Tether Test"
	AuthorEmail = "test@tether.dev"
)

// Git runs the git CLI in dir (the current directory if dir is empty) with the same
// isolated environment the helpers use, and returns its standard output with
// surrounding white space trimmed. It fails the test, showing git's standard error, if
// git exits non-zero. Tests use it to act as a user would: clone, ls-remote, log.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(t.TempDir(), dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// gitError is a failed git command: the exit error and what git said about it.
type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }
func (e *gitError) Unwrap() error { return e.err }

// runGit runs git with HOME set to home and returns its trimmed standard output.
func runGit(home, dir string, args ...string) (string, error) {
	return runGitEnv(home, nil, dir, args...)
}

// runGitEnv is runGit with the variables extra added to git's environment.
func runGitEnv(home string, extra []string, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv(home)...)
	cmd.Env = append(withoutInheritedGit(cmd.Env), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &gitError{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// gitEnv isolates git from the machine it runs on: no system or global configuration
// (so no signing, hooks, templates or credential helpers), no prompts or editors that
// would hang a test, a fixed identity, and messages in a stable language.
func gitEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_EDITOR=false", // a command that would open one fails instead of waiting
		"GIT_AUTHOR_NAME=" + AuthorName,
		"GIT_AUTHOR_EMAIL=" + AuthorEmail,
		"GIT_COMMITTER_NAME=" + AuthorName,
		"GIT_COMMITTER_EMAIL=" + AuthorEmail,
		"LC_ALL=C",
	}
}

// withoutInheritedGit drops git variables inherited from the environment that would
// point git elsewhere (GIT_DIR when tests run from a git hook, GIT_ASKPASS from an IDE),
// keeping the ones gitEnv set, which come last.
func withoutInheritedGit(env []string) []string {
	own := map[string]bool{}
	for _, kv := range gitEnv("") {
		own[kv[:strings.IndexByte(kv, '=')]] = true
	}
	kept := env[:0:0]
	seen := map[string]bool{}
	for i := len(env) - 1; i >= 0; i-- {
		key, _, _ := strings.Cut(env[i], "=")
		if seen[key] {
			continue
		}
		seen[key] = true
		if (strings.HasPrefix(key, "GIT_") || key == "SSH_ASKPASS") && !own[key] {
			continue
		}
		kept = append(kept, env[i])
	}
	return kept
}
