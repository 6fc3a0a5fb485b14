package api_test

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bindery-nas/bindery/internal/pgtest"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// statusLog records the status of every request the tests send through
// env.call, by the spec operation it matched. After a full run TestMain
// checks it against docs/openapi.yaml: every status a handler returned is
// documented for that operation, and every documented status was seen.
var statusLog = struct {
	sync.Mutex
	seen map[string]map[int]bool // "GET /api/v1/jobs/{id}" → statuses
}{seen: map[string]map[int]bool{}}

// globalStatuses are documented once, in info.description, for every
// /api/v1 operation: 401 without the token, 413 for an oversized body, 500
// and 503 when the database fails.
var globalStatuses = []int{http.StatusUnauthorized, http.StatusRequestEntityTooLarge,
	http.StatusInternalServerError, http.StatusServiceUnavailable}

func recordStatus(method, path string, status int) {
	statusLog.Lock()
	defer statusLog.Unlock()
	k := method + " " + path
	if statusLog.seen[k] == nil {
		statusLog.seen[k] = map[int]bool{}
	}
	statusLog.seen[k][status] = true
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		if problems := checkStatuses(); len(problems) > 0 {
			fmt.Fprintln(os.Stderr, "docs/openapi.yaml and the handlers disagree on status codes:")
			for _, p := range problems {
				fmt.Fprintln(os.Stderr, "  "+p)
			}
			code = 1
		}
	}
	pgtest.StopShared()
	os.Exit(code)
}

// operation is one documented method and path, with a matcher for request
// paths.
type operation struct {
	key      string
	re       *regexp.Regexp
	params   int
	statuses []int
}

func specOperations() ([]operation, error) {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	var s struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	param := regexp.MustCompile(`\\\{[a-z_]+\\\}`)
	var ops []operation
	for path, item := range s.Paths {
		re := regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
		for method, op := range item {
			fields, _ := op.(map[string]any)
			responses, ok := fields["responses"].(map[string]any)
			if !ok {
				continue // path-level parameters
			}
			o := operation{key: strings.ToUpper(method) + " " + path, re: re, params: strings.Count(path, "{")}
			for code := range responses {
				n, err := strconv.Atoi(code)
				if err != nil {
					return nil, fmt.Errorf("%s: response %q", o.key, code)
				}
				o.statuses = append(o.statuses, n)
			}
			ops = append(ops, o)
		}
	}
	// The most literal match wins: /jobs/stats before /jobs/{id}.
	sort.Slice(ops, func(i, j int) bool { return ops[i].params < ops[j].params })
	return ops, nil
}

// readerStatuses are documented once, on GET /api/v1/me, for every reader
// route: 401 without credentials, 429 after too many failed logins.
var readerStatuses = []int{http.StatusUnauthorized, http.StatusTooManyRequests}

func readerRoute(key string) bool {
	return strings.Contains(key, " /api/v1/me") || strings.Contains(key, " /opds/")
}

// postgresOnly are documented statuses a route returns only on PostgreSQL.
var postgresOnly = map[string][]int{
	"POST /api/v1/maintenance/wal-checkpoint": {http.StatusConflict}, // checkpoint_not_applicable
}

func checkStatuses() []string {
	ops, err := specOperations()
	if err != nil {
		return []string{err.Error()}
	}
	seen := map[string]map[int]bool{}
	for k, statuses := range statusLog.seen {
		method, path, _ := strings.Cut(k, " ")
		for _, o := range ops {
			if strings.HasPrefix(o.key, method+" ") && o.re.MatchString(path) {
				if seen[o.key] == nil {
					seen[o.key] = map[int]bool{}
				}
				for s := range statuses {
					seen[o.key][s] = true
				}
				break
			}
		}
	}
	var problems []string
	for _, o := range ops {
		for s := range seen[o.key] {
			if !slices.Contains(o.statuses, s) && !(strings.Contains(o.key, " /api/v1/") && slices.Contains(globalStatuses, s)) &&
				!(readerRoute(o.key) && slices.Contains(readerStatuses, s)) {
				problems = append(problems, fmt.Sprintf("%s returned %d, which the spec does not list", o.key, s))
			}
		}
		for _, s := range o.statuses {
			// A run sees one engine's statuses: the other's are checked
			// when the suite runs on it.
			if storetest.Postgres() || slices.Contains(postgresOnly[o.key], s) {
				continue
			}
			if !seen[o.key][s] {
				problems = append(problems, fmt.Sprintf("%s documents %d, which no test saw it return", o.key, s))
			}
		}
	}
	sort.Strings(problems)
	return problems
}
