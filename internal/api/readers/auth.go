package readers

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/protocol"
)

// Reader routes (/api/v1/me, OPDS, covers and pages) take, in this order:
// the admin bearer token (sees every library), an API key (X-API-Key, a
// bearer token that is not the admin's, or ?apikey= for apps that cannot
// send headers) and HTTP Basic with a user's name and password. A wrong
// credential of any kind is the same 401; after too many failures for one
// name or from one address every attempt is 429 until the window passes.

const (
	readerKey     = "bindery.reader"
	apiKeyHeader  = "X-API-Key"
	basicRealm    = `Basic realm="Bindery", charset="UTF-8"`
	failWindow    = 15 * time.Minute
	maxNameFails  = 10
	maxAddrFails  = 50
	credCacheTTL  = 5 * time.Minute
	credCacheSize = 1024
	// maxTracked bounds the names and addresses the limiter counts in one
	// window (memory stays a few MB whatever arrives).
	maxTracked = 100000
)

// readerOf is the caller of a reader route (set by readerAuth).
func readerOf(c echo.Context) reading.Reader {
	r, _ := c.Get(readerKey).(reading.Reader)
	return r
}

// readerAuth admits a request with reader credentials and puts the
// caller's grant in the context.
func (s *Server) readerAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, err := s.authenticate(c)
		if err != nil {
			if errors.Is(err, errUnauthorized) {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, basicRealm)
				return httpx.Err(protocol.CodeUnauthorized, "missing or wrong credentials")
			}
			return err
		}
		c.Set(readerKey, r)
		return next(c)
	}
}

var errUnauthorized = errors.New("unauthorized")

func (s *Server) authenticate(c echo.Context) (reading.Reader, error) {
	req := c.Request()
	addr := clientAddr(c)
	scheme, cred, _ := strings.Cut(req.Header.Get(echo.HeaderAuthorization), " ")
	key := req.Header.Get(apiKeyHeader)
	switch {
	case strings.EqualFold(scheme, "Bearer") && s.isAdminToken(cred):
		return reading.Reader{All: true}, nil
	case strings.EqualFold(scheme, "Bearer"):
		key = cred
	case strings.EqualFold(scheme, "Basic"):
		return s.basicLogin(c, cred, addr)
	}
	if key == "" {
		key = c.QueryParam("apikey")
	}
	if key == "" {
		return reading.Reader{}, errUnauthorized
	}
	return s.apiKeyLogin(c, key, addr)
}

func (s *Server) isAdminToken(tok string) bool {
	got, want := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (s *Server) apiKeyLogin(c echo.Context, key, addr string) (reading.Reader, error) {
	if err := s.limits.check(c, "", addr); err != nil {
		return reading.Reader{}, err
	}
	h := sha256.Sum256([]byte(key))
	u, err := s.rd.UserByAPIKey(c.Request().Context(), h[:])
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Disabled) {
		s.limits.fail("", addr)
		return reading.Reader{}, errUnauthorized
	}
	if err != nil {
		return reading.Reader{}, err
	}
	if err := s.rd.TouchAPIKey(c.Request().Context(), h[:]); err != nil {
		s.log.Warn("api key use not recorded", "user_id", u.ID, "err", err)
	}
	return reading.Reader{UserID: u.ID}, nil
}

func (s *Server) basicLogin(c echo.Context, cred, addr string) (reading.Reader, error) {
	name, password, ok := c.Request().BasicAuth()
	if !ok || cred == "" {
		s.limits.fail("", addr)
		return reading.Reader{}, errUnauthorized
	}
	if err := s.limits.check(c, name, addr); err != nil {
		return reading.Reader{}, err
	}
	u, err := s.rd.UserByName(c.Request().Context(), name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return reading.Reader{}, err
	}
	if s.creds.ok(name, password, u.PasswordHash) && !u.Disabled {
		return reading.Reader{UserID: u.ID}, nil
	}
	hash := u.PasswordHash
	if err != nil {
		hash = dummyHash
	}
	if !checkPassword(hash, password) || err != nil || u.Disabled {
		s.limits.fail(name, addr)
		return reading.Reader{}, errUnauthorized
	}
	s.creds.put(name, password, u.PasswordHash)
	return reading.Reader{UserID: u.ID}, nil
}

