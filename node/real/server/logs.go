package server

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/lockstep-dev/lockstep/node/crilog"
)

// logOptions are the containerLogs query parameters.
type logOptions struct {
	tail       int64 // lines to keep from the end; -1 keeps all
	follow     bool
	previous   bool
	timestamps bool
	limitBytes int64     // 0: no limit
	since      time.Time // zero: from the beginning
}

// parseLogOptions validates the containerLogs query like the kubelet:
// tailLines ≥ 0, limitBytes ≥ 1, sinceSeconds ≥ 1, sinceTime RFC 3339,
// at most one of sinceSeconds and sinceTime, booleans strict (an empty
// value means true). now anchors sinceSeconds.
func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	o := logOptions{tail: -1}
	var err error
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"follow", &o.follow}, {"previous", &o.previous}, {"timestamps", &o.timestamps}} {
		if *b.dst, err = boolParam(q, b.name); err != nil {
			return o, err
		}
	}
	if q.Has("tailLines") {
		if o.tail, err = intParam(q, "tailLines", 0); err != nil {
			return o, err
		}
	}
	if q.Has("limitBytes") {
		if o.limitBytes, err = intParam(q, "limitBytes", 1); err != nil {
			return o, err
		}
	}
	if q.Has("sinceSeconds") && q.Has("sinceTime") {
		return o, errors.New("at most one of sinceSeconds and sinceTime may be given")
	}
	if q.Has("sinceSeconds") {
		s, err := intParam(q, "sinceSeconds", 1)
		if err != nil {
			return o, err
		}
		o.since = now.Add(-time.Duration(min(s, int64(1<<62)/int64(time.Second))) * time.Second)
	}
	if q.Has("sinceTime") {
		if o.since, err = time.Parse(time.RFC3339, q.Get("sinceTime")); err != nil {
			return o, fmt.Errorf("sinceTime %q is not an RFC 3339 time", q.Get("sinceTime"))
		}
	}
	return o, nil
}

// boolParam parses an optional boolean query parameter.
func boolParam(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q is not a boolean", name, v)
	}
	return b, nil
}

// intParam parses an integer query parameter of at least lo.
func intParam(q url.Values, name string, lo int64) (int64, error) {
	v := q.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not an integer", name, v)
	}
	if n < lo {
		return 0, fmt.Errorf("%s %d must be at least %d", name, n, lo)
	}
	return n, nil
}

// logMessage is one log line as the container wrote it: partial records
// joined, timestamped by their first record.
type logMessage struct {
	ts     time.Time
	stream string
	msg    []byte // ends with "\n" when the line was complete
}

// joiner reassembles partial records, per stream.
type joiner struct {
	pending map[string]*logMessage
}

// add takes one record and returns the completed message, if any.
func (j *joiner) add(ts time.Time, stream string, partial bool, msg []byte) (logMessage, bool) {
	if j.pending == nil {
		j.pending = map[string]*logMessage{}
	}
	p := j.pending[stream]
	if p == nil {
		p = &logMessage{ts: ts, stream: stream}
	}
	p.msg = append(p.msg, msg...)
	if partial {
		j.pending[stream] = p
		return logMessage{}, false
	}
	delete(j.pending, stream)
	p.msg = append(p.msg, '\n')
	return *p, true
}

// flush returns the unfinished messages, oldest first.
func (j *joiner) flush() []logMessage {
	var out []logMessage
	for _, p := range j.pending {
		out = append(out, *p)
	}
	clear(j.pending)
	slices.SortFunc(out, func(a, b logMessage) int {
		return cmp.Or(a.ts.Compare(b.ts), cmp.Compare(a.stream, b.stream))
	})
	return out
}

// logFile reads complete lines from a log file, across rotations and
// truncations.
type logFile struct {
	path   string
	f      *os.File
	r      *bufio.Reader
	info   os.FileInfo
	offset int64  // bytes consumed from f
	carry  []byte // an incomplete last line
}

// openLogFile opens path for reading from its start.
func openLogFile(path string) (*logFile, error) {
	lf := &logFile{path: path}
	if err := lf.open(); err != nil {
		return nil, err
	}
	return lf, nil
}

// open (re)opens lf.path from its start.
func (lf *logFile) open() error {
	f, err := os.Open(lf.path)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if lf.f != nil {
		lf.f.Close()
	}
	lf.f, lf.info, lf.offset, lf.carry = f, info, 0, nil
	lf.r = bufio.NewReaderSize(f, 64<<10)
	return nil
}

// close releases the file.
func (lf *logFile) close() {
	if lf.f != nil {
		lf.f.Close()
	}
}

// next returns the next complete line without its newline, or io.EOF when
// no complete line is available yet (an incomplete one is kept).
func (lf *logFile) next() ([]byte, error) {
	chunk, err := lf.r.ReadBytes('\n')
	lf.offset += int64(len(chunk))
	if err != nil {
		lf.carry = append(lf.carry, chunk...)
		return nil, err
	}
	line := chunk[:len(chunk)-1]
	if len(lf.carry) > 0 {
		line = append(lf.carry, line...)
		lf.carry = nil
	}
	return line, nil
}

// takeCarry returns and forgets the incomplete last line.
func (lf *logFile) takeCarry() []byte {
	c := lf.carry
	lf.carry = nil
	return c
}

