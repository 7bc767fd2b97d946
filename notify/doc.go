// Package notify tells people what the Syncs of a namespace do, through the
// Notifiers of that namespace: chat messages (Slack, Microsoft Teams, Discord,
// Google Chat), signed or plain JSON webhooks, Alertmanager alerts, and commit
// statuses on the git host of the revision a Sync is at (GitHub, GitLab, Gitea,
// Bitbucket Server).
//
// It owns no state of a Sync and sits off the reconcile's path: it reads Syncs
// from the same watch every other client may use, and derives what to say from
// what the reconciler already recorded in their status. Nothing the reconciler
// does waits on it, and nothing it does waits on the reconciler.
//
// The data flows in three steps, each in its own file:
//
//   - events.go: two versions of a Sync → the Events worth a message (a revision
//     applied, Healthy, Degraded, a failure to fetch, render or apply, drift left
//     alone, a rollback, a suspend or resume). Pure.
//   - level.go: one Sync → the Levels it asserts: the commit status of the
//     revision it is at (pending, success, failure) and whether its alert fires.
//     Pure, and level-triggered: after a restart the current level is sent once.
//   - payload_*.go: Events or a Level → the request a vendor documents (its URL,
//     headers and JSON body). Pure.
//   - deliver.go, queue.go: one worker per receiver with a bounded queue, retries
//     with backoff on 5xx and 429 honouring Retry-After, and chat bursts
//     coalesced into a bounded number of messages. A dead receiver delays only
//     itself.
//   - controller.go: the watch that feeds it all, run by the leader only, and the
//     Notifier's status (Ready, lastDelivery).
//
// Security: a receiver's address and token come from the Notifier or its Secret,
// are never logged nor written to a status (errors name the Notifier and the
// status code, never the URL), and the agent's operator may restrict the hosts a
// notification may reach (AllowedHosts): a tenant's webhook URL is otherwise a
// way to make the agent call internal addresses.
package notify
