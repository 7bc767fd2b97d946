// Package webhook receives push notifications from git hosts: a room of source
// that knows nothing of git, rendering or Syncs, only how a repository's URL is
// compared (source/result).
//
// The webhook receiver (NewHandler) authenticates GitHub, GitLab, Gitea and
// generic push notifications, parses them into a Push (repository URLs normalised by
// result.NormalizeURL, and a branch or tag) and hands it to a callback; deciding which Syncs
// that concerns is the caller's business. It authenticates before it reads where the
// host allows (GitLab's header token), and reads signed bodies only within a small
// in-flight budget and a read deadline, refusing (429) unread what does not fit.
//
// Bodies are hostile: a receiver reads at most MaxBodyBytes, within a budget of
// bytes in flight shared by every request (budget.go), and parsing (parse.go) is
// pure. The agent mounts the handler under PathPrefix on its webhook address
// and hands each Push to sync's Trigger.
package webhook
