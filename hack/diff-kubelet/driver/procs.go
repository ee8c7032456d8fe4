package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs runs the node-side processes (the two fake runtimes and the two
// agents) from the command files run.sh wrote (procs/<name>.cmd: the
// binary, then one argument a line), logging to logs/<name>.log.
type procs struct {
	dir, logs string
	mu        sync.Mutex
	running   map[string]*exec.Cmd
	done      map[string]chan struct{}
}

func newProcs(dir, logs string) *procs {
	return &procs{dir: dir, logs: logs, running: map[string]*exec.Cmd{}, done: map[string]chan struct{}{}}
}

// command reads name's command file.
func (p *procs) command(name string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(p.dir, "procs", name+".cmd"))
	if err != nil {
		return nil, fmt.Errorf("command of %s: %w", name, err)
	}
	words := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(words) == 0 || words[0] == "" {
		return nil, fmt.Errorf("command of %s: empty file", name)
	}
	return words, nil
}

// start starts name; it dies with the driver (Pdeathsig).
func (p *procs) start(name string) error {
	words, err := p.command(name)
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(p.logs, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log of %s: %w", name, err)
	}
	fmt.Fprintf(lf, "--- start %s: %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(words, " "))
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		lf.Close()
		if err != nil {
			log.Printf("%s (pid %d) exited: %v", name, cmd.Process.Pid, err)
		}
		close(done)
	}()
	p.mu.Lock()
	p.running[name], p.done[name] = cmd, done
	p.mu.Unlock()
	log.Printf("%s started (pid %d)", name, cmd.Process.Pid)
	return nil
}

// stop sends SIGTERM to name and waits for it, SIGKILL after 20 s.
func (p *procs) stop(name string) {
	p.mu.Lock()
	cmd, done := p.running[name], p.done[name]
	delete(p.running, name)
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		log.Printf("%s ignored SIGTERM for 20 s; killing", name)
		_ = cmd.Process.Kill()
		<-done
	}
}

// restart stops and starts name.
func (p *procs) restart(name string) error {
	p.stop(name)
	return p.start(name)
}

// exited reports whether name was started and has exited.
func (p *procs) exited(name string) bool {
	p.mu.Lock()
	done := p.done[name]
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// stopAll stops the agents, then the runtimes.
func (p *procs) stopAll() {
	var wg sync.WaitGroup
	for _, n := range []string{"kubelet", "lockstep"} {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(n) }()
	}
	wg.Wait()
	p.stop("fakecri-kubelet")
	p.stop("fakecri-lockstep")
}

// waitForFile waits until path exists.
func waitForFile(ctx context.Context, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
