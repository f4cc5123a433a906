package server

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// maxLoggedString bounds every string of a log line (a value, an error's
// text, the message): much of what is logged comes from clients (client
// ids, user names, topics, keys), and a client may send 64 KiB of user
// name. Longer ones are cut and say how long they were.
const maxLoggedString = 512

// truncatingLogger returns a logger that writes to l's handler with
// every string cut to maxLoggedString.
func truncatingLogger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(truncatingHandler); ok {
		return l
	}
	return slog.New(truncatingHandler{h: l.Handler()})
}

// truncatingHandler cuts the long strings of the records it passes on.
type truncatingHandler struct{ h slog.Handler }

func (t truncatingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.h.Enabled(ctx, l)
}

func (t truncatingHandler) Handle(ctx context.Context, r slog.Record) error {
	long := len(r.Message) > maxLoggedString
	r.Attrs(func(a slog.Attr) bool {
		long = long || needsCut(a.Value)
		return !long
	})
	if !long {
		return t.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, cut(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(cutAttr(a))
		return true
	})
	return t.h.Handle(ctx, out)
}

func (t truncatingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	cutAs := make([]slog.Attr, len(as))
	for i, a := range as {
		cutAs[i] = cutAttr(a)
	}
	return truncatingHandler{h: t.h.WithAttrs(cutAs)}
}

func (t truncatingHandler) WithGroup(name string) slog.Handler {
	return truncatingHandler{h: t.h.WithGroup(cut(name))}
}

// needsCut reports whether v holds a string longer than maxLoggedString.
func needsCut(v slog.Value) bool {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return len(v.String()) > maxLoggedString
	case slog.KindGroup:
		for _, a := range v.Group() {
			if needsCut(a.Value) {
				return true
			}
		}
	case slog.KindAny:
		return len(anyText(v.Any())) > maxLoggedString
	}
	return false
}

func cutAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, cut(v.String()))
	case slog.KindGroup:
		group := v.Group()
		cutGroup := make([]any, len(group))
		for i, g := range group {
			cutGroup[i] = cutAttr(g)
		}
		return slog.Group(a.Key, cutGroup...)
	case slog.KindAny:
		if s := anyText(v.Any()); len(s) > maxLoggedString {
			return slog.String(a.Key, cut(s))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// anyText is the text a handler writes for x.
func anyText(x any) string {
	switch x := x.(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	case []byte:
		return string(x)
	}
	return ""
}

// cut returns s, cut to maxLoggedString bytes on a character boundary
// with its length said, if it is longer.
func cut(s string) string {
	if len(s) <= maxLoggedString {
		return s
	}
	n := maxLoggedString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}
