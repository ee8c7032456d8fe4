package scenarios

import (
	"bytes"
	"compress/gzip"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/logrotate"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// logChecks is what log-bounded and log-lines-once remember: when the
// current agent started and, per log, the file names last judged.
type logChecks struct {
	agentN     int
	agentSince time.Duration
	judged     map[string]string
	// last is when the logs were last judged (every logCheckEvery).
	last time.Duration
}

// logCheckEvery is how often the logs are judged (reading the files at
// every 100 ms step would cost more than the rest of the run).
const logCheckEvery = time.Second

// checkLogs judges the logs of running containers when the agent
// configures rotation explicitly (the log-rotation scenario):
//
//   - log-bounded: once the agent has run for two check intervals, a
//     log has at most containerLogMaxFiles files and its current file at
//     most containerLogMaxSize plus what its container writes in an
//     interval and a second (the chatty containers' rate); once it has run
//     for MaxFiles+1 intervals, all its files together stay within
//     MaxFiles such files;
//   - log-lines-once: the rotated files (gzipped or not), oldest first,
//     then the current one, hold the container's numbered lines in
//     increasing order: a reader of them sees every line at most once.
func (c *Checker) checkLogs() {
	cfg := c.h.AgentConfig().LogRotation
	if cfg.MaxSize <= 0 {
		return
	}
	cfg = cfg.WithDefaults()
	if c.logs == nil {
		c.logs = &logChecks{agentN: -1, judged: map[string]string{}, last: -logCheckEvery}
	}
	g := c.logs
	now := c.h.K.Elapsed()
	if c.h.Restarts() != g.agentN {
		g.agentN, g.agentSince = c.h.Restarts(), now
	}
	if now-g.last < logCheckEvery {
		return
	}
	g.last = now
	up := now - g.agentSince
	if c.h.Agent() == nil {
		up = 0
	}
	perFile := cfg.MaxSize + int64((cfg.Interval+time.Second)/chattyEvery)*chattyLineBytes
	root := c.h.AgentConfig().Node.PodLogsRoot
	for _, ct := range c.truth().raw {
		if ct.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		l := ct.GetLabels()
		ref := podstate.PodRef{UID: types.UID(l[podstate.LabelPodUID]), Name: l[podstate.LabelPodName], Namespace: l[podstate.LabelPodNamespace]}
		log := podspec.ContainerLogFile(root, ref, ct.GetMetadata().GetName(), int(ct.GetMetadata().GetAttempt()))
		rotated, err := logrotate.Rotated(c.h.Files, log)
		if err != nil {
			continue
		}
		c.judgeLogSizes(log, rotated, cfg, perFile, up)
		if names := strings.Join(rotated, ","); g.judged[log] != names {
			g.judged[log] = names
			c.judgeLogLines(log, rotated)
		}
	}
}

// judgeLogSizes checks log-bounded for one log.
func (c *Checker) judgeLogSizes(log string, rotated []string, cfg logrotate.Config, perFile int64, up time.Duration) {
	if up < 2*cfg.Interval+time.Second {
		return
	}
	var kept []string
	for _, r := range rotated {
		if !strings.HasSuffix(r, logrotate.TmpSuffix) {
			kept = append(kept, r)
		}
	}
	if n := len(kept) + 1; n > cfg.MaxFiles {
		c.fail("log-bounded", "log %s has %d files %v, more than %d", log, n, kept, cfg.MaxFiles)
	}
	size := func(p string) int64 {
		if info, err := c.h.Files.Stat(p); err == nil {
			return info.Size()
		}
		return 0
	}
	if s := size(log); s > perFile {
		c.fail("log-bounded", "log %s is %d bytes, more than %d (max size %d and an interval's writing)", log, s, perFile, cfg.MaxSize)
	}
	if up < time.Duration(cfg.MaxFiles+1)*cfg.Interval+time.Second {
		return
	}
	total := size(log)
	for _, r := range kept {
		total += size(r)
	}
	if limit := int64(cfg.MaxFiles) * perFile; total > limit {
		c.fail("log-bounded", "log %s and its rotated files take %d bytes, more than %d", log, total, limit)
	}
}

// judgeLogLines checks log-lines-once for one log.
func (c *Checker) judgeLogLines(log string, rotated []string) {
	prev, prevFile := int64(-1), ""
	for _, f := range append(rotated, log) {
		if strings.HasSuffix(f, logrotate.TmpSuffix) || (!strings.HasSuffix(f, logrotate.CompressSuffix) && containsString(rotated, f+logrotate.CompressSuffix)) {
			continue // leftovers of an interrupted compression, removed at the next rotation
		}
		data, err := c.h.Files.ReadFile(f)
		if err != nil {
			continue
		}
		if strings.HasSuffix(f, logrotate.CompressSuffix) {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				c.fail("log-lines-once", "rotated log %s is not gzip: %v", f, err)
				continue
			}
			if data, err = io.ReadAll(zr); err != nil {
				c.fail("log-lines-once", "rotated log %s does not decompress: %v", f, err)
				continue
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 5 || fields[3] != "line" {
				continue
			}
			n, err := strconv.ParseInt(fields[4], 10, 64)
			if err != nil {
				continue
			}
			if n <= prev {
				c.fail("log-lines-once", "line %d of %s comes after line %d (in %s)", n, f, prev, prevFile)
				return
			}
			prev, prevFile = n, f
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
