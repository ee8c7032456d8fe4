// Package trace records a simulation as structured events (virtual time,
// task, kind, fields), writes them as JSON lines and keeps a rolling hash of
// everything recorded: the run's fingerprint. Two runs with the same seed and
// binary have the same fingerprint.
package trace

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Field is one key/value pair of an event, kept in the order given.
type Field struct {
	Key   string
	Value string
}

// F makes a Field, formatting v with fmt's %v.
func F(key string, v any) Field {
	switch x := v.(type) {
	case string:
		return Field{key, x}
	case int:
		return Field{key, strconv.Itoa(x)}
	case time.Duration:
		return Field{key, x.String()}
	default:
		return Field{key, fmt.Sprint(v)}
	}
}

// Recorder encodes events, hashes them and optionally writes them.
type Recorder struct {
	w      io.Writer
	werr   error
	h      hash.Hash64
	buf    []byte
	events uint64
	kinds  map[string]uint64
}

// NewRecorder returns a recorder writing JSON lines to w (nil: hash only).
func NewRecorder(w io.Writer) *Recorder {
	return &Recorder{w: w, h: fnv.New64a(), kinds: map[string]uint64{}}
}

// Record adds one event at virtual time at (elapsed since the run started).
func (r *Recorder) Record(at time.Duration, task, kind string, fields ...Field) {
	b := r.buf[:0]
	b = append(b, `{"t":`...)
	b = appendSeconds(b, at)
	b = append(b, `,"task":`...)
	b = appendString(b, task)
	b = append(b, `,"kind":`...)
	b = appendString(b, kind)
	for _, f := range fields {
		b = append(b, ',')
		b = appendString(b, f.Key)
		b = append(b, ':')
		b = appendString(b, f.Value)
	}
	b = append(b, "}\n"...)
	r.buf = b
	r.h.Write(b)
	r.events++
	r.kinds[kind]++
	if r.w != nil && r.werr == nil {
		_, r.werr = r.w.Write(b)
	}
}

// Hash is the fingerprint of every event recorded so far.
func (r *Recorder) Hash() string { return fmt.Sprintf("%016x", r.h.Sum64()) }

// Events is the number of events recorded.
func (r *Recorder) Events() uint64 { return r.events }

// WriteErr is the first error the writer returned, if any.
func (r *Recorder) WriteErr() error { return r.werr }

// KindCount is the number of events of one kind.
type KindCount struct {
	Kind  string
	Count uint64
}

// Kinds returns the number of events per kind, sorted by kind.
func (r *Recorder) Kinds() []KindCount {
	out := make([]KindCount, 0, len(r.kinds))
	for _, k := range slices.Sorted(maps.Keys(r.kinds)) {
		out = append(out, KindCount{k, r.kinds[k]})
	}
	return out
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendSeconds appends d as decimal seconds with nanosecond precision.
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	ns := int64(d)
	b = strconv.AppendInt(b, ns/1e9, 10)
	frac := ns % 1e9
	if frac == 0 {
		return b
	}
	var digits [9]byte
	for i := 8; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 9
	for digits[end-1] == '0' {
		end--
	}
	b = append(b, '.')
	return append(b, digits[:end]...)
}
