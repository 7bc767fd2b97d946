// Package sops is Tether's own reading of SOPS-encrypted files: a leaf of
// source that knows nothing of Tether's but api's reasons and the error types
// of source/result.
//
// Open decrypts one file (YAML, JSON, dotenv, or anything else as SOPS writes
// a binary file; the name picks the format and the metadata, never the name,
// makes a file a SOPS file, IsFile) with a Sync's Keys alone: age identities
// and OpenPGP private keys parsed by ParseKeys from a keys Secret's entries,
// never the process's environment, files or keyrings. It reads the metadata
// (metadata.go), opens the data key from a key group or from enough of them
// (datakey.go, keys_open.go: Shamir's combination), decrypts every value with
// AES-GCM (cipher.go, tree.go, which also follows the encryption rules that
// left values in clear), checks the MAC over the whole tree, and writes the
// tree back in clear in its own format (yaml.go, json.go, dotenv.go). The
// shapes are tested against what the sops CLI prints.
//
// Repository content is hostile: nesting, data keys and values are bounded,
// and every failure is a *result.RenderError naming the file with its reason
// (DecryptionFailed, DecryptionTampered) whose message never holds a
// decrypted value; Opened.Values lists them so that the caller can take them
// out of any other message. The caller (source's decrypting file system) decides
// which files pass through Open and whether a Secret must be encrypted
// (Decryption.RequireEncryption).
package sops
