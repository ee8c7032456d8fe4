package scenarios

import "fmt"

// watchBurstScenario is a burst of pod creations during which the
// apiserver closes the agent's pod watch (its timeout, not a fault: the
// API stays healthy), so the agent relists in the middle of the burst:
// every start and exit must still reach the API promptly (status-prompt).
func watchBurstScenario() Scenario {
	return Scenario{Name: "watch-burst",
		Doc:      "bursts of pod creations during which the apiserver closes the pod watch at its timeout and the agent relists, the API healthy throughout: status-prompt",
		Mix:      map[string]int{"watch-burst": 4, "create": 1, "delete": 1, "api-close-watch": 1, "wait": 2},
		MaxSteps: 6,
	}
}

// Bounds of watch-burst's arguments.
const (
	burstMaxPods = 20
	burstMaxGap  = 100 // ms between two creations
)

// opWatchBurst creates a pods (plain ones and the first kinds that exit),
// b ms apart, and has the apiserver close the pod watches right after
// creation c (c ≥ a: after the last).
func opWatchBurst(r *run, a [3]int) error {
	n, gap, closeAt := max(a[0], 1), ms(a[1]), a[2]
	kinds := PodKinds()[:4] // plain, exits 1, Never exits 0, OnFailure exits 2
	for i := range n {
		name := fmt.Sprintf("b%d-%d", r.step, i)
		if _, err := Create(r.h, kinds[i%len(kinds)](name, r.h.NodeName)); err != nil {
			return err
		}
		r.created = append(r.created, name)
		if i == min(closeAt, n-1) {
			r.fault("api-close-watch", "after-pod", i)
			r.h.API.CloseWatches()
		}
		if gap > 0 {
			if err := r.advance(gap); err != nil {
				return err
			}
		}
	}
	return nil
}

// opAPICloseWatch has the apiserver close the pod watches at their
// timeout: the API stays healthy, nothing is excused.
func opAPICloseWatch(r *run, _ [3]int) error {
	r.h.API.CloseWatches()
	return nil
}
