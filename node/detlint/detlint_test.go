package detlint

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestNodeTreeIsDeterministic is the lint itself: the agent under node/
// uses no forbidden construct outside node/real.
func TestNodeTreeIsDeterministic(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	findings, err := Check(Config{Files: os.DirFS(root), Root: root, Exempt: []string{"real"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s", f)
	}
}

// TestCatchesEachConstruct feeds the lint one snippet per forbidden construct.
func TestCatchesEachConstruct(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		rules []string
	}{
		{"time.Now", `import "time"; func f() { _ = time.Now() }`, []string{"time"}},
		{"time.Since", `import "time"; func f(t time.Time) { _ = time.Since(t) }`, []string{"time"}},
		{"time.Until", `import "time"; func f(t time.Time) { _ = time.Until(t) }`, []string{"time"}},
		{"time.Sleep", `import "time"; func f() { time.Sleep(1) }`, []string{"time"}},
		{"time.After", `import "time"; func f() { <-time.After(1) }`, []string{"channel", "time"}},
		{"time.Tick", `import "time"; func f() { _ = time.Tick(1) }`, []string{"time"}},
		{"time.NewTimer", `import "time"; func f() { _ = time.NewTimer(1) }`, []string{"time"}},
		{"time.NewTicker", `import "time"; func f() { _ = time.NewTicker(1) }`, []string{"time"}},
		{"time.AfterFunc", `import "time"; func f() { time.AfterFunc(1, nil) }`, []string{"time"}},
		{"aliased time", `import t "time"; func f() { _ = t.Now() }`, []string{"time"}},
		{"dot import", `import . "time"; func f() { _ = Now() }`, []string{"import"}},
		{"math/rand", `import "math/rand"; func f() { _ = rand.Int() }`, []string{"import"}},
		{"math/rand/v2", `import "math/rand/v2"; func f() { _ = rand.Int() }`, []string{"import"}},
		{"crypto/rand", `import "crypto/rand"; var _ = rand.Reader`, []string{"import"}},
		{"clock", `import "github.com/benbjohnson/clock"; var _ = clock.New`, []string{"import"}},
		{"go statement", `func f() { go f() }`, []string{"go"}},
		{"select", `func f() { select {} }`, []string{"select"}},
		{"send", `func f(c chan int) { c <- 1 }`, []string{"channel", "channel"}},
		{"receive", `func f(c interface{ Done() <-chan struct{} }) { <-c.Done() }`, []string{"channel", "channel"}},
		{"make chan", `func f() { _ = make(chan int) }`, []string{"channel"}},
		{"range Done", `func f(c interface{ Done() int }) { for range c.Done() {} }`, []string{"channel"}},
		{"context.WithCancel", `import "context"; func f() { context.WithCancel(nil) }`, []string{"context"}},
		{"context.WithTimeout", `import "context"; func f() { context.WithTimeout(nil, 1) }`, []string{"context"}},
		{"context.WithDeadline", `import "context"; func f() { context.WithDeadline(nil, x) }`, []string{"context"}},
		{"context.AfterFunc", `import "context"; func f() { context.AfterFunc(nil, nil) }`, []string{"context"}},
		{"sync.WaitGroup", `import "sync"; var wg sync.WaitGroup`, []string{"sync"}},
		{"sync.Cond", `import "sync"; var c = sync.NewCond(nil)`, []string{"sync"}},
		{"imports sim", `import "github.com/lockstep-dev/lockstep/sim/kernel"; var _ = kernel.New`, []string{"layering"}},
		{"imports real", `import "github.com/lockstep-dev/lockstep/node/real/world"; var _ = world.Clock`, []string{"layering"}},
		{"os", `import "os"; func f() { _, _ = os.ReadFile("x") }`, []string{"import"}},
		{"os/exec", `import "os/exec"; var _ = exec.Command`, []string{"import"}},
		{"os/signal", `import "os/signal"; var _ = signal.Notify`, []string{"import"}},
		{"os/user", `import "os/user"; var _ = user.Current`, []string{"import"}},
		{"syscall", `import "syscall"; var _ = syscall.Kill`, []string{"import"}},
		{"net.Dial", `import "net"; func f() { _, _ = net.Dial("tcp", "x:1") }`, []string{"net"}},
		{"net.Dialer", `import "net"; var d net.Dialer`, []string{"net"}},
		{"net.Listen", `import "net"; func f() { _, _ = net.Listen("tcp", ":0") }`, []string{"net"}},
		{"net.LookupHost", `import "net"; func f() { _, _ = net.LookupHost("x") }`, []string{"net"}},
		{"net.Interfaces", `import "net"; func f() { _, _ = net.Interfaces() }`, []string{"net"}},
		{"http.Get", `import "net/http"; func f() { _, _ = http.Get("http://x") }`, []string{"net/http"}},
		{"http.Client", `import "net/http"; var c = &http.Client{}`, []string{"net/http"}},
		{"http.DefaultClient", `import "net/http"; var c = http.DefaultClient`, []string{"net/http"}},
		{"http.ListenAndServe", `import "net/http"; func f() { _ = http.ListenAndServe(":0", nil) }`, []string{"net/http"}},
		{"aliased net/http", `import h "net/http"; var s h.Server`, []string{"net/http"}},
		{"allowed", `import ("context"; "sync"; "time"); var mu sync.Mutex; func f(ctx context.Context, d time.Duration) time.Time { return time.Time{}.Add(d) }`, nil},
		{"allowed net helpers", `import ("net"; "net/http"; "net/url"); var _ = net.JoinHostPort; var _ net.IP = net.ParseIP("::1"); var _ http.Handler; var _ = url.Parse`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\n" + strings.Replace(tc.src, "; func", "\nfunc", 1)
			findings, err := CheckSource("snippet.go", []byte(src), false)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, f := range findings {
				rules = append(rules, f.Rule)
				if !strings.HasPrefix(f.Pos, "snippet.go:") {
					t.Errorf("finding without file:line: %v", f)
				}
			}
			if diff := cmp.Diff(tc.rules, rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s\nfindings: %v", diff, findings)
			}
		})
	}
}

