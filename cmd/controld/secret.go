package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// secretFile returns the text of the secret at path, creating it first
// (mode 0600, hex of n random bytes, never overwritten: O_EXCL) when it
// does not exist. Two controlds starting at once agree: the loser of the
// create reads the winner's file.
func secretFile(path string, n int) (secret string, created bool, err error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		s, err := readSecret(path)
		return s, false, err
	}
	if err != nil {
		return "", false, err
	}
	secret = hex.EncodeToString(b)
	_, werr := f.WriteString(secret + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return "", false, err
	}
	return secret, true, nil
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// loadCoverKey reads <state>/cover-url.key, which signs cover URLs, and
// creates it on first start. Deleting it invalidates every cover URL
// handed out.
func (m *Main) loadCoverKey() ([]byte, error) {
	path := filepath.Join(m.Config.StateDir, "cover-url.key")
	s, created, err := secretFile(path, 32)
	if err != nil {
		return nil, fmt.Errorf("cover url key: %w", err)
	}
	key, err := hex.DecodeString(s)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("cover url key %s: want at least 32 hex digits", path)
	}
	if created {
		m.Logger.Info("generated a new cover URL key", "file", path)
	}
	return key, nil
}
