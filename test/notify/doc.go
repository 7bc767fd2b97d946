// Package notifications runs the notify controller against a real API server
// (test/controlplane): Syncs whose status the test writes as the reconciler
// would, Notifiers and their Secrets, and loopback receivers standing for the
// vendors (a GitHub commit-status API, a generic webhook). The unit tests of
// payloads, retries and queues live beside the code, in notify/.
package notifications
