// Package faultproxy is a reverse proxy between a client (the tether binary) and a
// local kube-apiserver that injects the failures real clusters have: 429 with
// Retry-After, 500 and 503, slow responses, connection resets, dropped watch
// streams, and 409 on status writes. Faults are chosen by rules (a request matcher,
// a rate and a fault) with a seeded random source, so a run can be repeated; every
// request and the fault it got is logged, so a test can check what the agent did
// (no wrongful DELETE) and how hard it pushed (requests per second) under faults.
//
// The proxy terminates TLS with a certificate of its own and forwards with the
// upstream's admin credentials, so the client is authenticated as the admin.
package faultproxy
