package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Keyring holds the keys derived from the master key: one AES-256-GCM key
// for secrets that must be read back, and one HMAC-SHA256 key for secrets
// that only need checking. It is safe for concurrent use.
type Keyring struct {
	aead    cipher.AEAD
	macKey  []byte
	macPool sync.Pool
}

// MasterKeySize is the master key's length in bytes.
const MasterKeySize = 32

// NewKeyring derives the keyring from a 32-byte master key.
func NewKeyring(master []byte) (*Keyring, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("master key must be %d bytes, got %d", MasterKeySize, len(master))
	}
	encKey := derive(master, "latchkey/v1/encrypt")
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	k := &Keyring{aead: aead, macKey: derive(master, "latchkey/v1/hash")}
	k.macPool.New = func() any { return hmac.New(sha256.New, k.macKey) }
	return k, nil
}

func derive(master []byte, label string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// HashSize is the length of a keyed hash.
const HashSize = sha256.Size

// Hash returns the keyed HMAC-SHA256 of secret in the given domain (for
// example "apikey" or "otp"), so equal secrets of different kinds never
// share a hash. The result is what the store keeps instead of the secret.
func (k *Keyring) Hash(domain string, secret []byte) [HashSize]byte {
	m := k.macPool.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write(secret)
	var out [HashSize]byte
	m.Sum(out[:0])
	k.macPool.Put(m)
	return out
}

// HashString is Hash for a string secret.
func (k *Keyring) HashString(domain, secret string) [HashSize]byte {
	m := k.macPool.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	var out [HashSize]byte
	m.Sum(out[:0])
	k.macPool.Put(m)
	return out
}

// Equal compares two hashes in constant time.
func Equal(a, b []byte) bool { return hmac.Equal(a, b) }

// Seal encrypts plaintext with AES-256-GCM; aad binds it to its owner
// (for example a project id) so a sealed value cannot be moved.
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return k.aead.Seal(nonce, nonce, plaintext, aad), nil
}

// ErrDecrypt means a sealed value could not be opened: the master key is
// wrong or the data was altered.
var ErrDecrypt = errors.New("cannot decrypt secret: wrong master key or corrupted data")

// Open decrypts a value made by Seal with the same aad.
func (k *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, ErrDecrypt
	}
	out, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return out, nil
}

// LoadMasterKey returns the master key: decoded from b64 when given,
// otherwise read from file, which is created (mode 0600) with a fresh
// random key when it does not exist. created reports a new file.
func LoadMasterKey(b64, file string) (key []byte, created bool, err error) {
	if b64 != "" {
		key, err = base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil || len(key) != MasterKeySize {
			return nil, false, fmt.Errorf("master key must be %d bytes, base64-encoded", MasterKeySize)
		}
		return key, false, nil
	}
	data, err := os.ReadFile(file)
	if err == nil {
		key, err = base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
		if err != nil || len(key) != MasterKeySize {
			return nil, false, fmt.Errorf("master key file %s is not %d base64-encoded bytes", file, MasterKeySize)
		}
		return key, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("read master key file: %w", err)
	}
	key = make([]byte, MasterKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	if err := WriteSecretFile(file, base64.StdEncoding.EncodeToString(key)+"\n"); err != nil {
		return nil, false, fmt.Errorf("write master key file: %w", err)
	}
	return key, true, nil
}

// ReplaceSecretFile writes content to file with mode 0600, replacing any
// file already there atomically (a temporary file beside it, synced, then
// renamed over it).
func ReplaceSecretFile(file, content string) error { return replaceFile(file, content, true) }

// ReplaceFileUnsynced is ReplaceSecretFile without the sync, for a file
// that need not outlive a crash of the machine (the server's address
// file: after one it is at worst empty until the next start rewrites
// it), where the sync would cost every start milliseconds on a slow disk.
func ReplaceFileUnsynced(file, content string) error { return replaceFile(file, content, false) }

// replaceFile writes content to file with mode 0600 through a temporary
// file beside it, synced first when sync is set, renamed over file.
func replaceFile(file, content string, sync bool) error {
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// WriteSecretFile creates file with mode 0600 holding content; it fails
// if the file exists.
func WriteSecretFile(file, content string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
