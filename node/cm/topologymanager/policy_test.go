package topologymanager

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func h(pref bool, nodes ...int) Hint {
	m := NewMask(nodes...)
	return Hint{Affinity: &m, Preferred: pref}
}

func TestMerge(t *testing.T) {
	nodes := []int{0, 1, 2, 3}
	cpuOneNode := map[string][]Hint{"cpu": {h(true, 0), h(true, 1), h(false, 0, 1)}}
	cpuTwoNodes := map[string][]Hint{"cpu": {h(true, 0, 1)}}
	memOne := map[string][]Hint{"memory": {h(true, 1), h(false, 0, 1)}}
	memAny := map[string][]Hint{"memory": {h(true, 0), h(true, 1), h(false, 0, 1)}}
	for _, tc := range []struct {
		name      string
		policy    string
		providers []map[string][]Hint
		want      string
		admit     bool
	}{
		{"no preference", PolicyBestEffort, []map[string][]Hint{nil, nil}, "{{0,1,2,3} true}", true},
		{"aligned on the common node", PolicyRestricted, []map[string][]Hint{cpuOneNode, memOne}, "{{1} true}", true},
		{"two nodes for cpu, one for memory: not preferred", PolicyRestricted, []map[string][]Hint{cpuTwoNodes, memAny}, "{{0,1} false}", false},
		{"best-effort admits it anyway", PolicyBestEffort, []map[string][]Hint{cpuTwoNodes, memAny}, "{{0,1} false}", true},
		{"single node", PolicySingleNUMANode, []map[string][]Hint{cpuOneNode, memOne}, "{{1} true}", true},
		{"single node impossible", PolicySingleNUMANode, []map[string][]Hint{cpuTwoNodes}, "{any false}", false},
		{"single node, no preference: any", PolicySingleNUMANode, []map[string][]Hint{nil}, "{any true}", true},
		{"no placement possible", PolicyBestEffort, []map[string][]Hint{{"cpu": {}}}, "{{0,1,2,3} false}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, admit := Merge(tc.policy, nodes, tc.providers)
			if d := cmp.Diff(fmt.Sprintf("%s %v", tc.want, tc.admit), fmt.Sprintf("%s %v", got, admit)); d != "" {
				t.Errorf("Merge (-want +got):\n%s", d)
			}
		})
	}
}

func TestMasks(t *testing.T) {
	var got []string
	Masks([]int{0, 1, 2}, func(m Mask) { got = append(got, m.String()) })
	want := []string{"{0}", "{1}", "{2}", "{0,1}", "{0,2}", "{1,2}", "{0,1,2}"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Masks (-want +got):\n%s", d)
	}
}
