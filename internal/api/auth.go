package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/protocol"
)

// checkToken refuses tokens too short to resist guessing.
func checkToken(tok string) error {
	if len(tok) < 16 {
		return errors.New("api: admin token must be at least 16 characters")
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return errors.New("api: admin token must not contain white space")
	}
	return nil
}

// requireToken checks "Authorization: Bearer <token>". Both sides are
// hashed first so the constant-time compare also hides the token's length.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	want := sha256.Sum256([]byte(s.cfg.Token))
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, tok, ok := strings.Cut(h, " ")
		got := sha256.Sum256([]byte(tok))
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return httpx.Err(protocol.CodeUnauthorized, "missing or wrong bearer token")
		}
		return next(c)
	}
}
