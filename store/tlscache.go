package store

// TLSCacheEntry is one entry of the cache of automatic HTTPS
// (--tls-domain), by the name the ACME client gives it: a domain's
// certificate chain with its private key ("auth.example.com", or
// "auth.example.com+rsa" for clients without ECDSA), the ACME account
// key ("acme_account+key"), or the answer to a challenge in flight (names
// ending in "+token" or "+http-01"). Data is sealed with the keyring by
// the caller (it holds private keys); the store keeps it as it is.
type TLSCacheEntry struct {
	Key  string
	Data []byte
}