// changed reports whether the path now names another file (rotation) or
// the file shrank below what was read (truncation): then reading must
// start again from the new content's beginning.
func (lf *logFile) changed() bool {
	info, err := os.Stat(lf.path)
	if err != nil {
		return false // rotated away and not yet recreated: keep waiting
	}
	return !os.SameFile(info, lf.info) || info.Size() < lf.offset
}

// errLimit ends output once limitBytes were written.
var errLimit = errors.New("limitBytes reached")

// logWriter writes messages as kubectl logs shows them.
type logWriter struct {
	w          io.Writer
	timestamps bool
	since      time.Time
	remaining  int64 // -1: unlimited
}

// write outputs m (when it is not before since), stopping with errLimit
// once the byte limit is reached.
func (lw *logWriter) write(m logMessage) error {
	if !lw.since.IsZero() && m.ts.Before(lw.since) {
		return nil
	}
	var buf []byte
	if lw.timestamps {
		buf = append(buf, m.ts.Format("2006-01-02T15:04:05.000000000Z07:00")...)
		buf = append(buf, ' ')
	}
	buf = append(buf, m.msg...)
	if lw.remaining >= 0 && int64(len(buf)) >= lw.remaining {
		_, err := lw.w.Write(buf[:lw.remaining])
		lw.remaining = 0
		if err != nil {
			return err
		}
		return errLimit
	}
	if lw.remaining > 0 {
		lw.remaining -= int64(len(buf))
	}
	_, err := lw.w.Write(buf)
	return err
}

// tailRing keeps the last n messages (n < 0: all).
type tailRing struct {
	n    int64
	msgs []logMessage
}

// add keeps m, dropping the oldest beyond n.
func (t *tailRing) add(m logMessage) {
	if t.n == 0 {
		return
	}
	t.msgs = append(t.msgs, m)
	if t.n > 0 && int64(len(t.msgs)) > 2*t.n+1024 {
		t.msgs = slices.Clone(t.msgs[int64(len(t.msgs))-t.n:])
	}
}

// result returns the kept messages, oldest first.
func (t *tailRing) result() []logMessage {
	if t.n >= 0 && int64(len(t.msgs)) > t.n {
		return t.msgs[int64(len(t.msgs))-t.n:]
	}
	return t.msgs
}

// logStream copies one container log file to a client.
type logStream struct {
	file  *logFile
	opts  logOptions
	out   *logWriter
	flush func() // pushes written bytes to the client
	poll  time.Duration
	// running is asked, while following, whether the container still
	// runs; once it does not, the rest of the file is sent and the
	// stream ends.
	running func() bool
	// stop ends a follow early (server shutdown); nil never fires.
	stop <-chan struct{}

	join joiner
	tail tailRing
}

// run sends the log: the last tail messages that exist now, then, when
// following, every new message until the container stops, ctx ends or
// stop fires. A log line that does not parse is skipped.
func (s *logStream) run(done <-chan struct{}) error {
	defer s.file.close()
	s.tail = tailRing{n: s.opts.tail}
	var werr error
	keep := func(m logMessage) {
		switch {
		case !s.opts.since.IsZero() && m.ts.Before(s.opts.since):
		case s.opts.tail >= 0:
			s.tail.add(m)
		case werr == nil:
			werr = s.out.write(m)
		}
	}
	// Catch up with what is already there.
	for werr == nil {
		line, err := s.file.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		s.record(line, keep)
	}
	if werr == nil && !s.opts.follow {
		if c := s.file.takeCarry(); len(c) > 0 {
			s.record(c, keep)
		}
		for _, m := range s.join.flush() {
			keep(m)
		}
	}
	if werr != nil {
		return ignoreLimit(werr)
	}
	for _, m := range s.tail.result() {
		if err := s.out.write(m); err != nil {
			return ignoreLimit(err)
		}
	}
	s.flush()
	if !s.opts.follow {
		return nil
	}
	return s.follow(done)
}

// follow sends new messages as they are written.
func (s *logStream) follow(done <-chan struct{}) error {
	ticker := time.NewTicker(s.poll)
	defer ticker.Stop()
	var werr error
	write := func(m logMessage) {
		if werr == nil {
			werr = s.out.write(m)
		}
	}
	lastPass := false
	for {
		line, err := s.file.next()
		if err == nil {
			s.record(line, write)
			if werr != nil {
				return ignoreLimit(werr)
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		s.flush()
		if lastPass {
			for _, m := range s.join.flush() {
				write(m)
			}
			s.flush()
			return ignoreLimit(werr)
		}
		select {
		case <-done:
			return nil
		case <-s.stop:
			return nil
		case <-ticker.C:
		}
		if s.file.changed() {
			// Finish the old file first: lines may have reached it
			// between the last read and the rotation.
			for werr == nil {
				line, err := s.file.next()
				if err != nil {
					break
				}
				s.record(line, write)
			}
			if c := s.file.takeCarry(); len(c) > 0 {
				s.record(c, write)
			}
			if err := s.file.open(); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if werr != nil {
				return ignoreLimit(werr)
			}
			continue
		}
		if s.running != nil && !s.running() {
			lastPass = true
		}
	}
}

// record parses one file line and hands a completed message to emit.
func (s *logStream) record(line []byte, emit func(logMessage)) {
	ts, stream, partial, msg, err := crilog.ParseLine(line)
	if err != nil {
		return
	}
	if m, ok := s.join.add(ts, stream, partial, msg); ok {
		emit(m)
	}
}

// ignoreLimit turns reaching limitBytes into a normal end.
func ignoreLimit(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}
