package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// RequestKey names one row of the apiserver's request counter: the verb and
// the resource, with the subresource after a slash (e.g. "PATCH pods/status").
type RequestKey string

// Requests is a sample of apiserver_request_total summed by verb+resource
// (over codes, scopes, groups and versions).
type Requests map[RequestKey]float64

// ParseRequestTotals reads a Prometheus text exposition and sums the samples
// of the counter named metric by verb and resource. Non-resource requests
// (empty resource label, e.g. the scrape of /metrics itself) are left out.
func ParseRequestTotals(text, metric string) (Requests, error) {
	out := Requests{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d of the metrics: %w", i+1, err)
		}
		if name != metric || labels["resource"] == "" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		out[RequestKey(key)] += value
	}
	return out, nil
}

// parseSample splits one sample line `name{a="b",...} value [timestamp]`.
func parseSample(line string) (string, map[string]string, float64, error) {
	labels := map[string]string{}
	end := strings.IndexAny(line, "{ ")
	if end < 0 {
		return "", nil, 0, fmt.Errorf("no value in %q", line)
	}
	name, rest := line[:end], line[end:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return "", nil, 0, fmt.Errorf("bad label in %q", line)
			}
			lname := strings.TrimSpace(rest[:eq])
			rest = rest[eq+2:]
			var b strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						b.WriteByte('\n')
					default:
						b.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					rest = rest[j+1:]
					closed = true
					break
				}
				b.WriteByte(c)
			}
			if !closed {
				return "", nil, 0, fmt.Errorf("unterminated label value in %q", line)
			}
			labels[lname] = b.String()
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, fmt.Errorf("no value in %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("value of %q: %w", line, err)
	}
	return name, labels, v, nil
}

// Sub returns after minus before per key, dropping keys whose difference is
// zero; a key missing from before counts from zero.
func (after Requests) Sub(before Requests) Requests {
	out := Requests{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Minus subtracts the driver's own known requests (e.g. its N creates),
// dropping keys that reach zero or below.
func (r Requests) Minus(own Requests) Requests {
	out := Requests{}
	for k, v := range r {
		if d := v - own[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the sum over all keys, WATCH excluded when noWatch is set (a
// watch is counted when it ends, not while it serves).
func (r Requests) Total(noWatch bool) float64 {
	t := 0.0
	for k, v := range r {
		if noWatch && strings.HasPrefix(string(k), "WATCH ") {
			continue
		}
		t += v
	}
	return t
}

// PerPod divides every count by n.
func (r Requests) PerPod(n int) Requests {
	out := Requests{}
	for k, v := range r {
		out[k] = v / float64(n)
	}
	return out
}

// Keys returns the keys sorted by count, largest first, then by name.
func (r Requests) Keys() []RequestKey {
	keys := make([]RequestKey, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r[keys[i]] != r[keys[j]] {
			return r[keys[i]] > r[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// String formats the counts as "VERB resource x.yz, ..." largest first,
// leaving out those that round to 0.00.
func (r Requests) String() string {
	parts := make([]string, 0, len(r))
	for _, k := range r.Keys() {
		if v := trimFloat(r[k]); v != "0" {
			parts = append(parts, fmt.Sprintf("%s %s", k, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// trimFloat prints v with at most two decimals and no trailing zeros.
func trimFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
