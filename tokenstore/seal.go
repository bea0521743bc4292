package tokenstore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/toolsvc/toolsvc/internal/boundedfile"
)

// KeySize is the size of a store key: AES-256.
const KeySize = 32

// sealVersion is the first byte of everything Sealer seals, so that the
// format can change without guessing.
const sealVersion = 1

// Sealer encrypts and authenticates values with AES-256-GCM under one key.
// Each value is bound to a context (its key in the store), so a value
// copied to another principal's slot does not decrypt.
type Sealer struct {
	aead cipher.AEAD
	mac  []byte // a subkey for naming keys (Name)
}

// NewSealer returns a Sealer for a KeySize-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("tokenstore: want a %d-byte key, got %d bytes", KeySize, len(key))
	}
	enc, mac := subkey(key, "seal"), subkey(key, "name")
	block, err := aes.NewCipher(enc)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, mac: mac}, nil
}

// subkey derives an independent key for one use (HMAC-SHA256 as a PRF).
func subkey(key []byte, use string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("toolsvc tokenstore " + use))
	return h.Sum(nil)
}

// Seal encrypts plain bound to context: version ‖ nonce ‖ ciphertext.
func (s *Sealer) Seal(plain, context []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce)
	out := append([]byte{sealVersion}, nonce...)
	return s.aead.Seal(out, nonce, plain, context)
}

// Open decrypts what Seal returned for the same context; anything else is
// ErrCorrupt.
func (s *Sealer) Open(sealed, context []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, ErrCorrupt
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], context)
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

// Name is an opaque, stable name for k (HMAC-SHA256 under a subkey,
// base64url): a shared store's key names reveal no principal or server.
func (s *Sealer) Name(k Key) string {
	h := hmac.New(sha256.New, s.mac)
	h.Write(keyContext(k))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// keyContext is k as the context its token is sealed under.
func keyContext(k Key) []byte {
	return fmt.Appendf(nil, "%d:%s\x00%s", len(k.Principal), k.Principal, k.Server)
}

// MaxKeyFileSize bounds a key file: 32 raw bytes, 64 hex digits or 44
// base64 characters, with room for a newline and a comment-free margin.
const MaxKeyFileSize = 1 << 10

// ReadKeyFile reads a store key: 32 bytes raw, or as 64 hex digits or
// base64 (surrounding whitespace ignored; `openssl rand -base64 32` makes
// one). It is read like every file toolsvc reads (boundedfile: a regular
// file, never a FIFO, a device or a directory, at most MaxKeyFileSize
// bytes), and it must not be readable or writable by group or others
// (mode 0600 or 0400; checked on the open file).
func ReadKeyFile(path string) ([]byte, error) {
	b, fi, err := boundedfile.Read(path, MaxKeyFileSize, "the token store's key file")
	if err != nil {
		return nil, fmt.Errorf("tokenstore key file %s: %w", path, err)
	}
	defer clear(b)
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("tokenstore key file %s: mode %#o lets others read it (want 0600 or 0400)", path, fi.Mode().Perm())
	}
	if len(b) == KeySize {
		return bytes.Clone(b), nil
	}
	t := bytes.TrimSpace(b)
	if k, err := hex.DecodeString(string(t)); err == nil && len(k) == KeySize {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(string(t)); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("tokenstore key file %s: holds %d bytes, not a key: want exactly 32 bytes, raw, as 64 hex digits or as base64", path, len(b))
}

// SealToken seals t as k's token: only OpenToken with the same k opens it.
func (s *Sealer) SealToken(k Key, t Token) []byte {
	plain, _ := json.Marshal(t) // a Token always marshals
	defer clear(plain)
	return s.Seal(plain, keyContext(k))
}

// OpenToken opens what SealToken sealed for k, or returns ErrCorrupt.
func (s *Sealer) OpenToken(k Key, sealed []byte) (Token, error) {
	plain, err := s.Open(sealed, keyContext(k))
	if err != nil {
		return Token{}, err
	}
	defer clear(plain)
	var t Token
	if err := json.Unmarshal(plain, &t); err != nil {
		return Token{}, ErrCorrupt
	}
	return t, nil
}
