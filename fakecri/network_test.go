package fakecri

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// show renders an answer for diffs: "refused", "200", "302>loc",
// "reset", "unanswered", "no route"; TCP connects that succeed are "up".
func show(a Answer) string {
	switch {
	case a.Outcome != Answered:
		return a.Outcome.String()
	case a.Location != "":
		return fmt.Sprintf("%d>%s", a.Status, a.Location)
	case a.Status == 0 && a.ContainerID != "":
		return "up"
	}
	return fmt.Sprint(a.Status)
}

// withPorts declares TCP container ports on a sandbox config.
func withPorts(cfg *runtimeapi.PodSandboxConfig, ports ...int32) *runtimeapi.PodSandboxConfig {
	for _, p := range ports {
		cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{ContainerPort: p})
	}
	return cfg
}

// TestEndpointAnswersOverTime asks one pod address for every kind of
// endpoint as the scripts' timelines go by: ports the scripts name,
// a declared port, an unscripted port (refused), connections refused,
// unanswered and reset, and who answers once containers stop.
func TestEndpointAnswersOverTime(t *testing.T) {
	f := newFixture(t)
	sb, err := f.r.RunPodSandbox(f.ctx, withPorts(podConfig("p"), 80, 8080), "")
	if err != nil {
		t.Fatal(err)
	}
	app := f.run(sb, ctrConfig("app",
		"FAKECRI_HTTP=8080/healthz=200,30s:500;8080=404;8080/gone=down;8081/moved=302>http://elsewhere/",
		"FAKECRI_TCP=5432=down,3s:up,1m:hang",
		"FAKECRI_GRPC=9090=not_serving,2s:serving;9090/other=service_unknown;9091=down,10s:hang",
	))
	side := f.run(sb, ctrConfig("side", "FAKECRI_TCP=7000=up"))
	ip := "10.88.0.2"
	type row struct{ At, HTTPHealthz, HTTPRoot, HTTPGone, HTTPMoved, TCP8080, HTTPUnscripted, TCP5432, HTTP5432, GRPC, GRPCOther, GRPC9091, TCP9091, HTTPDeclared, TCP7000, Elsewhere string }
	measure := func() row {
		ep := func(port int) Endpoint { return Endpoint{Addr: ip, Port: port} }
		return row{
			At:             f.clock.Elapsed().String(),
			HTTPHealthz:    show(f.r.AnswerHTTP(ep(8080), "healthz")),
			HTTPRoot:       show(f.r.AnswerHTTP(ep(8080), "")),
			HTTPGone:       show(f.r.AnswerHTTP(ep(8080), "gone")),
			HTTPMoved:      show(f.r.AnswerHTTP(ep(8081), "moved")),
			TCP8080:        show(f.r.AnswerTCP(ep(8080))),
			HTTPUnscripted: show(f.r.AnswerHTTP(ep(81), "x")),
			TCP5432:        show(f.r.AnswerTCP(ep(5432))),
			HTTP5432:       show(f.r.AnswerHTTP(ep(5432), "x")),
			GRPC:           show(f.r.AnswerGRPC(ep(9090), "")),
			GRPCOther:      show(f.r.AnswerGRPC(ep(9090), "other")),
			GRPC9091:       show(f.r.AnswerGRPC(ep(9091), "")),
			TCP9091:        show(f.r.AnswerTCP(ep(9091))),
			HTTPDeclared:   show(f.r.AnswerHTTP(ep(80), "index.html")),
			TCP7000:        show(f.r.AnswerTCP(ep(7000))),
			Elsewhere:      show(f.r.AnswerTCP(Endpoint{Addr: "10.88.9.9", Port: 80})),
		}
	}
	var got []row
	for _, d := range []time.Duration{0, 5 * time.Second, 25 * time.Second, 35 * time.Second} {
		f.clock.Advance(d)
		got = append(got, measure())
	}
	want := []row{
		{At: "0s", HTTPHealthz: "200", HTTPRoot: "404", HTTPGone: "reset", HTTPMoved: "302>http://elsewhere/", TCP8080: "up", HTTPUnscripted: "refused",
			TCP5432: "refused", HTTP5432: "refused", GRPC: "2", GRPCOther: "3", GRPC9091: "refused", TCP9091: "refused", HTTPDeclared: "200", TCP7000: "up", Elsewhere: "no route"},
		{At: "5s", HTTPHealthz: "200", HTTPRoot: "404", HTTPGone: "reset", HTTPMoved: "302>http://elsewhere/", TCP8080: "up", HTTPUnscripted: "refused",
			TCP5432: "up", HTTP5432: "200", GRPC: "1", GRPCOther: "3", GRPC9091: "refused", TCP9091: "refused", HTTPDeclared: "200", TCP7000: "up", Elsewhere: "no route"},
		{At: "30s", HTTPHealthz: "500", HTTPRoot: "404", HTTPGone: "reset", HTTPMoved: "302>http://elsewhere/", TCP8080: "up", HTTPUnscripted: "refused",
			TCP5432: "up", HTTP5432: "200", GRPC: "1", GRPCOther: "3", GRPC9091: "unanswered", TCP9091: "up", HTTPDeclared: "200", TCP7000: "up", Elsewhere: "no route"},
		{At: "1m5s", HTTPHealthz: "500", HTTPRoot: "404", HTTPGone: "reset", HTTPMoved: "302>http://elsewhere/", TCP8080: "up", HTTPUnscripted: "refused",
			TCP5432: "unanswered", HTTP5432: "unanswered", GRPC: "1", GRPCOther: "3", GRPC9091: "unanswered", TCP9091: "up", HTTPDeclared: "200", TCP7000: "up", Elsewhere: "no route"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers over time (-want +got):\n%s", diff)
	}

	// Who answers: the declared port is app's (the first running
	// container), then side's once app stops; nothing once both stopped.
	owner := func(port int) string { return f.r.AnswerTCP(Endpoint{Addr: ip, Port: port}).ContainerID }
	if got := owner(80); got != app {
		t.Errorf("declared port 80 answered by %q, want app %q", got, app)
	}
	if err := f.r.StopContainer(f.ctx, app, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := []string{owner(80), show(f.r.AnswerTCP(Endpoint{Addr: ip, Port: 8080})), show(f.r.AnswerTCP(Endpoint{Addr: ip, Port: 9090}))},
		[]string{side, "up", "refused"}; !cmp.Equal(got, want) {
		t.Errorf("after app stopped: port 80 by, 8080, 9090 = %q, want %q", got, want)
	}
	if err := f.r.StopContainer(f.ctx, side, 0); err != nil {
		t.Fatal(err)
	}
	if got := show(f.r.AnswerTCP(Endpoint{Addr: ip, Port: 80})); got != "refused" {
		t.Errorf("declared port with no container running: %s, want refused", got)
	}
	// Port-forward reaches the sandbox by ID; a stopped sandbox has no route.
	if got := show(f.r.AnswerTCP(Endpoint{Sandbox: sb, Port: 80})); got != "refused" {
		t.Errorf("sandbox %s port 80: %s, want refused", sb, got)
	}
	if err := f.r.StopPodSandbox(f.ctx, sb); err != nil {
		t.Fatal(err)
	}
	if got := show(f.r.AnswerTCP(Endpoint{Addr: ip, Port: 80})); got != "no route" {
		t.Errorf("stopped sandbox's address: %s, want no route", got)
	}
}

// TestConnectAt is the connection rule, one script at a time: FAKECRI_TCP
// decides when it covers the port; else HTTP and gRPC rules covering it
// refuse only when all of them answer down.
func TestConnectAt(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		port int
		want connState
	}{
		{nil, 80, connAccepted},
		{[]string{"FAKECRI_TCP=80=down"}, 80, connRefused},
		{[]string{"FAKECRI_TCP=80=hang"}, 80, connUnanswered},
		{[]string{"FAKECRI_TCP=*=down", "FAKECRI_HTTP=80=200"}, 80, connRefused},
		{[]string{"FAKECRI_TCP=80=up", "FAKECRI_HTTP=80=down"}, 80, connAccepted},
		{[]string{"FAKECRI_HTTP=80=down"}, 80, connRefused},
		{[]string{"FAKECRI_HTTP=80=hang"}, 80, connAccepted},
		{[]string{"FAKECRI_HTTP=80/a=down;80/b=down"}, 80, connRefused},
		{[]string{"FAKECRI_HTTP=80/a=down;80/b=500"}, 80, connAccepted},
		{[]string{"FAKECRI_HTTP=80/healthz=200;*=down"}, 80, connAccepted},
		{[]string{"FAKECRI_HTTP=*=down", "FAKECRI_GRPC=9090=serving"}, 9090, connAccepted},
		{[]string{"FAKECRI_HTTP=81=down"}, 80, connAccepted},
		{[]string{"FAKECRI_GRPC=*=down"}, 80, connRefused},
	} {
		s, err := parseScript(ctrConfig("c", tc.env...))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.connectAt(tc.port, 0); got != tc.want {
			t.Errorf("%q port %d: connection %d, want %d", tc.env, tc.port, got, tc.want)
		}
	}
}

// TestEndpointsAtAgreesWithAnswers: the checkers' view of a container's
// endpoints (EndpointsAt) says healthy exactly where the network answers
// healthy.
func TestEndpointsAtAgreesWithAnswers(t *testing.T) {
	f := newFixture(t)
	sb, err := f.r.RunPodSandbox(f.ctx, withPorts(podConfig("p"), 80), "")
	if err != nil {
		t.Fatal(err)
	}
	id := f.run(sb, ctrConfig("app", "FAKECRI_HTTP=8080/healthz=503,10s:200;8080/x=down", "FAKECRI_TCP=5432=hang,10s:up", "FAKECRI_GRPC=9090=not_serving,10s:serving"))
	for _, at := range []time.Duration{0, 10 * time.Second} {
		f.clock.Advance(at)
		e, ok := f.r.EndpointsAt(id, f.clock.Now())
		if !ok {
			t.Fatal("EndpointsAt: no endpoints")
		}
		for _, port := range []int{80, 81, 5432, 8080, 9090} {
			ep := Endpoint{Addr: "10.88.0.2", Port: port}
			for _, path := range []string{"", "healthz", "x"} {
				a := f.r.AnswerHTTP(ep, path)
				net := a.Outcome == Answered && a.Status >= 200 && a.Status < 400
				if got := e.HTTPHealthy(port, path); got != net {
					t.Errorf("at %s HTTP %d/%s: EndpointsAt healthy %v, network %s", f.clock.Elapsed(), port, path, got, show(a))
				}
			}
			if got, net := e.TCPHealthy(port), f.r.AnswerTCP(ep).Outcome == Answered; got != net {
				t.Errorf("at %s TCP %d: EndpointsAt healthy %v, network %v", f.clock.Elapsed(), port, got, net)
			}
			a := f.r.AnswerGRPC(ep, "")
			if got, net := e.GRPCHealthy(port, ""), a.Outcome == Answered && a.Status == grpcServing; got != net {
				t.Errorf("at %s gRPC %d: EndpointsAt healthy %v, network %s", f.clock.Elapsed(), port, got, show(a))
			}
		}
	}
}

// listening renders ListeningAt for diffs: "port" or "port:unanswered",
// then "next <duration>".
func listening(r *Runtime, addr string) []string {
	ls, next := r.ListeningAt(addr)
	var out []string
	for _, l := range ls {
		s := fmt.Sprint(l.Port)
		if l.Unanswered {
			s += ":unanswered"
		}
		out = append(out, s)
	}
	return append(out, "next "+next.String())
}

// TestListeningAt: an address lists the ports its containers listen on,
// following the scripts and exits, and says when that changes next.
func TestListeningAt(t *testing.T) {
	f := newFixture(t)
	sb, err := f.r.RunPodSandbox(f.ctx, withPorts(podConfig("p"), 80), "")
	if err != nil {
		t.Fatal(err)
	}
	ip := "10.88.0.2"
	if diff := cmp.Diff([]string{"next 0s"}, listening(f.r, ip)); diff != "" {
		t.Errorf("no container yet (-want +got):\n%s", diff)
	}
	f.run(sb, ctrConfig("app", "FAKECRI_HTTP=8080=down,5s:200", "FAKECRI_TCP=5432=hang,20s:down", "FAKECRI_EXIT_AFTER=30s"))
	var got [][]string
	for _, d := range []time.Duration{0, 5 * time.Second, 15 * time.Second, 10 * time.Second} {
		f.clock.Advance(d)
		got = append(got, listening(f.r, ip))
	}
	want := [][]string{
		{"80", "5432:unanswered", "next 5s"},
		{"80", "5432:unanswered", "8080", "next 15s"},
		{"80", "8080", "next 10s"},
		{"next 0s"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listening at 0, 5, 20 and 30 s (-want +got):\n%s", diff)
	}
}

// TestLoopbackAddresses: with a loopback pod network, sandboxes get the
// lowest free address of the range (never its first two nor 127.0.0.1),
// addresses come back when their sandbox is removed, host-network
// sandboxes get none but answer at the node address, and a full range
// fails RunPodSandbox.
func TestLoopbackAddresses(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.LoopbackCIDR = netip.MustParsePrefix("127.0.0.0/29")
		c.NodeAddress = netip.MustParseAddr("127.0.1.1")
	})
	ipOf := func(id string) string {
		resp, err := f.r.PodSandboxStatus(f.ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status.GetNetwork().GetIp()
	}
	var ids, ips []string
	for i := range 4 {
		id := f.runPod(fmt.Sprint("p", i))
		ids, ips = append(ids, id), append(ips, ipOf(id))
	}
	if diff := cmp.Diff([]string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}, ips); diff != "" {
		t.Errorf("first addresses (-want +got):\n%s", diff)
	}
	if err := f.r.RemovePodSandbox(f.ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := f.r.RemovePodSandbox(f.ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	var again []string
	for i := range 3 {
		again = append(again, ipOf(f.runPod(fmt.Sprint("q", i))))
	}
	if diff := cmp.Diff([]string{"127.0.0.2", "127.0.0.3", "127.0.0.6"}, again); diff != "" {
		t.Errorf("addresses after two removals (-want +got):\n%s", diff)
	}
	_, err := f.r.RunPodSandbox(f.ctx, podConfig("full"), "")
	wantErrContains(t, "sandbox in a full range", err, "no IP addresses available in range set: 127.0.0.2-127.0.0.6")

	host := podConfig("host")
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
	hostID, err := f.r.RunPodSandbox(f.ctx, host, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ipOf(hostID); got != "" {
		t.Errorf("host-network sandbox IP %q, want none", got)
	}
	web := f.run(hostID, ctrConfig("web", "FAKECRI_HTTP=9100=204"))
	if a := f.r.AnswerHTTP(Endpoint{Addr: "127.0.1.1", Port: 9100}, "metrics"); a.Outcome != Answered || a.Status != 204 || a.ContainerID != web {
		t.Errorf("host-network endpoint at the node address: %+v, want 204 from %s", a, web)
	}
	if diff := cmp.Diff([]string{"127.0.0.4", "127.0.0.5", "127.0.0.2", "127.0.0.3", "127.0.0.6", "127.0.1.1"}, f.r.Addresses()); diff != "" {
		t.Errorf("Addresses (-want +got):\n%s", diff)
	}
}

// TestParsePodNetwork: off, loopback and prefixes inside 127.0.0.0/8.
func TestParsePodNetwork(t *testing.T) {
	for in, want := range map[string]string{"": "invalid Prefix", "off": "invalid Prefix", "loopback": "127.88.0.0/16", "127.89.1.7/16": "127.89.0.0/16"} {
		got, err := ParsePodNetwork(in)
		if err != nil || got.String() != want {
			t.Errorf("ParsePodNetwork(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"10.88.0.0/16", "0.0.0.0/0", "127.0.0.0/31", "::1/128", "loop"} {
		if _, err := ParsePodNetwork(bad); err == nil {
			t.Errorf("ParsePodNetwork(%q): no error", bad)
		}
	}
}

// TestWatchAddresses: the watcher hears of starts, exits (scripted ones
// once time reaches them) and removals, with the sandbox's address.
func TestWatchAddresses(t *testing.T) {
	f := newFixture(t)
	var heard []string
	f.r.WatchAddresses(func(addr string) { heard = append(heard, addr) })
	sb := f.runPod("p")
	id := f.run(sb, ctrConfig("app", "FAKECRI_EXIT_AFTER=10s"))
	n := len(heard)
	if n == 0 || heard[n-1] != "10.88.0.2" {
		t.Fatalf("after start heard %q, want 10.88.0.2", heard)
	}
	f.clock.Advance(10 * time.Second)
	f.r.Sync()
	if len(heard) == n {
		t.Errorf("scripted exit not heard (heard %q)", heard)
	}
	n = len(heard)
	if err := f.r.RemoveContainer(f.ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := f.r.RemovePodSandbox(f.ctx, sb); err != nil {
		t.Fatal(err)
	}
	if len(heard) == n {
		t.Errorf("sandbox removal not heard (heard %q)", heard)
	}
}
