package arenas

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestArenaLimit runs this test binary (which links the package, so its
// constructor runs) in a child per environment, and counts the arenas
// glibc made once 8 threads have each malloc'ed at the same time: 2 with
// nothing set, what MALLOC_ARENA_MAX says when it is set, and glibc's
// default (a new arena per thread here) with MALLOC_ARENA_MAX=0.
func TestArenaLimit(t *testing.T) {
	if Limit() == -1 {
		t.Skip("not glibc")
	}
	const threads = 8
	for _, c := range []struct {
		env    string
		limit  int
		arenas int // exact; 0: more than 4
	}{
		{"", Default, Default},
		{"MALLOC_ARENA_MAX=4", 0, 4},
		{"GLIBC_TUNABLES=glibc.malloc.arena_max=3", 0, 3},
		{"MALLOC_ARENA_MAX=0", 0, 0},
	} {
		t.Run(c.env, func(t *testing.T) {
			limit, arenas := child(t, c.env, threads)
			if limit != c.limit {
				t.Errorf("Limit() = %d, want %d", limit, c.limit)
			}
			if c.arenas == 0 && arenas <= 4 || c.arenas != 0 && arenas != c.arenas {
				t.Errorf("%d arenas after %d threads malloc'ed at once, want %s", arenas, threads,
					map[bool]string{true: "more than 4", false: strconv.Itoa(c.arenas)}[c.arenas == 0])
			}
		})
	}
}

// child runs TestArenaChild with env (and neither MALLOC_ARENA_MAX nor
// GLIBC_TUNABLES from the parent's) and returns what it printed.
func child(t *testing.T, env string, threads int) (limit, arenas int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestArenaChild$", "-test.v")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MALLOC_ARENA_MAX=") && !strings.HasPrefix(kv, "GLIBC_TUNABLES=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "BINDERY_ARENA_CHILD="+strconv.Itoa(threads))
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	_, after, ok := strings.Cut(string(out), "ARENAS ")
	if !ok {
		t.Fatalf("child printed nothing: %s", out)
	}
	f := strings.Fields(after)
	if len(f) < 2 {
		t.Fatalf("child: %q", out)
	}
	limit, err1 := strconv.Atoi(f[0])
	arenas, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("child: %q", out)
	}
	return limit, arenas
}

// TestArenaChild is TestArenaLimit's child: it prints Limit and the
// arena count.
func TestArenaChild(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("BINDERY_ARENA_CHILD"))
	if err != nil {
		t.Skip("run by TestArenaLimit")
	}
	arenas := count(n)
	if arenas < 1 {
		t.Fatalf("malloc_info: %d arenas", arenas)
	}
	os.Stdout.WriteString("ARENAS " + strconv.Itoa(Limit()) + " " + strconv.Itoa(arenas) + "\n")
}
