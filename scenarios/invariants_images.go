package scenarios

import (
	"time"
)

// pullBackoffMin and pullBackoffMax bound ImagePullBackOff's curve;
// pullBackoffReset is the quiet time after which it starts again.
const (
	pullBackoffMin   = 10 * time.Second
	pullBackoffMax   = 300 * time.Second
	pullBackoffReset = 10 * time.Minute
)

// pullChain is what pull-backoff remembers of the pulls of one image for
// one pod: the failures in a row by one agent and when the last ended.
type pullChain struct {
	agent      int // harness.Restarts() when the last pull was seen
	failures   int
	lastFailed bool
	lastEnd    time.Time
	lastAuth   string
}

// pullChecks is pull-backoff's state: the pulls already read from the
// runtime's log and the chains by pod UID and image.
type pullChecks struct {
	seen   int
	chains map[string]*pullChain
}

// checkPulls checks pull-backoff on the pulls the runtime logged since
// the last check: after a failed pull, the same agent pulls the same image
// for the same pod no sooner than the back-off of its failures in a row
// (10 s, 20 s, 40 s … at most 300 s) allows. The bound is a floor: a
// success or a new agent (which remembers nothing, as a restarted
// kubelet) starts the count again; a pull with other credentials at the
// very moment the last one failed is the same attempt going on. Images are compared as the runtime
// normalizes them, so pods should name an image one way only.
func (c *Checker) checkPulls() {
	if c.pulls == nil {
		c.pulls = &pullChecks{chains: map[string]*pullChain{}}
	}
	pulls := c.h.Runtime.Pulls()
	agent := c.h.Restarts()
	for _, p := range pulls[c.pulls.seen:] {
		if p.PodUID == "" {
			continue
		}
		key := p.PodUID + " " + p.Ref
		ch := c.pulls.chains[key]
		if ch == nil || ch.agent != agent {
			ch = &pullChain{agent: agent}
			c.pulls.chains[key] = ch
		}
		auth := p.Username + ":" + p.Password
		if ch.lastFailed && p.Start.Equal(ch.lastEnd) && auth != ch.lastAuth {
			// The next credential of the same attempt.
			ch.lastEnd, ch.lastAuth = p.End, auth
			if p.Err == "" {
				ch.failures, ch.lastFailed = 0, false
			}
			continue
		}
		ch.lastAuth = auth
		if ch.lastFailed {
			wait := min(pullBackoffMin<<(ch.failures-1), pullBackoffMax)
			if early := ch.lastEnd.Add(wait).Sub(p.Start); early > 0 {
				c.fail("pull-backoff", "pod %s pulled %s %v after its failure #%d, inside its %v back-off",
					p.PodUID, p.Ref, p.Start.Sub(ch.lastEnd), ch.failures, wait)
			}
		}
		switch {
		case p.Err == "":
			ch.failures, ch.lastFailed = 0, false
		case ch.lastFailed && p.End.Sub(ch.lastEnd) < pullBackoffReset:
			ch.failures++
		default:
			ch.failures, ch.lastFailed = 1, true
		}
		ch.lastEnd = p.End
	}
	c.pulls.seen = len(pulls)
}
