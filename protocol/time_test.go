package protocol

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTime(t *testing.T) {
	want := time.Date(2026, 11, 25, 16, 30, 1, 234_000_000, time.UTC)
	for _, src := range []any{"2026-11-25 16:30:01.234", []byte("2026-11-25 16:30:01.234"), want.In(time.FixedZone("x", 3600))} {
		var got Time
		if err := got.Scan(src); err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("Scan(%#v) = %v, %v", src, got, err)
		}
	}
	for _, bad := range []any{"2026-11-25T16:30:01Z", "", 42, nil} {
		var got Time
		if err := got.Scan(bad); err == nil {
			t.Errorf("Scan(%#v) accepted", bad)
		}
	}
	tm := NewTime(want.Add(567 * time.Microsecond))
	if v, _ := tm.Value(); v != "2026-11-25 16:30:01.234" || tm.String() != v {
		t.Errorf("Value %v, String %s", v, tm)
	}
	if b, _ := json.Marshal(tm); string(b) != `"2026-11-25T16:30:01.234Z"` {
		t.Errorf("JSON %s", b)
	}

	var n NullTime
	if err := n.Scan(nil); err != nil || n.Valid || n.Ptr() != nil {
		t.Errorf("NULL: %+v %v", n, err)
	}
	if v, _ := n.Value(); v != nil {
		t.Errorf("NULL Value %v", v)
	}
	if b, _ := json.Marshal(struct{ At NullTime }{n}); string(b) != `{"At":null}` {
		t.Errorf("NULL JSON %s", b)
	}
	if err := n.Scan("2026-11-25 16:30:01.234"); err != nil || !n.Valid || !n.Equal(want) || n.Ptr() == nil {
		t.Errorf("NullTime %+v %v", n, err)
	}
	if b, _ := json.Marshal(n); string(b) != `"2026-11-25T16:30:01.234Z"` {
		t.Errorf("NullTime JSON %s", b)
	}
}