// credCache remembers credentials that verified, so that a reader app
// sending Basic on every page costs one argon2id per cacheTTL, not one per
// page. An entry holds the password hash it verified against: a password
// reset (a new hash) ends it at once.
type credCache struct {
	mu      sync.Mutex
	secret  [32]byte
	entries map[[32]byte]credEntry
	now     func() time.Time
}

type credEntry struct {
	hash    string
	expires time.Time
}

func (cc *credCache) key(name, password string) [32]byte {
	return sha256.Sum256([]byte(string(cc.secret[:]) + name + "\x00" + password))
}

func (cc *credCache) ok(name, password, hash string) bool {
	if hash == "" {
		return false
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	e, found := cc.entries[cc.key(name, password)]
	return found && e.hash == hash && cc.now().Before(e.expires)
}

func (cc *credCache) put(name, password, hash string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.entries) >= credCacheSize {
		clear(cc.entries)
	}
	cc.entries[cc.key(name, password)] = credEntry{hash: hash, expires: cc.now().Add(credCacheTTL)}
}

// failLimiter counts failed logins per name and per address in a fixed
// window. Names are counted whether or not they exist, so the limit says
// nothing about which do.
type failLimiter struct {
	mu    sync.Mutex
	now   func() time.Time
	start time.Time
	names map[string]int
	addrs map[string]int
}

func (l *failLimiter) roll() {
	if now := l.now(); now.Sub(l.start) >= failWindow {
		l.start, l.names, l.addrs = now, map[string]int{}, map[string]int{}
	}
}

func (l *failLimiter) fail(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	// Past the cap a new name or address is not counted (its first
	// failures go free) rather than evicting counts an attacker could
	// flush; the maps start empty with each window.
	if _, ok := l.names[name]; name != "" && (ok || len(l.names) < maxTracked) {
		l.names[name]++
	}
	if _, ok := l.addrs[addr]; ok || len(l.addrs) < maxTracked {
		l.addrs[addr]++
	}
}

// check answers 429 (Retry-After: the window's end) when the name or the
// address failed too often.
func (l *failLimiter) check(c echo.Context, name, addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll()
	if (name == "" || l.names[name] < maxNameFails) && l.addrs[addr] < maxAddrFails {
		return nil
	}
	wait := int(l.start.Add(failWindow).Sub(l.now()).Seconds()) + 1
	c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
	return httpx.Err(protocol.CodeTooManyAttempts, "too many failed logins; retry in %d seconds", wait)
}

// mustSeeFile is nil when the caller may see file id, and file_not_found
// (404, exactly what a missing file answers) otherwise.
func (s *Server) mustSeeFile(c echo.Context, id int64) (model.Book, error) {
	return s.rd.ReaderBook(c.Request().Context(), readerOf(c), id)
}

// mustSeeSeries and mustSeeLibrary are mustSeeFile for series and
// libraries.
func (s *Server) mustSeeSeries(c echo.Context, id int64) (model.Series, error) {
	return s.rd.ReaderSeries(c.Request().Context(), readerOf(c), id)
}

func (s *Server) mustSeeLibrary(c echo.Context, id int64) (model.Library, error) {
	return s.rd.ReaderLibrary(c.Request().Context(), readerOf(c), id)
}

// readerFile is readerAuth for routes under /files/:id: the request
// passes only when the file is in the caller's grant (the merger puts the
// page and download routes behind it).
func (s *Server) readerFile(next echo.HandlerFunc) echo.HandlerFunc {
	return s.readerAuth(func(c echo.Context) error {
		id, err := httpx.PathID(c, "id")
		if err != nil {
			return err
		}
		if readerOf(c).All {
			return next(c)
		}
		if _, err := s.mustSeeFile(c, id); err != nil {
			return err
		}
		return next(c)
	})
}

// clientAddr is the peer's address without its port. Forwarding headers
// are ignored: a client sets them at will and would pick its own bucket.
func clientAddr(c echo.Context) string {
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		return c.Request().RemoteAddr
	}
	return host
}
