// Package cosign decides whether an OCI artifact carries a cosign signature by
// a trusted public key. It is pure logic: it reads through a Fetcher the
// caller gives it (wrapping the caller's OCI client), reads a Secret's data it
// is handed, makes no request of its own, reads no file or cluster, asks no
// transparency log, Fulcio or timestamp authority, and logs nothing; the
// caller decides what a refusal means for a Sync.
//
// Data flows in two steps. ParseKeys reads the trusted keys (keys.go): each
// entry of the Secret is one PEM public key as cosign writes cosign.pub, read
// with Sigstore's own library (github.com/sigstore/sigstore's cryptoutils and
// signature), its data key naming it in the Signer; Keys.Digest identifies
// them so that verdicts can be cached per (artifact digest, keys). Verify then
// looks for the artifact's signatures where cosign puts them and checks them:
//
//   - cosign v2's format (simplesigning.go), which Flux verifies too: a
//     manifest tagged SignatureTag(subject) in the artifact's repository,
//     each of whose layers is a "simple signing" JSON payload with the base64
//     signature over its bytes in the annotation SignatureAnnotation. A
//     payload is trusted once its signature verifies by a trusted key, and
//     then must be of cosign's type, name the artifact's manifest digest; its
//     docker-reference is ignored, as cosign's verify ignores it (its spec says the
//     field is ignored): the digest names the content whole, and a signature
//     copied with its artifact to a mirror (cosign copy) verifies there.
//   - cosign v3's format (bundle.go, `cosign sign --new-bundle-format`, v3's
//     default): a Sigstore bundle of version 0.3 attached through the OCI
//     referrers API. A DSSE envelope must carry an in-toto statement (of any
//     predicate, as cosign v3's verify accepts) with the artifact's sha256
//     digest among its subjects; a message signature must be over the
//     artifact's digest, and verifies by ECDSA and RSA keys only (pure
//     ed25519 signs messages, not digests). The bundle's verification
//     material (key hint, certificates), transparency log entries and
//     timestamps are not read: the trusted keys are the only trust.
//
// The first signature that verifies wins, and names its Signer from the
// trusted keys; a refusal is an *Error whose Reason classes it (NotSigned,
// UntrustedSignature, InvalidSignature) and whose causes name each signature
// examined, by layer index or bundle digest.
//
// Registry content is hostile: at most MaxSignatures signatures are examined,
// a payload over MaxPayload or a bundle over MaxBundle is refused unread,
// every blob is checked against its digest, signatures are verified before
// anything in a payload is believed, nothing panics on malformed input, and no
// message quotes a payload, a signature or key bytes.
package cosign
