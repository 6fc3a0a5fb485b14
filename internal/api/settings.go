package api

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/protocol"
)

type settingJSON struct {
	Key         string   `json:"key"`
	Value       string   `json:"value"`
	Default     string   `json:"default"`
	Description string   `json:"description"`
	Kind        string   `json:"kind"`
	Min         *int64   `json:"min,omitempty"`
	Max         *int64   `json:"max,omitempty"`
	Enum        []string `json:"enum,omitempty"`
}

func settingView(d settings.Definition, v settings.Values) settingJSON {
	out := settingJSON{Key: d.Key, Value: v.Text(d), Default: d.Default, Description: d.Description,
		Kind: d.Kind, Enum: d.Enum}
	if d.Kind == "int" {
		out.Min, out.Max = &d.Min, &d.Max
	}
	return out
}

func (s *Server) listSettings(c echo.Context) error {
	vals, err := settings.Load(c.Request().Context(), s.st)
	if err != nil {
		return err
	}
	defs := settings.Definitions()
	items := make([]settingJSON, 0, len(defs))
	for _, d := range defs {
		items = append(items, settingView(d, vals))
	}
	return c.JSON(http.StatusOK, httpx.Page[settingJSON]{Items: items})
}

func (s *Server) getSetting(c echo.Context) error {
	key := c.Param("key")
	d, ok := settings.Lookup(key)
	if !ok {
		return httpx.Err(protocol.CodeSettingNotFound, "unknown setting %q", key).With("key", key)
	}
	vals, err := settings.Load(c.Request().Context(), s.st)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, settingView(d, vals))
}

// patchSettings validates every pair before writing any (all or nothing).
// Values may be JSON numbers or strings; anything else is refused naming
// the key.
func (s *Server) patchSettings(c echo.Context) error {
	var raw map[string]json.RawMessage
	if err := httpx.DecodeJSON(c, &raw); err != nil {
		return err
	}
	if raw == nil {
		return httpx.Err(protocol.CodeInvalidJSON, "want a JSON object of settings")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same bad request always names the same key
	kv := make(map[string]string, len(raw))
	for _, k := range keys {
		v := raw[k]
		if _, ok := settings.Lookup(k); !ok {
			return httpx.Err(protocol.CodeUnknownSetting, "unknown setting %q", k).With("key", k)
		}
		text, ok := settingText(v)
		if !ok {
			return httpx.Err(protocol.CodeInvalidSettingValue, "%s: want a number or a string", k).With("key", k)
		}
		kv[k] = text
	}
	norm, err := settings.Normalize(kv)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if len(norm) > 0 {
		if err := s.st.PutSettings(ctx, norm); err != nil {
			return err
		}
	}
	return s.listSettings(c)
}

// settingText reads a JSON number (integers only) or string as text.
func settingText(v json.RawMessage) (string, bool) {
	var str string
	if err := json.Unmarshal(v, &str); err == nil {
		return str, true
	}
	t := strings.TrimSpace(string(v))
	if _, err := strconv.ParseInt(t, 10, 64); err == nil {
		return t, true
	}
	return "", false
}
