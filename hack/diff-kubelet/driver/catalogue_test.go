package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCatalogueLoads: every scenario file of the catalogue parses strictly
// (unknown fields are errors), validates, and the catalogue has the
// issue's >= 50 scenarios with a summary each.
func TestCatalogueLoads(t *testing.T) {
	ss, err := loadCatalogue("../scenarios", "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) < 50 {
		t.Errorf("catalogue has %d scenarios, want >= 50", len(ss))
	}
	for _, s := range ss {
		if s.Duration.Duration > 2*time.Minute {
			t.Errorf("%s: duration %v, want <= 2m (the catalogue must run in minutes)", s.Name, s.Duration)
		}
	}
}

func TestParseScenario(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		wantExclusive       bool
		wantOrder           []string
	}{
		{name: "ok", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 5s, do: logs, pod: p}, {at: 2s, do: delete, pod: p}]",
			wantOrder: []string{"delete", "logs"}},
		{name: "restart", yaml: "summary: s\nduration: 10s\nactions: [{at: 1s, do: restart-agent}]", wantExclusive: true, wantOrder: []string{"restart-agent"}},
		{name: "fill", yaml: "summary: s\nduration: 10s\nfill: 3", wantExclusive: true},
		{name: "nosummary", yaml: "duration: 10s", wantErr: "no summary"},
		{name: "unknown-field", yaml: "summary: s\nduration: 10s\nbogus: 1", wantErr: "unknown field"},
		{name: "late", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 11s, do: delete, pod: p}]", wantErr: "after the scenario's end"},
		{name: "unknown-pod", yaml: "summary: s\nduration: 10s\nactions: [{at: 1s, do: delete, pod: q}]", wantErr: "unknown pod"},
		{name: "unknown-kind", yaml: "summary: s\nduration: 10s\nactions: [{at: 1s, do: dance}]", wantErr: "unknown kind"},
		{name: "exec-no-cmd", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nactions: [{at: 1s, do: exec, pod: p}]", wantErr: "lacks its argument"},
		{name: "dup", yaml: "summary: s\nduration: 10s\npods: [{metadata: {name: p}}]\nstatic: [{metadata: {name: p}}]", wantErr: "twice"},
		{name: "bad-duration", yaml: "summary: s\nduration: soon", wantErr: "invalid duration"},
		{name: "pv-and-claim", yaml: "summary: s\nduration: 10s\nobjects: [{persistentVolume: {metadata: {name: v}, spec: {local: {path: /x}}}}, {persistentVolumeClaim: {metadata: {name: c}, spec: {volumeName: v}}}]"},
		{name: "claim-unknown-volume", yaml: "summary: s\nduration: 10s\nobjects: [{persistentVolumeClaim: {metadata: {name: c}, spec: {volumeName: v}}}]", wantErr: "naming one of the scenario's persistentVolumes"},
		{name: "pv-not-local", yaml: "summary: s\nduration: 10s\nobjects: [{persistentVolume: {metadata: {name: v}}}]", wantErr: "spec.local"},
		{name: "two-kinds", yaml: "summary: s\nduration: 10s\nobjects: [{configMap: {metadata: {name: a}}, secret: {metadata: {name: b}}}]", wantErr: "exactly one"},
	} {
		s, err := parseScenario(tc.name, []byte(tc.yaml))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var order []string
		for _, a := range s.Actions {
			order = append(order, a.Do)
		}
		if s.Exclusive != tc.wantExclusive {
			t.Errorf("%s: exclusive %v, want %v", tc.name, s.Exclusive, tc.wantExclusive)
		}
		if diff := cmp.Diff(tc.wantOrder, order); diff != "" {
			t.Errorf("%s: action order (-want +got):\n%s", tc.name, diff)
		}
	}
}
