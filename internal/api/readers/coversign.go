package readers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/protocol"
)

// Cover URLs are signed so that a plain <img src>, a reader app or a
// browser tab can load a cover without the admin token, which must never
// appear in a URL (it would land in logs, histories and Referer headers).
// A signature covers the file, the cover version and an expiry; it is an
// HMAC-SHA256 under a secret that controld keeps in its state folder.
//
// The expiry is rounded up to the next whole day plus a week, so a cover's
// URL stays the same for a day and an immutable browser cache keeps
// working; any URL handed out is valid for at least a week.
const (
	coverURLDay      = 24 * time.Hour
	coverURLLifetime = 7 * coverURLDay
)

// CoverKeyBytes is the length of the cover URL secret.
const CoverKeyBytes = 32

type coverSigner struct {
	key []byte
	now func() time.Time
}

func (c coverSigner) mac(fileID int64, version string, exp int64) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("cover\x00" + strconv.FormatInt(fileID, 10) + "\x00" + version + "\x00" + strconv.FormatInt(exp, 10)))
	return m.Sum(nil)
}

// url is the signed URL of a file's cover at version.
func (c coverSigner) url(fileID int64, version string) string {
	exp := c.now().Add(coverURLLifetime).Truncate(coverURLDay).Add(coverURLDay).Unix()
	sig := base64.RawURLEncoding.EncodeToString(c.mac(fileID, version, exp))
	return httpx.Base + "/files/" + strconv.FormatInt(fileID, 10) + "/cover?v=" + version +
		"&exp=" + strconv.FormatInt(exp, 10) + "&sig=" + sig
}

// check verifies a signed request for the cover of fileID: 403 when the
// signature does not match (compared in constant time) or has expired.
func (c coverSigner) check(fileID int64, version, exp, sig string) error {
	e, err := strconv.ParseInt(exp, 10, 64)
	got, derr := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || derr != nil || !hmac.Equal(got, c.mac(fileID, version, e)) {
		return httpx.Err(protocol.CodeBadSignature, "the cover URL's signature does not match")
	}
	if c.now().Unix() >= e {
		return httpx.Err(protocol.CodeURLExpired, "the cover URL expired; fetch the file again for a fresh one")
	}
	return nil
}

// readerOrSignature admits a cover request that carries a signature (sig)
// when it is valid, and any other request only with reader credentials
// whose grant holds the file (readerFile; the admin token sees all).
func (s *Server) readerOrSignature(next echo.HandlerFunc) echo.HandlerFunc {
	withToken := s.readerFile(next)
	return func(c echo.Context) error {
		sig := c.QueryParam("sig")
		if sig == "" {
			return withToken(c)
		}
		id, err := httpx.PathID(c, "id")
		if err != nil {
			return err
		}
		if err := s.signer.check(id, c.QueryParam("v"), c.QueryParam("exp"), sig); err != nil {
			return err
		}
		return next(c)
	}
}
