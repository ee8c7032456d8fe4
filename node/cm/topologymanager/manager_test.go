package topologymanager

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/admission"
)

// provider is a scripted hint provider that records its calls.
type provider struct {
	hints map[string][]Hint
	err   error
	calls *[]string
}

func (p provider) Hints(_ *corev1.Pod, c *corev1.Container) map[string][]Hint {
	*p.calls = append(*p.calls, "hints "+c.Name)
	return p.hints
}

func (p provider) Allocate(_ *corev1.Pod, c *corev1.Container, affinity Hint) error {
	*p.calls = append(*p.calls, "allocate "+c.Name+" "+affinity.String())
	return p.err
}

func (p provider) Release(*corev1.Pod) { *p.calls = append(*p.calls, "release") }

type reasoned struct{}

func (reasoned) Error() string  { return "SMT Alignment Error: x" }
func (reasoned) Reason() string { return "SMTAlignmentError" }

func TestAdmit(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "app"}}}}
	twoNodes := map[string][]Hint{"cpu": {h(true, 0, 1)}}
	for _, tc := range []struct {
		name   string
		policy string
		p      provider
		want   admission.Decision
		calls  []string
	}{
		{"none allocates without hints", PolicyNone, provider{hints: twoNodes}, admission.Decision{},
			[]string{"allocate init {any true}", "allocate app {any true}"}},
		{"single-numa-node refuses", PolicySingleNUMANode, provider{hints: twoNodes},
			admission.Decision{Reason: "TopologyAffinityError", Message: "Resources cannot be allocated with Topology locality"},
			[]string{"hints init", "release"}},
		{"restricted admits a preferred placement", PolicyRestricted, provider{hints: twoNodes}, admission.Decision{},
			[]string{"hints init", "allocate init {{0,1} true}", "hints app", "allocate app {{0,1} true}"}},
		{"an allocation error with a reason", PolicyBestEffort, provider{err: reasoned{}},
			admission.Decision{Reason: "SMTAlignmentError", Message: "SMT Alignment Error: x"},
			[]string{"hints init", "allocate init {{0,1} true}", "release"}},
		{"any other error is unexpected", PolicyNone, provider{err: errors.New("not enough cpus")},
			admission.Decision{Reason: "UnexpectedAdmissionError", Message: "Allocate failed due to not enough cpus, which is unexpected"},
			[]string{"allocate init {any true}", "release"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			tc.p.calls = &calls
			m, err := New(tc.policy, []int{0, 1})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, m.Admit(pod, tc.p)); d != "" {
				t.Errorf("decision (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.calls, calls); d != "" {
				t.Errorf("calls (-want +got):\n%s", d)
			}
		})
	}
}
