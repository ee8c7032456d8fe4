package kernel

import (
	"context"
	"log/slog"

	"github.com/lockstep-dev/lockstep/sim/trace"
)

func fieldKind(k string) trace.Field  { return trace.Field{Key: "failure", Value: k} }
func fieldMsg(m string) trace.Field   { return trace.Field{Key: "msg", Value: m} }
func fieldGroup(g string) trace.Field { return trace.Field{Key: "group", Value: g} }

// logHandler turns slog records into "log" trace events stamped with
// virtual time; the record's wall-clock time is ignored.
type logHandler struct {
	k      *Kernel
	attrs  []trace.Field
	prefix string
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]trace.Field, 0, 2+len(h.attrs)+r.NumAttrs())
	fields = append(fields, trace.Field{Key: "level", Value: r.Level.String()}, trace.Field{Key: "msg", Value: r.Message})
	fields = append(fields, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = appendAttr(fields, h.prefix, a)
		return true
	})
	h.k.Record("log", fields...)
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &logHandler{k: h.k, prefix: h.prefix, attrs: append([]trace.Field(nil), h.attrs...)}
	for _, a := range as {
		n.attrs = appendAttr(n.attrs, h.prefix, a)
	}
	return n
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &logHandler{k: h.k, attrs: h.attrs, prefix: h.prefix + name + "."}
}

func appendAttr(fs []trace.Field, prefix string, a slog.Attr) []trace.Field {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			fs = appendAttr(fs, p, g)
		}
		return fs
	}
	if a.Key == "" {
		return fs
	}
	return append(fs, trace.Field{Key: prefix + a.Key, Value: v.String()})
}
