// Package crilog reads the CRI container log format that runtimes write
// (one record a line: "<RFC3339Nano> <stream> <tag> <message>"), for the
// agent's log server and for termination messages taken from logs.
package crilog

import (
	"bytes"
	"fmt"
	"time"
)

// ParseLine parses one line of the CRI log format (without its newline):
// "<RFC3339Nano> <stream> <tag>[:<more tags>] <message>". The tag P marks
// a partial record, F a full one.
func ParseLine(line []byte) (ts time.Time, stream string, partial bool, msg []byte, err error) {
	tsField, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return ts, "", false, nil, fmt.Errorf("no stream in log line %q", line)
	}
	if ts, err = time.Parse(time.RFC3339Nano, string(tsField)); err != nil {
		return ts, "", false, nil, fmt.Errorf("bad timestamp in log line %q", line)
	}
	streamField, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return ts, "", false, nil, fmt.Errorf("no tag in log line %q", line)
	}
	stream = string(streamField)
	if stream != "stdout" && stream != "stderr" {
		return ts, "", false, nil, fmt.Errorf("unknown stream %q in log line %q", stream, line)
	}
	tags, msg, _ := bytes.Cut(rest, []byte{' '})
	first, _, _ := bytes.Cut(tags, []byte{':'})
	switch string(first) {
	case "P":
		partial = true
	case "F":
	default:
		return ts, "", false, nil, fmt.Errorf("unknown tag %q in log line %q", tags, line)
	}
	return ts, stream, partial, msg, nil
}

// Tail returns the messages of the last lines records of a CRI log (its
// whole content), joined as a log reader prints them (a full record ends
// with a newline, a partial one does not), then cut to its last maxBytes
// bytes. Lines that do not parse are skipped.
func Tail(log []byte, lines, maxBytes int) []byte {
	recs := bytes.Split(bytes.TrimSuffix(log, []byte{'\n'}), []byte{'\n'})
	if len(log) == 0 {
		recs = nil
	}
	if len(recs) > lines {
		recs = recs[len(recs)-lines:]
	}
	var out []byte
	for _, r := range recs {
		_, _, partial, msg, err := ParseLine(r)
		if err != nil {
			continue
		}
		out = append(out, msg...)
		if !partial {
			out = append(out, '\n')
		}
	}
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return out
}
