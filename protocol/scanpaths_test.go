package protocol

import (
	"errors"
	"reflect"
	"testing"
)

func TestNormalizeScanPaths(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   []string
		want []string
	}{
		{[]string{"Batman (2016)/"}, []string{"Batman (2016)/"}},
		{[]string{"b/c", "a", "b/", "a/x/y"}, []string{"a/", "b/"}},
		{[]string{"x/./y//"}, []string{"x/y/"}},
		{[]string{"A b/", "A/"}, []string{"A b/", "A/"}},
		{[]string{"A/", "."}, nil},
		{nil, nil},
	}
	for _, c := range good {
		got, err := NormalizeScanPaths(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("NormalizeScanPaths(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "/abs", "../up", "a/../../b", "a/..", "nul\x00", `back\slash`} {
		if _, err := NormalizeScanPaths([]string{bad}); !errors.Is(err, ErrBadScanPath) {
			t.Errorf("NormalizeScanPaths(%q) = %v; want ErrBadScanPath", bad, err)
		}
	}
	if _, err := NormalizeScanPaths(make([]string, MaxScanPaths+1)); !errors.Is(err, ErrBadScanPath) {
		t.Errorf("too many paths: %v", err)
	}
}

func TestMergeScanPaths(t *testing.T) {
	t.Parallel()
	if got := MergeScanPaths([]string{"b/"}, []string{"a/", "b/c/"}); !reflect.DeepEqual(got, []string{"a/", "b/"}) {
		t.Errorf("merge = %q", got)
	}
	if MergeScanPaths(nil, []string{"a/"}) != nil || MergeScanPaths([]string{"a/"}, nil) != nil {
		t.Error("the whole library must absorb folders")
	}
	if !ScanPathsCover([]string{"a/"}, []string{"a/b/"}) || ScanPathsCover([]string{"a/"}, []string{"ab/"}) || ScanPathsCover([]string{"a/"}, nil) {
		t.Error("ScanPathsCover wrong")
	}
}