// TestExemptTreeMayUseTheRealWorld checks that node/real may use goroutines
// and the wall clock but still may not import the simulator.
func TestExemptTreeMayUseTheRealWorld(t *testing.T) {
	src := `package p
import ("time"; "github.com/lockstep-dev/lockstep/sim/kernel")
func f() { go f(); _ = time.Now(); _ = kernel.New }`
	findings, err := CheckSource("real.go", []byte(src), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 1 || findings[0].Rule != "layering" {
		t.Errorf("want only the layering finding, got %v", findings)
	}
}

func TestFindingNamesFileAndLine(t *testing.T) {
	src := "package p\n\nimport \"time\"\n\nfunc f() {\n\ttime.Sleep(1)\n}\n"
	findings, err := CheckSource("node/x/y.go", []byte(src), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{{Pos: "node/x/y.go:6:2", Rule: "time", Msg: "time.Sleep: use deps.Tasks.Sleep"}}
	if diff := cmp.Diff(want, findings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestCheckWalksTheTree: Check reads the tree it is given, names files
// below Root, exempts the real world's directory and skips test files.
func TestCheckWalksTheTree(t *testing.T) {
	osUser := "package p\n\nimport \"os\"\n\nvar _ = os.Getpid\n"
	tree := fstest.MapFS{
		"agent/a.go":      {Data: []byte(osUser)},
		"agent/a_test.go": {Data: []byte(osUser)},
		"real/osfiles.go": {Data: []byte(osUser)},
		"realm/b.go":      {Data: []byte(osUser)}, // not below real/
	}
	findings, err := Check(Config{Files: tree, Root: "node", Exempt: []string{"real"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		got = append(got, f.Pos+" "+f.Rule)
	}
	want := []string{filepath.Join("node", "agent", "a.go") + ":3:8 import", filepath.Join("node", "realm", "b.go") + ":3:8 import"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
