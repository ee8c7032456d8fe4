package trace

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRecordIsValidJSONWithOrderedFields(t *testing.T) {
	var buf bytes.Buffer
	r := NewRecorder(&buf)
	r.Record(1500*time.Millisecond, "worker#3", "log", Field{"msg", "quote \" back\\slash\nnew\ttab \x01 é \xff"}, F("n", 42))
	r.Record(0, "driver", "spawn", F("d", 2*time.Second))
	want := "{\"t\":1.5,\"task\":\"worker#3\",\"kind\":\"log\",\"msg\":\"quote \\\" back\\\\slash\\nnew\\ttab \\u0001 é \\ufffd\",\"n\":\"42\"}\n" +
		"{\"t\":0,\"task\":\"driver\",\"kind\":\"spawn\",\"d\":\"2s\"}\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("encoding (-want +got):\n%s", diff)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if !json.Valid(line) {
			t.Errorf("not valid JSON: %s", line)
		}
	}
	if diff := cmp.Diff([]KindCount{{"log", 1}, {"spawn", 1}}, r.Kinds()); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

func TestHashDependsOnEveryEventButNotOnTheWriter(t *testing.T) {
	a, b, c := NewRecorder(nil), NewRecorder(&bytes.Buffer{}), NewRecorder(nil)
	for _, r := range []*Recorder{a, b, c} {
		r.Record(time.Second, "x", "run")
	}
	c.Record(time.Second, "x", "run")
	if a.Hash() != b.Hash() {
		t.Errorf("writing the trace changed the hash: %s vs %s", a.Hash(), b.Hash())
	}
	if a.Hash() == c.Hash() {
		t.Errorf("an extra event did not change the hash")
	}
	d := NewRecorder(nil)
	d.Record(time.Second+time.Nanosecond, "x", "run")
	if a.Hash() == d.Hash() {
		t.Errorf("a different time did not change the hash")
	}
}

func TestAppendSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", time.Nanosecond: "0.000000001", 90 * time.Second: "90",
		1500 * time.Millisecond: "1.5", -2 * time.Millisecond: "-0.002",
	} {
		if got := string(appendSeconds(nil, d)); got != want {
			t.Errorf("appendSeconds(%v) = %q, want %q", d, got, want)
		}
	}
}
