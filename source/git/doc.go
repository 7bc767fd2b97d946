// Package git is how source speaks to git hosts: a room of source that knows
// api's reasons and source/result, and nothing of rendering, charts or Syncs.
//
// Remotes works out how to reach one repository with one set of credentials
// (For → *Remote): credentials written into an http(s) URL are taken out of it
// (SplitCredentials), the Secret's (Auth) win over them, and Auth.Key
// identifies them so that callers with other credentials never share what a
// remote answered. SSH host keys are always checked against the caller's
// known_hosts (auth.go). HTTP(S) conversations use clients of their own
// (transport.go), never http.DefaultTransport: explicit timeouts, the proxy from
// the environment, TLS against the system's roots plus the caller's CA bundle;
// an answer outside 2xx is read up to 4 KiB and dropped, a ref listing up to
// 8 MiB, and a body that stalls ends the request (Bounded, which chart
// repositories use too). No error quotes a credential, nor what a host's HTTP
// error answer said (WithStatus, WithoutHostText).
//
// HostGate bounds the conversations with one host at once, shared fairly
// between tenants, and remembers a host that could not be reached (hosts.go).
// Remote.Reason classes a failure for conditions (errors.go). NewestTag and
// ParseRange resolve a semver range against a listing's tags; ObjectLRU is the
// bounded cache of decoded objects a repository opened from the cache uses.
//
// The on-disk cache of repositories that uses all this (fetches, ref
// listings, the cache's fair share between tenants, reading a commit's trees
// for a render) is the room above it, source/gitcache.
package git
