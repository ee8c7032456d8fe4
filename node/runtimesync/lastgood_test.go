package runtimesync

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLastGood(t *testing.T) {
	notFound, down := errors.New("not found"), errors.New("connection refused")
	isNotFound := func(err error) bool { return err == notFound }
	var c lastGood[string]
	type step struct {
		answer  string
		err     error
		want    string
		wantErr error
	}
	steps := []step{
		{err: down, wantErr: down},         // nothing known yet: the error
		{answer: "v1", want: "v1"},         // remembered
		{err: down, want: "v1"},            // the apiserver is down: the last answer
		{answer: "v2", want: "v2"},         // replaced
		{err: notFound, wantErr: notFound}, // deleted: forgotten
		{err: down, wantErr: down},         // so not served any more
	}
	for i, s := range steps {
		got, err := c.through("ns/name", isNotFound, func() (string, error) { return s.answer, s.err })
		if d := cmp.Diff([]any{s.want, s.wantErr}, []any{got, err}, cmp.Comparer(func(a, b error) bool { return a == b })); d != "" {
			t.Errorf("step %d (-want +got):\n%s", i, d)
		}
	}
}
