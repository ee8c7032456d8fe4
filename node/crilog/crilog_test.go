package crilog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTail(t *testing.T) {
	log := "2026-12-01T10:00:00Z stdout F one\n" +
		"garbage\n" +
		"2026-12-01T10:00:01Z stderr P tw\n" +
		"2026-12-01T10:00:01Z stderr F o\n" +
		"2026-12-01T10:00:02Z stdout F three\n"
	for _, tc := range []struct {
		name         string
		lines, bytes int
		want         string
	}{
		{"all", 10, 100, "one\ntwo\nthree\n"},
		{"last two records", 2, 100, "o\nthree\n"},
		{"last bytes", 10, 7, "o\nthree\n"[1:]},
		{"nothing", 0, 100, ""},
	} {
		if diff := cmp.Diff(tc.want, string(Tail([]byte(log), tc.lines, tc.bytes))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := Tail(nil, 80, 2048); len(got) != 0 {
		t.Errorf("empty log: %q", got)
	}
}

func TestParseLineErrors(t *testing.T) {
	for _, line := range []string{"", "2026-12-01T10:00:00Z", "nottime stdout F x", "2026-12-01T10:00:00Z stdin F x", "2026-12-01T10:00:00Z stdout X x"} {
		if _, _, _, _, err := ParseLine([]byte(line)); err == nil {
			t.Errorf("ParseLine(%q): no error", line)
		}
	}
}
