package chaos

import (
	"strings"
	"testing"
)

func TestCrashHead(t *testing.T) {
	t.Parallel()
	log := []string{
		`time=... level=INFO msg="thumbnail done"`,
		"SIGABRT: abort",
		"PC=0x7f621ff6feec m=7 sigcode=18446744073709551610",
		"signal arrived during cgo execution",
		"",
		"goroutine 93 gp=0xc000 m=7 mp=0xc000 [syscall]:",
		"rax    0x0",
	}
	got := crashHead(log, 4)
	if !strings.HasPrefix(got, "SIGABRT: abort\nPC=") || strings.Count(got, "\n") != 3 {
		t.Fatalf("crash head %q", got)
	}
	for _, l := range [][]string{{"panic: runtime error: index out of range"}, {"fatal error: concurrent map writes"}} {
		if crashHead(append([]string{"ok"}, l...), 40) != l[0] {
			t.Errorf("no head for %q", l[0])
		}
	}
	if h := crashHead([]string{`level=WARN msg="SIGSTOP sent"`, "clean exit"}, 40); h != "" {
		t.Fatalf("a log without a crash has a head: %q", h)
	}
}
