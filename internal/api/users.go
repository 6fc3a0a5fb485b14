package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/api/readers"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/protocol"
)

// Reader accounts, managed with the admin token.

func (s *Server) userRoutes(g *echo.Group) {
	g.POST("/users", s.createUser)
	g.GET("/users", s.listUsers)
	g.GET("/users/:id", s.getUser)
	g.PATCH("/users/:id", s.patchUser)
	g.DELETE("/users/:id", s.deleteUser)
	g.PUT("/users/:id/libraries", s.putUserLibraries)
	g.POST("/users/:id/api-keys", s.createAPIKey)
	g.GET("/users/:id/api-keys", s.listAPIKeys)
	g.DELETE("/users/:id/api-keys/:key_id", s.deleteAPIKey)
}

type userBody struct {
	Name       *string  `json:"name"`
	Password   *string  `json:"password"`
	Disabled   *bool    `json:"disabled"`
	LibraryIDs *[]int64 `json:"library_ids"`
}

// validUserName: 1–64 characters, no control characters and no colon
// (HTTP Basic splits the name from the password at the first one).
func validUserName(n *string) error {
	if n == nil {
		return httpx.Fieldf("name", "required")
	}
	v := *n
	if v != strings.TrimSpace(v) || v == "" || utf8.RuneCountInString(v) > 64 || strings.ContainsAny(v, ":") ||
		strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return httpx.Fieldf("name", "must be 1 to 64 characters without a colon, control characters or surrounding spaces")
	}
	return nil
}

func (s *Server) createUser(c echo.Context) error {
	var b userBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.Disabled != nil {
		return httpx.Fieldf("disabled", "set it with PATCH")
	}
	if err := errors.Join(validUserName(b.Name), readers.ValidPassword(b.Password)); err != nil {
		return firstAPIError(err)
	}
	ctx := c.Request().Context()
	u, err := s.rd.CreateUser(ctx, *b.Name, readers.HashPassword(*b.Password))
	if err != nil {
		return err
	}
	v := views.User(u)
	if b.LibraryIDs != nil {
		if err := s.rd.SetUserLibraries(ctx, u.ID, *b.LibraryIDs); err != nil {
			_ = s.rd.DeleteUser(ctx, u.ID)
			return err
		}
	}
	if v.LibraryIDs, err = s.rd.UserLibraries(ctx, u.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, v)
}

func (s *Server) listUsers(c echo.Context) error {
	limit, after, err := httpx.IDPage(c)
	if err != nil {
		return err
	}
	users, err := s.rd.ListUsers(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return httpx.IDPageJSON(c, users, limit, views.User, func(u model.User) int64 { return u.ID })
}

func (s *Server) userWithGrant(c echo.Context, u model.User) error {
	v := views.User(u)
	var err error
	if v.LibraryIDs, err = s.rd.UserLibraries(c.Request().Context(), u.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) getUser(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	u, err := s.rd.GetUser(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.userWithGrant(c, u)
}

// patchUser renames, resets the password of, or disables a user.
func (s *Server) patchUser(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	var b userBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	var p reading.UserPatch
	if b.Name != nil {
		if err := validUserName(b.Name); err != nil {
			return err
		}
		p.Name = b.Name
	}
	if b.Password != nil {
		if err := readers.ValidPassword(b.Password); err != nil {
			return err
		}
		h := readers.HashPassword(*b.Password)
		p.PasswordHash = &h
	}
	if b.LibraryIDs != nil {
		return httpx.Fieldf("library_ids", "set them with PUT /users/{id}/libraries")
	}
	p.Disabled = b.Disabled
	u, err := s.rd.UpdateUser(c.Request().Context(), id, p)
	if err != nil {
		return err
	}
	return s.userWithGrant(c, u)
}

func (s *Server) deleteUser(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.rd.DeleteUser(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// putUserLibraries replaces the libraries a user may see.
func (s *Server) putUserLibraries(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	var b struct {
		LibraryIDs *[]int64 `json:"library_ids"`
	}
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.LibraryIDs == nil {
		return httpx.Fieldf("library_ids", "required")
	}
	ctx := c.Request().Context()
	if err := s.rd.SetUserLibraries(ctx, id, *b.LibraryIDs); err != nil {
		return err
	}
	u, err := s.rd.GetUser(ctx, id)
	if err != nil {
		return err
	}
	return s.userWithGrant(c, u)
}

type apiKeyView struct {
	ID         int64          `json:"id"`
	Name       string         `json:"name"`
	Key        string         `json:"key,omitempty"`
	CreatedAt  protocol.Time  `json:"created_at"`
	LastUsedAt *protocol.Time `json:"last_used_at"`
}

func viewAPIKey(k model.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Name: k.Name, CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
}

// apiKeyPrefix marks Bindery's keys so that a leaked one is recognisable.
const apiKeyPrefix = "bnd_"

// createAPIKey makes a key and shows it once; only its SHA-256 is kept.
func (s *Server) createAPIKey(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	var b struct {
		Name *string `json:"name"`
	}
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.Name == nil || strings.TrimSpace(*b.Name) == "" || utf8.RuneCountInString(*b.Name) > 100 {
		return httpx.Fieldf("name", "must be 1 to 100 characters")
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	key := apiKeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	h := sha256.Sum256([]byte(key))
	k, err := s.rd.CreateAPIKey(c.Request().Context(), id, strings.TrimSpace(*b.Name), h[:])
	if err != nil {
		return err
	}
	v := viewAPIKey(k)
	v.Key = key
	return c.JSON(http.StatusCreated, v)
}

func (s *Server) listAPIKeys(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.rd.GetUser(ctx, id); err != nil {
		return err
	}
	keys, err := s.rd.ListAPIKeys(ctx, id)
	if err != nil {
		return err
	}
	out := make([]apiKeyView, len(keys))
	for i, k := range keys {
		out[i] = viewAPIKey(k)
	}
	return c.JSON(http.StatusOK, map[string]any{"items": out})
}

func (s *Server) deleteAPIKey(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	keyID, err := httpx.PathID(c, "key_id")
	if err != nil {
		return err
	}
	if err := s.rd.DeleteAPIKey(c.Request().Context(), id, keyID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
